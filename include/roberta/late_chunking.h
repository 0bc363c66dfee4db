#pragma once
// Late chunking (Jina AI's method): a document is embedded once and each of its chunks gets the
// mean of its own tokens' states, so every chunk's vector has seen the text around it. A
// document longer than the model's window is read in overlapping windows; each token takes its
// state from the window where it has the most context on both sides (BERT's "max context" rule).
// docs/late-chunking.md has the rules in full.
//
//   roberta::Embedder embed = roberta::Embedder::load("models/my-sentence-model");
//   std::vector<roberta::ChunkedText> docs = roberta::late_chunks(embed, texts);  // by sentences
//   docs[0].spans[1]            // {start, end} of the second sentence, in code points
//   docs[0].embeddings.row(1)   // its vector, normalised as the folder's modules say
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "roberta/embedder.h"

namespace roberta {

// [start, end) in code points of the text (Python's str indices, as Encoding::offsets).
struct TextSpan {
  size_t start = 0, end = 0;
  bool operator==(const TextSpan&) const = default;
};

enum class ChunkBy { kSentences, kTokens };
ChunkBy parse_chunk_by(const std::string& name);  // "sentences" | "tokens"

struct LateChunkingOptions {
  // max_length: tokens per window (<s> and </s> included; default the model's max_seq_length);
  // prompt / prompt_name: put at the start of every window, never part of a chunk; normalize;
  // batch_size: windows per forward pass. pooling: mean only (the method's).
  EmbedOptions text{};
  // Document tokens two neighbouring windows share; default a quarter of a window's.
  std::optional<size_t> overlap{};
  // How a document without given spans is cut: sentences, or chunk_tokens tokens each.
  ChunkBy chunk_by = ChunkBy::kSentences;
  // kTokens: tokens per chunk (required). kSentences: consecutive sentences packed into chunks of at
  // most this many tokens (a longer sentence is a chunk alone); 0: one sentence per chunk.
  size_t chunk_tokens = 0;
};

struct ChunkedText {
  std::vector<TextSpan> spans{};  // the chunks, in code points
  Matrix embeddings{};            // (chunks, dimension)
  size_t tokens = 0;              // the document's tokens, <s> </s> and the prompt not counted
  size_t windows = 0;             // forward-pass windows it took
};

// The sentences of a valid UTF-8 text, trimmed of white space: a sentence ends after . ! ? or …
// (and any closing quotes or brackets) followed by white space or the end, or at a blank line.
// A rule, not a model: "Mr. Smith" is two sentences.
std::vector<TextSpan> split_sentences(std::string_view text);

// One document on its way: its windows to run, then their states, then the chunks' vectors.
//   roberta::LateChunks d = roberta::prepare_late_chunks(embed, texts[0]);
//   std::vector<roberta::Matrix> states = embed.run_tokens(d.windows());  // in any batches
//   for (size_t k = 0; k < states.size(); ++k) d.add_window(k, states[k]);
//   roberta::ChunkedText one = d.finish();
class LateChunks {
 public:
  const std::vector<PreparedText>& windows() const { return windows_; }
  // Window k's last hidden states, (its tokens, hidden): Embedder::run_tokens of windows()[k].
  void add_window(size_t k, const Matrix& states);
  // Every window added: the chunks' vectors. Throws Error otherwise.
  ChunkedText finish() const;

 private:
  friend LateChunks prepare_late_chunks(const Embedder&, std::string_view, const LateChunkingOptions&,
                                        const std::vector<TextSpan>*);
  struct Chunk {
    size_t first = 0, last = 0;  // its document tokens lie in [first, last)
  };
  const Embedder* embedder_ = nullptr;
  EmbedOptions text_{};
  size_t prefix_ = 0;                      // window tokens before the document's: <s> and the prompt
  std::vector<TextSpan> spans_;
  std::vector<Chunk> chunks_;
  std::vector<uint8_t> pooled_;            // per document token: 0 when its span is empty
  std::vector<PreparedText> windows_;
  std::vector<size_t> window_start_;       // first document token of each window
  std::vector<size_t> own_first_, own_last_;  // the tokens each window gives its state to
  std::vector<uint8_t> added_;
  std::vector<std::vector<double>> sums_;  // per chunk
  size_t tokens_ = 0;
};

// Tokenizes `text` (as given: not stripped), cuts it into chunks (the given spans, else by
// options.chunk_by) and into windows. Throws Error for a bad document, span or option.
LateChunks prepare_late_chunks(const Embedder& embedder, std::string_view text, const LateChunkingOptions& options = {},
                               const std::vector<TextSpan>* spans = nullptr);

// Every document's chunks, in input order; windows of several documents share forward passes.
// spans: empty, or one entry per text (nullopt: chunked by options). A bad document's Error names
// it (Error::input()).
std::vector<ChunkedText> late_chunks(const Embedder& embedder, std::span<const std::string> texts,
                                     const LateChunkingOptions& options = {},
                                     std::span<const std::optional<std::vector<TextSpan>>> spans = {});

}  // namespace roberta
