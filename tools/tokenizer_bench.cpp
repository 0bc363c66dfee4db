// roberta-tokenizer-bench: tokenizer throughput on text files, one input per line (as HF's
// tools/bench_hf_tokenizer.js measures it). Usage:
//   roberta-tokenizer-bench --model DIR [--threads N] FILE...
// Prints, per mode, lines, tokens, seconds, tokens/s and MB/s, then one JSON line.
#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "roberta/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> read_lines(const std::string& path, size_t& bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw roberta::Error(path + ": cannot open file");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    bytes += line.size() + 1;
    lines.push_back(std::move(line));
  }
  return lines;
}

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Options {
  std::string model;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::string> files;
};

// --model DIR, --threads N (or --name=VALUE), then the text files. This tool links only the
// tokenizer library, so it has its own two-option parser rather than the roberta CLI's.
Options parse(int argc, char** argv) {
  Options o;
  bool has_model = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i], value;
    if (!a.starts_with("--")) {
      o.files.push_back(a);
      continue;
    }
    if (const size_t eq = a.find('='); eq != std::string::npos) {
      value = a.substr(eq + 1), a = a.substr(0, eq);
    } else if (a == "--model" || a == "--threads") {
      if (i + 1 >= argc) throw UsageError("option " + a + " needs a value");
      value = argv[++i];
    }
    if (a == "--model") {
      o.model = value, has_model = true;
    } else if (a == "--threads") {
      size_t used = 0;
      long n = 0;
      try {
        n = std::stol(value, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (value.empty() || used != value.size() || n < 1 || n > 1024)
        throw UsageError("--threads must be an integer in [1, 1024], got \"" + value + "\"");
      o.threads = static_cast<unsigned>(n);
    } else {
      throw UsageError("unknown option " + a);
    }
  }
  if (!has_model) throw UsageError("missing required option --model");
  if (o.files.empty()) throw UsageError("give one or more text files");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options options = parse(argc, argv);
    const unsigned threads = options.threads;
    const roberta::Tokenizer tok = roberta::Tokenizer::from_dir(options.model);
    size_t bytes = 0;
    std::vector<std::string> lines;
    for (const auto& f : options.files) {
      auto more = read_lines(f, bytes);
      lines.insert(lines.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
    }
    roberta::EncodeOptions no_specials;
    no_specials.add_special_tokens = false;
    nlohmann::ordered_json summary = {{"lines", lines.size()}, {"bytes", bytes}};
    const auto report = [&](const char* mode, size_t tokens, double seconds) {
      std::printf("%-34s %9zu lines %10zu tokens %7.2f s %11.0f tokens/s %6.2f MB/s\n", mode, lines.size(), tokens, seconds,
                  tokens / seconds, bytes / seconds / 1e6);
      summary[mode] = {{"tokens", tokens}, {"seconds", seconds}, {"tokens_per_s", tokens / seconds}};
    };
    {  // full encodings (ids, tokens, offsets), one line at a time, as HF's encode gives them
      size_t tokens = 0;
      const auto t0 = Clock::now();
      for (const auto& line : lines) tokens += tok.encode(line, no_specials).size();
      report("encode, 1 thread", tokens, std::chrono::duration<double>(Clock::now() - t0).count());
    }
    {  // ids only
      size_t tokens = 0;
      std::vector<int32_t> ids;
      const auto t0 = Clock::now();
      for (const auto& line : lines) {
        ids.clear();
        tok.encode_ids(line, ids);
        tokens += ids.size();
      }
      report("encode_ids, 1 thread", tokens, std::chrono::duration<double>(Clock::now() - t0).count());
    }
    {  // full encodings in batches of 10000 on `threads` threads
      size_t tokens = 0;
      const auto t0 = Clock::now();
      for (size_t start = 0; start < lines.size(); start += 10000) {
        const size_t end = std::min(lines.size(), start + 10000);
        const auto batch = tok.encode_batch(std::span(lines).subspan(start, end - start), no_specials, threads);
        for (const auto& e : batch) tokens += e.size();
      }
      const std::string mode = "encode_batch, " + std::to_string(threads) + " threads";
      report(mode.c_str(), tokens, std::chrono::duration<double>(Clock::now() - t0).count());
    }
    std::cout << summary.dump() << "\n";
    return 0;
  } catch (const UsageError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
