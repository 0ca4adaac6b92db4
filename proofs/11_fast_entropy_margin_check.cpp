// Check of proofs/11_fast_entropy_margin.md: lane_log's error on every float argument, the entropy margin on
// adversarial chunks, and the exact gate settled from fast entropies on near-tied layers.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/select/chunk_stats.h"
#include "core/select/entropy_gate.h"
#include "core/select/lane_log.h"
#include "proofs/proof_report.h"

#pragma GCC diagnostic ignored "-Wpsabi"  // lane values stay in always-inline code (lane_log.h)

namespace {
using kvaudit::Index;
using kvaudit::proofs::report;
namespace d = kvaudit::select::detail;

std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

TEST(Proof11, LaneLogWithinBoundOnEveryArgument) {
  const float lo = 1e-8f, hi = 1.0f + std::ldexp(1.0f, -22);
  const std::uint32_t first = std::bit_cast<std::uint32_t>(lo), last = std::bit_cast<std::uint32_t>(hi);
  double worst = 0.0;
  float worst_at = lo;
  std::uint64_t count = 0;
  for (std::uint32_t u = first; u <= last; u += d::kLanes) {
    float in[d::kLanes];
    for (int c = 0; c < d::kLanes; ++c) in[c] = std::bit_cast<float>(std::min<std::uint32_t>(u + c, last));
    const d::Lanes got = d::lane_log(d::load_lanes(in));
    for (int c = 0; c < d::kLanes; ++c) {
      const double err = std::fabs(static_cast<double>(got[c]) - static_cast<double>(std::log(in[c])));
      if (err > worst) worst = err, worst_at = in[c];
    }
    count += static_cast<std::uint64_t>(std::min<std::uint32_t>(d::kLanes, last - u + 1));
  }
  EXPECT_LE(worst, d::kLaneLogMaxError) << "at " << worst_at;
  report().cover("lane_log", std::to_string(count) + " floats in [1e-8, 1 + 2^-22]: max |lane_log - logf| = " +
                                 fmt(worst) + " <= " + fmt(d::kLaneLogMaxError));
}

// Chunk values of one adversarial family.
std::vector<float> family_values(int family, Index n, std::mt19937_64& rng) {
  std::vector<float> v(static_cast<std::size_t>(n));
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::uniform_real_distribution<float> uni(0.0f, 1.0f);
  for (float& x : v) {
    switch (family) {
      case 0: x = std::exp(normal(rng)) * 1e-3f; break;                                  // log-normal
      case 1: x = std::ldexp(std::round(uni(rng) * 8.0f) / 8.0f, -3); break;             // few values: ties
      case 2: x = uni(rng) * 2.0f - 1.0f; break;                                         // negatives: rebase
      case 3: x = uni(rng) < 0.1f ? 1.0f : 0.0f; break;                                  // one hot / all zero
      case 4: x = uni(rng) * 1e-30f; break;                                              // tiny: eps dominates
      case 5: x = uni(rng) * 1e30f; break;                                               // huge
      default: x = uni(rng) < 0.5f ? 0.0f : std::exp(normal(rng) * 4.0f) * 1e-6f; break;  // wide, zeros
    }
  }
  return v;
}

TEST(Proof11, MarginHoldsOnAdversarialChunks) {
  std::mt19937_64 rng(1111);
  double worst_ratio = 0.0;
  long chunks = 0, differing = 0;
  for (Index C : {2, 3, 5, 10, 16, 20, 32, 64, 128, 256}) {
    const double e = d::fast_entropy_margin(C);
    for (int family = 0; family < 7; ++family) {
      const Index n_chunks = std::max<Index>(64, 20000 / C);
      const Index T = n_chunks * C;
      const std::vector<float> x = family_values(family, T, rng);
      const d::ChunkGeometry g = d::geometry(T, C);
      std::vector<float> s_ref(n_chunks), h_ref(n_chunks), s_fast(n_chunks), h_fast(n_chunks);
      std::vector<float> lanes(d::lanes_buffer_size(C));
      d::kvpress_chunk_statistics(x, g, s_ref, h_ref);
      ASSERT_TRUE(d::kvpress_chunk_statistics_lanes(x, g, s_fast, h_fast, lanes));
      for (Index i = 0; i < n_chunks; ++i) {
        ASSERT_EQ(s_fast[i], s_ref[i]) << "chunk score must be bit-identical (C " << C << ")";
        const double diff = std::fabs(static_cast<double>(h_fast[i]) - h_ref[i]);
        ASSERT_LE(diff, e) << "C " << C << " family " << family << " chunk " << i;
        worst_ratio = std::max(worst_ratio, diff / e);
        differing += diff > 0.0;
        ++chunks;
      }
    }
  }
  report().cover("margin", std::to_string(chunks) + " chunks, C in 2..256, 7 families: " + std::to_string(differing) +
                               " fast H~ differ from the reference, largest |H' - H| = " + fmt(worst_ratio) +
                               " of the margin (e(10) = " + fmt(d::fast_entropy_margin(10)) + ")");
}

TEST(Proof11, OverflowFallsBackToReference) {
  const std::vector<float> x(80, 3e38f);  // sums overflow to inf
  const d::ChunkGeometry g = d::geometry(80, 10);
  std::vector<float> s(8), h(8), lanes(d::lanes_buffer_size(10));
  EXPECT_FALSE(d::kvpress_chunk_statistics_lanes(x, g, s, h, lanes));
  report().cover("overflow", "an overflowing chunk sum is reported, not filtered");
}

TEST(Proof11, SettledGateEqualsReferenceOnNearTies) {
  std::mt19937_64 rng(1112);
  long layers = 0, with_band_work = 0, chunks = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const Index C = std::uniform_int_distribution<Index>(2, 24)(rng);
    const Index n_chunks = std::uniform_int_distribution<Index>(8, 600)(rng);
    const Index T = n_chunks * C + std::uniform_int_distribution<Index>(0, C - 1)(rng);
    // One multiset, permuted per chunk: reference entropies differ only by the rounding of the sums.
    std::vector<float> base = family_values(trial % 7, C, rng), x(static_cast<std::size_t>(T));
    for (Index i = 0; i * C < T; ++i) {
      std::shuffle(base.begin(), base.end(), rng);
      for (Index j = 0; j < C && i * C + j < T; ++j) x[i * C + j] = base[j];
    }
    if (trial % 3 == 1)  // a second multiset in a third of the chunks
      for (Index i = 0; i + 1 < T; i += 3 * C) std::swap(x[i], x[i + 1]), x[i] *= 1.0000001f;
    const d::ChunkGeometry g = d::geometry(T, C);
    const Index nc = g.n_chunks;
    std::vector<float> s_ref(nc), h_ref(nc), s_fast(nc), h_fast(nc), buf(nc), lanes(d::lanes_buffer_size(C));
    std::vector<Index> band(nc);
    d::kvpress_chunk_statistics(x, g, s_ref, h_ref);
    ASSERT_TRUE(d::kvpress_chunk_statistics_lanes(x, g, s_fast, h_fast, lanes));
    const float tau_ref = d::median<float>(h_ref, kvaudit::MedianRule::Lower, buf);
    std::vector<float> sorted = h_ref;
    std::nth_element(sorted.begin(), sorted.begin() + (nc - 1) / 2, sorted.end());
    ASSERT_EQ(tau_ref, sorted[(nc - 1) / 2]) << "median";
    const bool fast_gates_differ = [&] {
      const float tau_fast = d::median<float>(h_fast, kvaudit::MedianRule::Lower, buf);
      for (Index i = 0; i < nc; ++i)
        if ((h_fast[i] < tau_fast) != (h_ref[i] < tau_ref)) return true;
      return false;
    }();
    const float tau = d::settle_median_gate(x.data(), g, h_fast, d::fast_entropy_margin(C), buf, band);
    ASSERT_EQ(tau, tau_ref) << "trial " << trial;
    for (Index i = 0; i < nc; ++i) ASSERT_EQ(h_fast[i] < tau, h_ref[i] < tau_ref) << "trial " << trial << " chunk " << i;
    ++layers;
    with_band_work += fast_gates_differ;
    chunks += nc;
  }
  // The family must actually exercise the band: without it the fast gates would differ on these layers.
  EXPECT_GT(with_band_work, 0);
  report().cover("gate", std::to_string(layers) + " near-tied layers (" + std::to_string(chunks) +
                             " chunks): settled median and every gate equal the reference; on " +
                             std::to_string(with_band_work) + " of them the unsettled fast gates differed");
}

TEST(Proof11, Verdict) {
  report().conclude("11_fast_entropy_margin", "proved-and-checked", {"lane_log", "margin", "overflow", "gate"});
}

}  // namespace
