// roberta embed: one sentence embedding per input line (dense, or sparse with --sparse), streamed
// in chunks.
#include "embed.h"
#include "roberta/dev/npy.h"
#include "roberta/m3_embedder.h"
#include "roberta/quantization.h"
#include "roberta/sparse_encoder.h"

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

// TEI's /embed_sparse form: [{"index":i,"value":w},...], ids ascending.
void write_jsonl_sparse(std::ostream& os, std::span<const SparseVector> rows) {
  std::string text;
  char buf[64];
  for (const SparseVector& v : rows) {
    text += '[';
    for (size_t i = 0; i < v.indices.size(); ++i) {
      const int n = std::snprintf(buf, sizeof buf, "%s{\"index\":%d,\"value\":%.9g}", i ? "," : "", v.indices[i],
                                  static_cast<double>(v.values[i]));
      text.append(buf, static_cast<size_t>(n));
    }
    text += "]\n";
  }
  os << text;
}

// FlagEmbedding's keys, one JSON object per text: "dense_vecs" [...], "lexical_weights"
// {"id": weight} (ids ascending), "colbert_vecs" [[...], ...]; the outputs asked for only.
void write_jsonl_m3(std::ostream& os, const M3Output& out, size_t texts) {
  std::string text;
  char buf[32];
  const auto floats = [&](const float* v, size_t n) {
    text += '[';
    for (size_t i = 0; i < n; ++i)
      text.append(buf, static_cast<size_t>(std::snprintf(buf, sizeof buf, "%s%.9g", i ? "," : "", static_cast<double>(v[i]))));
    text += ']';
  };
  for (size_t t = 0; t < texts; ++t) {
    const char* sep = "{";
    if (out.dense.rows) text += sep, text += "\"dense_vecs\":", floats(out.dense.row(t), out.dense.cols), sep = ",";
    if (!out.lexical.empty()) {
      text += sep, text += "\"lexical_weights\":{", sep = ",";
      const SparseVector& v = out.lexical[t];
      for (size_t i = 0; i < v.indices.size(); ++i)
        text.append(buf, static_cast<size_t>(std::snprintf(buf, sizeof buf, "%s\"%d\":%.9g", i ? "," : "", v.indices[i],
                                                           static_cast<double>(v.values[i]))));
      text += '}';
    }
    if (!out.colbert.empty()) {
      text += sep, text += "\"colbert_vecs\":[";
      for (size_t r = 0; r < out.colbert[t].rows; ++r) {
        if (r) text += ',';
        floats(out.colbert[t].row(r), out.colbert[t].cols);
      }
      text += ']';
    }
    text += "}\n";
  }
  os << text;
}

