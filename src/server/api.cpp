#include "server/api.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>

#include "tokenizer/unicode.h"

namespace roberta::server {

const char* error_type_name(ErrorType type) {
  switch (type) {
    case ErrorType::kUnhealthy: return "Unhealthy";
    case ErrorType::kBackend: return "Backend";
    case ErrorType::kOverloaded: return "Overloaded";
    case ErrorType::kValidation: return "Validation";
    case ErrorType::kTokenizer: return "Tokenizer";
    case ErrorType::kEmpty: return "Empty";
    case ErrorType::kUnauthorized: return "Unauthorized";
  }
  return "Backend";
}

ApiError api_error(const Error& e) {
  switch (e.kind()) {
    case ErrorKind::kInvalidInput: return ApiError(422, ErrorType::kValidation, e.what());
    case ErrorKind::kInvalidModel: return ApiError(424, ErrorType::kBackend, e.what(), "inference");
    case ErrorKind::kIo: break;
  }
  return ApiError(500, ErrorType::kBackend, e.what(), "inference");
}

std::string tei_error_body(const ApiError& e) {
  return nlohmann::ordered_json{{"error", e.what()}, {"error_type", error_type_name(e.type)}}.dump(
      -1, ' ', false, json::error_handler_t::replace);
}

std::string openai_error_body(const ApiError& e) {
  // OpenAI's type names: invalid_request_error for what the caller can fix.
  const char* type = e.status == 401   ? "authentication_error"
                     : e.status == 429 ? "rate_limit_error"
                     : e.status < 500 && e.type != ErrorType::kBackend && e.type != ErrorType::kUnhealthy
                         ? "invalid_request_error"
                         : "server_error";
  using ordered = nlohmann::ordered_json;
  return ordered{{"error", ordered{{"message", e.what()}, {"type", type}, {"param", nullptr}, {"code", e.status}}}}.dump(
      -1, ' ', false, json::error_handler_t::replace);
}

json parse_body(const std::string& body) {
  // Invalid UTF-8 is a problem of the text, not of the JSON: 422, as TEI's tokenizer answers.
  if (const auto bad = unicode::find_invalid_utf8(body))
    throw ApiError(422, ErrorType::kTokenizer, "the request body is not valid UTF-8 (byte " + std::to_string(*bad) + ")",
                   "tokenization");
  json v;
  try {
    v = json::parse(body);
  } catch (const json::parse_error& e) {
    throw ApiError(400, ErrorType::kValidation, "malformed JSON at byte " + std::to_string(e.byte));
  }
  if (!v.is_object()) throw ApiError(400, ErrorType::kValidation, "the request body must be a JSON object");
  return v;
}

const json* field_of(const json& body, const char* field) {
  const auto it = body.find(field);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

namespace {
[[noreturn]] void wrong_type(const char* field, const char* expected) {
  throw ApiError(400, ErrorType::kValidation, std::string("`") + field + "` must be " + expected);
}
}  // namespace

bool get_bool(const json& body, const char* field, bool fallback) {
  const json* v = field_of(body, field);
  if (!v) return fallback;
  if (!v->is_boolean()) wrong_type(field, "true or false");
  return v->get<bool>();
}

std::optional<size_t> get_size(const json& body, const char* field) {
  const json* v = field_of(body, field);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) wrong_type(field, "an integer");
  if (v->is_number_unsigned()) return v->get<size_t>();
  if (v->get<int64_t>() < 0) throw ApiError(422, ErrorType::kValidation, std::string("`") + field + "` must not be negative");
  return v->get<size_t>();
}

std::optional<std::string> get_string(const json& body, const char* field) {
  const json* v = field_of(body, field);
  if (!v) return std::nullopt;
  if (!v->is_string()) wrong_type(field, "a string");
  return v->get<std::string>();
}

namespace {
std::string message_naming(const std::string& message, const std::string& name, bool prefix) {
  std::string m = message;
  if (const size_t hint = m.find("(set truncation to cut it)"); hint != std::string::npos)
    m.replace(hint, std::string::npos, "(send \"truncate\": true to cut it)");
  return prefix ? name + ": " + m : m;
}
}  // namespace

std::string input_message(const std::string& message, bool batch, size_t i, const std::string& field) {
  return message_naming(message, batch ? field + "[" + std::to_string(i) + "]" : field, batch);
}

std::string named_input_message(const std::string& message, const std::string& name) {
  return message_naming(message, name, true);
}

Side get_truncation_side(const json& body) {
  const auto side = get_string(body, "truncation_direction");
  if (!side || *side == "Right" || *side == "right") return Side::kRight;
  if (*side == "Left" || *side == "left") return Side::kLeft;
  throw ApiError(400, ErrorType::kValidation, "`truncation_direction` must be \"Left\" or \"Right\"");
}

size_t code_points(std::string_view text) {
  size_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

size_t Input::chars() const { return is_ids ? ids.size() : code_points(text); }

namespace {
bool is_id_list(const json& v) {
  if (!v.is_array() || v.empty()) return false;
  for (const auto& x : v)
    if (!x.is_number_integer()) return false;
  return true;
}
Input ids_input(const json& v) {
  Input in;
  in.is_ids = true;
  for (const auto& x : v) {
    const bool negative = x.is_number_integer() && !x.is_number_unsigned() && x.get<int64_t>() < 0;
    if (negative || (x.is_number_unsigned() && x.get<uint64_t>() > INT32_MAX))
      throw ApiError(422, ErrorType::kValidation, "token id " + x.dump() + " is out of range", "tokenization");
    in.ids.push_back(static_cast<int32_t>(x.get<int64_t>()));
  }
  return in;
}
}  // namespace

Inputs parse_inputs(const json& body, const char* field, size_t max_batch, bool allow_ids) {
  const json* v = field_of(body, field);
  const std::string name = std::string("`") + field + "`";
  if (!v) throw ApiError(400, ErrorType::kValidation, "missing field " + name);
  const char* expected = allow_ids ? "a string, a list of strings, or token ids ([int] or [[int]])"
                                   : "a string or a list of strings";
  Inputs out;
  if (v->is_string()) {
    out.items.push_back({.is_ids = false, .text = v->get<std::string>(), .ids = {}});
  } else if (allow_ids && is_id_list(*v)) {
    out.items.push_back(ids_input(*v));
  } else if (v->is_array()) {
    out.batch = true;
    if (v->size() > max_batch)
      throw ApiError(413, ErrorType::kValidation,
                     "batch size " + std::to_string(v->size()) + " > maximum allowed batch size " + std::to_string(max_batch),
                     "batch_size");
    for (const auto& item : *v) {
      if (item.is_string())
        out.items.push_back({.is_ids = false, .text = item.get<std::string>(), .ids = {}});
      else if (allow_ids && is_id_list(item))
        out.items.push_back(ids_input(item));
      else
        wrong_type(field, expected);
    }
  } else {
    wrong_type(field, expected);
  }
  if (out.items.empty()) throw ApiError(400, ErrorType::kEmpty, name + " cannot be empty");
  for (const Input& in : out.items)
    if (!in.is_ids && in.text.empty()) throw ApiError(400, ErrorType::kEmpty, name + " cannot be empty");
  return out;
}

void append_floats(std::string& out, const float* v, size_t n) {
  char buf[32];
  out += '[';
  for (size_t i = 0; i < n; ++i) {
    if (i) out += ',';
    if (!std::isfinite(v[i])) {
      out += "null";
      continue;
    }
    const auto r = std::to_chars(buf, buf + sizeof buf, v[i]);
    out.append(buf, r.ptr);
  }
  out += ']';
}

void append_matrices(std::string& out, std::span<const Matrix> matrices) {
  out += '[';
  for (size_t i = 0; i < matrices.size(); ++i) {
    out += i ? ",[" : "[";
    for (size_t t = 0; t < matrices[i].rows; ++t) {
      if (t) out += ',';
      append_floats(out, matrices[i].row(t), matrices[i].cols);
    }
    out += ']';
  }
  out += ']';
}

std::string base64_floats(const float* v, size_t n) {
  std::string bytes(n * 4, '\0');
  for (size_t i = 0; i < n; ++i) {
    const uint32_t u = std::bit_cast<uint32_t>(v[i]);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<char>((u >> (8 * b)) & 0xFF);  // little-endian
  }
  return base64(bytes);
}

std::string base64(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t left = bytes.size() - i;
    const uint32_t w = (static_cast<uint8_t>(bytes[i]) << 16) | (left > 1 ? static_cast<uint8_t>(bytes[i + 1]) << 8 : 0) |
                       (left > 2 ? static_cast<uint8_t>(bytes[i + 2]) : 0);
    out += kAlphabet[(w >> 18) & 63];
    out += kAlphabet[(w >> 12) & 63];
    out += left > 1 ? kAlphabet[(w >> 6) & 63] : '=';
    out += left > 2 ? kAlphabet[w & 63] : '=';
  }
  return out;
}

std::string json_string(const std::string& s) { return json(s).dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace roberta::server
