// Head sum, chunk statistics, medians and top-k for the optimized chunk selectors (see chunk_select.h).
#include "core/select/chunk_stats.h"

#include <bit>
#include <cfloat>
#include <cmath>
#include <limits>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <type_traits>

namespace kvaudit::select::detail {

namespace {
// o[t] (+)= r_0[t] + r_1[t] + ... + r_{G-1}[t], added left to right (o first unless `first`): G head rows
// read side by side. G concurrent streams keep more loads in flight than one row at a time (1.5x faster on a
// Sapphire Rapids VM, docs/chunk-selection.md), and the order of the additions is still h = 0..H-1.
template <int G, bool First, class V>
void add_rows(V* __restrict o, const float* const* rows, Index len) {
  const float* __restrict r[G];  // in registers: the loop then loads nothing but scores
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g) r[g] = rows[g];
#pragma omp simd
  for (Index t = 0; t < len; ++t) {
    V acc = First ? static_cast<V>(r[0][t]) : o[t] + static_cast<V>(r[0][t]);
#pragma GCC unroll 8
    for (int g = 1; g < G; ++g) acc += static_cast<V>(r[g][t]);
    o[t] = acc;
  }
}

template <bool First, class V>
void add_rows(V* o, const float* const* rows, int n, Index len) {
  switch (n) {
    case 1: return add_rows<1, First>(o, rows, len);
    case 2: return add_rows<2, First>(o, rows, len);
    case 3: return add_rows<3, First>(o, rows, len);
    case 4: return add_rows<4, First>(o, rows, len);
    case 5: return add_rows<5, First>(o, rows, len);
    case 6: return add_rows<6, First>(o, rows, len);
    case 7: return add_rows<7, First>(o, rows, len);
    default: return add_rows<8, First>(o, rows, len);
  }
}
}  // namespace

template <class V>
bool head_sum(const HeadScores& scores, std::span<V> x) {
  // Blocked over tokens so the partial sums stay in L1 when more than eight head rows stream through.
  constexpr Index kBlock = 512;
  constexpr int kRowsAtOnce = 8;
  const Index T = scores.tokens, H = scores.heads;
  const float* base = scores.values.data();
  V* out = x.data();
  int bad = 0;
  for (Index b0 = 0; b0 < T; b0 += kBlock) {
    const Index len = std::min(T, b0 + kBlock) - b0;
    V* o = out + b0;
    const float* rows[kRowsAtOnce];
    for (Index h0 = 0; h0 < H; h0 += kRowsAtOnce) {
      const int n = static_cast<int>(std::min<Index>(kRowsAtOnce, H - h0));
      for (int g = 0; g < n; ++g) rows[g] = base + (h0 + g) * T + b0;
      if (h0 == 0) add_rows<true>(o, rows, n, len);
      else add_rows<false>(o, rows, n, len);
    }
    // The sum is finite iff every input is finite and nothing overflowed in V (NaN compares false). In double
    // a sum of finite floats cannot overflow, so a double head sum above FLT_MAX is valid (found by the fuzzer).
#pragma omp simd reduction(| : bad)
    for (Index t = 0; t < len; ++t) bad |= !(std::fabs(o[t]) <= std::numeric_limits<V>::max());
  }
  return bad == 0;
}
template bool head_sum<float>(const HeadScores&, std::span<float>);
template bool head_sum<double>(const HeadScores&, std::span<double>);

void clamp_nonnegative(std::span<double> x) {
#pragma omp simd
  for (std::size_t t = 0; t < x.size(); ++t) x[t] = x[t] > 0.0 ? x[t] : 0.0;
}

ChunkGeometry geometry(Index tokens, Index chunk_length) {
  ChunkGeometry g;
  g.tokens = tokens;
  g.chunk_length = chunk_length;
  g.n_complete = tokens / chunk_length;
  g.n_chunks = g.n_complete + (tokens % chunk_length != 0 ? 1 : 0);
  return g;
}

