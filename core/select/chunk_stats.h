// Building blocks of the optimized chunk selectors: head sums, per-chunk mean and entropy, medians, top-k.
// Internal to core/select; the order "value desc, index asc" is the canonical tie-break everywhere.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

#include "core/select/chunk_select.h"

namespace kvaudit::select::detail {

// x[t] = sum_h s[h][t] accumulated in V (float: torch's float32 `sum(dim=1)`; double: the exact flavour),
// heads added in order 0..H-1. Returns false if some x[t] is not finite (NaN/Inf input or overflow).
template <class V>
bool head_sum(const HeadScores& scores, std::span<V> x);

// x[t] = max(0, x[t]) (the exact flavour's clamp, docs/specification.md section 3).
void clamp_nonnegative(std::span<double> x);

struct ChunkGeometry {
  Index tokens = 0, chunk_length = 1, n_chunks = 0, n_complete = 0;
  Index begin(Index i) const { return i * chunk_length; }
  Index end(Index i) const { return std::min(tokens, (i + 1) * chunk_length); }
  Index size(Index i) const { return end(i) - begin(i); }
};
ChunkGeometry geometry(Index tokens, Index chunk_length);

// kvpress flavour, float32 exactly as kvpress / torch evaluate it (and as the oracle's float32 path does):
// S_i = (sequential float sum) / n_i; if `entropy` is non-empty, H~_i from y = x - min(0, min x),
// p = y / (sum y + 1e-8f), h = -sum p logf(p + 1e-8f), clamp(h / log n_i, 0, 1), 0 when n_i = 1.
// Chunks before `first_chunk` are left as they are.
void kvpress_chunk_statistics(std::span<const float> x, const ChunkGeometry& g, std::span<float> score,
                              std::span<float> entropy, Index first_chunk = 0);
// H~ of chunk i, exactly as above (glibc logf, sequential sums, divided by float(log n_i)).
float kvpress_chunk_entropy(const float* x, const ChunkGeometry& g, Index i);
float log_of_length(Index n);

// The same statistics with the chunks of a block in SIMD lanes (one chunk per lane, each lane summing its
// chunk in index order, so S_i is bit-identical) and a fast H~ (reciprocal and lane_log) within
// `fast_entropy_margin(C)` of the exact value (proofs/11_fast_entropy_margin.md). The last chunks that do
// not fill a block, the partial chunk, and every chunk when C > 256, get exact values. Returns false, with
// nothing usable in `entropy`, when some chunk's sums overflowed: the caller then falls back to
// kvpress_chunk_statistics. `lanes_buf` holds >= lanes_buffer_size(C) floats.
bool kvpress_chunk_statistics_lanes(std::span<const float> x, const ChunkGeometry& g, std::span<float> score,
                                    std::span<float> entropy, std::span<float> lanes_buf);
std::size_t lanes_buffer_size(Index chunk_length);
// |fast H~_i - exact H~_i| <= this for every complete chunk of length C.
double fast_entropy_margin(Index chunk_length);

// Exact flavour in double: the same formulas with the given eps, evaluated over each chunk's *sorted*
// values so equal multisets give bit-identical statistics (ties exact in real arithmetic stay exact;
// accumulating in index order would split them by rounding and flip `H~ < median`). `buf` >= C doubles.
void exact_chunk_statistics(std::span<const double> x, const ChunkGeometry& g, double eps, std::span<double> score,
                            std::span<double> entropy, std::span<double> buf);

// torch.median (lower middle for an even count) or the mean of the two middles, of finite values, by sampled
// narrowing (chunk_stats.cpp kth_smallest); NaN if any value is NaN, as torch.median (kvpress's float32 entropy of a
// chunk whose rebased sum overflows is NaN). `buf` >= values.size().
template <class V>
V median(std::span<const V> values, MedianRule rule, std::span<V> buf);

// "a ranks before b": larger value first, lower index on equal values.
template <class V>
struct RankDesc {
  const V* value;
  bool operator()(Index a, Index b) const { return value[a] > value[b] || (value[a] == value[b] && a < b); }
};

// In-chunk top-k of float chunks of C <= 16 values, kLanes chunks at a time in SIMD lanes: bit j of top[q] is
// set iff position j of chunk i = chunks[q] is one of the take[i] positions of that chunk that rank first by
// (x desc, index asc).
constexpr Index kMaxLaneRankChunk = 16;
void top_k_chunks(const float* x, const ChunkGeometry& g, std::span<const Index> chunks, const Index* take,
                  std::uint32_t* top);

// Sets keep[begin, end) to 1 for the k positions that rank first by (x desc, index asc) and 0 for the rest.
// A chunk-sized range (<= 16) counts each position's rank directly (no partitioning overhead for C ~ 10).
template <class V>
void mark_top_k_in_range(const V* x, Index begin, Index end, Index k, unsigned char* keep, Index* idx_buf) {
  const Index n = end - begin;
  if (k >= n || k <= 0) {
    std::fill(keep + begin, keep + end, static_cast<unsigned char>(k > 0));
    return;
  }
  if (n <= 16) {
    for (Index j = begin; j < end; ++j) {
      Index rank = 0;
      for (Index i = begin; i < end; ++i) rank += (x[i] > x[j]) | ((x[i] == x[j]) & (i < j));
      keep[j] = static_cast<unsigned char>(rank < k);
    }
    return;
  }
  std::fill(keep + begin, keep + end, 0);
  for (Index t = 0; t < n; ++t) idx_buf[t] = begin + t;
  std::nth_element(idx_buf, idx_buf + k, idx_buf + n, RankDesc<V>{x});
  for (Index t = 0; t < k; ++t) keep[idx_buf[t]] = 1;
}

// order[0..n) = 0..n-1 sorted by (S desc, index asc). float: stable LSD radix sort on order-preserving
// 32-bit keys (O(n); -0.0f is keyed as +0.0f because the two compare equal); double: comparison sort.
void chunk_order(const float* S, Index n, Index* order, Workspace& ws);
void chunk_order(const double* S, Index n, Index* order, Workspace& ws);

// The median of S given its canonical descending order (no extra selection pass).
template <class V>
V median_from_order(const V* S, const Index* order, Index n, MedianRule rule) {
  const Index lower = (n - 1) / 2;  // ascending position of the lower middle
  const V lo = S[order[n - 1 - lower]];
  if (rule == MedianRule::Lower || n % 2 == 1) return lo;
  return (lo + S[order[n - 2 - lower]]) / V(2);
}

// Write to `out` (reusing its storage) the sorted kept positions, `count` of them, of the chunks set in the
// bitmap. collect_whole: every position of those chunks. collect_top_k: chunk i keeps its ws.take[i] positions
// that rank first by (x desc, index asc): by top_k_chunks for float chunks of C <= 16, else by
// mark_top_k_in_range. O(n_chunks / 64 + their tokens).
void collect_whole(const ChunkGeometry& g, const ChunkBitmap& chunks, Index count, Positions& out);
template <class V>
void collect_top_k(const ChunkGeometry& g, const ChunkBitmap& chunks, const V* x, Index count, Workspace& ws,
                   Positions& out);

// Sorted positions t with keep[t] != 0. `scratch` holds >= keep.size() + 1 entries.
Positions collect_kept(std::span<const unsigned char> keep, Index* scratch);

}  // namespace kvaudit::select::detail
