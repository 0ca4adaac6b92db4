// Strict NPY (v1/v2/v3) reader and a small writer. Floating values are kept exactly as stored (held as
// double, which holds f2, f4 and f8 exactly); integers are read as int64.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/types.h"

namespace kvaudit::io {

struct NpyArray {
  std::vector<Index> shape;
  std::string dtype;            // as written in the header, e.g. "<f4"
  std::vector<double> values;   // floating dtypes, exactly as stored (never rounded)
  std::vector<Index> integers;  // integer dtypes
};

// Reads little-endian, C-order f2/f4/f8 or i4/i8 arrays. Any malformation (magic, header, dtype, shape
// versus file size, Fortran order, overflow) throws InputError naming `path` and the field.
NpyArray read_npy(const std::string& path);

// Writes a little-endian C-order float32 (<f4) or float64 (<f8) array (tests and fuzz corpora).
void write_npy(const std::string& path, const std::vector<Index>& shape, const std::vector<float>& values);
void write_npy_f64(const std::string& path, const std::vector<Index>& shape, const std::vector<double>& values);

// Throws InputError(source, field, ...) at the first NaN or infinity.
void require_finite(std::span<const float> values, const std::string& source, const std::string& field);
void require_finite(std::span<const double> values, const std::string& source, const std::string& field);

// Values narrowed to float32 for a computation defined in float32, and how many of them that changed (0 for
// f2/f4 files). Callers that narrow must report `changed` in their output: narrowing is never silent.
struct Float32Values {
  std::vector<float> values;
  Index changed = 0;
};
Float32Values to_float32(const std::vector<double>& values);

}  // namespace kvaudit::io
