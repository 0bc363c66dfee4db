#pragma once
// What the kinds of `roberta embed` share (internal to the CLI): the parsed run, the chunked
// reading of the input and the atomic --output.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "common.h"

namespace roberta::cli {

// A UsageError for a --prompt-name the folder does not have.
void check_prompt_name(const EmbedOptions& options, const SentenceTransformerConfig& config);

// Streams the input in chunks: memory stays bounded whatever the number of lines.
//
// Error policy: unlike fill-mask and tokenize, a bad line (invalid UTF-8, or too long with
// --no-truncate) fails the whole run with "error: line N: ..." (exit 1). Every output row must
// be the embedding of the input line of the same number, and neither a .npy matrix nor a consumer
// reading JSON arrays row by row has room for a placeholder; so there is no answer for the other
// lines. With --output, the partial file is removed. write(chunk, os) embeds a chunk and writes it.
template <class Write>
size_t embed_lines(LineReader& lines, size_t chunk_lines, std::ostream& os, const Write& write) {
  const bool progress = ::isatty(STDERR_FILENO) != 0;
  const auto started = std::chrono::steady_clock::now();
  size_t rows = 0;
  std::vector<std::string> chunk;
  while (lines.next_chunk(chunk, chunk_lines)) {
    std::vector<size_t> truncated;
    try {
      write(chunk, truncated);
    } catch (const Error& err) {
      if (!err.input()) throw;
      throw Error(lines.label(rows + *err.input()) + ": " + err.detail(), err.kind());
    }
    for (size_t i : truncated)
      std::cerr << "warning: " << lines.label(rows + i) << " was truncated to the maximum length\n";
    if (!os) throw Error("write failed", ErrorKind::kIo);
    rows += chunk.size();
    if (progress) {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      std::fprintf(stderr, "\r%zu lines, %.0f lines/s", rows, rows / std::max(secs, 1e-9));
      if (lines.total_bytes() > 0 && lines.bytes_read() > 0)
        std::fprintf(stderr, ", %.0f%%, ETA %.0f s   ", 100.0 * lines.bytes_read() / lines.total_bytes(),
                     secs * (static_cast<double>(lines.total_bytes()) / lines.bytes_read() - 1));
    }
  }
  if (progress) std::fprintf(stderr, "\n");
  return rows;
}

// With --output: written to a temporary file, renamed at the end (nothing left on an error).
template <class Fill>
void to_output(const std::optional<std::string>& output, bool force, const Fill& fill) {
  if (!output) {
    fill(std::cout);
    return;
  }
  write_file_atomically(*output, force, [&](const std::filesystem::path& tmp) {
    std::ofstream os(tmp, std::ios::binary);
    if (!os) throw Error(tmp.string() + ": cannot create file", ErrorKind::kIo);
    fill(os);
    os.close();
    if (!os) throw Error(tmp.string() + ": write failed", ErrorKind::kIo);
  });
}

// What every kind of embed shares: the parsed options, the input, where the output goes.
struct EmbedRun {
  const Args& args;
  std::string format;
  std::optional<std::string> output;
  EmbedOptions options;
  LineReader lines;
  size_t chunk_lines;
};

int embed_late_chunking(EmbedRun& run);  // embed_late.cpp

}  // namespace roberta::cli
