// kvpress-flavour chunk statistics with a block of chunks in SIMD lanes and a vectorized log (chunk_stats.h).
//
// Lane c of a block holds chunk (first + c); every loop below runs over j = 0..C-1 outermost and over the
// lanes innermost, so each lane performs its chunk's float32 operations in kvpress's order (sequential
// sums) and S_i comes out bit-identical to the scalar path. The entropy takes two shortcuts: p = y * (1 /
// denom) instead of y / denom, and lane_log instead of glibc's logf (within kLaneLogMaxError, checked on
// every float argument by proofs/11_fast_entropy_margin_check.cpp). proofs/11_fast_entropy_margin.md bounds
// the effect: |fast H~ - exact H~| <= fast_entropy_margin(C); entropy_gate.h turns that into exact gates.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/select/chunk_stats.h"
#include "core/select/lane_log.h"

#pragma GCC diagnostic ignored "-Wpsabi"  // lane values stay in always-inline code (lane_log.h)

namespace kvaudit::select::detail {

namespace {
// The lane loops get an AVX2 clone (GCC picks it at load time on CPUs that have it). No FMA: each lane must
// round exactly like the scalar definition.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define KVAUDIT_LANE_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define KVAUDIT_LANE_CLONES
#endif

constexpr Index kMaxLaneChunk = 256;  // longer chunks go through the scalar path (the lanes buffer is C * 8)
constexpr float kEps = 1e-8f;

// One block of kLanes complete chunks of length C starting at chunk `first`. Returns false when a chunk's
// denominator overflowed (then a log argument could leave the range lane_log was checked on).
KVAUDIT_LANE_CLONES bool block_statistics(const float* x, Index first, Index C, float log_c, bool with_entropy,
                                          float* score, float* entropy, float* xv) {
  // xv[j * kLanes + c] = value j of chunk c, each row built in registers and stored whole (rows assembled
  // from scalar stores would stall every later vector load on store forwarding).
  const float* b = x + first * C;
  Lanes sum = {}, mn = {b[0], b[C], b[2 * C], b[3 * C], b[4 * C], b[5 * C], b[6 * C], b[7 * C]};
  for (Index j = 0; j < C; ++j, ++b) {
    const Lanes v = {b[0], b[C], b[2 * C], b[3 * C], b[4 * C], b[5 * C], b[6 * C], b[7 * C]};
    store_lanes(xv + j * kLanes, v);
    sum += v;
    mn = select_lanes(v < mn, v, mn);  // std::min(mn, v)
  }
  store_lanes(score + first, sum / static_cast<float>(C));
  if (!with_entropy) return true;
  if (C == 1) {
    store_lanes(entropy + first, Lanes{});
    return true;
  }
  const Lanes zero = {};
  const Lanes shift = select_lanes(zero < mn, zero, mn);  // std::min(mn, 0.0f)
  // With no negative value the shift is +-0 and sum(x - shift) == sum(x) up to the sign of a zero, so the
  // denominator total + eps is the same float.
  Lanes total = sum;
  if (!all_lanes(mn >= 0.0f)) {
    total = Lanes{};
    for (Index j = 0; j < C; ++j) total += load_lanes(xv + j * kLanes) - shift;
  }
  const Lanes denom = total + kEps;
  const Lanes inv = 1.0f / denom;  // p within 3u of y / denom: proofs/11_fast_entropy_margin.md accounts for it
  // Every y = x - shift is >= 0 and, the sums being monotone, <= total <= denom, so y / denom lies in [0, 1]
  // and p + eps (p = y * (1 / denom), within 3u of it) in [eps, 1 + 2^-22]: the range lane_log was checked
  // on. Only an overflowing (infinite or NaN) total breaks this.
  if (!all_lanes(denom <= std::numeric_limits<float>::max())) return false;
  Lanes h = {};
  for (Index j = 0; j < C; ++j) {
    const Lanes p = (load_lanes(xv + j * kLanes) - shift) * inv;
    h += p * lane_log(p + kEps);
  }
  Lanes e = -h / log_c;
  e = select_lanes(e < 0.0f, zero, e);  // std::clamp(e, 0, 1)
  e = select_lanes(1.0f < e, zero + 1.0f, e);
  store_lanes(entropy + first, e);
  return true;
}
}  // namespace

KVAUDIT_LANE_CLONES void top_k_chunks(const float* x, const ChunkGeometry& g, std::span<const Index> chunks,
                                      const Index* take, std::uint32_t* top) {
  // Lane c holds chunk chunks[q0 + c] (the last chunk repeated where fewer than kLanes remain). Position j's
  // rank is #{i < j : x_i >= x_j} + #{i > j : x_i > x_j} (ties go to the lower index); it is kept iff its rank <
  // take. Each rank is counted in a register (no store-to-load chains through an array of ranks). A chunk
  // shorter than C (the last one) is padded with -inf, which ranks after every finite value and so never
  // displaces one.
  const Index C = g.chunk_length, count = static_cast<Index>(chunks.size());
  float pad[kMaxLaneRankChunk];
  Lanes v[kMaxLaneRankChunk];
  for (Index q0 = 0; q0 < count; q0 += kLanes) {
    const float* row[kLanes];
    LaneMask k;
    for (Index c = 0; c < kLanes; ++c) {
      const Index i = chunks[static_cast<std::size_t>(std::min(q0 + c, count - 1))];
      row[c] = x + g.begin(i);
      k[c] = static_cast<std::int32_t>(take[i]);
      if (g.size(i) < C) {
        std::fill(pad, pad + C, -std::numeric_limits<float>::infinity());
        std::copy(row[c], row[c] + g.size(i), pad);
        row[c] = pad;
      }
    }
    for (Index j = 0; j < C; ++j)
      v[j] = Lanes{row[0][j], row[1][j], row[2][j], row[3][j], row[4][j], row[5][j], row[6][j], row[7][j]};
    LaneBits bits = {};
    for (Index j = 0; j < C; ++j) {
      LaneMask rank = {};
      for (Index i = 0; i < j; ++i) rank -= v[i] >= v[j];  // masks are -1 where true
      for (Index i = j + 1; i < C; ++i) rank -= v[i] > v[j];
      bits |= reinterpret_cast<LaneBits>(rank < k) & (std::uint32_t{1} << j);
    }
    for (Index c = 0; c < std::min<Index>(kLanes, count - q0); ++c) top[q0 + c] = bits[c];
  }
}

std::size_t lanes_buffer_size(Index chunk_length) {
  return chunk_length <= kMaxLaneChunk ? static_cast<std::size_t>(chunk_length * kLanes) : 0;
}

double fast_entropy_margin(Index chunk_length) {
  // proofs/11_fast_entropy_margin.md, Theorem: |dh| <= 1.0001 d + u (5.11 + A (9.14 + 2.002 C)), with d the
  // log's largest error (kLaneLogMaxError) and A = 1.01 ln C + 0.01 >= sum p |log(p + eps)|; then the
  // division by log C and the roundings of both quotients; doubled for safety.
  if (chunk_length < 2) return 0.0;
  const double u = std::ldexp(1.0, -24), C = static_cast<double>(chunk_length);
  const double A = 1.01 * std::log(C) + 0.01;
  const double log_c = static_cast<double>(log_of_length(chunk_length));
  const double dh = 1.0001 * kLaneLogMaxError + u * (5.11 + A * (9.14 + 2.002 * C));
  return 2.0 * (dh * (1.0 + u) / log_c + 2.2 * u);
}

bool kvpress_chunk_statistics_lanes(std::span<const float> x, const ChunkGeometry& g, std::span<float> score,
                                    std::span<float> entropy, std::span<float> lanes_buf) {
  const Index C = g.chunk_length;
  const bool with_entropy = !entropy.empty();
  Index lane_chunks = 0;  // chunks done in blocks; without a lanes buffer for C, none
  if (C <= kMaxLaneChunk && lanes_buf.size() >= lanes_buffer_size(C)) {
    lane_chunks = g.n_complete - g.n_complete % kLanes;
    const float log_c = log_of_length(C);
    for (Index first = 0; first < lane_chunks; first += kLanes)
      if (!block_statistics(x.data(), first, C, log_c, with_entropy, score.data(), entropy.data(), lanes_buf.data()))
        return false;
  }
  // The rest (the last < kLanes complete chunks and the partial one): the scalar definition (exact H~),
  // where only an overflowing chunk gives NaN.
  kvpress_chunk_statistics(x, g, score, entropy, lane_chunks);
  if (with_entropy)
    for (Index i = lane_chunks; i < g.n_chunks; ++i)
      if (std::isnan(entropy[i])) return false;
  return true;
}

}  // namespace kvaudit::select::detail
