// roberta embed: one sentence embedding per input line, streamed in chunks.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "common.h"
#include "roberta/dev/npy.h"

namespace roberta::cli {
namespace {

void write_jsonl_rows(std::ostream& os, const Matrix& e) {
  std::string text;
  char buf[32];
  for (size_t r = 0; r < e.rows; ++r) {
    text += '[';
    for (size_t c = 0; c < e.cols; ++c) {
      const int n = std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(e.row(r)[c]));
      if (c) text += ',';
      text.append(buf, static_cast<size_t>(n));
    }
    text += "]\n";
  }
  os << text;
}

}  // namespace

int run_embed(const Args& args) {
  const std::string format = args.get("format").value_or("jsonl");
  if (format != "jsonl" && format != "npy") throw UsageError("--format must be jsonl or npy");
  const std::optional<std::string> output = args.get("output");
  if (format == "npy" && !output) throw UsageError("--format npy needs --output FILE");
  if (args.positional().size() > 1) throw UsageError("at most one input FILE");
  if (args.flag("normalize") && args.flag("no-normalize")) throw UsageError("--normalize and --no-normalize conflict");
  EmbedOptions options;
  if (auto p = args.get("pooling")) {
    try {
      options.pooling = parse_pooling(*p);
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
  }
  if (args.flag("normalize")) options.normalize = true;
  if (args.flag("no-normalize")) options.normalize = false;
  if (auto n = args.integer("batch-size", 1, 1'000'000)) options.batch_size = static_cast<size_t>(*n);
  if (auto n = args.integer("max-length", 3, 1'000'000)) options.max_length = static_cast<size_t>(*n);
  options.truncate = !args.flag("no-truncate");
  if (args.get("prompt") && args.get("prompt-name")) throw UsageError("--prompt and --prompt-name conflict");
  options.prompt = args.get("prompt");
  options.prompt_name = args.get("prompt-name");
  if (output) check_can_write(*output, args.flag("force"));

  LineReader lines = args.positional().empty() ? LineReader::from_stdin() : LineReader::from_file(args.positional()[0]);
  const Embedder embedder = Embedder::load(model_dir(args), load_options(args, "auto"));
  if (options.prompt_name && !embedder.config().prompts.count(*options.prompt_name)) {
    std::string names;
    for (const auto& [name, text] : embedder.config().prompts) names += (names.empty() ? "" : ", ") + name;
    throw UsageError("--prompt-name: \"" + *options.prompt_name + "\" is not one of the model's prompts (" +
                     (names.empty() ? "it has none" : names) + ")");
  }
  const size_t dim = embedder.dimension();

  // Streams the input in chunks: memory stays bounded whatever the number of lines.
  //
  // Error policy: unlike fill-mask and tokenize, a bad line (invalid UTF-8, or too long with
  // --no-truncate) fails the whole run with "error: line N: ..." (exit 1). Every output row must
  // be the embedding of the input line of the same number, and neither a .npy matrix nor a consumer
  // reading JSON arrays row by row has room for a placeholder; so there is no answer for the other
  // lines. With --output, the partial file is removed.
  const size_t chunk_lines = std::max<size_t>(4096, options.batch_size * 16);
  const bool progress = ::isatty(STDERR_FILENO) != 0;
  const auto started = std::chrono::steady_clock::now();
  const auto embed_all = [&](std::ostream& os, bool npy) {
    size_t rows = 0;
    std::vector<std::string> chunk;
    while (lines.next_chunk(chunk, chunk_lines)) {
      std::vector<size_t> truncated;
      Matrix e;
      try {
        e = embedder(chunk, options, &truncated);
      } catch (const Error& err) {
        if (!err.input()) throw;
        throw Error(lines.label(rows + *err.input()) + ": " + err.detail(), err.kind());
      }
      for (size_t i : truncated)
        std::cerr << "warning: " << lines.label(rows + i) << " was truncated to the maximum length\n";
      if (npy)
        os.write(reinterpret_cast<const char*>(e.data.data()), static_cast<std::streamsize>(e.data.size() * sizeof(float)));
      else
        write_jsonl_rows(os, e);
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
  };
  if (!output) {
    embed_all(std::cout, false);
    return 0;
  }
  write_file_atomically(*output, args.flag("force"), [&](const std::filesystem::path& tmp) {
    std::ofstream os(tmp, std::ios::binary);
    if (!os) throw Error(tmp.string() + ": cannot create file", ErrorKind::kIo);
    if (format == "npy") {
      // The row count is known only at the end: write a placeholder header, then patch it.
      write_npy_header(os, "<f4", {0, static_cast<int64_t>(dim)});
      const size_t rows = embed_all(os, true);
      os.seekp(0);
      write_npy_header(os, "<f4", {static_cast<int64_t>(rows), static_cast<int64_t>(dim)});
    } else {
      embed_all(os, false);
    }
    os.close();
    if (!os) throw Error(tmp.string() + ": write failed", ErrorKind::kIo);
  });
  return 0;
}

}  // namespace roberta::cli
