#include "core/io/atomic_file.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "core/error.h"

namespace kvaudit::io {

void write_file_atomically(const std::string& path, const std::string& content) {
  std::string temporary = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path, "output", "cannot create temporary file " + temporary);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) {
      std::filesystem::remove(temporary);
      throw InputError(path, "output", "write failed");
    }
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    std::filesystem::remove(temporary);
    throw InputError(path, "output", "rename failed: " + ec.message());
  }
}

}  // namespace kvaudit::io
