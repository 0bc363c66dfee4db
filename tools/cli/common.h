#pragma once
// What the commands of the `roberta` program share: the option table, the command record, the
// argument parser driven by both, the model folder and load options, the reader of input lines
// with its error policy, atomic file writing and JSON helpers.
//
// Every option is declared once in common.cpp (name, value hint, help text; a flag has no hint).
// Every command is one record in main.cpp (name, summary, usage, the options it takes, run
// function); main.cpp generates its --help and `roberta --help` from the records, and Args
// accepts exactly the options of the record.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "roberta/roberta.h"

namespace roberta::cli {

using json = nlohmann::ordered_json;

// A mistake in the command line: the program prints it and exits with status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------- options and commands

struct Option {
  std::string_view name;  // without the leading "--"
  std::string_view hint;  // placeholder of the value ("DIR", "N"); empty: a flag, which takes no value
  std::string_view help;
  bool takes_value() const { return !hint.empty(); }
};

// The declaration of --name; std::logic_error if there is none (a mistake in this program).
const Option& option(std::string_view name);

// An option as a command takes it. `help`, when given, replaces the declared text where the
// command gives the option a narrower meaning (its own default, say).
struct OptionUse {
  std::string_view name;
  std::string_view help = {};
};

class Args;

struct Command {
  std::string_view name;
  std::string_view summary;      // one line for `roberta --help`
  std::string_view usage;        // after "usage: roberta NAME", e.g. "[options] [TEXT ...]"
  std::string_view description;  // the paragraphs of `roberta NAME --help` above the options
  std::vector<OptionUse> options;  // besides --model, --threads and --help, which every command takes
  bool takes_arguments = false;    // positional arguments; without, any is a usage error
  int (*run)(const Args&) = nullptr;
};

// The options `command` takes: --model, --threads, its own, --help.
std::vector<OptionUse> options_of(const Command& command);

// --name VALUE, --name=VALUE, boolean --flag, positional arguments, "--" ends the options. Only the
// command's options are accepted; anything else starting with "--" is a UsageError.
class Args {
 public:
  Args(const std::vector<std::string>& argv, const Command& command);

  bool flag(std::string_view name) const;
  std::optional<std::string> get(std::string_view name) const;
  std::string require(std::string_view name) const;
  // An integer option in [lo, hi].
  std::optional<long long> integer(std::string_view name, long long lo, long long hi) const;
  // A non-negative number option.
  std::optional<double> number(std::string_view name) const;
  const std::vector<std::string>& positional() const { return positional_; }
  const Command& command() const { return command_; }

 private:
  // The command must declare `name` (as a flag or a value option): reading an option the command
  // does not take is a mistake in this program, not in the command line.
  void check_declared(std::string_view name, bool takes_value) const;

  const Command& command_;
  std::map<std::string, std::string, std::less<>> values_;
  std::set<std::string, std::less<>> flags_;
  std::vector<std::string> positional_;
};

// ---------------------------------------------------------------- model, threads

// --model, else $ROBERTA_MODEL, else <dir of this program>/../share/roberta/models/demo (an
// installed demo model), else the folder named in <dir of this program>/roberta-default-model (the
// build tree's pointer to the source tree's demo model). UsageError when there is none.
std::string model_name(const Args& args);
// model_name's folder: a Hugging Face Hub id ("org/name[@revision]") becomes its snapshot folder in
// the local Hugging Face cache (roberta::resolve_model); roberta::Error when it is not there.
std::string model_dir(const Args& args);
// --dtype fp32|bf16: how the encoder's matrices are held.
// --dtype as LoadOptions; `default_dtype` when the option is absent ("auto" for the commands that
// serve answers, "fp32" for the measuring ones).
LoadOptions load_options(const Args& args, const char* default_dtype = "fp32");
// --threads N (1..1024): roberta::set_num_threads(N). Without it the engine's default (all cores).
void apply_threads(const Args& args);

// ---------------------------------------------------------------- input lines

// The inputs of fill-mask, tokenize and embed, one at a time: the texts given as arguments, or the
// lines of a FILE or of stdin without their "\n" / "\r\n" (read as needed: memory does not grow
// with the number of lines).
//
// One error policy for every command: report(i, message) prints "error: line N: message" ("text N"
// for texts given as arguments) on stderr and makes status() 1; the command goes on answering the
// other inputs and returns status() at the end.
class LineReader {
 public:
  static LineReader from_texts(std::vector<std::string> texts);
  static LineReader from_file(const std::string& path);  // Error if it cannot be opened
  static LineReader from_stdin();

