// Bad input is reported as one line naming the file (or flag) and the field, then exit code 2.
#pragma once

#include <stdexcept>
#include <string>

namespace kvaudit {

class InputError : public std::runtime_error {
 public:
  InputError(const std::string& source, const std::string& field, const std::string& problem)
      : std::runtime_error(source + ": " + field + ": " + problem) {}
};

}  // namespace kvaudit