namespace {

void sort_small(double* v, Index n) {
  if (n > 32) {
    std::sort(v, v + n);
    return;
  }
  for (Index i = 1; i < n; ++i) {
    double key = v[i];
    Index j = i - 1;
    while (j >= 0 && v[j] > key) {
      v[j + 1] = v[j];
      --j;
    }
    v[j + 1] = key;
  }
}

// H~ of one chunk: y = x - min(0, min x), p = y / (sum y + eps), h = -sum p log(p + eps), clamp(h / log_n,
// 0, 1), 0 for one value; sums in index order, in V. x - 0 == x (up to the sign of a zero), so one loop
// serves both the shifted and the unshifted chunk and total + eps is the float kvpress gets from its sum.
template <class V>
V chunk_entropy(const V* xs, Index n, V eps, V log_n) {
  if (n == 1) return V(0);
  V mn = xs[0];
  for (Index j = 0; j < n; ++j) mn = std::min(mn, xs[j]);
  const V shift = std::min(mn, V(0));
  V total = 0;
  for (Index j = 0; j < n; ++j) total += xs[j] - shift;
  const V denom = total + eps;
  V h = 0;
  for (Index j = 0; j < n; ++j) {
    const V p = (xs[j] - shift) / denom;
    h += p * std::log(p + eps);
  }
  h = -h;
  return std::clamp(h / log_n, V(0), V(1));
}
}  // namespace

float log_of_length(Index n) { return static_cast<float>(std::log(static_cast<double>(n))); }

float kvpress_chunk_entropy(const float* x, const ChunkGeometry& g, Index i) {
  return chunk_entropy(x + g.begin(i), g.size(i), 1e-8f, log_of_length(g.size(i)));
}

void kvpress_chunk_statistics(std::span<const float> x, const ChunkGeometry& g, std::span<float> score,
                              std::span<float> entropy, Index first_chunk) {
  // Operation for operation what kvpress computes in float32 (same order as the oracle's float32 path, so
  // equal inputs give bit-identical statistics).
  const float* xs = x.data();
  for (Index i = first_chunk; i < g.n_chunks; ++i) {
    const Index b = g.begin(i), n = g.size(i);
    float sum = 0.0f;
    for (Index j = b; j < b + n; ++j) sum += xs[j];
    score[i] = sum / static_cast<float>(n);
    if (!entropy.empty()) entropy[i] = kvpress_chunk_entropy(xs, g, i);
  }
}

void exact_chunk_statistics(std::span<const double> x, const ChunkGeometry& g, double eps, std::span<double> score,
                            std::span<double> entropy, std::span<double> buf) {
  const bool with_entropy = !entropy.empty();
  for (Index i = 0; i < g.n_chunks; ++i) {
    const Index n = g.size(i);
    double* v = buf.data();
    std::copy(x.data() + g.begin(i), x.data() + g.end(i), v);
    sort_small(v, n);
    double sum = 0.0;
    for (Index k = 0; k < n; ++k) sum += v[k];
    score[i] = sum / static_cast<double>(n);
    if (with_entropy) entropy[i] = chunk_entropy(v, n, eps, std::log(static_cast<double>(n)));
  }
}

