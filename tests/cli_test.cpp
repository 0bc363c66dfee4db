// Tests of the `roberta` program: it is run as a user would run it, and its answers are checked
// against PyTorch reference dumps (tests/cli/make_fixtures.sh) and for clear errors.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <regex>
#include <set>
#include <sstream>

#include "roberta/dev/npy.h"
#include "roberta/roberta.h"
#include "test_util.h"

namespace {

using json = nlohmann::json;
const std::string kBinary = ROBERTA_BINARY;
const std::string kFixtures = ROBERTA_CLI_FIXTURES;
const std::string kTexts = ROBERTA_CLI_TEXTS;
const std::string kTiny = kFixtures + "/tiny";

struct Result {
  int status = -1;
  std::string out, err;
};

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs the binary with `args` exactly, feeding `input` on stdin; `env` ("NAME=value", or several
// separated by a space: a new one starts at each space followed by NAME=, so a value may hold
// spaces, e.g. a path) is added to its environment.
Result run_as_given(const std::vector<std::string>& args, const std::string& input = "", const std::string& env = "") {
  roberta::test::TempDir dir;
  roberta::test::write_text(dir / "stdin", input);
  std::string cmd = "env";
  static const std::regex kNext(" (?=[A-Za-z_][A-Za-z0-9_]*=)");
  for (std::sregex_token_iterator it(env.begin(), env.end(), kNext, -1), end; it != end; ++it)
    if (it->length() > 0) cmd += " " + shell_quote(it->str());
  cmd += " " + shell_quote(kBinary);
  for (const auto& a : args) cmd += " " + shell_quote(a);
  cmd += " < " + shell_quote((dir / "stdin").string()) + " > " + shell_quote((dir / "stdout").string()) + " 2> " +
         shell_quote((dir / "stderr").string());
  Result r;
  const int raw = std::system(cmd.c_str());
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  const auto slurp = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  };
  r.out = slurp(dir / "stdout");
  r.err = slurp(dir / "stderr");
  return r;
}

// The commands whose --dtype defaults to auto (bf16 where the CPU has AVX512-BF16). The tests check
// their answers against fp32 references (PyTorch, the library's fp32 default), so run() pins
// --dtype fp32 unless the test names a dtype; Cli.DtypeAutoIsTheRecommendedPrecision checks the default.
bool dtype_defaults_to_auto(const std::string& command) {
  return std::set<std::string>{"fill-mask", "embed", "classify", "zero-shot", "ner", "qa", "rerank", "serve"}.count(
      command);
}

Result run(std::vector<std::string> args, const std::string& input = "", const std::string& env = "") {
  if (!args.empty() && dtype_defaults_to_auto(args[0]) && std::find(args.begin(), args.end(), "--dtype") == args.end())
    args.insert(args.begin() + 1, {"--dtype", "fp32"});
  return run_as_given(args, input, env);
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

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

std::vector<std::string> texts() {
  std::ifstream in(kTexts);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

struct Reference {
  std::vector<int64_t> ids, mask;
  size_t B, L, H, V, layers;
  std::vector<float> last_hidden, logits, pooler;
};

const Reference& reference() {
  static const Reference ref = [] {
    Reference r;
    const std::string dump = kFixtures + "/tiny-dump/";
    const auto ids = roberta::read_npy(dump + "input_ids.npy");
    r.ids = ids.as_int64();
    r.mask = roberta::read_npy(dump + "attention_mask.npy").as_int64();
    r.B = static_cast<size_t>(ids.shape[0]), r.L = static_cast<size_t>(ids.shape[1]);
    r.layers = 0;
    while (std::filesystem::exists(dump + "hidden_states_" + std::to_string(r.layers + 1) + ".npy")) ++r.layers;
    const auto last = roberta::read_npy(dump + "hidden_states_" + std::to_string(r.layers) + ".npy");
    r.H = static_cast<size_t>(last.shape[2]);
    r.last_hidden = last.as_float();
    const auto logits = roberta::read_npy(dump + "logits.npy");
    r.V = static_cast<size_t>(logits.shape[2]);
    r.logits = logits.as_float();
    r.pooler = roberta::read_npy(dump + "pooler_output.npy").as_float();
    return r;
  }();
  return ref;
}

constexpr int64_t kMaskId = 50264;

// Softmax probabilities at (b, l) from the reference logits, in double.
std::vector<double> reference_probs(size_t b, size_t l) {
  const Reference& r = reference();
  const float* z = r.logits.data() + (b * r.L + l) * r.V;
  const double max = *std::max_element(z, z + r.V);
  std::vector<double> p(r.V);
  double sum = 0;
  for (size_t v = 0; v < r.V; ++v) sum += p[v] = std::exp(z[v] - max);
  for (auto& x : p) x /= sum;
  return p;
}

std::vector<size_t> mask_positions(size_t b) {
  const Reference& r = reference();
  std::vector<size_t> out;
  for (size_t l = 0; l < r.L; ++l)
    if (r.mask[b * r.L + l] && r.ids[b * r.L + l] == kMaskId) out.push_back(l);
  return out;
}

TEST(FillMask, TopKIdsAndScoresEqualPyTorchReference) {
  const Result res = run({"fill-mask", "--model", kTiny, "--json", "--top-k", "5"}, [] {
    std::string in;
    for (const auto& t : texts()) in += t + "\n";
    return in;
  }());
  ASSERT_EQ(res.status, 0) << res.err;
  const auto out = lines_of(res.out);
  ASSERT_EQ(out.size(), texts().size());
  size_t checked = 0;
  for (size_t b = 0; b < out.size(); ++b) {
    json answer = json::parse(out[b]);
    const auto masks = mask_positions(b);
    ASSERT_FALSE(masks.empty());
    if (masks.size() == 1) answer = json::array({answer});  // one mask: a flat list, like HF
    ASSERT_EQ(answer.size(), masks.size()) << out[b];
    for (size_t m = 0; m < masks.size(); ++m) {
      const auto p = reference_probs(b, masks[m]);
      std::vector<size_t> order(p.size());
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + 5, order.end(), [&](size_t x, size_t y) { return p[x] > p[y]; });
      ASSERT_EQ(answer[m].size(), 5u);
      for (size_t k = 0; k < 5; ++k) {
        EXPECT_EQ(answer[m][k]["token"].get<size_t>(), order[k]) << "text " << b << " mask " << m << " rank " << k;
        EXPECT_NEAR(answer[m][k]["score"].get<double>(), p[order[k]], 1e-5);
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 35u);
}

TEST(FillMask, TargetsAreScoredLikeTheFullSoftmax) {
  const std::string text = texts()[1];
  const Result res = run({"fill-mask", "--model", kTiny, "--json", "--targets", "door,window, garden", text});
  ASSERT_EQ(res.status, 0) << res.err;
  const json answer = json::parse(lines_of(res.out).at(0));
  ASSERT_EQ(answer.size(), 3u);
  const auto p = reference_probs(1, mask_positions(1).at(0));
  std::set<int64_t> seen;
  for (const auto& c : answer) {
    EXPECT_NEAR(c["score"].get<double>(), p[c["token"].get<size_t>()], 1e-5);
    seen.insert(c["token"].get<int64_t>());
  }
  EXPECT_EQ(seen.size(), 3u);
  // "door" is a vocabulary token without a leading space: HF uses it as is; " garden" is not.
  EXPECT_NE(res.err.find("garden"), std::string::npos) << res.err;
}

TEST(FillMask, SeveralMasksGiveOneListPerMask) {
  const Result res = run({"fill-mask", "--model", kTiny, "--json", "--top-k", "3", texts()[3]});
  ASSERT_EQ(res.status, 0) << res.err;
  const json answer = json::parse(lines_of(res.out).at(0));
  ASSERT_EQ(answer.size(), 2u);
  for (const auto& list : answer) {
    ASSERT_EQ(list.size(), 3u);
    // With several masks the sequence keeps <s>, </s> and the other <mask> (as HF does).
    EXPECT_NE(list[0]["sequence"].get<std::string>().find("<mask>"), std::string::npos);
  }
  // transformers' postprocess drops <pad> ids before decoding the sequence (not token_str).
  const Result pad =
      run({"fill-mask", "--model", kTiny, "--json", "--top-k", "2", "Hello <pad> there <mask> and <mask>!"});
  ASSERT_EQ(pad.status, 0) << pad.err;
  for (const auto& list : json::parse(lines_of(pad.out).at(0)))
    for (const auto& c : list) {
      const std::string sequence = c["sequence"];
      EXPECT_EQ(sequence.find("<pad>"), std::string::npos) << sequence;
      EXPECT_EQ(sequence.rfind("<s>Hello  there", 0), 0u) << sequence;
    }
}

TEST(FillMask, BadLinesAreErrorsButOtherLinesAreAnswered) {
  const std::string long_line = "word " + [] {
    std::string s;
    for (int i = 0; i < 600; ++i) s += "again ";
    return s;
  }() + "<mask>";
  const Result res = run({"fill-mask", "--model", kTiny, "--json"},
                         "A <mask> here.\n\nno mask here\n" + long_line + "\nbad \xff\xfe byte <mask>\nOne more <mask>.\n");
  EXPECT_EQ(res.status, 1);
  const auto out = lines_of(res.out);
  ASSERT_EQ(out.size(), 6u);
  EXPECT_TRUE(json::parse(out[0]).is_array());
  EXPECT_TRUE(json::parse(out[1]).contains("error"));
  EXPECT_TRUE(json::parse(out[2]).contains("error"));
  EXPECT_TRUE(json::parse(out[3]).contains("error"));
  EXPECT_TRUE(json::parse(out[4]).contains("error"));
  EXPECT_TRUE(json::parse(out[5]).is_array());
  EXPECT_NE(res.err.find("error: line 2: no <mask>"), std::string::npos) << res.err;
  EXPECT_NE(res.err.find("error: line 3: no <mask>"), std::string::npos) << res.err;
  EXPECT_NE(res.err.find("error: line 4: the text has"), std::string::npos) << res.err;
  EXPECT_NE(res.err.find("at most 512"), std::string::npos) << res.err;
  EXPECT_NE(res.err.find("error: line 5: invalid UTF-8 in text at byte 4"), std::string::npos) << res.err;
}

TEST(FillMask, ModelComesFromRobertaModelWhenNotGiven) {
  const std::string text = "A <mask> here.";
  const Result given = run({"fill-mask", "--model", kTiny, "--json", text});
  ASSERT_EQ(given.status, 0) << given.err;
  const Result from_env = run({"fill-mask", "--json", text}, "", "ROBERTA_MODEL=" + kTiny);
  ASSERT_EQ(from_env.status, 0) << from_env.err;
  EXPECT_EQ(from_env.out, given.out);
  EXPECT_FALSE(given.out.empty());
  // --model wins over the environment.
  const Result both = run({"fill-mask", "--model", kTiny, "--json", text}, "", "ROBERTA_MODEL=/nonexistent");
  EXPECT_EQ(both.status, 0) << both.err;
  EXPECT_EQ(both.out, given.out);
}

TEST(FillMask, ModelProblemsAreClearErrors) {
  roberta::test::TempDir empty;
  Result r = run({"fill-mask", "--model", (empty / "missing").string(), "a <mask>"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("missing: model folder not found"), std::string::npos) << r.err;
  r = run({"fill-mask", "--model", kFixtures + "/no-tokenizer", "a <mask>"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("no tokenizer found"), std::string::npos) << r.err;
  r = run({"fill-mask", "--model", kFixtures + "/no-lm-head", "a <mask>"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("no MLM head"), std::string::npos) << r.err;
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

// ---------------------------------------------------------------- embed

std::vector<float> reference_pooling(const std::string& pooling, size_t b) {
  const Reference& r = reference();
  std::vector<float> out(r.H, 0.0f);
  if (pooling == "pooler") return {r.pooler.begin() + static_cast<ptrdiff_t>(b * r.H), r.pooler.begin() + static_cast<ptrdiff_t>((b + 1) * r.H)};
  std::vector<double> acc(r.H, pooling == "max" ? -INFINITY : 0.0);
  size_t n = 0;
  for (size_t l = 0; l < r.L; ++l) {
    if (!r.mask[b * r.L + l]) continue;
    const float* h = r.last_hidden.data() + (b * r.L + l) * r.H;
    if (pooling == "cls" && n == 0) acc.assign(h, h + r.H);
    for (size_t k = 0; k < r.H; ++k) {
      if (pooling == "mean") acc[k] += h[k];
      if (pooling == "max") acc[k] = std::max<double>(acc[k], h[k]);
    }
    ++n;
  }
  for (size_t k = 0; k < r.H; ++k) out[k] = static_cast<float>(pooling == "mean" ? acc[k] / n : acc[k]);
  return out;
}

TEST(Embed, EveryPoolingEqualsPyTorchReferenceInInputOrder) {
  roberta::test::TempDir dir;
  for (const std::string pooling : {"mean", "cls", "max", "pooler"}) {
    for (const bool normalize : {false, true}) {
      const auto out = dir / (pooling + (normalize ? "-n" : "") + ".npy");
      std::vector<std::string> args = {"embed", "--model", kTiny, "--pooling", pooling, "--format", "npy",
                                       "--output", out.string(), "--batch-size", "2", kTexts};
      if (normalize) args.push_back("--normalize");
      const Result res = run(args);
      ASSERT_EQ(res.status, 0) << res.err;
      const auto got = roberta::read_npy(out);
      const Reference& r = reference();
      ASSERT_EQ(got.shape, (std::vector<int64_t>{static_cast<int64_t>(r.B), static_cast<int64_t>(r.H)}));
      const auto values = got.as_float();
      for (size_t b = 0; b < r.B; ++b) {
        auto want = reference_pooling(pooling, b);
        if (normalize) {
          double norm = 0;
          for (float v : want) norm += double(v) * v;
          for (float& v : want) v = static_cast<float>(v / std::sqrt(norm));
        }
        double max_diff = 0;
        for (size_t k = 0; k < r.H; ++k) max_diff = std::max<double>(max_diff, std::abs(values[b * r.H + k] - want[k]));
        EXPECT_LE(max_diff, 1e-5) << pooling << (normalize ? " normalized" : "") << " text " << b;
      }
    }
  }
}

TEST(Embed, SentenceTransformersConfigSetsTheDefaults) {
  // A sentence-transformers folder: CLS pooling and a Normalize module, read from its config.
  roberta::test::TempDir dir;
  const auto model = dir / "st-model";
  std::filesystem::copy(kTiny, model, std::filesystem::copy_options::recursive);
  std::filesystem::create_directories(model / "1_Pooling");
  roberta::test::write_text(model / "1_Pooling" / "config.json",
                            R"({"word_embedding_dimension": 32, "pooling_mode_cls_token": true,
                                "pooling_mode_mean_tokens": false, "pooling_mode_max_tokens": false})");
  roberta::test::write_text(model / "modules.json",
                            R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                                {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                                {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])");
  const auto out = dir / "e.npy";
  const Result res = run({"embed", "--model", model.string(), "--format", "npy", "--output", out.string(), kTexts});
  ASSERT_EQ(res.status, 0) << res.err;
  const auto values = roberta::read_npy(out).as_float();
  const Reference& r = reference();
  for (size_t b = 0; b < r.B; ++b) {
    auto want = reference_pooling("cls", b);
    double norm = 0;
    for (float v : want) norm += double(v) * v;
    for (size_t k = 0; k < r.H; ++k) EXPECT_NEAR(values[b * r.H + k], want[k] / std::sqrt(norm), 1e-5) << b;
  }
}

TEST(Embed, JsonlOutputAndNoSilentOverwrite) {
  roberta::test::TempDir dir;
  const auto out = dir / "e.jsonl";
  roberta::test::write_text(out, "precious\n");
  Result r = run({"embed", "--model", kTiny, "--output", out.string(), kTexts});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("already exists"), std::string::npos) << r.err;
  std::ifstream in(out);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), {}), "precious\n");
  r = run({"embed", "--model", kTiny, "--output", out.string(), "--force", kTexts});
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream in2(out);
  size_t rows = 0;
  for (std::string line; std::getline(in2, line); ++rows) EXPECT_EQ(json::parse(line).size(), reference().H);
  EXPECT_EQ(rows, texts().size());
}

TEST(Embed, OverLongInputIsTruncatedWithWarningOrRefused) {
  std::string long_line;
  for (int i = 0; i < 700; ++i) long_line += "again ";
  long_line += "end";  // (a space at the end would be stripped, as sentence-transformers strips it)
  Result r = run({"embed", "--model", kTiny}, "short\n" + long_line + "\n");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(lines_of(r.out).size(), 2u);
  EXPECT_NE(r.err.find("warning: line 2 was truncated"), std::string::npos) << r.err;
  r = run({"embed", "--model", kTiny, "--no-truncate"}, "short\n" + long_line + "\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("error: line 2: 703 tokens, more than the 512 allowed"), std::string::npos) << r.err;
}

// Texts are stripped of whitespace at their ends as sentence-transformers strips them, but an
// invalid byte is named where it is in the line as given.
TEST(Embed, InvalidUtf8IsNamedAtItsByteInTheLineAsGiven) {
  const Result r = run({"embed", "--model", kTiny}, "   ab\xff c \n");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("error: line 1: invalid UTF-8"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("at byte 5"), std::string::npos) << r.err;
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

// ---------------------------------------------------------------- task commands
//
// Each command's --json output against the library class run in-process on the same inputs with
// the same options (the library's agreement with Hugging Face is the golden tests' business; here:
// the options reach the library, the keys are HF's, in HF's order).

using ordered = nlohmann::ordered_json;
const std::string kSentiment = kFixtures + "/sentiment";
const std::string kNli = kFixtures + "/nli";
const std::string kReranker = kFixtures + "/reranker";
const std::string kNer = kFixtures + "/ner";
const std::string kQa = kFixtures + "/qa";

std::vector<std::string> keys(const ordered& object) {
  std::vector<std::string> out;
  for (const auto& [key, value] : object.items()) out.push_back(key);
  return out;
}

std::vector<ordered> json_lines(const std::string& out) {
  std::vector<ordered> v;
  for (const auto& l : lines_of(out)) v.push_back(ordered::parse(l));
  return v;
}

constexpr double kScoreTol = 1e-5;

void expect_label_scores(const ordered& got, const std::vector<roberta::LabelScore>& want, const std::string& what) {
  ASSERT_TRUE(got.is_array()) << what << ": " << got.dump();
  ASSERT_EQ(got.size(), want.size()) << what << ": " << got.dump();
  for (size_t j = 0; j < want.size(); ++j) {
    EXPECT_EQ(keys(got[j]), (std::vector<std::string>{"label", "score"})) << what;
    EXPECT_EQ(got[j]["label"], want[j].label) << what << " rank " << j;
    EXPECT_NEAR(got[j]["score"].get<double>(), want[j].score, kScoreTol) << what << " rank " << j;
  }
}

TEST(CliTasks, ClassifyEqualsTheLibrary) {
  const auto classifier = roberta::TextClassifier::load(kSentiment);
  const std::vector<roberta::TextInput> inputs = {
      {"I loved this film.", std::nullopt}, {"The plot was thin.", std::nullopt}, {"A man plays.", "Music."}};
  // Texts from stdin, --top-k 2 --function sigmoid.
  roberta::TextClassifyOptions o;
  o.top_k = 2;
  o.function_to_apply = roberta::ClassificationFunction::kSigmoid;
  Result r = run({"classify", "--model", kSentiment, "--json", "--top-k", "2", "--function", "sigmoid"},
                 inputs[0].text + "\n" + inputs[1].text + "\n");
  ASSERT_EQ(r.status, 0) << r.err;
  auto want = classifier(std::span(inputs.data(), 2), o);
  auto got = json_lines(r.out);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < 2; ++i) expect_label_scores(got[i], want[i], "top-k 2, input " + std::to_string(i));
  // JSON lines (a string, a pair, an object), every label, the default function (softmax here).
  o = {};
  o.top_k = std::nullopt;
  r = run({"classify", "--model", kSentiment, "--json", "--all", "--input-format", "jsonl"},
          "\"I loved this film.\"\n[\"A man plays.\", \"Music.\"]\n{\"text\": \"The plot was thin.\"}\n");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<roberta::TextInput> ordered_inputs = {inputs[0], inputs[2], inputs[1]};
  want = classifier(ordered_inputs, o);
  got = json_lines(r.out);
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < 3; ++i) expect_label_scores(got[i], want[i], "all, input " + std::to_string(i));
  // Without --top-k or --all, a pair's answer is its best label as an object, a text's a list of it,
  // as transformers' TextClassificationPipeline.__call__ wraps only a str input's result.
  r = run({"classify", "--model", kSentiment, "--json", "--input-format", "jsonl"},
          "{\"text\": \"A man plays.\", \"text_pair\": \"Music.\"}\n\"I loved this film.\"\n");
  ASSERT_EQ(r.status, 0) << r.err;
  got = json_lines(r.out);
  ASSERT_EQ(got.size(), 2u);
  want = classifier(std::vector<roberta::TextInput>{inputs[2], inputs[0]}, {});
  ASSERT_TRUE(got[0].is_object()) << got[0].dump();
  expect_label_scores(ordered::array({got[0]}), want[0], "a pair, default top-k");
  expect_label_scores(got[1], want[1], "a text, default top-k");
  // Arguments as texts; the default top-k is 1.
  r = run({"classify", "--model", kSentiment, "--json", "--function", "none", inputs[1].text});
  ASSERT_EQ(r.status, 0) << r.err;
  o = {};
  o.function_to_apply = roberta::ClassificationFunction::kNone;
  expect_label_scores(json_lines(r.out).at(0), classifier(std::span(inputs.data() + 1, 1), o)[0], "function none");
  // The readable table names the labels.
  r = run({"classify", "--model", kSentiment, "--all", inputs[0].text});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* label : {"NEGATIVE", "NEUTRAL", "POSITIVE"}) EXPECT_NE(r.out.find(label), std::string::npos) << r.out;
}

TEST(CliTasks, ZeroShotEqualsTheLibrary) {
  const auto zs = roberta::ZeroShotClassifier::load(kNli);
  const std::vector<std::string> texts = {"My phone broke, I need help now!", "The weather is nice."};
  for (const bool multi : {false, true}) {
    roberta::ZeroShotOptions o;
    o.candidate_labels = roberta::parse_candidate_labels("urgent, phone,not urgent");
    o.hypothesis_template = "The topic is {}.";
    o.multi_label = multi;
    std::vector<std::string> args = {"zero-shot", "--model", kNli, "--json", "--labels", "urgent, phone,not urgent",
                                     "--template", "The topic is {}."};
    if (multi) args.push_back("--multi-label");
    const Result r = run(args, texts[0] + "\n" + texts[1] + "\n");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto want = zs(texts, o);
    const auto got = json_lines(r.out);
    ASSERT_EQ(got.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(keys(got[i]), (std::vector<std::string>{"sequence", "labels", "scores"}));
      EXPECT_EQ(got[i]["sequence"], want[i].sequence);
      EXPECT_EQ(got[i]["labels"].get<std::vector<std::string>>(), want[i].labels) << multi;
      ASSERT_EQ(got[i]["scores"].size(), want[i].scores.size());
      for (size_t j = 0; j < want[i].scores.size(); ++j)
        EXPECT_NEAR(got[i]["scores"][j].get<double>(), want[i].scores[j], kScoreTol) << multi << " " << i << " " << j;
    }
  }
  // A JSON line may bring its own labels.
  const Result r = run({"zero-shot", "--model", kNli, "--json", "--input-format", "jsonl"},
                       "{\"sequence\": \"The weather is nice.\", \"candidate_labels\": [\"sun\", \"rain\"]}\n");
  ASSERT_EQ(r.status, 0) << r.err;
  roberta::ZeroShotOptions o;
  o.candidate_labels = {"sun", "rain"};
  const auto want = zs(texts[1], o);
  const auto got = json_lines(r.out).at(0);
  EXPECT_EQ(got["labels"].get<std::vector<std::string>>(), want.labels);
  EXPECT_NEAR(got["scores"][0].get<double>(), want.scores[0], kScoreTol);
}

TEST(CliTasks, RerankEqualsTheLibrary) {
  const auto ce = roberta::CrossEncoder::load(kReranker);
  const std::string query = "How many people live in Berlin?";
  const std::vector<std::string> docs = {"Berlin has 3.5 million people.", "Paris is in France.", "Berlin is big.",
                                         "I like trains."};
  roberta::RankOptions o;
  o.top_k = 3;
  o.return_documents = true;
  const auto want = ce.rank(query, docs, o);
  Result r = run({"rerank", "--model", kReranker, "--json", "--query", query, "--top-k", "3", "--return-documents",
                  "--batch-size", "3"},
                 docs[0] + "\n" + docs[1] + "\n" + docs[2] + "\n" + docs[3] + "\n");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(lines_of(r.out).size(), 1u);
  const ordered got = ordered::parse(r.out);
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(keys(got[i]), (std::vector<std::string>{"corpus_id", "score", "text"}));
    EXPECT_EQ(got[i]["corpus_id"].get<size_t>(), want[i].corpus_id) << i;
    EXPECT_NEAR(got[i]["score"].get<double>(), want[i].score, kScoreTol) << i;
    EXPECT_EQ(got[i]["text"], *want[i].text);
  }
  // Documents as arguments, without texts.
  r = run({"rerank", "--model", kReranker, "--json", "--query", query, docs[0], docs[1]});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(keys(ordered::parse(r.out)[0]), (std::vector<std::string>{"corpus_id", "score"}));
  // --pairs: CrossEncoder.predict, one score per line.
  r = run({"rerank", "--model", kReranker, "--pairs"},
          "[\"" + query + "\", \"" + docs[0] + "\"]\n[\"" + query + "\", \"" + docs[3] + "\"]\n");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<roberta::TextPair> pairs = {{query, docs[0]}, {query, docs[3]}};
  const roberta::Matrix scores = ce.predict(pairs);
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 2u);
  for (size_t i = 0; i < 2; ++i) EXPECT_NEAR(std::stod(lines[i]), scores.row(i)[0], kScoreTol) << lines[i];
  // A model with several labels: a list per pair with --pairs; ranking is refused.
  r = run({"rerank", "--model", kSentiment, "--pairs", "--json", "[\"a\", \"b\"]"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(ordered::parse(r.out).size(), 3u) << r.out;
  r = run({"rerank", "--model", kSentiment, "--query", "q", "a"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("ranking needs a model with one label; this one has 3"), std::string::npos) << r.err;
}

TEST(CliTasks, NerEqualsTheLibrary) {
  const auto ner = roberta::TokenClassifier::load(kNer);
  const std::string a = "Angela Merkel visited New York.", b = "Ein café in Zürich, then home to Berlin by train.";
  // No aggregation (HF's default): one entity per token, every label kept with --ignore-labels "".
  roberta::TokenClassifyOptions o;
  o.ignore_labels = {};
  Result r = run({"ner", "--model", kNer, "--json", "--ignore-labels", ""}, a + "\n" + b + "\n");
  ASSERT_EQ(r.status, 0) << r.err;
  auto got = json_lines(r.out);
  ASSERT_EQ(got.size(), 2u);
  size_t checked = 0;
  for (size_t i = 0; i < 2; ++i) {
    const auto want = ner(i ? b : a, o);
    ASSERT_EQ(got[i].size(), want.size()) << i;
    for (size_t j = 0; j < want.size(); ++j, ++checked) {
      const ordered& e = got[i][j];
      EXPECT_EQ(keys(e), (std::vector<std::string>{"entity", "score", "index", "word", "start", "end"}));
      EXPECT_EQ(e["entity"], want[j].entity);
      EXPECT_NEAR(e["score"].get<double>(), want[j].score, kScoreTol);
      EXPECT_EQ(e["index"].get<int64_t>(), want[j].index);
      EXPECT_EQ(e["word"], want[j].word);
      EXPECT_EQ(e["start"].get<int64_t>(), want[j].start);
      EXPECT_EQ(e["end"].get<int64_t>(), want[j].end);
    }
  }
  EXPECT_GE(checked, 15u);
  // Aggregation with windows: --stride 3 --max-length 10 on the longer text.
  o = {};
  o.aggregation = roberta::Aggregation::kAverage;
  o.stride = 3;
  o.max_length = 10;
  o.ignore_labels = {"O", "LOC"};  // with an aggregation, group labels
  const auto want = ner(b, o);
  r = run({"ner", "--model", kNer, "--json", "--aggregation", "average", "--stride", "3", "--max-length", "10",
           "--ignore-labels", "O,LOC", b});
  ASSERT_EQ(r.status, 0) << r.err;
  got = json_lines(r.out);
  ASSERT_EQ(got.at(0).size(), want.size());
  ASSERT_FALSE(want.empty());
  for (size_t j = 0; j < want.size(); ++j) {
    const ordered& e = got[0][j];
    EXPECT_EQ(keys(e), (std::vector<std::string>{"entity_group", "score", "word", "start", "end"}));
    EXPECT_EQ(e["entity_group"], want[j].entity);
    EXPECT_NE(e["entity_group"], "LOC");
    EXPECT_NEAR(e["score"].get<double>(), want[j].score, kScoreTol);
    EXPECT_EQ(e["word"], want[j].word);
    EXPECT_EQ(e["start"].get<int64_t>(), want[j].start);
    EXPECT_EQ(e["end"].get<int64_t>(), want[j].end);
  }
}

// A text longer than the window is read whole (default stride: a quarter of the window), with an
// aggregation and without one: entities reach its end and equal the library's with that stride.
// Without an aggregation a token read by two windows is listed once (HF's
// aggregate_overlapping_entities), so no two tokens share a start.
TEST(CliTasks, NerReadsLongTextsWhole) {
  std::string text;
  for (int i = 0; i < 40; ++i) text += "Angela Merkel visited New York. ";
  text.pop_back();
  const auto ner = roberta::TokenClassifier::load(kNer);
  for (const char* aggregation : {"simple", "none"}) {
    SCOPED_TRACE(aggregation);
    roberta::TokenClassifyOptions o;
    o.aggregation = roberta::parse_aggregation(aggregation);
    o.ignore_labels.clear();
    o.max_length = 32;
    o.stride = 8;
    const auto want = ner(text, o);
    const Result r = run({"ner", "--model", kNer, "--json", "--aggregation", aggregation, "--ignore-labels", "",
                          "--max-length", "32"},
                         text + "\n");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.err, "");
    const auto got = json_lines(r.out).at(0);
    ASSERT_EQ(got.size(), want.size());
    ASSERT_FALSE(want.empty());
    EXPECT_EQ(got.back()["end"].get<int64_t>(), static_cast<int64_t>(text.size())) << "the end of the text was read";
    std::set<int64_t> starts;
    for (size_t j = 0; j < want.size(); ++j) {
      EXPECT_EQ(got[j]["start"].get<int64_t>(), want[j].start);
      EXPECT_TRUE(starts.insert(want[j].start).second) << "two entities start at " << want[j].start;
      if (want[j].index >= 0) {
        EXPECT_EQ(got[j]["index"].get<int64_t>(), want[j].index);
        EXPECT_LT(want[j].index, 31) << "an index counts in its window of 32 tokens";
      }
    }
  }
}

TEST(CliTasks, QaEqualsTheLibrary) {
  const auto qa = roberta::QuestionAnswerer::load(kQa);
  const std::vector<std::pair<std::string, std::string>> inputs = {
      {"Where do I live?", "My name is Wolfgang and I live in Berlin, a city with many trains and old houses."},
      {"What is my name?", "My name is Wolfgang."}};
  roberta::QuestionAnswerOptions o;
  o.top_k = 3;
  o.max_answer_len = 4;
  o.max_seq_len = 16;
  o.doc_stride = 3;
  o.handle_impossible_answer = true;
  std::string input;
  for (const auto& [q, c] : inputs) input += ordered{{"question", q}, {"context", c}}.dump() + "\n";
  Result r = run({"qa", "--model", kQa, "--json", "--top-k", "3", "--max-answer-len", "4", "--max-seq-len", "16",
                  "--doc-stride", "3", "--handle-impossible-answer", "--max-question-len", "10"},
                 input);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto got = json_lines(r.out);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_GT(qa.prepare(inputs[i].first, inputs[i].second, o).windows.size(), i == 0 ? 1u : 0u);
    const auto want = qa(inputs[i].first, inputs[i].second, o);
    ASSERT_EQ(want.size(), 3u);
    ASSERT_TRUE(got[i].is_array()) << got[i].dump();
    ASSERT_EQ(got[i].size(), 3u);
    for (size_t j = 0; j < 3; ++j) {
      EXPECT_EQ(keys(got[i][j]), (std::vector<std::string>{"score", "start", "end", "answer"}));
      EXPECT_NEAR(got[i][j]["score"].get<double>(), want[j].score, kScoreTol);
      EXPECT_EQ(got[i][j]["start"].get<int64_t>(), want[j].start);
      EXPECT_EQ(got[i][j]["end"].get<int64_t>(), want[j].end);
      EXPECT_EQ(got[i][j]["answer"], want[j].answer);
    }
  }
  // --question / --context and one answer: an object, as HF.
  r = run({"qa", "--model", kQa, "--json", "--question", inputs[1].first, "--context", inputs[1].second});
  ASSERT_EQ(r.status, 0) << r.err;
  const ordered one = ordered::parse(r.out);
  ASSERT_TRUE(one.is_object()) << r.out;
  const auto want = qa(inputs[1].first, inputs[1].second);
  EXPECT_EQ(one["answer"], want.at(0).answer);
  EXPECT_NEAR(one["score"].get<double>(), want[0].score, kScoreTol);
}

// A bad input between two good ones: two answers and an {"error"} line in its place, the error
// on stderr with its line number, exit 1.
TEST(CliTasks, BadLineBetweenTwoGoodOnesIsAnErrorForThatLineOnly) {
  struct Case {
    std::vector<std::string> args;
    std::string good1, bad, good2, message;
  };
  const std::string qa_good = R"({"question": "Who?", "context": "Wolfgang lives here."})";
  const std::vector<Case> cases = {
      {{"classify", "--model", kSentiment, "--input-format", "jsonl"}, "\"fine\"", R"(["a", "b", "c"])", R"(["a", "b"])",
       "expected a JSON string, a pair [text, text_pair]"},
      {{"classify", "--model", kSentiment}, "fine", "bad \xff byte", "also fine", "invalid UTF-8 at byte 4"},
      {{"zero-shot", "--model", kNli, "--labels", "a,b", "--input-format", "jsonl"}, "\"fine\"",
       R"({"sequence": "x", "candidate_labels": []})", R"({"sequence": "y", "candidate_labels": "c, d"})",
       "the candidate label list is empty"},
      {{"zero-shot", "--model", kNli, "--labels", "a,b"}, "fine", "", "also fine", "the text is empty"},
      {{"rerank", "--model", kReranker, "--pairs"}, R"(["q", "a"])", R"(["q"])", R"(["q", "b"])",
       "expected a pair [a, b] of two JSON strings"},
      {{"ner", "--model", kNer}, "Angela", "caf\xc3 bad", "Merkel", "invalid UTF-8 at byte 3"},
      {{"qa", "--model", kQa}, qa_good, R"({"question": "Who?", "context": ""})", qa_good, "the context is empty"},
      {{"qa", "--model", kQa, "--max-seq-len", "14"}, qa_good,
       R"({"question": "Who is it, who is it, who is it?", "context": "Wolfgang lives here."})", qa_good,
       "the question has 12 tokens: with max_seq_len 14 no room is left for the context"},
  };
  for (const Case& c : cases) {
    auto args = c.args;
    args.push_back("--json");
    const Result r = run(args, c.good1 + "\n" + c.bad + "\n" + c.good2 + "\n");
    const std::string what = c.args[0] + " " + c.bad;
    EXPECT_EQ(r.status, 1) << what << ": " << r.err;
    const auto out = lines_of(r.out);
    ASSERT_EQ(out.size(), 3u) << what << ": " << r.out;
    EXPECT_FALSE(json::parse(out[0]).contains("error")) << what << ": " << out[0];
    EXPECT_TRUE(json::parse(out[1]).contains("error")) << what << ": " << out[1];
    EXPECT_NE(json::parse(out[1]).value("error", "").find(c.message), std::string::npos) << what << ": " << out[1];
    EXPECT_FALSE(json::parse(out[2]).contains("error")) << what << ": " << out[2];
    EXPECT_NE(r.err.find("error: line 2: " + c.message), std::string::npos) << what << ": " << r.err;
    EXPECT_EQ(lines_of(r.err).size(), 1u) << what << ": " << r.err;
  }
  // rerank ranks every good document and leaves the bad one out (corpus_id counts input lines).
  const Result r = run({"rerank", "--model", kReranker, "--json", "--query", "q"}, "a\nbad \xff\nb\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("error: line 2: invalid UTF-8 at byte 4"), std::string::npos) << r.err;
  std::set<size_t> ids;
  for (const auto& d : json::parse(r.out)) ids.insert(d["corpus_id"].get<size_t>());
  EXPECT_EQ(ids, (std::set<size_t>{0, 2}));
}

TEST(CliTasks, ModelWithoutTheHeadIsAnErrorBeforeAnyInput) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"classify"}, "no sequence classification head"},
      {{"zero-shot", "--labels", "a,b"}, "no sequence classification head"},
      {{"rerank", "--query", "q"}, "no sequence classification head"},
      {{"ner"}, "no token classification head"},
      {{"qa"}, "no question answering head"},
  };
  for (const auto& [args, message] : cases) {
    std::vector<std::string> a = args;
    a.insert(a.begin() + 1, {"--model", kTiny, "--json"});
    const Result r = run(a, "some input\n");
    EXPECT_EQ(r.status, 1) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("error: " + kTiny + ": the model has " + message), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << args[0];
    EXPECT_EQ(r.err.find("line 1"), std::string::npos) << r.err;
  }
  // zero-shot without an "entailment" label takes the last one, with a warning (as transformers).
  const Result r = run({"zero-shot", "--model", kSentiment, "--labels", "a,b", "--json"}, "x\n");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("warning: " + kSentiment + ": the model's label2id has no label starting with \"entail\""),
            std::string::npos) << r.err;
  EXPECT_NE(r.out.find("\"labels\":["), std::string::npos) << r.out;
}

