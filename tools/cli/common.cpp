#include "common.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <set>

#include "tokenizer/unicode.h"

namespace roberta::cli {

// ---------------------------------------------------------------- the options, each declared once

namespace {

constexpr Option kOptions[] = {
    // every command
    {"model", "DIR",
     "the model folder (Hugging Face layout), or a Hub id (org/name[@revision]) in the local Hugging Face cache; "
     "default: $ROBERTA_MODEL, else the demo model installed with the program"},
    {"threads", "N", "threads to use, 1 to 1024 (default: all cores)"},
    {"help", "", "print this help"},
    // the commands that run the model
    {"dtype", "auto|fp32|bf16|int8",
     "the encoder's matrices in fp32, bfloat16 (half the memory traffic, about 3 significant digits) or int8 "
     "(dynamic quantization, per output channel and per token); auto: bf16 where the CPU multiplies bf16 "
     "natively (AVX512-BF16, AMX), else fp32. Default: auto for fill-mask, embed, classify, zero-shot, ner, qa, "
     "rerank and serve; fp32 for dump, compare, bench and eval-mlm"},
    // output
    {"json", "", "write JSON"},
    {"output", "FILE", "write there instead of stdout (never overwrites without --force)"},
    {"force", "", "overwrite an existing output"},
    // tokenizer
    {"text", "TEXT", "tokenize TEXT instead of reading stdin"},
    {"input-format", "text|jsonl", "jsonl: each line is a JSON string, or [a, b] for a pair"},
    {"no-special-tokens", "", "leave out <s> and </s>"},
    {"max-length", "N", "at most N tokens per input, <s> and </s> included"},
    {"byte-offsets", "", "also write \"byte_offsets\""},
    {"replace-invalid-utf8", "", "replace invalid UTF-8 by U+FFFD instead of failing"},
    // fill-mask
    {"top-k", "K", "candidates per mask (default 5)"},
    {"targets", "LIST", "only score these comma-separated words"},
    // embed
    {"pooling", "MODE",
     "mean or max over the tokens, the first token (cls), the model's pooler, or sentence-transformers' "
     "mean_sqrt_len, weightedmean, lasttoken; default: the folder's sentence-transformers Pooling config (its "
     "modes concatenated), else mean"},
    {"normalize", "", "L2-normalise (default: on if modules.json has a Normalize module)"},
    {"no-normalize", "", "do not L2-normalise"},
    {"batch-size", "N", "sequences per forward pass"},
    {"no-truncate", "", "an over-long input is an error instead of being truncated"},
    {"format", "jsonl|npy", "jsonl (default): one JSON array per line; npy: one float32 matrix (needs --output)"},
    {"prompt", "TEXT", "put TEXT before every input (sentence-transformers' encode(prompt=...))"},
    {"prompt-name", "NAME", "put the folder's prompt NAME (config_sentence_transformers.json) before every input"},
    {"sparse", "", "sparse (SPLADE) embeddings from the MLM head, one JSON line per input: [{\"index\":ID,\"value\":W},...] "
                   "(the folder's SpladePooling, else max with relu)"},
    {"bge-m3", "", "bge-m3's outputs from one pass, one JSON line per input with FlagEmbedding's keys: dense_vecs, "
                   "lexical_weights ({\"id\": weight}), colbert_vecs (needs colbert_linear and sparse_linear beside the model)"},
    {"m3-outputs", "LIST", "with --bge-m3: which of dense, sparse, colbert (default all three)"},
    {"truncate-dim", "N", "with --bge-m3: dense and ColBERT vectors cut to their first N values before normalising"},
    {"precision", "P", "float32 (default), int8, uint8, binary or ubinary: quantized as sentence-transformers' "
                       "quantize_embeddings (JSON lines of integers; --format npy: an int8 or uint8 matrix)"},
    {"calibration-embeddings", "FILE.npy",
     "float32 embeddings (N, D) whose per-dimension minimum and maximum make the int8 / uint8 buckets "
     "(sentence-transformers' calibration_embeddings; default: those of the embeddings themselves)"},
    {"late-chunking", "",
     "each input line a document (a JSON string, or {\"text\": ..., \"spans\": [[start, end], ...]} in code "
     "points): one JSON line each, {\"spans\", \"embeddings\", \"tokens\", \"windows\"}, every chunk the mean of its "
     "tokens' states in the whole document (read in overlapping windows of --max-length tokens)"},
    {"chunk-by", "sentences|tokens",
     "with --late-chunking: how a document without spans is cut (default sentences; tokens needs --chunk-tokens)"},
    {"chunk-tokens", "N",
     "with --late-chunking: tokens per chunk (--chunk-by tokens), or sentences packed into chunks of at most N tokens"},
    {"overlap", "N", "with --late-chunking: tokens two neighbouring windows share (default a quarter of a window)"},
    {"max-active-dims", "K", "with --sparse: keep the K largest weights of each input (default: all non-zero)"},
    // dump / compare
    {"input-ids", "IDS.npy", "the input ids, a (batch, length) integer array"},
    {"attention-mask", "MASK.npy", "0/1 of the same shape (default: 0 where the id is pad_token_id)"},
    {"type-ids", "TYPES.npy", "token type ids of the same shape (default: all 0)"},
    {"out", "DIR", "the folder to write (must be empty or new unless --force)"},
    {"reference", "DUMPDIR", "a dump of tools/dump_reference.py"},
    {"atol", "X", "absolute tolerance (default 1e-4)"},
    {"rtol", "X", "relative tolerance (default 1e-3)"},
    {"plot", "FILE", "also draw the max and mean difference of every tensor: FILE.svg, or FILE.html (a page "
                     "holding the same SVG); never overwrites without --force"},
    // bench
    {"batch", "B", "sequences per batch (default 1)"},
    {"seq", "L", "tokens per sequence (default 128, or the model's maximum if smaller)"},
    {"lengths", "uniform:MIN:MAX", "sequence lengths drawn uniformly (seeded), instead of all --seq"},
    {"seed", "S", "seed of the random ids and lengths (default 0)"},
    {"runs", "N", "timed runs (default 5)"},
    {"warmup", "N", "untimed runs first (default 1)"},
    {"outputs", "hidden|logits|sparse|m3[:LIST]",
     "logits: also compute MLM logits at every position; sparse: sparse (SPLADE) embeddings, the logits reduced as "
     "they are computed; m3: bge-m3's dense, sparse and ColBERT outputs (m3:LIST: those of dense,sparse,colbert) "
     "(default: hidden states)"},
    // serve
    {"host", "ADDR", "the address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)"},
    {"port", "N", "the port (default 8080; 0: any free port, printed when ready)"},
    {"max-batch-tokens", "N", "real tokens (no padding) per forward pass (default 16384); a larger request is split "
                              "over several passes"},
    {"max-batch-requests", "N", "sequences per forward pass (default: no limit)"},
    {"max-concurrent-requests", "N", "requests in flight at once; more get 429 (default 512)"},
    {"max-client-batch-size", "N", "inputs in one request; more get 413 (default 32)"},
    {"payload-limit", "BYTES", "largest request body; larger get 413 (default 2000000)"},
    {"no-auto-truncate", "", "an input longer than the model's maximum is an error (422) unless the request sets "
                             "\"truncate\": true (default: truncated)"},
    {"api-key", "KEY", "require \"Authorization: Bearer KEY\" on every route but the health ones (/health, GET /, "
                       "/ping) and /metrics (default: $ROBERTA_API_KEY if set)"},
    {"served-model-name", "NAME", "the model name of /info and OpenAI answers (default: the --model folder)"},
    {"cors-allow-origin", "ORIGINS", "origins whose pages may call the server from a browser (CORS, as TEI): "
                                     "comma-separated or the option repeated, * for any (the default)"},
    {"default-prompt-name", "NAME", "one of the folder's prompts, put before every text a request gives no "
                                    "prompt_name for (as TEI; default: no prompt, whatever the folder's default)"},
    {"default-prompt", "TEXT", "a prompt put before every text a request gives no prompt_name for (as TEI)"},
    {"quiet", "", "no log line per request"},
    {"request-timeout", "SECONDS", "time a client has to send a whole request before its connection is closed "
                                   "(default 30)"},
    // eval-mlm
    {"masks", "FILE.jsonl", "the prepared masked inputs (required)"},
    {"agreement", "", "also run the model in fp32 and report how the --dtype model agrees with it: top-1 the "
                      "same, fp32's top-1 among the top 5, largest logit and hidden-state difference"},
    // classify
    {"all", "", "every label, best first (HF's top_k=None)"},
    {"function", "softmax|sigmoid|none",
     "the function applied to the logits (HF's function_to_apply); default: none for problem_type regression, "
     "sigmoid for multi_label_classification or a single label, else softmax"},
    {"truncate", "", "cut over-long inputs to the model's length (HF's truncation=True); without it an over-long "
                     "input is an error for its line"},
    // zero-shot
    {"labels", "LIST", "the candidate labels, comma-separated (HF's candidate_labels)"},
    {"template", "TEXT", "the hypothesis, {} standing for the label (default \"This example is {}.\")"},
    {"multi-label", "", "score each label on its own (softmax of its contradiction and entailment logits) instead "
                        "of a softmax over the labels"},
    // rerank
    {"query", "TEXT", "the query the documents are ranked for (required unless --pairs)"},
    {"return-documents", "", "also write each document's text (\"text\")"},
    {"pairs", "", "score pairs instead of ranking: each line is [a, b] (JSON); prints one score per line (a list "
                  "of label scores for a model with several labels)"},
    // ner
    {"aggregation", "none|simple|first|average|max",
     "HF's aggregation_strategy (default none: one entity per token)"},
    {"ignore-labels", "LIST", "drop entities with these comma-separated labels (default O; \"\" keeps every label)"},
    {"long-documents", "truncate|max|mean",
     "a document longer than --max-length with the query: truncate it (default, as sentence-transformers), or read it "
     "in windows, each with the whole query, and take the max or mean of their scores"},
    {"stride", "N", "long texts are read in overlapping windows of --max-length tokens sharing N tokens "
                    "(default: a quarter of the window)"},
    // qa
    {"question", "TEXT", "the question (with --context; without both, JSON lines {\"question\", \"context\"} from stdin)"},
    {"context", "TEXT", "the context the answer is taken from"},
    {"doc-stride", "N", "context tokens shared by consecutive windows of a long context (default: min(max-seq-len / "
                        "2, 128))"},
    {"max-answer-len", "N", "the longest answer in tokens (default 15)"},
    {"max-seq-len", "N", "tokens per window, question and special tokens included (default: min(the model's "
                         "maximum, 384))"},
    {"max-question-len", "N", "accepted for parity with HF, whose pipeline ignores it with a fast tokenizer (as this "
                              "one does)"},
    {"handle-impossible-answer", "", "allow the empty answer (start 0, end 0, \"\") when the model prefers <s>"},
};

// Every command takes these: --model and --threads first, --help last.
constexpr OptionUse kFirst[] = {{"model"}, {"threads"}};
constexpr OptionUse kLast[] = {{"help"}};

const OptionUse* find_use(const Command& command, std::string_view name) {
  using Uses = std::span<const OptionUse>;
  for (const Uses list : {Uses(kFirst), Uses(command.options), Uses(kLast)})
    for (const auto& use : list)
      if (use.name == name) return &use;
  return nullptr;
}

}  // namespace

std::vector<OptionUse> options_of(const Command& command) {
  std::vector<OptionUse> out(std::begin(kFirst), std::end(kFirst));
  out.insert(out.end(), command.options.begin(), command.options.end());
  out.insert(out.end(), std::begin(kLast), std::end(kLast));
  return out;
}

const Option& option(std::string_view name) {
  for (const Option& o : kOptions)
    if (o.name == name) return o;
  throw std::logic_error("option --" + std::string(name) + " is not declared");
}

// ---------------------------------------------------------------- Args

Args::Args(const std::vector<std::string>& argv, const Command& command) : command_(command) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--") {
      positional_.insert(positional_.end(), argv.begin() + static_cast<ptrdiff_t>(i) + 1, argv.end());
      break;
    }
    if (a == "-h") {  // as `roberta -h`; a text "-h" goes after --
      flags_.insert("help");
      continue;
    }
    if (a.size() > 2 && a.starts_with("--")) {
      std::string name = a.substr(2), value;
      const size_t eq = name.find('=');
      const bool inline_value = eq != std::string::npos;
      if (inline_value) value = name.substr(eq + 1), name = name.substr(0, eq);
      if (!find_use(command, name)) throw UsageError("unknown option --" + name);
      if (!option(name).takes_value()) {
        if (inline_value) throw UsageError("option --" + name + " takes no value");
        flags_.insert(name);
      } else {
        if (!inline_value) {
          if (i + 1 >= argv.size()) throw UsageError("option --" + name + " needs a value");
          value = argv[++i];
        }
        // A text given as an option is checked here, so that its error is a usage error naming
        // the option, not an error of every input line.
        static const std::set<std::string_view> kTexts = {
            "prompt", "labels", "template", "targets", "query", "question", "context", "text", "ignore-labels",
            "default-prompt"};
        if (kTexts.count(name))
          if (const auto bad = unicode::find_invalid_utf8(value))
            throw UsageError("--" + name + ": invalid UTF-8 at byte " + std::to_string(*bad));
        // An option that takes a list may also be given more than once (TEI's --cors-allow-origin).
        if (name == "cors-allow-origin" && values_.count(name))
          values_[name] += "," + value;
        else
          values_[name] = value;
      }
    } else {
      positional_.push_back(a);
    }
  }
}