namespace {
// The k-th smallest of finite values (0-based). Narrowing by sampling: a sorted sample of the current
// candidates brackets the k-th value between two pivots, one vectorizable counting pass checks the bracket,
// and the values inside it (about 1/8) become the candidates. A bracket that misses (an unlucky sample)
// stops the narrowing early; correctness never depends on the sample. `buf` >= values.size().
template <class V>
V kth_smallest(std::span<const V> values, Index k, std::span<V> buf) {
  const V* cur = values.data();
  Index n = static_cast<Index>(values.size());
  constexpr Index kSample = 128, kHalfWidth = 8, kSmall = 512;
  while (n > kSmall) {
    V sample[kSample];
    for (Index s = 0; s < kSample; ++s) sample[s] = cur[s * (n / kSample)];
    std::sort(sample, sample + kSample);
    const Index at = k * kSample / n;
    const V lo = sample[std::max<Index>(at - kHalfWidth, 0)], hi = sample[std::min(at + kHalfWidth, kSample - 1)];
    Index below = 0, inside = 0;
#pragma omp simd reduction(+ : below, inside)
    for (Index i = 0; i < n; ++i) {
      below += cur[i] < lo;
      inside += (cur[i] >= lo) & (cur[i] <= hi);
    }
    if (!(below <= k && k < below + inside) || inside == n) break;
    Index m = 0;
    for (Index i = 0; i < n; ++i) {  // branch-free compaction (in place once cur is buf)
      const V v = cur[i];
      buf[m] = v;
      m += (v >= lo) & (v <= hi);
    }
    cur = buf.data();
    n = m;
    k -= below;
  }
  if (cur != buf.data()) std::copy(cur, cur + n, buf.begin());
  std::nth_element(buf.begin(), buf.begin() + k, buf.begin() + n);
  return buf[k];
}
}  // namespace

template <class V>
V median(std::span<const V> values, MedianRule rule, std::span<V> buf) {
  const Index n = static_cast<Index>(values.size());
  int any_nan = 0;
#pragma omp simd reduction(| : any_nan)
  for (Index i = 0; i < n; ++i) any_nan |= values[i] != values[i];
  if (any_nan) return std::numeric_limits<V>::quiet_NaN();
  const V lo = kth_smallest(values, (n - 1) / 2, buf);
  if (rule == MedianRule::Lower || n % 2 == 1) return lo;
  return (lo + kth_smallest(values, n / 2, buf)) / V(2);
}
template float median<float>(std::span<const float>, MedianRule, std::span<float>);
template double median<double>(std::span<const double>, MedianRule, std::span<double>);

namespace {

std::uint32_t descending_key(float v) {
  if (v == 0.0f) v = 0.0f;  // -0.0f == +0.0f: one key, so the index decides as in the comparator
  std::uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);  // ascending unsigned order == ascending float order
  return ~u;                                         // descending
}

}  // namespace

void chunk_order(const float* S, Index n, Index* order, Workspace& ws) {
  // Items are (key << 32 | index): one write stream per bucket in each scatter, and 32-bit counters keep
  // the three histograms (24 KiB) in L1.
  if (n >= (Index{1} << 32)) throw std::length_error("chunk_order: more than 2^32 chunks");
  if (ws.items.size() < static_cast<std::size_t>(n)) {
    ws.items.resize(static_cast<std::size_t>(n));
    ws.items_tmp.resize(static_cast<std::size_t>(n));
  }
  std::uint64_t *a = ws.items.data(), *b = ws.items_tmp.data();
  constexpr int kBits = 11, kPasses = 3;  // 33 >= 32 key bits
  constexpr std::uint32_t kBuckets = 1u << kBits, kMask = kBuckets - 1;
  std::uint32_t hist[kPasses][kBuckets] = {};
  for (Index i = 0; i < n; ++i) {
    const std::uint32_t k = descending_key(S[i]);
    a[i] = (static_cast<std::uint64_t>(k) << 32) | static_cast<std::uint64_t>(i);
    for (int p = 0; p < kPasses; ++p) ++hist[p][(k >> (p * kBits)) & kMask];
  }
  for (int p = 0; p < kPasses; ++p) {
    std::uint32_t sum = 0;
    for (std::uint32_t d = 0; d < kBuckets; ++d) {
      const std::uint32_t c = hist[p][d];
      hist[p][d] = sum;
      sum += c;
    }
    // Stable scatter: equal keys keep their relative (index-ascending) order.
    const int shift = 32 + p * kBits;
    for (Index i = 0; i < n; ++i) b[hist[p][(a[i] >> shift) & kMask]++] = a[i];
    std::swap(a, b);
  }
  for (Index i = 0; i < n; ++i) order[i] = static_cast<Index>(a[i] & 0xffffffffu);
}

