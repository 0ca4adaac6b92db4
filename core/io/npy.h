// Strict NPY (v1/v2/v3) reader and a small writer. Every value is widened to float32 or read as int64.
#pragma once

#include <string>
#include <vector>

#include "core/types.h"

namespace kvaudit::io {

struct NpyArray {
  std::vector<Index> shape;
  std::string dtype;            // as written in the header, e.g. "<f4"
  std::vector<float> values;    // floating dtypes, widened to float32 (f64 is rounded)
  std::vector<Index> integers;  // integer dtypes
};

// Reads little-endian, C-order f2/f4/f8 or i4/i8 arrays. Any malformation (magic, header, dtype, shape
// versus file size, Fortran order, overflow) throws InputError naming `path` and the field.
NpyArray read_npy(const std::string& path);

// Writes a little-endian C-order float32 array (tests and fuzz corpora).
void write_npy(const std::string& path, const std::vector<Index>& shape, const std::vector<float>& values);

// Throws InputError(source, field, ...) at the first NaN or infinity.
void require_finite(const std::vector<float>& values, const std::string& source, const std::string& field);

}  // namespace kvaudit::io
