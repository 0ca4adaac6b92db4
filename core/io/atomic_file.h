// Output files appear whole or not at all: write a temporary sibling, then rename over the target.
#pragma once

#include <string>

namespace kvaudit::io {

// Throws InputError naming `path` if the temporary cannot be written or renamed; leaves no partial file.
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace kvaudit::io
