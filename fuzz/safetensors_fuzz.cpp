// libFuzzer harness for the safetensors reader (core/io/safetensors.h): open() validates the header, then every
// tensor is widened; accepted files must satisfy the tiling invariants the header contract promises.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/io/safetensors.h"
#include "fuzz/fuzz_support.h"

using kvaudit::fuzz::report_and_trap;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  kvaudit::fuzz::MemFile file(data, size);
  try {
    auto f = kvaudit::io::SafetensorsFile::open(file.path());
    std::uint64_t total = 0;
    for (const auto& e : f.entries()) {
      const std::size_t width = kvaudit::io::safetensors_dtype_width(e.dtype);
      if (width == 0) report_and_trap("safetensors: unsupported dtype accepted", e.name + " " + e.dtype);
      std::uint64_t count = 1;
      for (kvaudit::Index d : e.shape) count *= static_cast<std::uint64_t>(d);
      if (e.end - e.begin != count * width) report_and_trap("safetensors: byte count differs from shape", e.name);
      total += e.end - e.begin;
      auto bytes = f.data(e);
      if (bytes.size() != e.end - e.begin) report_and_trap("safetensors: data span differs from offsets", e.name);
      auto t = f.read(e.name);
      const std::uint64_t held = t.values.size() + t.integers.size();
      if (held != count) report_and_trap("safetensors: widened count differs from shape", e.name);
    }
    if (total > size) report_and_trap("safetensors: tensors claim more bytes than the file holds", file.path());
    (void)f.file_bytes();
  } catch (const kvaudit::InputError&) {
    return 0;
  }
  return 0;
}