void Args::check_declared(std::string_view name, bool takes_value) const {
  if (!find_use(command_, name) || option(name).takes_value() != takes_value)
    throw std::logic_error("roberta " + std::string(command_.name) + " reads --" + std::string(name) +
                           (takes_value ? " as a value option" : " as a flag") + " but does not declare it so");
}

bool Args::flag(std::string_view name) const {
  check_declared(name, false);
  return flags_.count(name) > 0;
}

std::optional<std::string> Args::get(std::string_view name) const {
  check_declared(name, true);
  const auto it = values_.find(name);
  return it == values_.end() ? std::nullopt : std::optional<std::string>(it->second);
}

std::string Args::require(std::string_view name) const {
  if (auto v = get(name)) return *v;
  throw UsageError("missing required option --" + std::string(name));
}

namespace {
// parse(text, &used) when it reads the whole of a non-empty text.
template <class Parse>
auto parse_whole(const std::string& text, Parse parse) -> std::optional<decltype(parse(text, nullptr))> {
  size_t used = 0;
  try {
    const auto value = parse(text, &used);
    if (!text.empty() && used == text.size()) return value;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}
}  // namespace

std::optional<long long> Args::integer(std::string_view name, long long lo, long long hi) const {
  const auto v = get(name);
  if (!v) return std::nullopt;
  const auto n = parse_whole(*v, [](const std::string& s, size_t* used) { return std::stoll(s, used); });
  if (!n || *n < lo || *n > hi)
    throw UsageError("--" + std::string(name) + " must be an integer in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "], got \"" + *v + "\"");
  return n;
}

