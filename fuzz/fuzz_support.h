// Shared helpers of the libFuzzer harnesses: fuzz bytes as a file path, and the one way a harness reports a bug.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kvaudit::fuzz {

// The readers under test take paths, so each input is written to an anonymous in-memory file (memfd) and
// handed over as /proc/self/fd/N: no disk traffic, nothing left behind, and the reader's own open/mmap/stat
// path is exercised exactly as in production. Closed when the object dies.
class MemFile {
 public:
  MemFile(const std::uint8_t* data, std::size_t size);
  ~MemFile();
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

// Prints the case (what the harness fed in and what disagreed) to stderr and traps, so libFuzzer saves the
// input as a crash artifact. A disagreement between an optimized selector and its oracle is a bug in one of
// them, never noise: the harnesses only call this after the admissibility checker also rejected the output.
[[noreturn]] void report_and_trap(std::string_view what, const std::string& detail);

}  // namespace kvaudit::fuzz
