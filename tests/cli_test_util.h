#pragma once
// Shared by the CLI test files (cli_test.cpp, cli_options_test.cpp, cli_tasks_test.cpp): the
// fixture models and texts, and running the `roberta` program as a user would run it.
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace roberta::test::cli {

inline const std::string kBinary = ROBERTA_BINARY;
inline const std::string kFixtures = ROBERTA_CLI_FIXTURES;
inline const std::string kTexts = ROBERTA_CLI_TEXTS;
inline const std::string kTiny = kFixtures + "/tiny";
inline const std::string kSentiment = kFixtures + "/sentiment";  // a sequence classification head

struct Result {
  int status = -1;
  std::string out, err;
};

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs the binary with `args` exactly, feeding `input` on stdin; `env` ("NAME=value", or several
// separated by a space: a new one starts at each space followed by NAME=, so a value may hold
// spaces, e.g. a path) is added to its environment.
inline Result run_as_given(const std::vector<std::string>& args, const std::string& input = "",
                           const std::string& env = "") {
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
inline bool dtype_defaults_to_auto(const std::string& command) {
  return std::set<std::string>{"fill-mask", "embed", "classify", "zero-shot", "ner", "qa", "rerank", "serve"}.count(
      command);
}

inline Result run(std::vector<std::string> args, const std::string& input = "", const std::string& env = "") {
  if (!args.empty() && dtype_defaults_to_auto(args[0]) && std::find(args.begin(), args.end(), "--dtype") == args.end())
    args.insert(args.begin() + 1, {"--dtype", "fp32"});
  return run_as_given(args, input, env);
}

inline std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The lines of tests/cli/texts.txt (the texts of the PyTorch reference dump).
inline std::vector<std::string> texts() {
  std::ifstream in(kTexts);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace roberta::test::cli