std::optional<double> Args::number(std::string_view name) const {
  const auto v = get(name);
  if (!v) return std::nullopt;
  const auto d = parse_whole(*v, [](const std::string& s, size_t* used) { return std::stod(s, used); });
  if (!d || !(*d >= 0)) throw UsageError("--" + std::string(name) + " must be a non-negative number");
  return d;
}

// ---------------------------------------------------------------- model, threads

std::string model_name(const Args& args) {
  namespace fs = std::filesystem;
  if (auto dir = args.get("model")) return *dir;
  if (const char* env = std::getenv("ROBERTA_MODEL"); env && *env) return env;
  std::error_code ec;
  const fs::path exe_dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  const fs::path installed = (exe_dir / ".." / "share" / "roberta" / "models" / "demo").lexically_normal();
  if (!ec && fs::is_directory(installed, ec)) return installed.string();
  const fs::path pointer = exe_dir / "roberta-default-model";
  std::string built;
  if (std::ifstream in(pointer); in && std::getline(in, built) && !built.empty() && built.back() == '\r')
    built.pop_back();
  if (!built.empty() && fs::is_directory(built, ec)) return built;
  throw UsageError("missing --model DIR: ROBERTA_MODEL is not set, there is no installed demo model at " +
                   installed.string() +
                   (built.empty() ? "" : ", and the demo model named in " + pointer.string() + " (" + built +
                                             ") is not there"));
}

