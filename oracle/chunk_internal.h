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
BigInt fixed_point(float value);
// The same for a double that is a multiple of 2^-149 (an exact sum of float32 values, or either part of its
// canonical pair of doubles); throws std::invalid_argument for any other.
BigInt fixed_point(double value);
Real from_fixed_point(const BigInt& value);

// Exact head sums sum_h s_{h,j} in fixed point (times 2^149). `clamp` applies max(0, .) as the exact
// flavour of EG-ChunkKV does.
std::vector<BigInt> fixed_head_sums(const HeadScores& scores, bool clamp);
// The same as 50-digit reals (each exact sum rounded once, so equal sums give equal reals).
std::vector<Real> to_reals(const std::vector<BigInt>& fixed);
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
Real exact_mean(const std::vector<BigInt>& fixed, const Chunk& chunk);
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