TEST(CliTasks, UsageErrorsExitWithTwo) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"classify", "--model", kSentiment, "--top-k", "2", "--all", "x"},
           {"classify", "--model", kSentiment, "--function", "relu", "x"},
           {"classify", "--model", kSentiment, "--input-format", "csv", "x"},
           {"zero-shot", "--model", kNli, "x"},
           {"zero-shot", "--model", kNli, "--labels", " , ", "x"},
           {"zero-shot", "--model", kNli, "--labels", "a", "--template", "no field", "x"},
           {"zero-shot", "--model", kNli, "--labels", "a", "--template", "{name}", "x"},
           {"rerank", "--model", kReranker, "x"},
           {"rerank", "--model", kReranker, "--pairs", "--query", "q"},
           {"ner", "--model", kNer, "--max-length", "8", "--stride", "6", "x"},  // (6 text tokens a window)
           {"ner", "--model", kNer, "--aggregation", "median", "x"},
           {"qa", "--model", kQa, "--question", "q"},
           {"qa", "--model", kQa, "--top-k", "0"},
           {"qa", "--model", kQa, "positional"},
           // options whose values the library refuses: checked before any input is read, so the
           // error is one usage error, not one for every input line
           {"qa", "--model", kQa, "--doc-stride", "500"},
           {"ner", "--model", kNer, "--aggregation", "simple", "--stride", "600"},
           {"embed", "--model", kTiny, "--prompt-name", "nope"},
           {"zero-shot", "--model", kNli, "--labels", "a\xff"},
           {"fill-mask", "--model", kTiny, "--targets", "\xff"},
           {"rerank", "--model", kReranker, "--query", "q", "--max-length", "3"}}) {
    const Result r = run(args, "{\"question\": \"q\", \"context\": \"c\"}\nsecond line\n");
    EXPECT_EQ(r.status, 2) << args[0] << " " << args.back() << ": " << r.err;
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
    EXPECT_EQ(r.err.find("line "), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << args[0] << " " << args.back();
  }
  const Result r = run({"rerank", "--model", kReranker, "--query", "q", "--max-length", "3"});
  EXPECT_NE(r.err.find("--max-length"), std::string::npos) << r.err;
  // A --max-seq-len above the model's is no error for an example that fits it (HF reads it whole).
  const Result qa =
      run({"qa", "--model", kQa, "--max-seq-len", "100000", "--json", "--question", "q", "--context", "c"});
  EXPECT_EQ(qa.status, 0) << qa.err;
  EXPECT_NE(qa.out.find("\"answer\""), std::string::npos) << qa.out;
  EXPECT_NE(run({"zero-shot", "--model", kNli, "--labels", "a\xff"}).err.find("--labels: invalid UTF-8 at byte 1"),
            std::string::npos);
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

// NER with an aggregation reads a long text whole, in windows, however short --max-length is.
TEST(CliTasks, NerReadsLongTextsWholeInSmallWindows) {
  const Result whole = run({"ner", "--model", kNer, "--json", "--aggregation", "simple", "--ignore-labels", "",
                            "--max-length", "5", "a b c d e f g h"});
  ASSERT_EQ(whole.status, 0) << whole.err;
  EXPECT_EQ(whole.err.find("only the first"), std::string::npos) << whole.err;
  const auto entities = ordered::parse(whole.out);
  ASSERT_FALSE(entities.empty());
  EXPECT_EQ(entities.back()["end"], 15) << whole.out;  // the last word, "h", is read
}

// Without --dtype, fill-mask (like embed, the task commands and serve) runs in the precision
// roberta::recommended_weight_type() names for this CPU: the same output as that --dtype, and with
// ROBERTA_ISA below AVX512-BF16 the same as fp32. Where the CPU has AVX512-BF16 the test also sees
// that bf16 and fp32 outputs differ, so the comparison can tell them apart.
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
