// Tests of the `roberta` program's options, help and info, of kernel settings read from the
// environment, of failed reads and writes, and of `dump` / `compare` against PyTorch's dumps.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "roberta/dev/npy.h"
#include "roberta/roberta.h"
#include "test_util.h"

namespace {

using json = nlohmann::json;
using namespace roberta::test::cli;

// Runs a shell command; returns its exit status and stdout.
Result shell(const std::string& cmd) {
  Result r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) r.out.append(buf, n);
  const int raw = pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

TEST(Cli, UsageErrorsExitWithTwo) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"fill-mask", "--model", kTiny, "--top-k", "zero", "a <mask>"},
           {"fill-mask", "--model", kTiny, "--frobnicate"},
           {"fill-mask", "--model"},
           {"embed", "--model", kTiny, "--pooling", "median"},
           {"no-such-command"}}) {
    const Result r = run(args);
    EXPECT_EQ(r.status, 2) << args[0] << " " << r.err;
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  }
  EXPECT_EQ(run({"fill-mask", "--help"}).status, 0);
}

// ---------------------------------------------------------------- options and help

TEST(Cli, InfoAcceptsThreads) {
  const Result r = run({"info", "--model", kTiny, "--threads", "1"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("layers"), std::string::npos) << r.out;
}

// `roberta info` prints what the library's runtime_info() says runs here (the server's /info and
// Python's runtime_info() are compared with this output in their own tests).
TEST(Cli, InfoShowsTheRuntimeInfo) {
  const Result r = run({"info", "--model", kTiny});
  ASSERT_EQ(r.status, 0) << r.err;
  const roberta::RuntimeInfo info = roberta::runtime_info();
  for (const auto& [label, value] :
       {std::pair{"cpu               ", info.cpu}, {"instruction set   ", info.isa},
        {"matrix products   ", info.matrix_products}, {"attention         ", info.attention + " for"},
        {"default dtype     ", info.default_dtype + " for"}})
    EXPECT_NE(r.out.find(std::string("\n") + label + value), std::string::npos) << label << value << "\n" << r.out;
  EXPECT_FALSE(info.cpu.empty());
  EXPECT_NE(info.matrix_products.find("int8: "), std::string::npos) << info.matrix_products;
}

TEST(Cli, TokenizeThreadsGiveTheSameAnswersInInputOrder) {
  // Enough lines for several chunks, with bad lines among them (answered in place, exit 1).
  std::string input;
  size_t lines = 0;
  for (int rep = 0; rep < 300; ++rep) {
    for (const auto& t : texts()) input += t + " " + std::to_string(rep) + "\n", ++lines;
    if (rep % 97 == 5) input += "bad \xff byte\n", ++lines;
  }
  const Result one = run({"tokenize", "--model", kTiny, "--threads", "1"}, input);
  const Result two = run({"tokenize", "--model", kTiny, "--threads", "2"}, input);
  EXPECT_EQ(one.status, 1) << one.err;
  EXPECT_EQ(two.status, 1) << two.err;
  EXPECT_EQ(lines_of(one.out).size(), lines);
  EXPECT_EQ(one.out, two.out);
  EXPECT_EQ(one.err, two.err);
  EXPECT_NE(one.err.find("error: line 37: invalid UTF-8"), std::string::npos) << one.err;
  const auto out = lines_of(two.out);
  EXPECT_TRUE(json::parse(out.at(36)).contains("error"));
  EXPECT_EQ(json::parse(out.at(35))["tokens"].back(), "</s>");
  // and the same as one line at a time through --text
  const Result single = run({"tokenize", "--model", kTiny, "--text", texts()[0] + " 0"});
  EXPECT_EQ(lines_of(single.out).at(0), out.at(0));
  for (const std::string bad : {"0", "abc", "-1", ""}) {
    const Result r = run({"tokenize", "--model", kTiny, "--threads", bad}, "hello\n");
    EXPECT_EQ(r.status, 2) << "--threads '" << bad << "': " << r.err;
    EXPECT_NE(r.err.find("--threads must be an integer"), std::string::npos) << r.err;
  }
}

struct HelpOption {
  std::string name;
  bool takes_value;
};

// The options a `roberta CMD --help` lists: "  --name HINT   text" or "  --name   text" lines under
// "Options:".
std::vector<HelpOption> help_options(const std::string& help) {
  std::vector<HelpOption> out;
  bool in_options = false;
  static const std::regex line(R"(^  --([a-z0-9][a-z0-9-]*)( [^ ]+)?(  |$))");
  for (const auto& l : lines_of(help)) {
    if (l == "Options:") in_options = true;
    std::smatch m;
    if (in_options && std::regex_search(l, m, line)) out.push_back({m[1], m[2].matched});
  }
  return out;
}

TEST(Cli, EveryHelpListsExactlyTheOptionsTheCommandAccepts) {
  const Result top = run({"--help"});
  ASSERT_EQ(top.status, 0);
  std::vector<std::string> commands;
  bool in_commands = false;
  static const std::regex command_line(R"(^  ([a-z][a-z-]*)  )");
  for (const auto& l : lines_of(top.out)) {
    if (l == "Commands:") in_commands = true;
    std::smatch m;
    if (in_commands && std::regex_search(l, m, command_line)) commands.push_back(m[1]);
    if (in_commands && l.empty() && !commands.empty()) break;
  }
  const std::set<std::string> want_commands{"fill-mask", "embed", "tokenize", "info", "dump", "compare", "bench", "eval-mlm",
                                            "classify", "zero-shot", "rerank", "ner", "qa", "serve"};
  EXPECT_EQ(std::set<std::string>(commands.begin(), commands.end()), want_commands) << top.out;

  // Every option any help lists (with one meaning of "takes a value" everywhere), and a few that
  // every command might be expected to take.
  std::map<std::string, bool> all{{"model", true}, {"threads", true}, {"dtype", true}, {"json", false},
                                  {"force", false}, {"output", true}, {"help", false}};
  std::map<std::string, std::set<std::string>> listed;
  for (const auto& cmd : commands) {
    const Result help = run({cmd, "--help"});
    ASSERT_EQ(help.status, 0) << cmd << ": " << help.err;
    const auto options = help_options(help.out);
    EXPECT_GE(options.size(), 3u) << cmd << " --help lists no options:\n" << help.out;
    for (const auto& o : options) {
      const auto it = all.emplace(o.name, o.takes_value).first;
      EXPECT_EQ(it->second, o.takes_value) << cmd << " --" << o.name << ": a flag in one help, takes a value in another";
      EXPECT_TRUE(listed[cmd].insert(o.name).second) << cmd << " lists --" << o.name << " twice";
    }
    EXPECT_TRUE(listed[cmd].count("model")) << cmd;
    EXPECT_TRUE(listed[cmd].count("threads")) << cmd;
    EXPECT_TRUE(listed[cmd].count("help")) << cmd;
  }
  // A listed option is accepted, an unlisted one is an unknown option (exit 2).
  for (const auto& cmd : commands) {
    for (const auto& [name, takes_value] : all) {
      std::vector<std::string> args{cmd, "--help", "--" + name};
      if (takes_value) args.push_back("1");
      const Result r = run(args);
      if (listed[cmd].count(name)) {
        EXPECT_EQ(r.status, 0) << cmd << " --" << name << " is listed but refused: " << r.err;
      } else {
        EXPECT_EQ(r.status, 2) << cmd << " --" << name << " is accepted but not listed";
        EXPECT_NE(r.err.find("unknown option --" + name), std::string::npos) << cmd << ": " << r.err;
      }
    }
    const Result bogus = run({cmd, "--help", "--bogus"});
    EXPECT_EQ(bogus.status, 2) << cmd;
  }
}

// ---------------------------------------------------------------- dump / compare

// Hugging Face computes position ids from the ids (every non-pad id counts); the engine too. A
// mask that zeroes a non-pad token would give positions that differ from PyTorch: refused.
TEST(Compare, MaskZeroOnANonPadTokenIsRefused) {
  roberta::test::TempDir dir;
  const std::vector<int64_t> shape{2, 6};
  roberta::write_npy(dir / "input_ids.npy", shape, std::vector<int64_t>{0, 31414, 232, 328, 2, 1, 1, 1, 0, 328, 232, 2});
  roberta::write_npy(dir / "attention_mask.npy", shape, std::vector<int64_t>{1, 1, 1, 0, 1, 0, 0, 0, 1, 1, 1, 1});
  const std::string want =
      "attention_mask.npy: element [0, 3] is 0 but input id 328 is not pad_token_id 1; roberta.cpp computes positions "
      "from the ids as Hugging Face does, so masked non-pad tokens are not supported";
  Result r = run({"compare", "--model", kTiny, "--reference", dir.path().string()});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find(want), std::string::npos) << r.err;
  r = run({"dump", "--model", kTiny, "--input-ids", (dir / "input_ids.npy").string(), "--attention-mask",
           (dir / "attention_mask.npy").string(), "--out", (dir / "out").string()});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find(want), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "out"));
  // Mask 0 on pad ids (right and left padding) is what a tokenizer gives: accepted.
  roberta::write_npy(dir / "attention_mask.npy", shape, std::vector<int64_t>{1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1});
  r = run({"dump", "--model", kTiny, "--input-ids", (dir / "input_ids.npy").string(), "--attention-mask",
           (dir / "attention_mask.npy").string(), "--out", (dir / "padded").string()});
  EXPECT_EQ(r.status, 0) << r.err;
}

