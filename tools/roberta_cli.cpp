// roberta: the command-line front end (tokenize, fill-mask, embed, info, dump, compare).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_args.h"
#include "roberta/pipelines.h"
#include "roberta/roberta.h"
#include "roberta/dev/npy.h"

namespace roberta::cli {
namespace {

using json = nlohmann::ordered_json;

constexpr const char* kUsage = R"(usage: roberta COMMAND [options]

Commands:
  fill-mask   predict the tokens at each <mask> of a text
  embed       one sentence embedding per input line
  tokenize    token ids, tokens and offsets as JSON lines
  info        what a model folder holds
  dump        write the engine's outputs for given input ids as .npy files
  compare     compare the engine with a PyTorch reference dump, layer by layer
  bench       time forward passes (median ms, tokens/s, GFLOP/s, peak memory)
  eval-mlm    masked-LM top-1/top-5 accuracy on prepared masked inputs

Every command takes --model DIR (a Hugging Face model folder; default: $ROBERTA_MODEL, else the
demo model this program was built with) and --threads N; the ones that run the model take
--dtype fp32|bf16 (bf16: the encoder's matrices in bfloat16, opt-in).
Run `roberta COMMAND --help` for the options of a command.
Exit status: 0 success, 1 error in the input or the model, 2 usage error.
)";

// --model, else $ROBERTA_MODEL, else the demo model of the source tree this program was built from.
std::string model_dir(const Args& args) {
  if (auto dir = args.get("model")) return *dir;
  if (const char* env = std::getenv("ROBERTA_MODEL"); env && *env) return env;
  if (std::filesystem::is_directory(ROBERTA_DEFAULT_MODEL)) return ROBERTA_DEFAULT_MODEL;
  throw UsageError(std::string("missing --model DIR (ROBERTA_MODEL is not set and the demo model ") +
                   ROBERTA_DEFAULT_MODEL + " is not there)");
}

// Inputs one at a time: the given texts, or else stdin lines (without "\n" / "\r\n"), so that
// memory does not grow with the number of lines.
class LineSource {
 public:
  LineSource(std::vector<std::string> texts, bool from_stdin) : texts_(std::move(texts)), stdin_(from_stdin) {}
  bool next(std::string& line) {
    if (stdin_) {
      if (!std::getline(std::cin, line)) return false;
      if (!line.empty() && line.back() == '\r') line.pop_back();
    } else {
      if (count_ >= texts_.size()) return false;
      line = texts_[count_];
    }
    ++count_;
    return true;
  }
  size_t count() const { return count_; }

