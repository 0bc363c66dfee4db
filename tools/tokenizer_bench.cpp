// roberta-tokenizer-bench: tokenizer throughput on text files, one input per line (as HF's
// tools/bench_hf_tokenizer.js measures it). Usage:
//   roberta-tokenizer-bench --model DIR [--threads N] FILE...
// Prints, per mode, lines, tokens, seconds, tokens/s and MB/s, then one JSON line.
#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli_args.h"
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

}  // namespace

int main(int argc, char** argv) {
  try {
    const roberta::cli::Args args(std::vector<std::string>(argv + 1, argv + argc), {"model", "threads"}, {});
    if (args.positional().empty()) throw roberta::cli::UsageError("give one or more text files");
    const unsigned threads = static_cast<unsigned>(args.integer("threads", 1, 1024).value_or(std::thread::hardware_concurrency()));
    const roberta::Tokenizer tok = roberta::Tokenizer::from_dir(args.require("model"));
    size_t bytes = 0;
    std::vector<std::string> lines;
    for (const auto& f : args.positional()) {
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
  } catch (const roberta::cli::UsageError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
