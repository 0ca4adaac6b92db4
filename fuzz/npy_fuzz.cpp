// libFuzzer harness for the NPY reader (core/io/npy.h): any byte string either parses into a consistent array
// or is rejected with InputError; every other exception, crash, leak or hang is a finding.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/io/npy.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  kvaudit::fuzz::MemFile file(data, size);
  kvaudit::io::NpyArray a;
  try {
    a = kvaudit::io::read_npy(file.path());
  } catch (const kvaudit::InputError&) {
    return 0;  // the documented way to refuse bad input
  }
  // Accepted: the element count must match the shape and the dtype class, and the data must be all there.
  std::uint64_t count = 1;
  for (kvaudit::Index d : a.shape) {
    if (d < 0) kvaudit::fuzz::report_and_trap("npy: negative dimension accepted", a.dtype);
    count *= static_cast<std::uint64_t>(d);
  }
  const bool floating = a.dtype.size() == 3 && a.dtype[1] == 'f';
  const std::uint64_t held = floating ? a.values.size() : a.integers.size();
  if (held != count || (floating ? !a.integers.empty() : !a.values.empty())) {
    kvaudit::fuzz::report_and_trap("npy: element count differs from the shape",
                                   "dtype " + a.dtype + ", shape product " + std::to_string(count) + ", held " +
                                       std::to_string(held));
  }
  const std::uint64_t width = static_cast<std::uint64_t>(a.dtype.back() - '0');
  if (count * width > size) kvaudit::fuzz::report_and_trap("npy: more data than the file holds", a.dtype);
  return 0;
}
