#include "util/files.h"

#include <fstream>
#include <sstream>

namespace roberta::util {

std::string read_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw Error(path.string() + ": is a folder, not a file", ErrorKind::kIo);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open file", ErrorKind::kIo);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error(path.string() + ": read error", ErrorKind::kIo);
  return ss.str();
}

nlohmann::json parse_json(const std::string& text, const std::string& name, ErrorKind kind) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(name + ": invalid JSON at byte " + std::to_string(e.byte) + ": " + e.what(), kind);
  } catch (const nlohmann::json::exception& e) {  // e.g. a number too large for a double
    throw Error(name + ": invalid JSON: " + e.what(), kind);
  }
}

nlohmann::json read_json_file(const std::filesystem::path& path, ErrorKind kind) {
  return parse_json(read_file(path), path.string(), kind);
}

}  // namespace roberta::util
