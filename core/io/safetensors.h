// Strict, memory-mapped safetensors reader (and a small writer for tests): format at
// https://github.com/huggingface/safetensors — u64 LE header length N, N bytes of JSON, then the data region.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/io/dump.h"
#include "core/types.h"

namespace kvaudit::io {

// One tensor's header entry. Offsets are relative to the start of the data region, as in the file.
struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // F32, F16, BF16, I32 or I64 (anything else is rejected)
  std::vector<Index> shape;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

// Bytes per element of a supported dtype; 0 for any other string.
std::size_t safetensors_dtype_width(const std::string& dtype);

// A validated safetensors file, kept memory-mapped (read-only) for as long as the object lives.
class SafetensorsFile {
 public:
  // Maps `path` and validates the whole header. Throws InputError(path, field, problem) where field names
  // the part at fault: "file", "header length", "header", "<tensor>.dtype", "<tensor>.shape",
  // "<tensor>.data_offsets", "__metadata__". Rules: header length within the file; the header a JSON object;
  // each tensor entry exactly {dtype, shape, data_offsets}; begin <= end <= data size; byte count ==
  // product(shape) * width computed without overflow; tensors tile the data region in offset order with no
  // gap, no overlap and no trailing bytes (the rule the reference Rust implementation enforces); duplicate
  // names rejected; __metadata__ an object of strings.
  static SafetensorsFile open(const std::string& path);

  const std::string& path() const { return path_; }
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }  // in header order
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // The entire file (for checksums).
  std::span<const std::uint8_t> file_bytes() const;
  // The raw little-endian bytes of one entry.
  std::span<const std::uint8_t> data(const SafetensorsEntry& entry) const;
  // The entry called `name`; throws InputError(path, name, "missing") if absent.
  const SafetensorsEntry& entry(const std::string& name) const;
  // Widens one tensor: floating dtypes into Tensor::values, integer dtypes into Tensor::integers.
  Tensor read(const std::string& name) const;

 struct Mapping;  // the read-only mmap, defined in safetensors.cpp

 private:
  std::string path_;
  std::shared_ptr<const Mapping> mapping_;
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

// Every tensor of `path`, widened.
std::map<std::string, Tensor> read_safetensors(const std::string& path);

// A tensor to write: `bytes` holds product(shape) little-endian elements of `dtype`.
struct RawTensor {
  std::string dtype;
  std::vector<Index> shape;
  std::vector<std::uint8_t> bytes;
};

// The bytes of a safetensors file holding `tensors` (in name order) and `metadata`. Used by tests to build
// good files and, by editing the result, malformed ones.
std::vector<std::uint8_t> encode_safetensors(const std::map<std::string, RawTensor>& tensors,
                                             const std::map<std::string, std::string>& metadata = {});

}  // namespace kvaudit::io