// A checkpoint with a NaN weight in its last layer (tiny-nan) against PyTorch's dump of it: the
// layers before agree, the last layer's hidden states and the heads are NaN in both, counted as
// agreeing and said so; a reference value made finite where the engine gives NaN is a failure.
TEST(Compare, NaNInBothTheEngineAndTheReferenceAgrees) {
  const std::string model = kFixtures + "/tiny-nan", dump = kFixtures + "/tiny-nan-dump";
  Result r = run({"compare", "--model", model, "--reference", dump, "--json"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const json report = json::parse(r.out);
  const auto& tensors = report["tensors"];
  const size_t last = tensors.size() - 1 - 2;  // (hidden_states_0..N, then logits and pooler_output)
  ASSERT_EQ(tensors[last]["name"], "hidden_states_" + std::to_string(last));
  for (size_t i = 0; i < tensors.size(); ++i) {
    const bool nan = i >= last;  // every real position of the last layer and the heads
    EXPECT_EQ(tensors[i]["non_finite_in_both"].get<size_t>() == tensors[i]["elements"].get<size_t>(), nan)
        << tensors[i].dump();
    EXPECT_EQ(tensors[i]["non_finite_in_both"].get<size_t>() == 0, !nan) << tensors[i].dump();
  }
  EXPECT_NE(r.err.find("the model's outputs hold NaN or infinite values"), std::string::npos) << r.err;
  r = run({"compare", "--model", model, "--reference", dump});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("finite there either) in hidden_states_" + std::to_string(last) + ", logits, pooler_output\n"),
            std::string::npos)
      << r.out;
  // One reference value of the last layer made finite (0): that element fails, as its only one.
  roberta::test::TempDir dir;
  std::filesystem::copy(dump, dir / "ref");
  const std::string name = "hidden_states_" + std::to_string(last) + ".npy";
  roberta::NpyArray h = roberta::read_npy(dir / "ref" / name);
  std::vector<float> values = h.as_float();
  values[5] = 0.0f;  // (sequence 0, token 0: a real position)
  roberta::write_npy(dir / "ref" / name, h.shape, values);
  r = run({"compare", "--model", model, "--reference", (dir / "ref").string(), "--json"});
  EXPECT_EQ(r.status, 1) << r.err;
  const json failed = json::parse(r.out);
  EXPECT_EQ(failed["first_mismatch"], "hidden_states_" + std::to_string(last));
  const json& bad = failed["tensors"][last];
  EXPECT_EQ(bad["failing"], 1);
  EXPECT_EQ(bad["max_abs_diff"], nullptr) << "(inf: JSON has none)";
  EXPECT_EQ(bad["worst_at"], json::array({0, 0, 5}));
  EXPECT_EQ(bad["non_finite_in_both"].get<size_t>() + 1, bad["elements"].get<size_t>());
  EXPECT_EQ(bad["mean_abs_diff"], 0.0) << "(over finite pairs: none here)";
}

size_t count_points(const std::filesystem::path& svg, const std::string& cls) {
  const Result r = shell("/usr/bin/python3 -c 'import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); "
                         "print(sum(sys.argv[2] in e.getAttribute(\"class\").split() for e in d.getElementsByTagName(\"*\")))' " +
                         shell_quote(svg.string()) + " " + shell_quote(cls));
  EXPECT_EQ(r.status, 0) << svg << " is not XML";
  return r.status == 0 ? std::stoul(r.out) : 0;
}

TEST(Compare, PlotIsAnSvgWithOnePointPerTensor) {
  roberta::test::TempDir dir;
  const auto svg = dir / "plot.svg";
  const std::string dump = kFixtures + "/tiny-dump";
  Result r = run({"compare", "--model", kTiny, "--reference", dump, "--json", "--plot", svg.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  const json report = json::parse(r.out);
  const size_t tensors = report["tensors"].size();
  ASSERT_GE(tensors, 4u);
  const std::string text = slurp(svg);
  EXPECT_EQ(text.rfind("<svg", 0), 0u) << text.substr(0, 100);
  EXPECT_EQ(count_points(svg, "max-point"), tensors);
  EXPECT_EQ(count_points(svg, "mean-point"), tensors);
  EXPECT_EQ(count_points(svg, "atol-line"), 1u);
  EXPECT_EQ(count_points(svg, "first-failure"), 0u);
  for (const auto& t : report["tensors"]) EXPECT_NE(text.find(t["name"].get<std::string>()), std::string::npos);
  EXPECT_NE(text.find(kTiny), std::string::npos) << "the title names the model folder";
  if (shell("command -v rsvg-convert > /dev/null").status == 0) {
    const auto png = dir / "plot.png";
    ASSERT_EQ(shell("rsvg-convert -o " + shell_quote(png.string()) + " " + shell_quote(svg.string())).status, 0);
    EXPECT_GT(std::filesystem::file_size(png), 1000u);
  } else {
    std::printf("rsvg-convert not found: the SVG is not rendered\n");
  }

  // Never overwritten without --force.
  roberta::test::write_text(svg, "precious\n");
  r = run({"compare", "--model", kTiny, "--reference", dump, "--plot", svg.string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("already exists (use --force to overwrite)"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(svg), "precious\n");

  // A failing comparison marks the first failing tensor; .html embeds the same SVG.
  const auto html = dir / "plot.html";
  r = run({"compare", "--model", kTiny, "--reference", dump, "--atol", "0", "--rtol", "0", "--json", "--plot",
           svg.string(), "--force"});
  EXPECT_EQ(r.status, 1) << r.err;
  const std::string first = json::parse(r.out)["first_mismatch"].get<std::string>();
  EXPECT_EQ(count_points(svg, "first-failure"), 1u);
  EXPECT_NE(slurp(svg).find("first failure: " + first), std::string::npos);
  r = run({"compare", "--model", kTiny, "--reference", dump, "--atol", "0", "--rtol", "0", "--plot", html.string()});
  EXPECT_EQ(r.status, 1) << r.err;
  const std::string page = slurp(html);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("<svg"), std::string::npos);
  EXPECT_EQ(count_points(html, "max-point"), tensors);
  EXPECT_EQ(count_points(html, "first-failure"), 1u);
  r = run({"compare", "--model", kTiny, "--reference", dump, "--plot", (dir / "plot.png").string()});
  EXPECT_EQ(r.status, 2) << r.err;
  // Paths of the wrong kind are named as such, before any work is done.
  r = run({"compare", "--model", kTiny, "--reference", dump, "--plot", (dir / "no-such-folder" / "p.svg").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("no-such-folder does not exist"), std::string::npos) << r.err;
  r = run({"compare", "--model", kTiny, "--reference", svg.string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("is a file, not a reference dump folder"), std::string::npos) << r.err;
}

// Output that does not reach stdout, and input that cannot be read, are errors (exit 1), not a
// success with answers missing; -h is --help for every command, as for `roberta -h`.
TEST(Cli, FailedReadsAndWritesAreErrors) {
  const auto status_of = [](const std::string& redirections, const std::string& args) {
    const int raw = std::system((shell_quote(kBinary) + " " + args + " " + redirections + " 2>/dev/null").c_str());
    return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  };
  const std::string classify = "classify --model " + shell_quote(kSentiment) + " --dtype fp32 --json";
  EXPECT_EQ(status_of("</dev/null >/dev/null", classify + " fine"), 0);
  EXPECT_EQ(status_of("</dev/null >/dev/full", classify + " fine"), 1);  // a full disk
  roberta::test::TempDir dir;
  EXPECT_EQ(status_of("<" + shell_quote(dir.path().string()) + " >/dev/null", classify), 1);  // a folder as stdin
  const Result folder = run({"embed", "--model", kTiny, "--format", "npy", "--output", (dir / "x.npy").string(),
                             dir.path().string()});
  EXPECT_EQ(folder.status, 1);
  EXPECT_NE(folder.err.find("is a folder, not a file"), std::string::npos) << folder.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "x.npy"));
  for (const char* command : {"classify", "info", "embed"}) {
    const Result help = run_as_given({command, "-h"});
    EXPECT_EQ(help.status, 0) << command << ": " << help.err;
    EXPECT_EQ(help.out.rfind(std::string("usage: roberta ") + command, 0), 0u) << help.out;
  }
}

// ROBERTA_PREFETCH picks how the fp32, bf16 and int8 kernels prefetch their weights (the results are
// the same; CTest's kernels_prefetch_* run the GEMM tests with each): info names the one in use (for
// int8 below AMX: whether it asks for the next k slice), and a value it does not know is an error
// naming the variable and the accepted values, not a default.
TEST(Cli, RobertaPrefetchIsNamedByInfoAndAnUnknownValueIsAnError) {
  const Result plain = run({"info", "--model", kTiny});
  ASSERT_EQ(plain.status, 0) << plain.err;
  if (plain.out.find(", prefetch ") == std::string::npos) GTEST_SKIP() << "the portable kernel runs here: no prefetch";
  for (const std::string p : {"ahead", "next"}) {
    const Result r = run_as_given({"info", "--model", kTiny}, "", "ROBERTA_PREFETCH=" + p);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("prefetch " + p + ")"), std::string::npos) << r.out;
    // int8 held to AVX512-VNNI (AVX2 where the CPU has no AVX-512): "prefetch next" only with next
    const Result int8 =
        run_as_given({"info", "--model", kTiny}, "", "ROBERTA_PREFETCH=" + p + " ROBERTA_ISA=avx512vnni");
    ASSERT_EQ(int8.status, 0) << int8.err;
    const size_t at = int8.out.find("int8: own (");
    ASSERT_NE(at, std::string::npos) << int8.out;
    const std::string line = int8.out.substr(at, int8.out.find('\n', at) - at);
    EXPECT_EQ(line.find(", prefetch next)") != std::string::npos, p == "next") << line;
  }
  const Result bad =
      run({"fill-mask", "--model", kTiny, "The <mask> opened the door."}, "", "ROBERTA_PREFETCH=sideways");
  EXPECT_NE(bad.status, 0);
  EXPECT_EQ(bad.out, "");
  for (const char* word : {"ROBERTA_PREFETCH=\"sideways\"", "next", "ahead"})
    EXPECT_NE(bad.err.find(word), std::string::npos) << bad.err;
}

// Every kernel setting is read from the environment of the process, as a user sets it: a value
// changes what `roberta info` says runs, and a value no setting accepts stops the command at model
// load with an error naming the variable and the accepted values (even where, as for fp32 weights
// and ROBERTA_ATTENTION, no kernel would have asked).
TEST(Cli, KernelSettingsComeFromTheEnvironmentAndABadOneStopsTheLoad) {
  const Result fp32 = run_as_given({"info", "--model", kTiny}, "", "ROBERTA_ATTENTION=fp32");
  ASSERT_EQ(fp32.status, 0) << fp32.err;
  EXPECT_NE(fp32.out.find("attention         fp32 ("), std::string::npos) << fp32.out;
  const Result own = run_as_given({"info", "--model", kTiny}, "", "ROBERTA_GEMM=own");
  ASSERT_EQ(own.status, 0) << own.err;
  EXPECT_EQ(own.out.find("oneDNN ("), std::string::npos) << own.out;
  const Result capped = run_as_given({"info", "--model", kTiny}, "", "ROBERTA_ISA=portable");
  ASSERT_EQ(capped.status, 0) << capped.err;
  EXPECT_NE(capped.out.find("instruction set   portable"), std::string::npos) << capped.out;
  for (const auto& [env, words] :
       std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"ROBERTA_ATTENTION=fp16", {"ROBERTA_ATTENTION=\"fp16\"", "bf16", "fp32"}},
           {"ROBERTA_GEMM=fastest", {"ROBERTA_GEMM=\"fastest\"", "own", "onednn"}},
           {"ROBERTA_FP32_ROWS=16", {"ROBERTA_FP32_ROWS=\"16\"", "8, 12"}},
           {"ROBERTA_ISA=sse2", {"ROBERTA_ISA=\"sse2\"", "portable"}}}) {
    const Result bad = run({"fill-mask", "--model", kTiny, "--dtype", "fp32", "The <mask> opened the door."}, "", env);
    EXPECT_NE(bad.status, 0) << env;
    EXPECT_EQ(bad.out, "") << env;
    for (const std::string& w : words) EXPECT_NE(bad.err.find(w), std::string::npos) << env << ": " << bad.err;
  }
}

// Without --dtype, fill-mask (like embed, the task commands and serve) runs in the precision
// roberta::recommended_weight_type() names for this CPU: the same output as that --dtype, and with
// ROBERTA_ISA below AVX512-BF16 the same as fp32. Where the CPU has AVX512-BF16 the test also sees
// that bf16 and fp32 outputs differ, so the comparison can tell them apart.
TEST(Cli, DtypeAutoIsTheRecommendedPrecision) {
  const std::string text = "The <mask> opened the door.";
  const bool bf16 = roberta::recommended_weight_type() == roberta::WeightType::kBF16;
  const Result by_default = run_as_given({"fill-mask", "--model", kTiny, "--json", "--top-k", "8", text});
  const Result fp32 = run({"fill-mask", "--model", kTiny, "--json", "--top-k", "8", "--dtype", "fp32", text});
  const Result chosen = run({"fill-mask", "--model", kTiny, "--json", "--top-k", "8", "--dtype", bf16 ? "bf16" : "fp32", text});
  const Result automatic = run({"fill-mask", "--model", kTiny, "--json", "--top-k", "8", "--dtype", "auto", text});
  ASSERT_EQ(by_default.status, 0) << by_default.err;
  ASSERT_EQ(fp32.status, 0) << fp32.err;
  std::printf("  recommended here: %s\n", bf16 ? "bf16" : "fp32");
  EXPECT_EQ(by_default.out, chosen.out);
  EXPECT_EQ(automatic.out, chosen.out);
  if (bf16) {
    EXPECT_NE(chosen.out, fp32.out) << "bf16 and fp32 scores should differ in some digit";
  }
  const Result capped = run_as_given({"fill-mask", "--model", kTiny, "--json", "--top-k", "8", text}, "", "ROBERTA_ISA=avx512");
  EXPECT_EQ(capped.out, fp32.out);
  const Result bad = run({"fill-mask", "--model", kTiny, "--dtype", "fp16", text});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("auto, fp32, bf16 or int8"), std::string::npos) << bad.err;
}

}  // namespace
