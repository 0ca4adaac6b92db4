// Intervals around the exact head sums, chunk means and chunk entropies inside which an implementation's
// computed values may fall (the "tied within rounding" model of the admissibility checker).
//
// Tolerance (named kFloat32Evaluation in docs/chunk-selection.md), u = 2^-24, gamma(k) = k u / (1 - k u),
// safety factor 2 on every bound:
//   head sum x_j of H float32 values, any order:  |x^ - x| <= gamma(H-1) * sum_h |s_hj|
//   chunk mean S_i over n tokens:                 |S^ - S| <= gamma(H+n) * A_i / n + 2^-149,
//                                                 A_i = sum_{j in i} sum_h |s_hj|
//   normalized entropy H~_i:                      |H^ - H| <= ( D * sum_j dy_j / (Y + eps)
//                                                             + gamma(n+6) (ln n + 2) ) / ln n + u
//     where y_j = x_j - min(0, min_i x), Y = sum y_j, dy_j = e_j + e_min + u |y_j| (e_j the head-sum
//     bound, e_min the largest e_j of the chunk when the chunk is rebased), and D = 2 (|ln eps| + 1)
//     bounds |d h / d y_j| * (Y + eps) (first-order sensitivity of -sum p ln(p + eps)).
// ExactOnly uses zero-width intervals around the 50-digit values.
#pragma once

#include <vector>

#include "oracle/chunk_internal.h"
#include "oracle/chunk_selection.h"

namespace kvaudit::oracle::detail {

struct Interval {
  Real lo, hi;
};

struct SelectorBounds {
  std::vector<Chunk> chunks;
  std::vector<Interval> x;        // ranking value per position
  std::vector<Interval> score;    // S_i per chunk
  std::vector<Interval> entropy;  // H~_i per chunk (only when requested)
};

// `clamp`: the exact flavour of EG-ChunkKV ranks max(0, head sum). `with_entropy`: EG-ChunkKV only.
SelectorBounds selector_bounds(const HeadScores& scores, const SelectorParams& params, Rounding rounding, bool clamp,
                               bool with_entropy);

}  // namespace kvaudit::oracle::detail
