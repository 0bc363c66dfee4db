#pragma once
// Reading a whole file, and parsing JSON with the file named in every error. Internal.
//
//   nlohmann::json cfg = roberta::util::read_json_file(dir / "config.json");
//   // missing file: Error(kIo) "DIR/config.json: cannot open file"
//   // bad JSON:     Error(kInvalidModel) "DIR/config.json: invalid JSON at byte 17: ..."
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "roberta/error.h"

namespace roberta::util {

// The file's bytes; Error (kIo) naming the path when it cannot be opened or read.
std::string read_file(const std::filesystem::path& path);

// Parses `text`; errors name `name` and the byte offset, with the given kind.
nlohmann::json parse_json(const std::string& text, const std::string& name,
                          ErrorKind kind = ErrorKind::kInvalidModel);

// read_file + parse_json (a model folder's files: errors are kInvalidModel).
nlohmann::json read_json_file(const std::filesystem::path& path, ErrorKind kind = ErrorKind::kInvalidModel);

}  // namespace roberta::util
