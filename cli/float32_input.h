// What a float32-defined computation did to its input: the selectors and Page-EntroKV compute in float32 (the
// kvpress flavour's semantics, and the optimized paths' type), so a float64 file is narrowed there, in the
// front end, never in the reader, and the output says so.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/io/npy.h"
#include "core/types.h"

namespace kvaudit::cli {

struct Float32Input {
  std::string stored_dtype;  // as the file stores it ("<f8", "F16", ...)
  Index rounded = 0;         // values that float32 could not hold exactly

  nlohmann::json describe() const {
    return {{"input_dtype", stored_dtype}, {"computes_in", "float32"}, {"inputs_rounded_to_float32", rounded}};
  }
};

// Narrows an NPY array's values for a float32 computation; rejects values beyond float32's range.
inline std::vector<float> narrow_for_float32(const io::NpyArray& a, const std::string& path, Float32Input& note) {
  io::require_finite(std::span<const double>(a.values), path, "values");
  io::Float32Values f = io::to_float32(a.values);
  io::require_finite(std::span<const float>(f.values), path, "values (beyond float32's range)");
  note = {a.dtype, f.changed};
  return std::move(f.values);
}

}  // namespace kvaudit::cli