 private:
  std::vector<std::string> texts_;
  bool stdin_;
  size_t count_ = 0;
};

// --dtype fp32|bf16: how the encoder's matrices are held.
LoadOptions load_options(const Args& args) {
  LoadOptions o;
  const std::string dtype = args.get("dtype").value_or("fp32");
  if (dtype == "bf16")
    o.weights = WeightType::kBF16;
  else if (dtype != "fp32")
    throw UsageError("--dtype must be fp32 or bf16");
  return o;
}

void apply_threads(const Args& args) {
  if (auto n = args.integer("threads", 1, 1024)) set_num_threads(static_cast<unsigned>(*n));
}

json offsets_json(const std::vector<Offsets>& offsets) {
  json out = json::array();
  for (const auto& [s, e] : offsets) out.push_back({s, e});
  return out;
}

// Writes `write(stream)` to `path` through a temporary file renamed at the end, so an
// interrupted run never leaves a half-written file under the requested name.
template <class Write>
void write_file_atomically(const std::filesystem::path& path, bool force, Write&& write) {
  std::error_code ec;
  if (!force && std::filesystem::exists(path, ec))
    throw Error(path.string() + ": already exists (use --force to overwrite)");
  const std::filesystem::path tmp = path.string() + ".tmp" + std::to_string(::getpid());
  try {
    write(tmp);
  } catch (...) {
    std::filesystem::remove(tmp, ec);
    throw;
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw Error(path.string() + ": cannot rename the temporary file into place");
  }
}

// ---------------------------------------------------------------- tokenize

int cmd_tokenize(const std::vector<std::string>& argv) {
  const Args args(argv, {"model", "text", "input-format", "max-length", "threads"},
                  {"no-special-tokens", "replace-invalid-utf8", "byte-offsets", "help"});
  if (args.flag("help")) {
    std::cout << R"(usage: roberta tokenize [--model DIR] [--text TEXT] [options] < lines

Writes one JSON object per input: {"ids":[...],"tokens":[...],"offsets":[[s,e],...]}
(offsets in code points, as Hugging Face gives them).
  --text TEXT              tokenize TEXT instead of reading stdin
  --input-format text|jsonl  jsonl: each line is a JSON string, or [a, b] for a pair
  --no-special-tokens      leave out <s> and </s>
  --max-length N           truncate to N tokens (pairs: longest first)
  --byte-offsets           also write "byte_offsets"
  --replace-invalid-utf8   replace invalid UTF-8 by U+FFFD instead of failing
)";
    return 0;
  }
  const Tokenizer tok = Tokenizer::from_dir(model_dir(args));
  EncodeOptions options;
  options.add_special_tokens = !args.flag("no-special-tokens");
  if (auto n = args.integer("max-length", 1, 1'000'000'000)) options.max_length = static_cast<size_t>(*n);
  if (args.flag("replace-invalid-utf8")) options.invalid_utf8 = InvalidUtf8::kReplace;
  const std::string format = args.get("input-format").value_or("text");
  if (format != "text" && format != "jsonl") throw UsageError("--input-format must be text or jsonl");
  if (!args.positional().empty()) throw UsageError("unexpected argument \"" + args.positional()[0] + "\"");
  int status = 0;
  const std::optional<std::string> text = args.get("text");
  LineSource lines(text ? std::vector<std::string>{*text} : std::vector<std::string>{}, !text);
  for (std::string line; lines.next(line);) {
    const size_t i = lines.count() - 1;
    try {
      Encoding e;
      if (format == "jsonl") {
        json input;
        try {
          input = json::parse(line);
        } catch (const json::parse_error& err) {
          throw Error("invalid JSON at byte " + std::to_string(err.byte));
        }
        if (input.is_string()) {
          e = tok.encode(input.get<std::string>(), options);
        } else if (input.is_array() && input.size() == 2 && input[0].is_string() && input[1].is_string()) {
          e = tok.encode_pair(input[0].get<std::string>(), input[1].get<std::string>(), options);
        } else {
          throw Error("expected a JSON string or a pair [a, b] of strings");
        }
      } else {
        e = tok.encode(line, options);
      }
      json out = {{"ids", e.ids}, {"tokens", e.tokens}, {"offsets", offsets_json(e.offsets)}};
      if (args.flag("byte-offsets")) out["byte_offsets"] = offsets_json(e.byte_offsets);
      std::cout << out.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
    } catch (const Error& err) {
      std::cerr << "error: line " << i + 1 << ": " << err.what() << "\n";
      std::cout << json{{"error", err.what()}}.dump() << "\n";
      status = 1;
    }
  }
  return status;
}

// ---------------------------------------------------------------- fill-mask

int cmd_fill_mask(const std::vector<std::string>& argv) {
  const Args args(argv, {"model", "top-k", "targets", "threads", "dtype"}, {"json", "help"});
  if (args.flag("help")) {
    std::cout << R"(usage: roberta fill-mask [--model DIR] [--top-k 5] [--targets w1,w2] [--json] [TEXT ...]

Predicts the token at each <mask> of each text (texts from the arguments, or one per line from
stdin), like Hugging Face's pipeline("fill-mask"). Scores are softmax probabilities.
  --top-k K        candidates per mask (default 5)
  --targets LIST   only score these comma-separated words
  --json           one JSON line per text: the candidate list, or one list per mask
)";
    return 0;
  }
  apply_threads(args);
  const FillMask fill = FillMask::load(model_dir(args), load_options(args));
  FillMaskOptions options;
  if (auto k = args.integer("top-k", 1, 1'000'000)) options.top_k = static_cast<size_t>(*k);
  if (auto t = args.get("targets")) {
    std::stringstream ss(*t);
    for (std::string w; std::getline(ss, w, ',');)
      if (!w.empty()) options.targets.push_back(w);
    if (options.targets.empty()) throw UsageError("--targets needs at least one word");
    std::vector<std::string> notes;
    fill.target_ids(options.targets, &notes);
    for (const auto& n : notes) std::cerr << "warning: " << n << "\n";
  }
  LineSource texts(args.positional(), args.positional().empty());
  int status = 0;
  for (std::string text; texts.next(text);) {
    const size_t i = texts.count() - 1;
    const std::string where = args.positional().empty() ? "line " + std::to_string(i + 1) : "text " + std::to_string(i + 1);
    try {
      const auto results = fill(text, options);
      if (args.flag("json")) {
        json lists = json::array();
        for (const auto& list : results) {
          json items = json::array();
          for (const auto& c : list)
            items.push_back({{"score", c.score}, {"token", c.token}, {"token_str", c.token_str}, {"sequence", c.sequence}});
          lists.push_back(items);
        }
        std::cout << (results.size() == 1 ? lists[0] : lists).dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
      } else {
        std::cout << text << "\n";
        for (size_t m = 0; m < results.size(); ++m) {
          if (results.size() > 1) std::cout << "  mask " << m + 1 << ":\n";
          for (const auto& c : results[m])
            std::cout << "  " << std::fixed << std::setprecision(4) << c.score << "  "
                      << std::left << std::setw(16) << json(c.token_str).dump(-1, ' ', false, json::error_handler_t::replace)
                      << std::right << " " << c.sequence << "\n";
        }
      }
    } catch (const Error& e) {
      std::cerr << "error: " << where << ": " << e.what() << "\n";
      if (args.flag("json")) std::cout << json{{"error", e.what()}}.dump() << "\n";
      status = 1;
    }
  }
  return status;
}

// ---------------------------------------------------------------- embed

int cmd_embed(const std::vector<std::string>& argv) {
  const Args args(argv, {"model", "pooling", "batch-size", "max-length", "format", "output", "threads", "dtype"},
                  {"normalize", "no-normalize", "force", "no-truncate", "help"});
  if (args.flag("help")) {
    std::cout << R"(usage: roberta embed [--model DIR] [options] [FILE]

One embedding per input line (FILE, or stdin), in input order.
  --pooling mean|cls|max|pooler  default: the folder's sentence-transformers 1_Pooling config, else mean
  --normalize / --no-normalize   L2-normalise (default: on if modules.json has a Normalize module)
  --batch-size N                 sequences per forward pass (default 32; inputs are sorted by length)
  --max-length L                 tokens per input incl. <s> </s> (default: the model's maximum)
  --no-truncate                  an over-long input is an error instead of being truncated
  --format jsonl|npy             jsonl (default): one JSON array per line; npy: one float32 matrix
  --output FILE                  write there instead of stdout (never overwrites without --force)
)";
    return 0;
  }
  apply_threads(args);
  const std::string format = args.get("format").value_or("jsonl");
  if (format != "jsonl" && format != "npy") throw UsageError("--format must be jsonl or npy");
  if (format == "npy" && !args.get("output")) throw UsageError("--format npy needs --output FILE");
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
  if (auto out = args.get("output"); out && !args.flag("force") && std::filesystem::exists(*out))
    throw Error(*out + ": already exists (use --force to overwrite)");

  std::ifstream file;
  std::istream* in = &std::cin;
  uint64_t total_bytes = 0;
  if (!args.positional().empty()) {
    const std::string path = args.positional()[0];
    file.open(path, std::ios::binary);
    if (!file) throw Error(path + ": cannot open file");
    in = &file;
    std::error_code ec;
    total_bytes = std::filesystem::file_size(path, ec);
  }
  const Embedder embedder = Embedder::load(model_dir(args), load_options(args));
  const size_t dim = static_cast<size_t>(embedder.model().config().hidden_size);

  // Streams the input in chunks: memory stays bounded whatever the number of lines.
  const size_t chunk_lines = std::max<size_t>(4096, options.batch_size * 16);
  const bool progress = ::isatty(STDERR_FILENO) != 0;
  const auto started = std::chrono::steady_clock::now();
  const auto embed_all = [&](std::ostream& os, bool npy) {
    size_t rows = 0;
    uint64_t bytes_read = 0;
    std::vector<std::string> chunk;
    std::string line;
    bool more = true;
    while (more) {
      chunk.clear();
      while (chunk.size() < chunk_lines && (more = static_cast<bool>(std::getline(*in, line)))) {
        bytes_read += line.size() + 1;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        chunk.push_back(std::move(line));
      }
      if (chunk.empty()) break;
      std::vector<size_t> truncated;
      options.input_label = "line";
      options.first_index = rows + 1;
      const Matrix e = embedder(chunk, options, &truncated);
      for (size_t i : truncated)
        std::cerr << "warning: line " << rows + i + 1 << " was truncated to the maximum length\n";
      if (npy) {
        os.write(reinterpret_cast<const char*>(e.data.data()), static_cast<std::streamsize>(e.data.size() * sizeof(float)));
      } else {
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
      if (!os) throw Error("write failed");
      rows += chunk.size();
      if (progress) {
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        std::fprintf(stderr, "\r%zu lines, %.0f lines/s", rows, rows / std::max(secs, 1e-9));
        if (total_bytes > 0 && bytes_read > 0)
          std::fprintf(stderr, ", %.0f%%, ETA %.0f s   ", 100.0 * bytes_read / total_bytes,
                       secs * (static_cast<double>(total_bytes) / bytes_read - 1));
      }
    }
    if (progress) std::fprintf(stderr, "\n");
    return rows;
  };
  if (auto out = args.get("output")) {
    write_file_atomically(*out, args.flag("force"), [&](const std::filesystem::path& tmp) {
      std::ofstream os(tmp, std::ios::binary);
      if (!os) throw Error(tmp.string() + ": cannot create file");
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
      if (!os) throw Error(tmp.string() + ": write failed");
    });
  } else {
    embed_all(std::cout, false);
  }
  return 0;
}

// ---------------------------------------------------------------- info

int cmd_info(const std::vector<std::string>& argv) {
  const Args args(argv, {"model"}, {"help"});
  if (args.flag("help")) {
    std::cout << "usage: roberta info [--model DIR]\n\nConfig summary, parameter count, dtypes, files and memory.\n";
    return 0;
  }
  const std::filesystem::path dir = model_dir(args);
  const Model model = Model::load(dir);
  const ModelConfig& c = model.config();
  std::cout << "model folder      " << dir.string() << "\n"
            << "model type        " << c.model_type << "\n"
            << "layers            " << c.num_hidden_layers << "\n"
            << "hidden size       " << c.hidden_size << " (" << c.num_attention_heads << " heads of " << c.head_size()
            << ")\n"
            << "intermediate size " << c.intermediate_size << " (" << c.hidden_act << ")\n"
            << "vocabulary        " << c.vocab_size << "\n"
            << "max tokens        " << c.max_sequence_length() << " (max_position_embeddings "
            << c.max_position_embeddings << ")\n"
            << "parameters        " << model.parameter_count() << "\n"
            << "heads             " << (model.has_lm_head() ? "MLM head" : "no MLM head") << ", "
            << (model.has_pooler() ? "pooler" : "no pooler") << "\n"
            << "stored dtypes     " << model.dtype_summary() << "\n"
            << "weight memory     " << std::fixed << std::setprecision(1) << model.weight_bytes() / 1048576.0
            << " MiB (matrices repacked for the GEMM kernel, the rest used in place or converted to fp32)\n";
  for (const auto& f : model.files())
    std::cout << "file              " << f << " (" << std::filesystem::file_size(f) << " bytes)\n";
  try {
    const Tokenizer tok = Tokenizer::from_dir(dir);
    std::cout << "tokenizer         " << tok.vocab_size() << " ids, " << tok.added_tokens().size() << " added tokens"
              << (tok.mask_id() ? ", <mask> = " + std::to_string(*tok.mask_id()) : "") << "\n";
  } catch (const Error& e) {
    std::cout << "tokenizer         none (" << e.what() << ")\n";
  }
  return 0;
}

// ---------------------------------------------------------------- dump / compare

struct PaddedInput {
  std::vector<int64_t> ids, mask;  // (B, L)
  size_t B = 0, L = 0;
};

PaddedInput read_inputs(const std::filesystem::path& ids_path, const std::optional<std::filesystem::path>& mask_path,
                        int32_t pad_id) {
  const NpyArray ids = read_npy(ids_path);
  if (ids.shape.size() != 2) throw Error(ids_path.string() + ": expected a (batch, length) array");
  PaddedInput in;
  in.B = static_cast<size_t>(ids.shape[0]), in.L = static_cast<size_t>(ids.shape[1]);
  in.ids = ids.as_int64();
  if (mask_path) {
    const NpyArray mask = read_npy(*mask_path);
    if (mask.shape != ids.shape) throw Error(mask_path->string() + ": shape differs from the input ids");
    in.mask = mask.as_int64();
    for (size_t i = 0; i < in.mask.size(); ++i)
      if (in.mask[i] != 0 && in.mask[i] != 1)
        throw Error(mask_path->string() + ": element " + std::to_string(i) + " is not 0 or 1");
  } else {
    in.mask.resize(in.ids.size());
    for (size_t i = 0; i < in.ids.size(); ++i) in.mask[i] = in.ids[i] != pad_id;
  }
  for (size_t i = 0; i < in.ids.size(); ++i)
    if (in.ids[i] < 0 || in.ids[i] > INT32_MAX) throw Error(ids_path.string() + ": id at element " + std::to_string(i) + " is out of range");
  return in;
}

// Runs the model on the real (mask = 1) tokens of each row; returns outputs named as in a dump,
// scattered back to (B, L, ...) with zeros at padding.
std::map<std::string, std::pair<std::vector<int64_t>, std::vector<float>>> run_padded(const Model& model,
                                                                                       const PaddedInput& in,
                                                                                       bool logits, bool pooler) {
  Batch batch;
  std::vector<size_t> where;  // flat (b * L + l) of each packed token
  for (size_t b = 0; b < in.B; ++b) {
    for (size_t l = 0; l < in.L; ++l)
      if (in.mask[b * in.L + l]) {
        batch.ids.push_back(static_cast<int32_t>(in.ids[b * in.L + l]));
        where.push_back(b * in.L + l);
      }
    batch.offsets.push_back(batch.ids.size());
  }
  ForwardOptions fo;
  fo.all_hidden_states = true;
  fo.logits = logits;
  fo.pooler = pooler;
  const Outputs out = model.forward(batch, fo);
  std::map<std::string, std::pair<std::vector<int64_t>, std::vector<float>>> result;
  const auto scatter = [&](const Matrix& m, const std::string& name) {
    std::vector<float> full(in.B * in.L * m.cols, 0.0f);
    for (size_t t = 0; t < m.rows; ++t) std::copy_n(m.row(t), m.cols, full.begin() + static_cast<ptrdiff_t>(where[t] * m.cols));
    result[name] = {{static_cast<int64_t>(in.B), static_cast<int64_t>(in.L), static_cast<int64_t>(m.cols)}, std::move(full)};
  };
  for (size_t i = 0; i < out.hidden_states.size(); ++i) scatter(out.hidden_states[i], "hidden_states_" + std::to_string(i));
  if (logits) scatter(out.logits, "logits");
  if (pooler) {
    Matrix p = out.pooler_output;
    result["pooler_output"] = {{static_cast<int64_t>(in.B), static_cast<int64_t>(p.cols)}, p.data};
  }
  return result;
}

int cmd_dump(const std::vector<std::string>& argv) {
  const Args args(argv, {"model", "input-ids", "attention-mask", "out", "threads", "dtype"}, {"force", "help"});
  if (args.flag("help")) {
    std::cout << R"(usage: roberta dump [--model DIR] --input-ids IDS.npy [--attention-mask MASK.npy] --out DIR [--force]

Writes input_ids.npy, attention_mask.npy, hidden_states_0..N.npy (B, L, H), logits.npy (B, L, V)
and pooler_output.npy (B, H) in the format of tools/dump_reference.py. Padding positions are 0.
Without --attention-mask, tokens equal to pad_token_id are padding.
)";
    return 0;
  }
  apply_threads(args);
  const Model model = Model::load(model_dir(args), load_options(args));
  const std::filesystem::path out_dir = args.require("out");
  std::error_code ec;
  if (std::filesystem::exists(out_dir, ec) && !std::filesystem::is_empty(out_dir, ec) && !args.flag("force"))
    throw Error(out_dir.string() + ": exists and is not empty (use --force)");
  const auto mask_path = args.get("attention-mask");
  const PaddedInput in = read_inputs(args.require("input-ids"),
                                     mask_path ? std::optional<std::filesystem::path>(*mask_path) : std::nullopt,
                                     static_cast<int32_t>(model.config().pad_token_id));
  const auto outputs = run_padded(model, in, model.has_lm_head(), model.has_pooler());
  std::filesystem::create_directories(out_dir);
  const std::vector<int64_t> shape{static_cast<int64_t>(in.B), static_cast<int64_t>(in.L)};
  write_npy(out_dir / "input_ids.npy", shape, in.ids);
  write_npy(out_dir / "attention_mask.npy", shape, in.mask);
  for (const auto& [name, tensor] : outputs) write_npy(out_dir / (name + ".npy"), tensor.first, tensor.second);
  std::cerr << "wrote " << outputs.size() + 2 << " files to " << out_dir.string() << "\n";
  return 0;
}

int cmd_compare(const std::vector<std::string>& argv) {
  const Args args(argv, {"model", "reference", "atol", "rtol", "threads", "dtype"}, {"json", "help"});
  if (args.flag("help")) {
    std::cout << R"(usage: roberta compare [--model DIR] --reference DUMPDIR [--atol 1e-4] [--rtol 1e-3] [--json]

Runs the engine on the dump's input_ids/attention_mask and compares every tensor the dump holds
(hidden_states_*, logits, pooler_output) over real (mask = 1) positions. An element passes when
|engine - reference| <= atol + rtol * |reference|. Exit status 0 only if every tensor passes.
)";
    return 0;
  }
  apply_threads(args);
  const double atol = args.number("atol").value_or(1e-4), rtol = args.number("rtol").value_or(1e-3);
  const Model model = Model::load(model_dir(args), load_options(args));
  const std::filesystem::path ref = args.require("reference");
  if (!std::filesystem::is_directory(ref)) throw Error(ref.string() + ": reference dump folder not found");
  const PaddedInput in = read_inputs(ref / "input_ids.npy", ref / "attention_mask.npy",
                                     static_cast<int32_t>(model.config().pad_token_id));
  const bool want_logits = std::filesystem::exists(ref / "logits.npy");
  const bool want_pooler = std::filesystem::exists(ref / "pooler_output.npy");
  if (want_logits && !model.has_lm_head()) throw Error(ref.string() + ": holds logits but the model has no MLM head");
  if (want_pooler && !model.has_pooler()) throw Error(ref.string() + ": holds pooler_output but the model has no pooler");
  const auto outputs = run_padded(model, in, want_logits, want_pooler);