std::string model_dir(const Args& args) { return resolve_model(model_name(args)); }

LoadOptions load_options(const Args& args, const char* default_dtype) {
  LoadOptions o;
  const std::string dtype = args.get("dtype").value_or(default_dtype);
  if (dtype == "auto")
    o.weights = recommended_weight_type();
  else if (dtype == "bf16")
    o.weights = WeightType::kBF16;
  else if (dtype == "int8")
    o.weights = WeightType::kInt8;
  else if (dtype != "fp32")
    throw UsageError("--dtype must be auto, fp32, bf16 or int8");
  return o;
}

void apply_threads(const Args& args) {
  if (auto n = args.integer("threads", 1, 1024)) set_num_threads(static_cast<unsigned>(*n));
}

// ---------------------------------------------------------------- input lines

LineReader LineReader::from_texts(std::vector<std::string> texts) {
  LineReader r;
  r.texts_ = std::move(texts);
  return r;
}

LineReader LineReader::from_file(const std::string& path) {
  LineReader r;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw Error(path + ": is a folder, not a file", ErrorKind::kIo);
  r.file_ = std::make_unique<std::ifstream>(path, std::ios::binary);
  if (!*r.file_) throw Error(path + ": cannot open file", ErrorKind::kIo);
  r.in_ = r.file_.get();
  r.name_ = path;
  r.total_bytes_ = std::filesystem::file_size(path, ec);
  if (ec) r.total_bytes_ = 0;
  return r;
}