int embed_sparse(EmbedRun& run) {
  const Args& args = run.args;
  if (run.format != "jsonl") throw UsageError("--sparse writes JSON lines: --format npy does not apply");
  if (args.get("pooling") || args.flag("normalize") || args.flag("no-normalize"))
    throw UsageError("--sparse pools by the folder's SpladePooling: --pooling and --normalize do not apply");
  SparseOptions sparse{.text = run.options};
  if (auto k = args.integer("max-active-dims", 1, 1'000'000'000)) sparse.max_active_dims = static_cast<size_t>(*k);
  const SparseEncoder encoder = SparseEncoder::load(model_dir(args), load_options(args, "auto"));
  check_prompt_name(run.options, encoder.text_preparer().config());
  to_output(run.output, args.flag("force"), [&](std::ostream& os) {
    embed_lines(run.lines, run.chunk_lines, os, [&](std::span<const std::string> chunk, std::vector<size_t>& truncated) {
      write_jsonl_sparse(os, encoder(chunk, sparse, &truncated));
    });
  });
  return 0;
}

int embed_m3(EmbedRun& run) {
  const Args& args = run.args;
  if (run.format != "jsonl") throw UsageError("--bge-m3 writes JSON lines: --format npy does not apply");
  for (const char* other : {"pooling", "prompt", "prompt-name", "max-active-dims", "precision"})
    if (args.get(other)) throw UsageError(std::string("--") + other + " does not apply to --bge-m3");
  if (args.flag("normalize")) throw UsageError("--bge-m3 normalises by default: --no-normalize turns it off");
  M3Options m3{.batch_size = run.options.batch_size};
  m3.normalize = !args.flag("no-normalize");
  if (auto n = args.integer("max-length", 3, 1'000'000)) m3.max_length = static_cast<size_t>(*n);
  if (auto n = args.integer("truncate-dim", 1, 1'000'000)) m3.truncate_dim = static_cast<size_t>(*n);
  m3.dense = m3.sparse = m3.colbert = false;
  for (const std::string& o : parse_candidate_labels(args.get("m3-outputs").value_or("dense,sparse,colbert"))) {
    if (o == "dense") m3.dense = true;
    else if (o == "sparse") m3.sparse = true;
    else if (o == "colbert") m3.colbert = true;
    else throw UsageError("--m3-outputs: \"" + o + "\" is not dense, sparse or colbert");
  }
  if (!m3.dense && !m3.sparse && !m3.colbert) throw UsageError("--m3-outputs needs one of dense, sparse, colbert");
  if (!run.options.truncate) throw UsageError("--no-truncate does not apply to --bge-m3 (FlagEmbedding truncates)");
  const M3Embedder encoder = M3Embedder::load(model_dir(args), load_options(args, "auto"));
  to_output(run.output, args.flag("force"), [&](std::ostream& os) {
    embed_lines(run.lines, run.chunk_lines, os, [&](std::span<const std::string> chunk, std::vector<size_t>& truncated) {
      write_jsonl_m3(os, encoder(chunk, m3, &truncated), chunk.size());
    });
  });
  return 0;
}

// Rows of q as JSON lines of integers, or as npy data.
void write_quantized(std::ostream& os, const QuantizedMatrix& q, bool npy) {
  if (npy) {
    os.write(reinterpret_cast<const char*>(q.data.data()), static_cast<std::streamsize>(q.data.size()));
    return;
  }
  std::string text;
  for (size_t r = 0; r < q.rows; ++r) {
    text += '[';
    for (size_t c = 0; c < q.cols; ++c) {
      if (c) text += ',';
      const uint8_t b = q.row(r)[c];
      text += std::to_string(is_signed(q.precision) ? static_cast<int>(static_cast<int8_t>(b)) : static_cast<int>(b));
    }
    text += "]\n";
  }
  os << text;
}

// Dense embeddings, float32 or quantized (--precision). int8 / uint8 without
// --calibration-embeddings take their buckets from all the embeddings, as sentence-transformers'
// encode(precision=...) does from the whole call: those are kept until the input ends.
int embed_dense(EmbedRun& run) {
  const Args& args = run.args;
  const Precision precision = [&] {
    try {
      return parse_precision(args.get("precision").value_or("float32"));
    } catch (const Error& e) {
      throw UsageError(std::string("--precision: ") + e.what());
    }
  }();
  std::optional<QuantizeRanges> ranges;
  if (auto file = args.get("calibration-embeddings")) {
    if (precision != Precision::kInt8 && precision != Precision::kUint8)
      throw UsageError("--calibration-embeddings goes with --precision int8 or uint8");
    const NpyArray a = read_npy(*file);
    if (a.shape.size() != 2 || a.shape[0] < 1) throw Error(*file + ": expected a (embeddings, dimensions) array");
    Matrix m(static_cast<size_t>(a.shape[0]), static_cast<size_t>(a.shape[1]));
    m.data = a.as_float();
    ranges = QuantizeRanges::of(m);
  }
  const bool whole = (precision == Precision::kInt8 || precision == Precision::kUint8) && !ranges;
  const Embedder embedder = Embedder::load(model_dir(args), load_options(args, "auto"));
  check_prompt_name(run.options, embedder.config());
  const size_t dim = embedder.dimension();
  if (ranges && ranges->low.size() != dim)
    throw Error("--calibration-embeddings has " + std::to_string(ranges->low.size()) + " dimensions; the model's " +
                "embeddings have " + std::to_string(dim));
  const size_t cols = precision == Precision::kBinary || precision == Precision::kUbinary ? (dim + 7) / 8 : dim;
  Matrix all(0, dim);  // (whole: every embedding, quantized at the end)
  const auto write_rows = [&](std::ostream& os, bool npy) {
    return embed_lines(run.lines, run.chunk_lines, os, [&](std::span<const std::string> chunk, std::vector<size_t>& truncated) {
      const Matrix e = embedder(chunk, run.options, &truncated);
      if (whole) {
        all.data.insert(all.data.end(), e.data.begin(), e.data.end()), all.rows += e.rows;
      } else if (precision != Precision::kFloat32) {
        write_quantized(os, quantize_embeddings(e, precision, ranges ? &*ranges : nullptr), npy);
      } else if (npy) {
        os.write(reinterpret_cast<const char*>(e.data.data()), static_cast<std::streamsize>(e.data.size() * sizeof(float)));
      } else {
        write_jsonl_rows(os, e);
      }
    });
  };
  const char* dtype = precision == Precision::kFloat32 ? "<f4" : is_signed(precision) ? "|i1" : "|u1";
  to_output(run.output, args.flag("force"), [&](std::ostream& os) {
    const bool npy = run.format == "npy";
    // The row count is known only at the end: a placeholder header, patched then.
    if (npy) write_npy_header(os, dtype, {0, static_cast<int64_t>(cols)});
    const size_t rows = write_rows(os, npy);
    if (whole) write_quantized(os, quantize_embeddings(all, precision), npy);
    if (!npy) return;
    os.seekp(0);
    write_npy_header(os, dtype, {static_cast<int64_t>(rows), static_cast<int64_t>(cols)});
  });
  return 0;
}

}  // namespace

void check_prompt_name(const EmbedOptions& options, const SentenceTransformerConfig& config) {
  if (!options.prompt_name || config.prompts.count(*options.prompt_name)) return;
  std::string names;
  for (const auto& [name, text] : config.prompts) names += (names.empty() ? "" : ", ") + name;
  throw UsageError("--prompt-name: \"" + *options.prompt_name + "\" is not one of the model's prompts (" +
                   (names.empty() ? "it has none" : names) + ")");
}

int run_embed(const Args& args) {
  const std::string format = args.get("format").value_or("jsonl");
  const std::optional<std::string> output = args.get("output");
  if (format != "jsonl" && format != "npy") throw UsageError("--format must be jsonl or npy");
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
  if (args.flag("sparse") + args.flag("bge-m3") + args.flag("late-chunking") > 1)
    throw UsageError("--sparse, --bge-m3 and --late-chunking conflict");
  if (!args.flag("late-chunking"))
    for (const char* o : {"chunk-by", "chunk-tokens", "overlap"})
      if (args.get(o)) throw UsageError(std::string("--") + o + " goes with --late-chunking");
  if (!args.flag("sparse") && args.get("max-active-dims")) throw UsageError("--max-active-dims goes with --sparse");
  if (!args.flag("bge-m3") && (args.get("m3-outputs") || args.get("truncate-dim")))
    throw UsageError("--m3-outputs and --truncate-dim go with --bge-m3");
  if (output) check_can_write(*output, args.flag("force"));
  EmbedRun run{.args = args,
               .format = format,
               .output = output,
               .options = options,
               .lines = args.positional().empty() ? LineReader::from_stdin() : LineReader::from_file(args.positional()[0]),
               .chunk_lines = std::max<size_t>(4096, options.batch_size * 16)};
  if (args.flag("late-chunking")) return embed_late_chunking(run);
  if (args.flag("sparse")) return embed_sparse(run);
  if (args.flag("bge-m3")) return embed_m3(run);
  return embed_dense(run);
}

}  // namespace roberta::cli
