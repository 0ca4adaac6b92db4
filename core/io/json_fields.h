// Typed access to one JSON object for the loaders (dumps, needle studies): every failure is one InputError naming
// the source (a file, or file:line), the field with its path, and the value found.
#pragma once

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/types.h"

namespace kvaudit::io {

// A JSON value as an error message shows it: its text, cut to 60 characters.
inline std::string shown_json(const nlohmann::json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

// A JSON file, parsed. Throws InputError naming the file when it cannot be opened or is not JSON.
inline nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "file", "cannot be opened");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(path, "json", e.what());
  }
}

struct JsonFields {
  std::string source;
  std::string prefix;  // e.g. "prompts[2]."
  const nlohmann::json& object;

  const nlohmann::json& get(const std::string& key) const {
    if (!object.is_object() || !object.contains(key)) throw InputError(source, prefix + key, "missing");
    return object[key];
  }
  [[noreturn]] void bad(const std::string& key, const std::string& want) const {
    throw InputError(source, prefix + key, want + ", got " + shown_json(object[key]));
  }
  std::string text(const std::string& key) const {
    const nlohmann::json& v = get(key);
    if (!v.is_string() || v.get<std::string>().empty()) bad(key, "must be a non-empty string");
    return v.get<std::string>();
  }
  Index count(const std::string& key) const {
    const nlohmann::json& v = get(key);
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0) bad(key, "must be a non-negative integer");
    return v.get<Index>();
  }
  Index positive(const std::string& key) const {
    const nlohmann::json& v = get(key);
    if (!v.is_number_integer() || v.get<std::int64_t>() < 1) bad(key, "must be a positive integer");
    return v.get<Index>();
  }
  double number(const std::string& key) const {
    const nlohmann::json& v = get(key);
    if (!v.is_number()) bad(key, "must be a number");
    return v.get<double>();
  }
  std::optional<Index> optional_count(const std::string& key) const {
    if (!object.contains(key)) return std::nullopt;
    return count(key);
  }
};

}  // namespace kvaudit::io
