// Input checks every front end applies before it asks a question: the float32 narrowing note, the shape of a
// score array, attention rows as distributions. Each throws InputError naming the source (a file, a flag or a
// Python argument) and the field.
#pragma once

#include <cmath>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/io/npy.h"
#include "core/types.h"

namespace kvaudit::api {

// What a float32-defined computation did to its input: the selectors and Page-EntroKV compute in float32 (the
// kvpress flavour's semantics, and the optimized paths' type), so a float64 input is narrowed in the front
// end, never in the reader, and the answer says so.
struct Float32Input {
  std::string stored_dtype;  // as the input stores it ("<f8", "F16", ...)
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

// A (heads, T) float score matrix: (T,) is one head.
struct ScoreFile {
  Index heads = 0, tokens = 0;
  std::vector<float> values;
  Float32Input precision;
  HeadScores view() const { return HeadScores{heads, tokens, {values.data(), values.size()}}; }
};

// heads and T of a (T,) or (heads, T) score array, validated.
inline ScoreFile score_file_shape(const std::vector<Index>& shape, const std::string& path) {
  ScoreFile f;
  if (shape.size() == 1) {
    f.heads = 1;
    f.tokens = shape[0];
  } else if (shape.size() == 2) {
    f.heads = shape[0];
    f.tokens = shape[1];
  } else {
    throw InputError(path, "shape", "expected (T,) or (heads, T), got rank " + std::to_string(shape.size()));
  }
  if (f.heads < 1 || f.tokens < 1) throw InputError(path, "shape", "empty score array (heads and T must be >= 1)");
  return f;
}

// A row is a distribution if it is non-negative and sums to 1 within row_sum_tolerance(T): a float32 softmax row
// sums to 1 within T 2^-24 (accumulation) and the window mean adds one more rounding per query, so
// 2 T 2^-24 covers float32 dumps with a factor-2 margin; the 1e-3 floor admits float16 storage (2^-11 per value).
inline double row_sum_tolerance(Index tokens) { return 1e-3 + 2.0 * static_cast<double>(tokens) * std::ldexp(1.0, -24); }

// Every head row of a (1, q_heads, T) tensor is a distribution: finite, non-negative, summing to 1 within
// row_sum_tolerance(T).
inline void require_distribution_rows(const ScoreTensor& out, const std::string& source) {
  if (out.heads < 1 || out.tokens < 1) throw InputError(source, "shape", "q_heads and T must be >= 1");
  io::require_finite(out.values, source, "values");
  const double tol = row_sum_tolerance(out.tokens);
  for (Index h = 0; h < out.heads; ++h) {
    double sum = 0;
    for (float v : out.row(0, h)) {
      if (v < 0) throw InputError(source, "values", "row " + std::to_string(h) + " has a negative entry");
      sum += v;
    }
    if (std::abs(sum - 1.0) > tol)
      throw InputError(source, "values", "row " + std::to_string(h) + " sums to " + std::to_string(sum) + ", not a distribution");
  }
}

}  // namespace kvaudit::api