  bool next(std::string& line);
  // Up to `max_lines` next inputs into `chunk` (cleared first); false when there are none left.
  bool next_chunk(std::vector<std::string>& chunk, size_t max_lines);
  size_t count() const { return count_; }            // inputs read so far
  const char* unit() const { return texts_ ? "text" : "line"; }
  std::string label(size_t index) const;            // "line 3" for index 2
  void report(size_t index, const std::string& message);
  int status() const { return failed_ ? 1 : 0; }
  // Stdin from a terminal: a person typing, who wants each answer before the next line.
  bool interactive() const { return interactive_; }
  uint64_t bytes_read() const { return bytes_read_; }
  uint64_t total_bytes() const { return total_bytes_; }  // of a FILE; 0 when unknown

 private:
  LineReader() = default;
  std::optional<std::vector<std::string>> texts_;
  std::unique_ptr<std::ifstream> file_;
  std::istream* in_ = nullptr;
  std::string name_;  // the file's path, or "stdin"
  size_t count_ = 0;
  bool failed_ = false, interactive_ = false;
  uint64_t bytes_read_ = 0, total_bytes_ = 0;
};

// The inputs of a command that takes texts as arguments, else stdin's lines.
LineReader input_lines(const Args& args);

// One input's answer: what to print (a JSON line, or readable text ending in "\n"), or its error.
struct Answer {
  std::string out;
  std::optional<std::string> error;
};

// The loop of the task commands (classify, zero-shot, ner, qa, rerank --pairs): reads the inputs
// in chunks of `chunk_inputs` (one at a time when a person types at a terminal), calls
// answer(chunk) for one Answer per input, prints them in input order and reports each error with
// LineReader::report (and, with `as_json`, prints {"error": ...} in its place so that output lines
// stay aligned with input lines). Returns LineReader::status().
int answer_lines(LineReader& lines, bool as_json, size_t chunk_inputs,
                 const std::function<std::vector<Answer>(const std::vector<std::string>& chunk)>& answer);

// Inputs per chunk in the task commands: one forward pass per chunk.
inline constexpr size_t kChunkInputs = 32;

// ---------------------------------------------------------------- files and JSON

// Error "PATH: already exists (use --force to overwrite)" unless `force` or PATH is free: lets a
// command refuse before doing the work.
void check_can_write(const std::filesystem::path& path, bool force);
// Calls write(tmp) on a temporary file next to `path` and renames it into place at the end, so an
// interrupted run never leaves a half-written file under the requested name. Checks
// check_can_write first.
void write_file_atomically(const std::filesystem::path& path, bool force,
                           const std::function<void(const std::filesystem::path& tmp)>& write);

// One line of JSON; invalid UTF-8 in strings becomes U+FFFD instead of an exception.
std::string json_line(const json& value);
// {"error": message}: the answer of an input that failed, in JSON output.
std::string json_error(const std::string& message);
// A line of JSON input; Error "invalid JSON at byte N" when it is not JSON.
json parse_json_input(const std::string& line);
// A score as the readable tables print it: 4 decimals.
std::string score_text(double score);

// ---------------------------------------------------------------- the commands (one file each)

int run_fill_mask(const Args& args);
int run_embed(const Args& args);
int run_tokenize(const Args& args);
int run_info(const Args& args);
int run_dump(const Args& args);
int run_compare(const Args& args);
int run_bench(const Args& args);
int run_eval_mlm(const Args& args);
int run_classify(const Args& args);
int run_zero_shot(const Args& args);
int run_rerank(const Args& args);
int run_ner(const Args& args);
int run_qa(const Args& args);
int run_serve(const Args& args);

}  // namespace roberta::cli
