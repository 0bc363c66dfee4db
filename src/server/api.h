#pragma once
// The wire formats of the server: request fields as Text Embeddings Inference (router/src/http/
// types.rs) and OpenAI's embeddings API define them, errors, and fast writers for float arrays.
//
//   json body = parse_body(text);                    // ApiError 400 for malformed JSON
//   Inputs in = parse_inputs(body, "inputs");        // "a" | ["a", "b"] | [1, 2] | [[1, 2], "b"]
//   std::string out; append_floats(out, row, n);     // "[0.1,-2.5]" (shortest round-trip digits)
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "roberta/error.h"
#include "roberta/model.h"
#include "roberta/tokenizer.h"

namespace roberta::server {

using json = nlohmann::json;

// TEI's error types (serialised as TEI does: "Validation", "Empty", ...); kUnauthorized is ours
// (TEI answers 401 with no body).
enum class ErrorType { kUnhealthy, kBackend, kOverloaded, kValidation, kTokenizer, kEmpty, kUnauthorized };
const char* error_type_name(ErrorType type);

// A request that fails: its HTTP status, TEI error type, message, and the `err` label of
// te_request_failure.
struct ApiError : std::runtime_error {
  ApiError(int status, ErrorType type, const std::string& message, std::string metric = "validation")
      : std::runtime_error(message), status(status), type(type), metric(std::move(metric)) {}
  int status;
  ErrorType type;
  std::string metric;
};
// The status and type a roberta::Error of each kind answers with: invalid input 422 Validation,
// invalid model 424 Backend, I/O 500 Backend.
ApiError api_error(const Error& e);
// The message of an error of input i (its JSON index) of a request's `field`, naming it as the
// request does: "inputs[2]: no <mask> in the text" (no name for a request's single input). The
// library's hint "(set truncation to cut it)" names the request's field instead.
std::string input_message(const std::string& message, bool batch, size_t i, const std::string& field = "inputs");
// The same with the input's full name given ("inputs.sentences[0]: ...").
std::string named_input_message(const std::string& message, const std::string& name);

// Error bodies: {"error": message, "error_type": type} on TEI's routes; OpenAI's
// {"error": {"message", "type", "param", "code"}} on /v1/* and /embeddings.
std::string tei_error_body(const ApiError& e);
std::string openai_error_body(const ApiError& e);

json parse_body(const std::string& body);  // a JSON object, else ApiError 400

// A field of an object, nullptr when it is absent or null.
const json* field_of(const json& body, const char* field);
// Field readers: absent or null gives the default; a value of the wrong type is ApiError 400.
bool get_bool(const json& body, const char* field, bool fallback);
std::optional<size_t> get_size(const json& body, const char* field);
std::optional<std::string> get_string(const json& body, const char* field);
// TEI's "truncation_direction": "Right" (default) or "Left" (keeps the end); else ApiError 400.
Side get_truncation_side(const json& body);

// Code points of a UTF-8 text (TEI's x-compute-characters counts them).
size_t code_points(std::string_view text);

// One input: a text, or token ids (OpenAI's [int] / [[int]]).
struct Input {
  bool is_ids = false;
  std::string text;
  std::vector<int32_t> ids;
  size_t chars() const;  // code points (or ids), TEI's x-compute-characters
};
struct Inputs {
  std::vector<Input> items;
  bool batch = false;  // a list was sent (the answer is a list even of one)
};
// str | [int] | [str | [int]]; ApiError 400 for other shapes or an empty input, 413 for more
// than `max_batch` items, 422 for an id outside int32.
Inputs parse_inputs(const json& body, const char* field, size_t max_batch, bool allow_ids = true);

// "[a,b,...]" with the shortest digits that read back as the same float (non-finite: null).
void append_floats(std::string& out, const float* v, size_t n);
// "[[[...], ...], ...]": each matrix as a list of its rows (/embed_all's token states, ColBERT vectors).
void append_matrices(std::string& out, std::span<const Matrix> matrices);
// Base64 of the little-endian float32 bytes (OpenAI's encoding_format "base64").
std::string base64_floats(const float* v, size_t n);
std::string base64(std::string_view bytes);  // standard alphabet, padded
// A JSON string literal, invalid UTF-8 replaced by U+FFFD.
std::string json_string(const std::string& s);

}  // namespace roberta::server
