#pragma once
// Reading tokenizer.json's fields, with errors (ErrorKind::kInvalidModel) that name where.
#include <nlohmann/json.hpp>
#include <string>

#include "roberta/error.h"

namespace roberta::json_fields {

// obj[key], which must exist.
inline const nlohmann::json& field(const nlohmann::json& obj, const char* key, const std::string& where) {
  if (!obj.is_object() || !obj.contains(key))
    throw Error(where + ": missing field \"" + key + "\"", ErrorKind::kInvalidModel);
  return obj.at(key);
}

// obj[key] as a T, or `fallback` when it is absent or null.
template <class T>
T get_or(const nlohmann::json& obj, const char* key, T fallback, const std::string& where) {
  if (!obj.is_object() || !obj.contains(key) || obj.at(key).is_null()) return fallback;
  try {
    return obj.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(where + ": field \"" + key + "\" has the wrong type", ErrorKind::kInvalidModel);
  }
}

}  // namespace roberta::json_fields