void chunk_order(const double* S, Index n, Index* order, Workspace&) {
  std::iota(order, order + n, Index{0});
  std::sort(order, order + n, RankDesc<double>{S});
}

void collect_whole(const ChunkGeometry& g, const ChunkBitmap& chunks, Index count, Positions& out) {
  out.resize(static_cast<std::size_t>(count));
  Index* o = out.data();
  chunks.for_each([&](Index i) {
    for (Index t = g.begin(i); t < g.end(i); ++t) *o++ = t;
  });
}

template <class V>
void collect_top_k(const ChunkGeometry& g, const ChunkBitmap& chunks, const V* x, Index count, Workspace& ws,
                   Positions& out) {
  const Index* take = ws.take.data();
  // Slack of 16 slots: a whole chunk of C <= 16 is written as one fixed run of 16 (vectorized); slots past
  // the kept ones are overwritten or cut.
  constexpr Index kRun = 16;
  const bool short_chunks = g.chunk_length <= kRun;
  // Chunks kept in part, float and C <= 16: ranked beforehand, eight at a time, in index order.
  const std::uint32_t* top = nullptr;
  if constexpr (std::is_same_v<V, float>) {
    if (g.chunk_length <= kMaxLaneRankChunk) {
      Index n_cut = 0;
      chunks.for_each([&](Index i) {
        ws.cut[static_cast<std::size_t>(n_cut)] = i;
        n_cut += take[i] < g.size(i);
      });
      top_k_chunks(x, g, {ws.cut.data(), static_cast<std::size_t>(n_cut)}, take, ws.cut_top.data());
      top = ws.cut_top.data();
    }
  }
  out.resize(static_cast<std::size_t>(count + kRun));
  Index* __restrict o = out.data();
  Index c = 0;  // a local, not a lambda's capture: kept in a register across the stores through `o`
  const std::span<const std::uint64_t> words = chunks.words();
  for (std::size_t w = 0; w < words.size(); ++w)
    for (std::uint64_t chunk_bits = words[w]; chunk_bits != 0; chunk_bits &= chunk_bits - 1) {
      const Index i = static_cast<Index>(w * 64 + static_cast<std::size_t>(std::countr_zero(chunk_bits)));
      const Index b = g.begin(i), e = g.end(i), k = take[i];
      if (k == e - b) {
        if (short_chunks) {
#pragma omp simd
          for (Index q = 0; q < kRun; ++q) o[c + q] = b + q;
          c += k;
        } else {
          for (Index t = b; t < e; ++t) o[c++] = t;
        }
      } else if (top) {
        for (std::uint32_t bits = *top++; bits != 0; bits &= bits - 1) o[c++] = b + std::countr_zero(bits);
      } else {
        mark_top_k_in_range(x, b, e, k, ws.keep.data(), ws.idx.data());
        for (Index t = b; t < e; ++t) {  // branch-free: write every position, advance only past kept ones
          o[c] = t;
          c += ws.keep[static_cast<std::size_t>(t)];
        }
      }
    }
  out.resize(static_cast<std::size_t>(c));
}
template void collect_top_k<float>(const ChunkGeometry&, const ChunkBitmap&, const float*, Index, Workspace&,
                                   Positions&);
template void collect_top_k<double>(const ChunkGeometry&, const ChunkBitmap&, const double*, Index, Workspace&,
                                    Positions&);

Positions collect_kept(std::span<const unsigned char> keep, Index* scratch) {
  Index c = 0;
  const unsigned char* k = keep.data();
  const auto T = static_cast<Index>(keep.size());
  for (Index t = 0; t < T; ++t) {  // branch-free: write every position, advance only past kept ones
    scratch[c] = t;
    c += k[t];
  }
  return Positions(scratch, scratch + c);
}

}  // namespace kvaudit::select::detail
