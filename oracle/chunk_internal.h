// Shared pieces of the ChunkKV / EG-ChunkKV oracles: chunk layout, parameter validation, exact head sums,
// kvpress's float32 statistics and the 50-digit statistics the exact flavour and the checker use.
#pragma once

#include <string>
#include <vector>

#include <boost/multiprecision/cpp_bin_float.hpp>
#include <boost/multiprecision/cpp_int.hpp>

#include "core/types.h"

namespace kvaudit::oracle::detail {

using Real = boost::multiprecision::cpp_bin_float_50;
using BigInt = boost::multiprecision::cpp_int;
// A head sum in fixed point (times 2^149). A float32 is below 2^128, so a term is below 2^277 and a sum of at most
// 2^63 terms below 2^340: 384 bits hold every sum exactly, and `checked` throws rather than wraps. Fixed width, so
// no allocation per value (cpp_int allocated once per token and per sum: 44 % of the fuzz harness's allocations).
using FixedPoint = boost::multiprecision::number<boost::multiprecision::cpp_int_backend<
    384, 384, boost::multiprecision::signed_magnitude, boost::multiprecision::checked, void>>;
using Rational = boost::multiprecision::cpp_rational;

// A compression ratio's decimal text ("0.9", ".85", "0") as an exact rational in [0, 1).
// Throws std::invalid_argument for anything else (exponents, signs, empty text, rho >= 1).
Rational parse_rho(const std::string& text);

// Chunk i covers [begin, end): floor(T/c) complete chunks of c tokens, then one partial chunk if T % c != 0.
struct Chunk {
  Index begin = 0;
  Index end = 0;
  Index size() const { return end - begin; }
};
std::vector<Chunk> chunk_layout(Index tokens, Index chunk_length);

// Throws std::invalid_argument for parameters the method / flavour rejects or scores that are not finite.
void validate(const HeadScores& scores, const SelectorParams& params);
// The same checks, returning the message instead of throwing ("" when valid).
std::string invalid_reason(const HeadScores& scores, const SelectorParams& params);

// kvpress returns the input unchanged when compression_ratio == 0; the exact flavour keeps all when L = T.
bool ratio_is_zero(const SelectorParams& params);
// EG-ChunkKV's token budget L under the flavour's rule (kvpress: float rule; exact: exact rule).
Index eg_token_budget(Index tokens, const SelectorParams& params);

// A float32 value times 2^149: an integer for every finite float32, so sums of them are exact.
FixedPoint fixed_point(float value);
// The same for a double that is a multiple of 2^-149 (an exact sum of float32 values, or either part of its
// canonical pair of doubles); throws std::invalid_argument for any other, and std::overflow_error from 2^235 up.
FixedPoint fixed_point(double value);
Real from_fixed_point(const FixedPoint& value);

// Exact head sums sum_h s_{h,j} in fixed point (times 2^149). `clamp` applies max(0, .) as the exact
// flavour of EG-ChunkKV does.
std::vector<FixedPoint> fixed_head_sums(const HeadScores& scores, bool clamp);
// The same as 50-digit reals (each exact sum rounded once, so equal sums give equal reals).
std::vector<Real> to_reals(const std::vector<FixedPoint>& fixed);
// sum_h |s_{h,j}|: the magnitude the float32 error bounds are relative to.
std::vector<double> abs_head_sums(const HeadScores& scores);

// ---- kvpress's float32 evaluation (canonical kvpress flavour) --------------------------------------
// x_j accumulated in float32 in head order 0..H-1, as torch's scores.sum(dim=1) on float32 scores.
std::vector<float> float32_head_sums(const HeadScores& scores);
// Sequential float32 sum divided by n in float32.
float float32_mean(const std::vector<float>& x, const Chunk& chunk);
// kvpress's normalized entropy of one chunk in float32 (rebase by the chunk minimum when negative,
// p = y / (sum y + 1e-8), h = -sum p log(p + 1e-8), clamp(h / log(n), 0, 1); n == 1 -> 0).
float float32_entropy(const std::vector<float>& x, const Chunk& chunk);

// ---- 50-digit statistics (exact flavour, and the centres of the checker's intervals) ---------------
// ln x for x > 0, correctly rounded to Real's 168 bits (MPFR, round to nearest); any other x gets Boost's log.
Real log_50(const Real& x);
// Mean over the chunk: the exact fixed-point sum, rounded once to 50 digits, divided by n. Equal sums over
// chunks of equal length give bit-identical means.
Real exact_mean(const std::vector<FixedPoint>& fixed, const Chunk& chunk);
// The same entropy formula with eps as given; values are sorted before summing so a chunk's entropy
// depends only on the multiset of its values (equal multisets give bit-identical results).
Real precise_entropy(const std::vector<Real>& x, const Chunk& chunk, const Real& eps);

// ---- Filtered canonical selections (exact flavour; oracle::select with Arithmetic::Filtered) -------------------
// The canonical selection of valid input, its decisions taken in double enclosures of the 50-digit statistics and in
// 50 digits only for comparisons those cannot decide (lazy_statistic.h; proofs/15_filtered_admissibility.md,
// "Filtered canonical selection"). `used_fifty_digits`: some value was computed in 50 digits.
struct FilteredSelection {
  Selection selection;
  bool used_fifty_digits = false;
};
FilteredSelection filtered_chunkkv_select(const HeadScores& scores, const SelectorParams& params);
FilteredSelection filtered_eg_chunkkv_select(const HeadScores& scores, const SelectorParams& params);

// torch.median (lower middle) or the mean of the two middles, of a copy.
template <class T>
T median_of(std::vector<T> values, MedianRule rule);

// Indices 0..n-1 ordered by value descending, ties toward the lower index (the canonical order).
template <class T>
std::vector<Index> canonical_order(const std::vector<T>& values);

// The `k` positions of `positions` with the largest values[pos], ties toward the lower position.
template <class T>
std::vector<Index> canonical_top_k(const std::vector<T>& values, std::vector<Index> positions, Index k);

}  // namespace kvaudit::oracle::detail

#include "oracle/chunk_internal.hpp"