  std::vector<std::string> names;
  for (int64_t i = 0; i <= model.config().num_hidden_layers; ++i) names.push_back("hidden_states_" + std::to_string(i));
  names.push_back("logits");
  names.push_back("pooler_output");
  json rows = json::array();
  bool all_ok = true;
  std::string first_bad;
  size_t compared = 0;
  for (const std::string& name : names) {
    const auto path = ref / (name + ".npy");
    if (!std::filesystem::exists(path)) continue;
    const NpyArray r = read_npy(path);
    const auto& [shape, mine] = outputs.at(name);
    if (r.shape != shape) {
      std::string s;
      for (auto d : r.shape) s += std::to_string(d) + " ";
      throw Error(path.string() + ": shape (" + s + ") differs from the engine's output");
    }
    const std::vector<float> theirs = r.as_float();
    const size_t per_token = name == "pooler_output" ? static_cast<size_t>(shape[1]) : static_cast<size_t>(shape[2]);
    double max_diff = 0, sum_diff = 0;
    size_t count = 0, worst = 0, bad = 0;
    for (size_t i = 0; i < theirs.size(); ++i) {
      const size_t token = i / per_token;
      if (name != "pooler_output" && !in.mask[token]) continue;
      // HF pools position 0 whatever it holds; in a left-padded row that is padding, which the
      // engine does not compute (it pools the row's first real token, <s>).
      if (name == "pooler_output" && !in.mask[token * in.L]) continue;
      const double d = std::abs(static_cast<double>(mine[i]) - theirs[i]);
      const bool finite = std::isfinite(mine[i]) && std::isfinite(theirs[i]);
      if (!finite || d > atol + rtol * std::abs(static_cast<double>(theirs[i]))) ++bad;
      if (!finite || d > max_diff) max_diff = finite ? d : INFINITY, worst = i;
      sum_diff += finite ? d : 0;
      ++count;
    }
    ++compared;
    const bool ok = bad == 0;
    if (!ok && first_bad.empty()) first_bad = name;
    all_ok = all_ok && ok;
    json where = json::array();
    if (name == "pooler_output")
      where = {worst / per_token, worst % per_token};
    else
      where = {worst / per_token / in.L, worst / per_token % in.L, worst % per_token};
    rows.push_back({{"name", name}, {"shape", shape}, {"max_abs_diff", max_diff},
                    {"mean_abs_diff", count ? sum_diff / static_cast<double>(count) : 0.0}, {"worst_at", where},
                    {"elements", count}, {"failing", bad}, {"ok", ok}});
  }
  if (compared == 0) throw Error(ref.string() + ": no hidden_states_*.npy, logits.npy or pooler_output.npy to compare");
  if (args.flag("json")) {
    std::cout << json{{"ok", all_ok}, {"atol", atol}, {"rtol", rtol}, {"first_mismatch", first_bad.empty() ? json() : json(first_bad)},
                      {"tensors", rows}}
                     .dump()
              << "\n";
  } else {
    std::cout << std::left << std::setw(18) << "tensor" << std::setw(18) << "shape" << std::right << std::setw(14)
              << "max abs diff" << std::setw(14) << "mean abs diff" << "  worst at        status\n";
    for (const auto& r : rows) {
      std::string shape;
      for (const auto& d : r["shape"]) shape += (shape.empty() ? "" : "x") + std::to_string(d.get<int64_t>());
      std::ostringstream max_s, mean_s;
      max_s << std::scientific << std::setprecision(2) << r["max_abs_diff"].get<double>();
      mean_s << std::scientific << std::setprecision(2) << r["mean_abs_diff"].get<double>();
      std::cout << std::left << std::setw(18) << r["name"].get<std::string>() << std::setw(18) << shape << std::right
                << std::setw(14) << max_s.str() << std::setw(14) << mean_s.str() << "  " << std::left << std::setw(16)
                << r["worst_at"].dump() << (r["ok"].get<bool>() ? "ok" : "FAIL (" + std::to_string(r["failing"].get<size_t>()) + " elements)")
                << std::right << "\n";
    }
    if (all_ok)
      std::cout << "all " << compared << " tensors within atol " << atol << ", rtol " << rtol << "\n";
    else
      std::cout << "first mismatch: " << first_bad << "\n";
  }
  return all_ok ? 0 : 1;
}

// ---------------------------------------------------------------- bench

int cmd_bench(const std::vector<std::string>& argv) {
  const Args args(argv, {"model", "batch", "seq", "lengths", "seed", "threads", "runs", "warmup", "outputs", "dtype"},
                  {"json", "help"});
  if (args.flag("help")) {
    std::cout << R"(usage: roberta bench [--model DIR] [--batch 1] [--seq 128] [--lengths uniform:MIN:MAX --seed S]
                     [--threads T] [--runs 5] [--warmup 1] [--outputs hidden|logits] [--json]

Times forward passes on random token ids: a warm-up, then --runs timed runs. Prints the median,
min and max milliseconds per batch, real (unpadded) tokens per second, achieved GFLOP/s (matrix
products and attention) and the process's peak resident memory.
  --lengths uniform:MIN:MAX  sequence lengths drawn uniformly (seeded), instead of all --seq
  --outputs logits           also compute MLM logits at every position (default: hidden states)
)";
    return 0;
  }
  apply_threads(args);
  const Model model = Model::load(model_dir(args), load_options(args));
  const ModelConfig& c = model.config();
  const size_t B = static_cast<size_t>(args.integer("batch", 1, 1'000'000).value_or(1));
  const size_t runs = static_cast<size_t>(args.integer("runs", 1, 1'000'000).value_or(5));
  const size_t warmup = static_cast<size_t>(args.integer("warmup", 0, 1'000'000).value_or(1));
  const uint64_t seed = static_cast<uint64_t>(args.integer("seed", 0, INT64_MAX).value_or(0));
  const std::string outputs = args.get("outputs").value_or("hidden");
  if (outputs != "hidden" && outputs != "logits") throw UsageError("--outputs must be hidden or logits");
  if (outputs == "logits" && !model.has_lm_head()) throw Error(model.dir().string() + ": the model has no MLM head");
  const int64_t max_len = c.max_sequence_length();
  std::vector<size_t> lengths(B, static_cast<size_t>(args.integer("seq", 2, max_len).value_or(std::min<int64_t>(128, max_len))));
  std::mt19937_64 rng(seed);
  if (auto spec = args.get("lengths")) {
    size_t lo = 0, hi = 0;
    if (std::sscanf(spec->c_str(), "uniform:%zu:%zu", &lo, &hi) != 2 || lo < 2 || hi < lo || static_cast<int64_t>(hi) > max_len)
      throw UsageError("--lengths must be uniform:MIN:MAX with 2 <= MIN <= MAX <= " + std::to_string(max_len));
    std::uniform_int_distribution<size_t> dist(lo, hi);
    for (auto& l : lengths) l = dist(rng);
  }
  Batch batch;
  std::uniform_int_distribution<int32_t> token(4, static_cast<int32_t>(c.vocab_size) - 1);
  for (size_t l : lengths) {
    std::vector<int32_t> ids(l);
    for (auto& id : ids) id = token(rng);
    ids.front() = 0, ids.back() = 2;
    batch.add_sequence(ids);
  }
  ForwardOptions fo;
  fo.logits = outputs == "logits";
  for (size_t i = 0; i < warmup; ++i) model.forward(batch, fo);
  std::vector<double> ms;
  for (size_t i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    model.forward(batch, fo);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                          : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
  // FLOPs: 2 per multiply-add of every matrix product, attention included.
  const double H = static_cast<double>(c.hidden_size), I = static_cast<double>(c.intermediate_size);
  const double layers = static_cast<double>(c.num_hidden_layers), V = static_cast<double>(c.vocab_size);
  double flops = 0;
  const double tokens = static_cast<double>(batch.num_tokens());
  for (size_t l : lengths) flops += layers * 4.0 * static_cast<double>(l) * static_cast<double>(l) * H;
  flops += tokens * layers * (8.0 * H * H + 4.0 * H * I);
  if (fo.logits) flops += tokens * (2.0 * H * H + 2.0 * H * V);
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  const double peak_mb = static_cast<double>(usage.ru_maxrss) / 1024.0;
  const double tokens_per_s = tokens / (median / 1000.0);
  const double gflops = flops / (median / 1000.0) / 1e9;
  if (args.flag("json")) {
    std::cout << json{{"model", model.dir().string()}, {"batch", B}, {"tokens", batch.num_tokens()},
                      {"threads", args.integer("threads", 1, 1024).value_or(std::thread::hardware_concurrency())},
                      {"outputs", outputs}, {"runs", runs}, {"median_ms", median}, {"min_ms", sorted.front()},
                      {"max_ms", sorted.back()}, {"tokens_per_s", tokens_per_s}, {"gflops", gflops},
                      {"peak_rss_mb", peak_mb}, {"all_ms", ms}, {"lengths", lengths}}
                     .dump()
              << "\n";
  } else {
    std::printf("batch %zu, %zu real tokens, %zu runs: median %.2f ms (min %.2f, max %.2f)\n", B, batch.num_tokens(), runs,
                median, sorted.front(), sorted.back());
    std::printf("%.0f tokens/s, %.1f GFLOP/s, peak memory %.0f MB\n", tokens_per_s, gflops, peak_mb);
  }
  return 0;
}

// ---------------------------------------------------------------- eval-mlm

int cmd_eval_mlm(const std::vector<std::string>& argv) {
  const Args args(argv, {"model", "masks", "batch-size", "threads", "dtype"}, {"agreement", "help"});
  if (args.flag("help")) {
    std::cout << R"(usage: roberta eval-mlm [--model DIR] --masks FILE.jsonl [--batch-size 16] [--dtype bf16 --agreement]

Masked-LM accuracy on prepared inputs (tools/train_demo.py eval --masks-out writes them): each
line is {"ids": [...], "positions": [...], "labels": [...]}, ids holding <mask> at the positions.
Prints {"top1": ..., "top5": ..., "masked": N, "sequences": S}.
  --agreement   also run the model in fp32 and report how the --dtype model agrees with it:
                top-1 the same, fp32's top-1 among the top 5, largest logit and hidden-state difference
)";
    return 0;
  }
  apply_threads(args);
  const Model model = Model::load(model_dir(args), load_options(args));
  if (!model.has_lm_head()) throw Error(model.dir().string() + ": the model has no MLM head");
  const std::string path = args.require("masks");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open file");
  const size_t batch_size = static_cast<size_t>(args.integer("batch-size", 1, 100000).value_or(16));
  size_t masked = 0, top1 = 0, top5 = 0, sequences = 0, line_no = 0;
  Batch batch;
  std::vector<size_t> rows;
  std::vector<int64_t> labels;
  const bool agreement = args.flag("agreement");
  std::optional<Model> reference;
  if (agreement) reference = Model::load(model_dir(args));
  size_t same_top1 = 0, ref_top1_in_top5 = 0;
  double max_logit_diff = 0, max_hidden_diff = 0;
  const auto rank_of = [](const float* z, size_t V, int64_t id) {  // tokens ranked above id
    size_t higher = 0;  // ties count for the lower id, as torch.topk orders them
    for (size_t v = 0; v < V; ++v) higher += z[v] > z[id] || (z[v] == z[id] && static_cast<int64_t>(v) < id);
    return higher;
  };
  const auto flush = [&] {
    if (batch.num_sequences() == 0) return;
    ForwardOptions fo;
    fo.logits = true;
    fo.logit_rows = rows;
    const Outputs out = model.forward(batch, fo);
    if (reference) {
      const Outputs ref = reference->forward(batch, fo);
      for (size_t i = 0; i < ref.last_hidden_state.data.size(); ++i)
        max_hidden_diff = std::max<double>(max_hidden_diff, std::abs(ref.last_hidden_state.data[i] - out.last_hidden_state.data[i]));
      for (size_t r = 0; r < rows.size(); ++r) {
        const float* z = out.logits.row(r);
        const float* zr = ref.logits.row(r);
        const size_t V = out.logits.cols;
        for (size_t v = 0; v < V; ++v) max_logit_diff = std::max<double>(max_logit_diff, std::abs(z[v] - zr[v]));
        const auto top = static_cast<int64_t>(std::max_element(zr, zr + V) - zr);
        const size_t rank = rank_of(z, V, top);
        same_top1 += rank == 0;
        ref_top1_in_top5 += rank < 5;
      }
    }
    for (size_t r = 0; r < rows.size(); ++r) {
      const size_t higher = rank_of(out.logits.row(r), out.logits.cols, labels[r]);
      top1 += higher == 0;
      top5 += higher < 5;
      ++masked;
    }
    batch = Batch();
    rows.clear();
    labels.clear();
  };
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty()) continue;
    const std::string where = path + ": line " + std::to_string(line_no);
    json rec;
    try {
      rec = json::parse(line);
    } catch (const json::exception&) {
      throw Error(where + ": invalid JSON");
    }
    if (!rec.contains("ids") || !rec.contains("positions") || !rec.contains("labels") ||
        rec["positions"].size() != rec["labels"].size())
      throw Error(where + ": expected ids, positions and labels of the same length");
    std::vector<int32_t> ids;
    try {
      ids = rec["ids"].get<std::vector<int32_t>>();
      for (const auto& p : rec["positions"]) {
        const size_t pos = p.get<size_t>();
        if (pos >= ids.size()) throw Error(where + ": position " + std::to_string(pos) + " is past the sequence");
        rows.push_back(batch.num_tokens() + pos);
      }
      for (const auto& l : rec["labels"]) {
        const int64_t label = l.get<int64_t>();
        if (label < 0 || label >= model.config().vocab_size) throw Error(where + ": label out of range");
        labels.push_back(label);
      }
    } catch (const json::exception&) {
      throw Error(where + ": ids, positions and labels must be integers");
    }
    batch.add_sequence(ids);
    ++sequences;
    if (batch.num_sequences() >= batch_size) flush();
  }
  flush();
  if (masked == 0) throw Error(path + ": no masked positions");
  json result{{"top1", static_cast<double>(top1) / masked}, {"top5", static_cast<double>(top5) / masked},
              {"masked", masked}, {"sequences", sequences}};
  if (agreement) {
    result["top1_agreement_with_fp32"] = static_cast<double>(same_top1) / masked;
    result["fp32_top1_in_top5"] = static_cast<double>(ref_top1_in_top5) / masked;
    result["max_abs_logit_diff"] = max_logit_diff;
    result["max_abs_last_hidden_diff"] = max_hidden_diff;
  }
  std::cout << result.dump() << "\n";
  return 0;
}

int run(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  if (command == "tokenize") return cmd_tokenize(args);
  if (command == "fill-mask") return cmd_fill_mask(args);
  if (command == "embed") return cmd_embed(args);
  if (command == "info") return cmd_info(args);
  if (command == "dump") return cmd_dump(args);
  if (command == "compare") return cmd_compare(args);
  if (command == "bench") return cmd_bench(args);
  if (command == "eval-mlm") return cmd_eval_mlm(args);
  throw UsageError("unknown command \"" + command + "\" (run `roberta --help`)");
}

}  // namespace
}  // namespace roberta::cli

int main(int argc, char** argv) {
  try {
    return roberta::cli::run(argc, argv);
  } catch (const roberta::cli::UsageError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const roberta::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
