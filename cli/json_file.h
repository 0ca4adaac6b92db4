// A JSON claim file read by `kvaudit check` and `kvaudit check-pages`: one InputError naming the file on any
// failure to open or parse.
#pragma once

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace kvaudit::cli {

inline nlohmann::json read_json_object(const std::string& path, const std::string& expected) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "file", "cannot open");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path, "json", std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw InputError(path, "json", "expected an object with " + expected);
  return j;
}

}  // namespace kvaudit::cli
