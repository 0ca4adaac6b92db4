// Element-wise pieces of the batched selectors: head sums, chunk statistics, sort keys, ranks, walk costs.
// Plain structs with host+device call operators so one definition serves nvcc and g++ (Thrust OMP).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define KVAUDIT_HD __host__ __device__
#else
#define KVAUDIT_HD
#endif

namespace kvaudit::gpu::detail {

// Order-preserving map float -> uint32 (ascending floats give ascending integers). -0.0 is folded onto +0.0
// first because the selectors compare with operator< / ==, under which the two zeros are equal; a raw
// bit-pattern sort would otherwise put -0.0 first and break the "ties toward the lower index" rule.
KVAUDIT_HD inline std::uint32_t ascending_bits(float f) {
  if (f == 0.0f) f = 0.0f;
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// One 64-bit key per element: segment in the high word, the value's rank bits in the low word. A single
// stable radix sort over these keys, applied to indices in increasing order, yields per segment the order
// (value desc or asc, index asc): the canonical tie break, with one sort instantiation for every use.
struct SegmentKey {
  const float* values;
  int per_segment;
  bool descending;
  KVAUDIT_HD std::uint64_t operator()(int k) const {
    const std::uint32_t bits = ascending_bits(values[k]);
    const std::uint64_t seg = static_cast<std::uint64_t>(k / per_segment);
    return (seg << 32) | static_cast<std::uint64_t>(descending ? ~bits : bits);
  }
};

struct SegmentOf {
  int per_segment;
  KVAUDIT_HD int operator()(int k) const { return k / per_segment; }
};

// x[s, t] = sum over the segment's rows, in row order, in float32 (torch sums a float32 tensor in float32);
// the exact flavour clamps at zero (docs/specification.md section 3: x_j = max(0, sum_h s_{h,j})).
struct HeadSum {
  const float* raw;
  int rows;
  int tokens;
  bool clamp_at_zero;
  KVAUDIT_HD float operator()(int k) const {
    const int s = k / tokens, t = k % tokens;
    float acc = 0.0f;
    for (int h = 0; h < rows; ++h) acc += raw[(static_cast<long long>(s) * rows + h) * tokens + t];
    return clamp_at_zero && acc < 0.0f ? 0.0f : acc;
  }
};

// Chunk geometry shared by every segment: chunk i covers [i c, min((i + 1) c, T)).
struct Chunking {
  int tokens;
  int chunk;
  int n_chunks;
  KVAUDIT_HD int start(int i) const { return i * chunk; }
  KVAUDIT_HD int length(int i) const {
    const int end = (i + 1) * chunk < tokens ? (i + 1) * chunk : tokens;
    return end - i * chunk;
  }
};

// Mean of x over a chunk: float32 sum in position order divided by the length, as the oracle evaluates it.
struct ChunkMean {
  const float* x;
  Chunking geo;
  KVAUDIT_HD float operator()(int k) const {
    const int s = k / geo.n_chunks, i = k % geo.n_chunks;
    const float* row = x + static_cast<long long>(s) * geo.tokens + geo.start(i);
    const int n = geo.length(i);
    float acc = 0.0f;
    for (int j = 0; j < n; ++j) acc += row[j];
    return acc / static_cast<float>(n);
  }
};

// Normalized within-chunk entropy (docs/specification.md section 3, kvpress EntropyGatedChunkKVPress): rebase by the chunk's
// minimum when it is negative, p = y / (sum y + eps), h = -sum p log(p + eps), clamp(h / log n, 0, 1);
// a one-token chunk has entropy 0. Float32 throughout like torch; log n in double then rounded, as torch
// divides a float32 tensor by a Python float.
struct ChunkEntropy {
  const float* x;
  Chunking geo;
  float eps;
  KVAUDIT_HD float operator()(int k) const {
    const int s = k / geo.n_chunks, i = k % geo.n_chunks;
    const float* row = x + static_cast<long long>(s) * geo.tokens + geo.start(i);
    const int n = geo.length(i);
    if (n <= 1) return 0.0f;
    float lo = row[0];
    for (int j = 1; j < n; ++j) lo = row[j] < lo ? row[j] : lo;
    const float shift = lo < 0.0f ? lo : 0.0f;
    float total = 0.0f;
    for (int j = 0; j < n; ++j) total += row[j] - shift;
    const float denom = total + eps;  // eps: 1e-8 (kvpress EPSILON) or the exact flavour's parameter
    float h = 0.0f;
    for (int j = 0; j < n; ++j) {
      const float p = (row[j] - shift) / denom;
      h += p * logf(p + eps);
    }
    h = -h;
    const float normalized = h / static_cast<float>(log(static_cast<double>(n)));
    return normalized < 0.0f ? 0.0f : (normalized > 1.0f ? 1.0f : normalized);
  }
};

// Walk cost of the chunk at sorted position k (docs/specification.md section 3 step 5 in prefix-sum form,
// proofs/10_walk_as_prefix_sum.md): important and spiky chunks cost min(n, r), others n.
struct WalkCost {
  const int* order;          // sorted position -> global chunk id
  const float* mean;         // per global chunk id
  const float* entropy;
  const float* score_median;   // per segment
  const float* entropy_gate;   // per segment: tau
  Chunking geo;
  int rescue;
  KVAUDIT_HD int operator()(int k) const {
    const int g = order[k];
    const int s = g / geo.n_chunks;
    const int n = geo.length(g % geo.n_chunks);
    const bool important = mean[g] >= score_median[s];
    const bool spiky = entropy[g] < entropy_gate[s];
    return important && spiky ? (n < rescue ? n : rescue) : n;
  }
};

// The element of a segment's sorted order at a fixed rank (a median). NaN if the segment holds a NaN, as
// torch.median (kvpress's float32 entropy of a chunk whose rebased sum overflows is NaN): ascending_bits sorts
// NaNs of either sign to the two ends of a segment, so the ends tell.
struct AtRank {
  const float* values;
  const int* order;
  int per_segment;
  int rank_a, rank_b;  // equal for a lower median; the two middles for mean-of-middles
  KVAUDIT_HD float operator()(int s) const {
    const float first = values[order[s * per_segment]], last = values[order[s * per_segment + per_segment - 1]];
    if (first != first) return first;
    if (last != last) return last;
    const float a = values[order[s * per_segment + rank_a]];
    if (rank_a == rank_b) return a;
    const float b = values[order[s * per_segment + rank_b]];
    return static_cast<float>((static_cast<double>(a) + static_cast<double>(b)) / 2.0);
  }
};

// Tokens a chunk takes: min(c_k, max(0, L - P_k)), scattered to the chunk's global id.
struct ScatterTake {
  const int* order;
  const int* cost;
  const int* prefix;
  int* take;
  int budget;
  KVAUDIT_HD void operator()(int k) const {
    const int left = budget - prefix[k];
    const int t = left <= 0 ? 0 : (left < cost[k] ? left : cost[k]);
    take[order[k]] = t;
  }
};

// Budget left after the walk, per segment: max(0, L - total cost).
struct Remaining {
  const int* cost;
  const int* prefix;
  int n_chunks;
  int budget;
  KVAUDIT_HD int operator()(int s) const {
    const int last = s * n_chunks + n_chunks - 1;
    const int spent = prefix[last] + cost[last];
    return spent >= budget ? 0 : budget - spent;
  }
};

// Token kept by the walk: its chunk takes it whole, or it is among the chunk's top `take` tokens by
// (x desc, index asc). The rank is counted in O(c) per token: chunks are short (10-20 in kvpress), and a
// per-chunk sort would cost more in launches than it saves.
struct WalkKeep {
  const float* x;
  const int* take;
  Chunking geo;
  KVAUDIT_HD std::uint8_t operator()(int k) const {
    const int s = k / geo.tokens, t = k % geo.tokens;
    const int i = t / geo.chunk;
    const int tk = take[s * geo.n_chunks + i];
    const int n = geo.length(i);
    if (tk >= n) return 1;
    if (tk <= 0) return 0;
    const float* row = x + static_cast<long long>(s) * geo.tokens;
    const float v = row[t];
    int rank = 0;
    for (int j = geo.start(i); j < geo.start(i) + n; ++j) rank += (row[j] > v) || (row[j] == v && j < t);
    return rank < tk ? 1 : 0;
  }
};

// ChunkKV: a chunk is kept whole when its rank in the (mean desc, index asc) order is below the chunk count.
struct ChunkRankTake {
  const int* order;
  int* take;
  Chunking geo;
  int kept_chunks;
  KVAUDIT_HD void operator()(int k) const {
    const int g = order[k];
    take[g] = (k % geo.n_chunks) < kept_chunks ? geo.length(g % geo.n_chunks) : 0;
  }
};

struct NotKeptAt {
  const std::uint8_t* keep;
  const int* order;
  KVAUDIT_HD int operator()(int k) const { return keep[order[k]] ? 0 : 1; }
};

// Top-up (docs/specification.md section 3 step 6): the leftover token at sorted position k is added when fewer than
// `remaining` leftover tokens precede it in its segment's (x desc, index asc) order.
struct TopUp {
  const int* order;
  const int* leftover;
  const int* leftover_rank;
  const int* remaining;
  std::uint8_t* keep;
  int tokens;
  KVAUDIT_HD void operator()(int k) const {
    if (leftover[k] && leftover_rank[k] < remaining[k / tokens]) keep[order[k]] = 1;
  }
};

// Per-row top-k by rank in the sorted order (kvpress ChunkKV fallback with no complete chunk).
struct RankBelow {
  const int* order;
  std::uint8_t* keep;
  int per_segment;
  int k_keep;
  KVAUDIT_HD void operator()(int k) const { keep[order[k]] = (k % per_segment) < k_keep ? 1 : 0; }
};

// Flag -> 0/1 as int (copy_if stencil and per-row counts).
struct NonZero {
  KVAUDIT_HD int operator()(std::uint8_t v) const { return v != 0 ? 1 : 0; }
};

struct IsFinite {
  KVAUDIT_HD int operator()(float v) const { return (v - v == 0.0f) ? 0 : 1; }
};

}  // namespace kvaudit::gpu::detail
