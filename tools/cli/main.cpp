// roberta: the command-line front end. The table of commands, from which `roberta --help`, every
// `roberta CMD --help` and the options each command accepts come (the options themselves are
// declared once in common.cpp), and the dispatch.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>

#include "common.h"

namespace roberta::cli {
namespace {

const Command kCommands[] = {
    {.name = "fill-mask",
     .summary = "predict the tokens at each <mask> of a text",
     .usage = "[options] [TEXT ...]",
     .description = "Predicts the token at each <mask> of each text (texts from the arguments, or one per line from\n"
                    "stdin), like Hugging Face's pipeline(\"fill-mask\"). Scores are softmax probabilities.",
     .options = {{"dtype"}, {"top-k"}, {"targets"},
                 {"json", "one JSON line per text: the candidate list, or one list per mask"}},
     .takes_arguments = true,
     .run = run_fill_mask},
    {.name = "classify",
     .summary = "text classification (sentiment and the like): labels and scores per text",
     .usage = "[options] [TEXT ...]",
     .description = "Classifies each text (the arguments, or one per line from stdin) with a sequence-classification\n"
                    "model, like Hugging Face's pipeline(\"text-classification\"). --input-format jsonl reads each line\n"
                    "as a JSON string, a pair [\"text\", \"text_pair\"] or {\"text\": ..., \"text_pair\": ...}.\n"
                    "With --json, one line per input: [{\"label\": ..., \"score\": ...}, ...], best first, as HF\n"
                    "returns it for one input (a pair without --top-k or --all: the object alone, as HF). Inputs are classified in chunks of 32 per forward pass. A bad line\n"
                    "(invalid JSON or UTF-8, too long without --truncate) is an error for that line; the others are\n"
                    "answered and the exit status is 1.",
     .options = {{"dtype"}, {"top-k", "the K best labels (default 1, as HF)"}, {"all"}, {"function"}, {"truncate"},
                 {"input-format", "text (default) or jsonl: each line a JSON string, [text, text_pair] or an object"},
                 {"json", "one JSON line per input: the [{\"label\", \"score\"}] list ({\"error\": ...} for a bad line)"}},
     .takes_arguments = true,
     .run = run_classify},
    {.name = "zero-shot",
     .summary = "zero-shot classification with an NLI model: scores for labels given at run time",
     .usage = "[options] --labels A,B,C [TEXT ...]",
     .description = "Scores each candidate label for each text (the arguments, or one per line from stdin) with an NLI\n"
                    "model (a sequence-classification model with an \"entailment\" label), like Hugging Face's\n"
                    "pipeline(\"zero-shot-classification\"): the text is the premise, the template filled with the\n"
                    "label the hypothesis. With --json, one line per input: {\"sequence\", \"labels\", \"scores\"}, best\n"
                    "first. --input-format jsonl reads each line as a JSON string or {\"sequence\": ...,\n"
                    "\"candidate_labels\": [...] or \"a,b\"} (its labels replace --labels, which is then optional).\n"
                    "A bad line is an error for that line; the others are answered and the exit status is 1.",
     .options = {{"dtype"}, {"labels"}, {"template"}, {"multi-label"},
                 {"input-format", "text (default) or jsonl: each line a JSON string or {\"sequence\", \"candidate_labels\"}"},
                 {"json", "one JSON line per input: {\"sequence\", \"labels\", \"scores\"} ({\"error\": ...} for a bad line)"}},
     .takes_arguments = true,
     .run = run_zero_shot},
    {.name = "rerank",
     .summary = "rank documents for a query with a cross-encoder (or score [a, b] pairs)",
     .usage = "[options] --query QUERY [DOCUMENT ...]  |  --pairs [[a, b] ...]",
     .description = "Scores every document (the arguments, or one per line from stdin) against --query with a\n"
                    "sentence-transformers CrossEncoder (a one-label sequence-classification model) and prints them\n"
                    "best first, like CrossEncoder.rank: with --json one array [{\"corpus_id\", \"score\", \"text\"?}],\n"
                    "corpus_id counting input lines from 0. Scores use the activation the model's config names\n"
                    "(sentence_transformers.activation_fn), else sigmoid for one label. A bad line (invalid UTF-8) is\n"
                    "reported and left out of the ranking; the exit status is then 1.\n"
                    "--pairs is CrossEncoder.predict: each input is a JSON pair [a, b] and gets one line, its score\n"
                    "(a list of label scores for a model with several labels), or {\"error\": ...} with --json.\n"
                    "Pairs longer than --max-length are truncated (longest first), as sentence-transformers does,\n"
                    "unless --long-documents max|mean reads such a document in windows and joins their scores.",
     .options = {{"dtype"}, {"query"}, {"top-k", "only the K best documents (default: all)"}, {"return-documents"},
                 {"pairs"}, {"batch-size", "pairs per forward pass (default 32)"},
                 {"max-length", "tokens per pair incl. special tokens (default: the model's maximum)"},
                 {"long-documents"},
                 {"stride", "with --long-documents: tokens consecutive windows share (default 128)"},
                 {"json", "print the ranking as one JSON array (with --pairs the output is JSON anyway)"}},
     .takes_arguments = true,
     .run = run_rerank},
    {.name = "ner",
     .summary = "token classification (named entities) with character offsets",
     .usage = "[options] [TEXT ...]",
     .description = "Labels the tokens of each text (the arguments, or one per line from stdin) with a\n"
                    "token-classification model, like Hugging Face's pipeline(\"ner\"). With --json, one line per\n"
                    "text: a list of {\"entity\", \"score\", \"index\", \"word\", \"start\", \"end\"} (no aggregation), or of\n"
                    "{\"entity_group\", \"score\", \"word\", \"start\", \"end\"} (with one); start and end count code points.\n"
                    "Long texts are read whole: in windows of --max-length tokens (default: the model's maximum) that\n"
                    "overlap by --stride N tokens (default: a quarter of the window), each window aggregated on its\n"
                    "own, then of overlapping entities the longer (at equal length the higher score) is kept, as HF\n"
                    "does with a stride (HF cuts a long text at the window unless given one). Without an aggregation\n"
                    "a token read by two windows is listed once, and its index counts in its window. A bad line is an\n"
                    "error for that line; the others are answered and the exit status is 1.",
     .options = {{"dtype"}, {"aggregation"}, {"ignore-labels"}, {"stride"},
                 {"max-length", "tokens per window incl. <s> </s> (default: the model's maximum)"},
                 {"json", "one JSON line per text: the entity list ({\"error\": ...} for a bad line)"}},
     .takes_arguments = true,
     .run = run_ner},
    {.name = "qa",
     .summary = "extractive question answering: the answer's span in a context",
     .usage = "[options] --question Q --context C  |  < {\"question\", \"context\"} lines",
     .description = "Finds the answer to a question in a context with a question-answering model, like Hugging Face's\n"
                    "pipeline(\"question-answering\"): --question and --context, or JSON lines {\"question\": ...,\n"
                    "\"context\": ...} from stdin. With --json, one line per input: {\"score\", \"start\", \"end\",\n"
                    "\"answer\"} (start and end count code points of the context), or a list of them best first when\n"
                    "--top-k gives several answers, as HF. A long context is read in windows of --max-seq-len tokens\n"
                    "sharing --doc-stride tokens. A bad line (invalid JSON, an empty question or context, a question\n"
                    "that leaves no room for the context) is an error for that line; the others are answered and\n"
                    "the exit status is 1.",
     .options = {{"dtype"}, {"question"}, {"context"}, {"top-k", "answers per question (default 1)"}, {"doc-stride"},
                 {"max-answer-len"}, {"max-seq-len"}, {"max-question-len"}, {"handle-impossible-answer"},
                 {"json", "one JSON line per input: the answer, or the list of answers ({\"error\": ...} for a bad line)"}},
     .run = run_qa},
    {.name = "embed",
     .summary = "one sentence embedding per input line (dense, or sparse with --sparse)",
     .usage = "[options] [FILE]",
     .description = "One embedding per input line (FILE, or stdin), in input order. Inputs are read in chunks, so\n"
                    "memory does not grow with their number. --sparse: SPLADE weights from the MLM head, as\n"
                    "sentence-transformers' SparseEncoder and TEI's /embed_sparse compute them. --bge-m3: bge-m3's\n"
                    "dense, lexical and ColBERT outputs from one pass, as FlagEmbedding's BGEM3FlagModel.\n"
                    "--late-chunking: one vector per chunk of each document, computed in the whole document's context.",
     .options = {{"dtype"}, {"pooling"}, {"normalize"}, {"no-normalize"},
                 {"batch-size", "sequences per forward pass (default 32; inputs are sorted by length)"},
                 {"max-length", "tokens per input incl. <s> </s> (default: the model's maximum)"},
                 {"no-truncate"}, {"format"}, {"output"}, {"force", "overwrite an existing --output FILE"},
                 {"prompt"}, {"prompt-name"}, {"precision"}, {"calibration-embeddings"}, {"sparse"},
                 {"max-active-dims"}, {"bge-m3"}, {"m3-outputs"}, {"truncate-dim"}, {"late-chunking"}, {"chunk-by"},
                 {"chunk-tokens"}, {"overlap"}},
     .takes_arguments = true,
     .run = run_embed},
    {.name = "tokenize",
     .summary = "token ids, tokens and offsets as JSON lines",
     .usage = "[options] [--text TEXT] < lines",
     .description = "Writes one JSON object per input: {\"ids\":[...],\"tokens\":[...],\"offsets\":[[s,e],...]}\n"
                    "(offsets in code points, as Hugging Face gives them). Lines are tokenized in chunks on --threads\n"
                    "threads; the answers keep the input order.",
     .options = {{"text"}, {"input-format"}, {"no-special-tokens"},
                 {"max-length", "truncate to N tokens (pairs: longest first)"}, {"byte-offsets"},
                 {"replace-invalid-utf8"}},
     .run = run_tokenize},
    {.name = "info",
     .summary = "what a model folder holds",
     .usage = "[options]",
     .description = "Config summary, parameter count, dtypes, files and memory.",
     .options = {},
     .run = run_info},
    {.name = "dump",
     .summary = "write the engine's outputs for given input ids as .npy files",
     .usage = "[options] --input-ids IDS.npy [--attention-mask MASK.npy] --out DIR",
     .description = "Writes input_ids.npy, attention_mask.npy, hidden_states_0..N.npy (B, L, H) and the outputs of\n"
                    "the model's heads: logits.npy (B, L, V), pooler_output.npy (B, H), sequence_logits.npy (B, labels),\n"
                    "token_logits.npy (B, L, labels), start_logits.npy and end_logits.npy (B, L), in the format of\n"
                    "tools/dump_reference.py. Padding positions are 0.\n"
                    "Without --attention-mask, tokens equal to pad_token_id are padding. Positions are counted\n"
                    "from the ids, as Hugging Face does: a mask may be 0 only where the id is pad_token_id.",
     .options = {{"dtype"}, {"input-ids"}, {"attention-mask"}, {"type-ids"}, {"out"},
                 {"force", "write into a non-empty --out DIR"}},
     .run = run_dump},
    {.name = "compare",
     .summary = "compare the engine with a PyTorch reference dump, layer by layer",
     .usage = "[options] --reference DUMPDIR [--atol 1e-4] [--rtol 1e-3] [--json] [--plot FILE.svg]",
     .description = "Runs the engine on the dump's input_ids/attention_mask and compares every tensor the dump holds\n"
                    "(hidden_states_*, logits, pooler_output) over real (mask = 1) positions. An element passes when\n"
                    "|engine - reference| <= atol + rtol * |reference|. Exit status 0 only if every tensor passes.",
     .options = {{"dtype"}, {"reference"}, {"atol"}, {"rtol"},
                 {"json", "print the report as one JSON object"}, {"plot"},
                 {"force", "overwrite an existing --plot FILE"}},
     .run = run_compare},
    {.name = "bench",
     .summary = "time forward passes (median ms, tokens/s, GFLOP/s, peak memory)",
     .usage = "[options]",
     .description = "Times forward passes on random token ids: a warm-up, then --runs timed runs. Prints the median,\n"
                    "min and max milliseconds per batch, real (unpadded) tokens per second, achieved GFLOP/s (matrix\n"
                    "products and attention) and the process's peak resident memory.",
     .options = {{"dtype"}, {"batch"}, {"seq"}, {"lengths"}, {"seed"}, {"runs"},
                 {"warmup"}, {"outputs"}, {"json", "print one JSON object"}},
     .run = run_bench},
    {.name = "eval-mlm",
     .summary = "masked-LM top-1/top-5 accuracy on prepared masked inputs",
     .usage = "[options] --masks FILE.jsonl",
     .description = "Masked-LM accuracy on prepared inputs (tools/train_demo.py eval --masks-out writes them): each\n"
                    "line is {\"ids\": [...], \"positions\": [...], \"labels\": [...]}, ids holding <mask> at the\n"
                    "positions. Prints {\"top1\": ..., \"top5\": ..., \"masked\": N, \"sequences\": S}.",
     .options = {{"dtype"}, {"masks"},
                 {"batch-size", "sequences per forward pass (default 16)"}, {"agreement"}},
     .run = run_eval_mlm},
    {.name = "serve",
     .summary = "an HTTP server: TEI's and OpenAI's embedding APIs, fill-mask, classification, rerank",
     .usage = "[options]",
     .description = "Serves the model over HTTP with the routes of Hugging Face's Text Embeddings Inference (POST /embed,\n"
                    "/embed_all, /similarity, /tokenize, /decode, /vertex; GET /health, /info, /metrics; POST / as\n"
                    "TEI answers it, by the model's type, or /similarity with the environment's\n"
                    "TASK=sentence-similarity), OpenAI's embeddings API (POST /v1/embeddings, GET /v1/models),\n"
                    "POST /fill_mask, TEI's /embed_sparse, and TEI's /predict and /rerank on a model with a\n"
                    "classification head; ours: /embed_multivector (bge-m3) and /embed_late_chunks (late chunking).\n"
                    "Concurrent requests of every route are packed into shared forward passes by a budget of real\n"
                    "tokens. Prints `listening on http://HOST:PORT` on stderr when ready, then one line per request.\n"
                    "SIGTERM or SIGINT: stops accepting, finishes the requests in flight, exits 0.",
     .options = {{"dtype"}, {"host"}, {"port"}, {"max-batch-tokens"}, {"max-batch-requests"},
                 {"max-concurrent-requests"}, {"max-client-batch-size"}, {"payload-limit"}, {"no-auto-truncate"},
                 {"api-key"}, {"served-model-name"}, {"cors-allow-origin"}, {"default-prompt-name"},
                 {"default-prompt"}, {"calibration-embeddings"}, {"quiet"}, {"request-timeout"}},
     .run = run_serve},
};

// ---------------------------------------------------------------- help, generated from the table

// `text` broken into lines of at most `width` columns, starting at `column`; the lines after the
// first are indented by `indent`.
std::string wrap(std::string_view text, size_t indent, size_t column, size_t width = 100) {
  std::string out;
  bool line_start = true;
  while (!text.empty()) {
    const size_t end = text.find(' ');
    const std::string_view word = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (!line_start && column + 1 + word.size() > width) {
      out += "\n" + std::string(indent, ' ');
      column = indent;
      line_start = true;
    }
    if (!line_start) out += ' ', ++column;
    out += word;
    column += word.size();
    line_start = false;
  }
  return out;
}

// "  --name HINT   help" lines, aligned.
std::string option_lines(const std::vector<OptionUse>& uses) {
  const auto head = [](const OptionUse& use) {
    const Option& o = option(use.name);
    return "--" + std::string(o.name) + (o.takes_value() ? " " + std::string(o.hint) : "");
  };
  size_t width = 0;
  for (const auto& use : uses) width = std::max(width, std::min<size_t>(head(use).size(), 26));
  const size_t indent = width + 4;  // where the help texts start
  std::string out;
  for (const auto& use : uses) {
    std::string line = "  " + head(use);
    // A head too long for the column gets its text on the next line.
    line += line.size() + 2 <= indent ? std::string(indent - line.size(), ' ') : "\n" + std::string(indent, ' ');
    out += line + wrap(use.help.empty() ? option(use.name).help : use.help, indent, indent) + "\n";
  }
  return out;
}

bool takes(const Command& command, std::string_view name) {
  const auto uses = options_of(command);
  return std::any_of(uses.begin(), uses.end(), [&](const OptionUse& use) { return use.name == name; });
}

std::string command_help(const Command& command) {
  std::string out = "usage: roberta " + std::string(command.name) + " " + std::string(command.usage) + "\n\n";
  out += std::string(command.description) + "\n\nOptions:\n" + option_lines(options_of(command));
  return out;
}

std::string program_help(std::span<const Command> commands) {
  std::string out = "usage: roberta COMMAND [options]\n\nCommands:\n";
  for (const Command& c : commands) {
    std::string name = "  " + std::string(c.name);
    out += name + std::string(std::max<size_t>(2, 14 - name.size()), ' ') + std::string(c.summary) + "\n";
  }
  // The options every command takes, and who takes --dtype, from the records.
  std::vector<OptionUse> common;
  for (const OptionUse& use : options_of(commands.front())) {
    bool everywhere = true;
    for (const Command& c : commands) everywhere = everywhere && takes(c, use.name);
    if (everywhere) common.push_back({use.name});
  }
  out += "\nOptions of every command:\n" + option_lines(common);
  std::string dtype;
  for (const Command& c : commands)
    if (takes(c, "dtype")) dtype += (dtype.empty() ? "" : ", ") + std::string(c.name);
  if (const size_t comma = dtype.rfind(", "); comma != std::string::npos) dtype.replace(comma, 2, " and ");
  out += "\n" + wrap(dtype + " also take --dtype " + std::string(option("dtype").hint) + ": " +
                         std::string(option("dtype").help) + ".",
                     0, 0);
  out += "\nRun `roberta COMMAND --help` for the options of a command.\n"
         "Exit status: 0 success, 1 error in the input or the model, 2 usage error.\n";
  return out;
}

// ---------------------------------------------------------------- dispatch

int run(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << program_help(kCommands);
    return args.empty() ? 2 : 0;
  }
  const std::string name = args[0];
  args.erase(args.begin());
  for (const Command& command : kCommands) {
    if (command.name != name) continue;
    const Args parsed(args, command);
    if (parsed.flag("help")) {
      std::cout << command_help(command);
      return 0;
    }
    if (!command.takes_arguments && !parsed.positional().empty())
      throw UsageError("unexpected argument \"" + parsed.positional()[0] + "\"");
    apply_threads(parsed);
    return command.run(parsed);
  }
  throw UsageError("unknown command \"" + name + "\" (run `roberta --help`)");
}

}  // namespace
}  // namespace roberta::cli

int main(int argc, char** argv) {
  try {
    const int status = roberta::cli::run(argc, argv);
    // Answers that did not all reach stdout (a full disk, a closed pipe) are an error, not a
    // success with output lost.
    if (!std::cout.flush()) {
      std::cerr << "error: cannot write the output to stdout" << (errno ? std::string(": ") + std::strerror(errno) : "")
                << "\n";
      return 1;
    }
    return status;
  } catch (const roberta::cli::UsageError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {  // roberta::Error (any kind) and the rest
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