LineReader LineReader::from_stdin() {
  LineReader r;
  r.in_ = &std::cin;
  r.name_ = "stdin";
  r.interactive_ = ::isatty(STDIN_FILENO) != 0;
  return r;
}

bool LineReader::next(std::string& line) {
  if (texts_) {
    if (count_ >= texts_->size()) return false;
    line = (*texts_)[count_];
  } else {
    errno = 0;
    if (!std::getline(*in_, line)) {
      // The end of the input, or a read that failed (a folder as stdin, an I/O error), which
      // iostreams report as the end but read(2) left in errno: an error, so that no answer is
      // silently missing.
      if (in_->bad() || errno != 0)
        throw Error(name_ + ": cannot read (" + std::strerror(errno) + ") after " + std::to_string(count_) + " " +
                        unit() + (count_ == 1 ? "" : "s"),
                    ErrorKind::kIo);
      return false;
    }
    bytes_read_ += line.size() + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
  }
  ++count_;
  return true;
}

bool LineReader::next_chunk(std::vector<std::string>& chunk, size_t max_lines) {
  chunk.clear();
  for (std::string line; chunk.size() < max_lines && next(line);) chunk.push_back(std::move(line));
  return !chunk.empty();
}

std::string LineReader::label(size_t index) const { return unit() + (" " + std::to_string(index + 1)); }

void LineReader::report(size_t index, const std::string& message) {
  std::cerr << "error: " << label(index) << ": " << message << "\n";
  failed_ = true;
}

LineReader input_lines(const Args& args) {
  return args.positional().empty() ? LineReader::from_stdin() : LineReader::from_texts(args.positional());
}

int answer_lines(LineReader& lines, bool as_json, size_t chunk_inputs,
                 const std::function<std::vector<Answer>(const std::vector<std::string>& chunk)>& answer) {
  const size_t chunk_size = lines.interactive() ? 1 : std::max<size_t>(1, chunk_inputs);
  std::vector<std::string> chunk;
  for (size_t first = 0; lines.next_chunk(chunk, chunk_size); first += chunk.size()) {
    const std::vector<Answer> answers = answer(chunk);
    std::string out;
    for (size_t i = 0; i < answers.size(); ++i) {
      if (answers[i].error) {
        std::cout << out << std::flush;  // stdout and stderr in input order at a terminal
        out.clear();
        lines.report(first + i, *answers[i].error);
        if (as_json) out += json_error(*answers[i].error) + "\n";
      } else {
        out += answers[i].out;
      }
    }
    std::cout << out << std::flush;
  }
  return lines.status();
}

// ---------------------------------------------------------------- files and JSON

void check_can_write(const std::filesystem::path& path, bool force) {
  std::error_code ec;
  if (!force && std::filesystem::exists(path, ec))
    throw Error(path.string() + ": already exists (use --force to overwrite)", ErrorKind::kIo);
}

void write_file_atomically(const std::filesystem::path& path, bool force,
                           const std::function<void(const std::filesystem::path& tmp)>& write) {
  check_can_write(path, force);
  std::error_code ec;
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
    throw Error(path.string() + ": cannot rename the temporary file into place", ErrorKind::kIo);
  }
}

std::string json_line(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string json_error(const std::string& message) { return json_line(json{{"error", message}}); }

json parse_json_input(const std::string& line) {
  try {
    return json::parse(line);
  } catch (const json::parse_error& err) {
    throw Error("invalid JSON at byte " + std::to_string(err.byte));
  }
}

std::string score_text(double score) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", score);
  return buf;
}

}  // namespace roberta::cli
