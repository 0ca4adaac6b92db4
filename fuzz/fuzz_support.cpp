// memfd-backed input files and the trap-with-a-message report used by every harness.
#include "fuzz/fuzz_support.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace kvaudit::fuzz {

MemFile::MemFile(const std::uint8_t* data, std::size_t size) {
  fd_ = memfd_create("kvaudit-fuzz", MFD_CLOEXEC);
  if (fd_ < 0) {
    std::perror("memfd_create");
    std::abort();  // the harness cannot run at all; not an input bug
  }
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd_, data + done, size - done);
    if (n <= 0) {
      std::perror("write");
      std::abort();
    }
    done += static_cast<std::size_t>(n);
  }
  path_ = "/proc/self/fd/" + std::to_string(fd_);
}

MemFile::~MemFile() {
  if (fd_ >= 0) ::close(fd_);
}

void report_and_trap(std::string_view what, const std::string& detail) {
  std::fprintf(stderr, "\n==== kvaudit fuzz finding: %.*s ====\n%s\n", static_cast<int>(what.size()), what.data(),
               detail.c_str());
  std::fflush(stderr);
  __builtin_trap();
}

}  // namespace kvaudit::fuzz
