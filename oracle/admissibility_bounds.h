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
//
// The bounds are one generic transcription evaluated in two number types: Real (the naive 50-digit
// reference) and DoubleEnclosure (the filtered path: double enclosures of those same 50-digit values,
// proofs/15_filtered_admissibility.md).
#pragma once

#include <algorithm>
#include <optional>
#include <vector>

#include "oracle/chunk_internal.h"
#include "oracle/chunk_selection.h"
#include "oracle/double_enclosure.h"

namespace kvaudit::oracle::detail {

template <class V>
struct IntervalOf {
  V lo, hi;
};
using Interval = IntervalOf<Real>;

// min / max in either number type (the DoubleEnclosure ones: double_enclosure.h).
inline Real lesser(const Real& a, const Real& b) { return std::min(a, b); }
inline Real greater(const Real& a, const Real& b) { return std::max(a, b); }

template <class V>
struct SelectorBoundsOf {
  std::vector<Chunk> chunks;
  std::vector<IntervalOf<V>> x;        // ranking value per position
  std::vector<IntervalOf<V>> score;    // S_i per chunk
  std::vector<IntervalOf<V>> entropy;  // H~_i per chunk (only when requested)
  // What DoubleEnclosure ends' keys point to: reserved once and never grown past its capacity (add_tie_key), so
  // the addresses stay put, also when the bounds are moved; copying would leave them pointing at the original.
  std::vector<TieKey> tie_keys;

  SelectorBoundsOf() = default;
  SelectorBoundsOf(SelectorBoundsOf&&) noexcept = default;
  SelectorBoundsOf& operator=(SelectorBoundsOf&&) noexcept = default;
  SelectorBoundsOf(const SelectorBoundsOf&) = delete;
  SelectorBoundsOf& operator=(const SelectorBoundsOf&) = delete;
};

// Stores `key` and returns its address, or null (no key: fewer ties decided in double, never a wrong one) when
// the reserved capacity is used up.
// Fields are written in place: copying a key built on the caller's stack stalled on store forwarding (a 16-byte
// load over the 1-byte formula store), 15 % of the filtered EG-ChunkKV check at T = 512.
inline const TieKey* add_tie_key(std::vector<TieKey>& keys, TieFormula formula, double a, double b = 0, double c = 0, double d = 0,
                                 double e = 0) {
  if (keys.size() == keys.capacity()) return nullptr;
  TieKey& k = keys.emplace_back();
  k.formula = formula;
  k.a = a;
  k.b = b;
  k.c = c;
  k.d = d;
  k.e = e;
  return &k;
}
using SelectorBounds = SelectorBoundsOf<Real>;

// An enclosure of the 50-digit normalized entropy of `chunk` (precise_entropy) from one plain double evaluation and
// an a-priori bound on its error (proofs/15_filtered_admissibility.md, "Static bounds for the entropy terms"), or
// nullopt where that bound is not derived: a head sum that is not a double (a point), n < 2, eps outside
// [2^-900, 1]. selector_bounds<DoubleEnclosure> uses it, and the per-operation enclosure otherwise.
std::optional<DoubleEnclosure> entropy_by_static_bound(const std::vector<DoubleEnclosure>& x, const Chunk& chunk,
                                                       const DoubleEnclosure& eps);

// An enclosure of the 50-digit normalized entropy of a chunk with at most one nonzero rebased value, tight where
// the static bound's radius would swamp it (proofs/15_filtered_admissibility.md, item 11), or nullopt.
std::optional<DoubleEnclosure> entropy_of_one_value(const std::vector<DoubleEnclosure>& x, const Chunk& chunk,
                                                   const DoubleEnclosure& eps);

// `clamp`: the exact flavour of EG-ChunkKV ranks max(0, head sum). `with_entropy`: EG-ChunkKV only.
// V = Real or DoubleEnclosure (explicitly instantiated); the DoubleEnclosure one may throw UndecidedInDouble.
template <class V>
SelectorBoundsOf<V> selector_bounds(const HeadScores& scores, const SelectorParams& params, Rounding rounding, bool clamp,
                                    bool with_entropy);

}  // namespace kvaudit::oracle::detail
