// Eight float32 lanes (GCC/Clang vector extension) and the natural log the lanes use for chunk
// entropies: a fast filter, never the reported value.
//
// lane_log: x = 2^e m with m in [sqrt(1/2), sqrt(2)), ln x = e ln 2 + ln(1 + f), f = m - 1, ln(1 + f) a
// degree-6 polynomial fitted near-minimax (Lawson iterations) on that interval. Only IEEE adds, multiplies,
// bit operations and selects, no FMA: every instruction set rounds each lane exactly alike, so one exhaustive
// check covers all of them. proofs/11_fast_entropy_margin_check.cpp compares it with glibc's logf on every
// float in [1e-8f, 1 + 2^-22] (the arguments p + 1e-8 of the fast entropy) and fails if the error exceeds
// kLaneLogMaxError; fast_entropy_margin() is derived from that constant.
#pragma once

#include <cstdint>
#include <cstring>

// Lane values are passed by value only between always-inline functions, so GCC's note that a 32-byte
// vector argument's ABI depends on -mavx does not apply.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace kvaudit::select::detail {

inline constexpr int kLanes = 8;  // one AVX2 register (two SSE ones); chunk_stats_lanes.cpp spells out 8
using Lanes = float __attribute__((vector_size(kLanes * sizeof(float))));
using LaneMask = std::int32_t __attribute__((vector_size(kLanes * sizeof(float))));  // -1 true, 0 false
using LaneBits = std::uint32_t __attribute__((vector_size(kLanes * sizeof(float))));

inline constexpr double kLaneLogMaxError = 5e-6;  // absolute, on [1e-8f, 1 + 2^-22]; measured max: proofs/11_fast_entropy_margin.md

[[gnu::always_inline]] inline Lanes load_lanes(const float* p) {
  Lanes v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
[[gnu::always_inline]] inline void store_lanes(float* p, Lanes v) { std::memcpy(p, &v, sizeof v); }
// mask ? a : b, lane by lane.
[[gnu::always_inline]] inline Lanes select_lanes(LaneMask mask, Lanes a, Lanes b) {
  return reinterpret_cast<Lanes>((reinterpret_cast<LaneMask>(a) & mask) | (reinterpret_cast<LaneMask>(b) & ~mask));
}

[[gnu::always_inline]] inline bool all_lanes(LaneMask mask) {
  int all = -1;
  for (int c = 0; c < kLanes; ++c) all &= mask[c];
  return all != 0;
}

// Valid for positive normal floats (the entropy lanes pass only [1e-8f, 1 + 2^-22]).
[[gnu::always_inline]] inline Lanes lane_log(Lanes x) {
  const LaneBits bits = reinterpret_cast<LaneBits>(x);
  Lanes e = __builtin_convertvector(reinterpret_cast<LaneMask>(bits >> 23) - 127, Lanes);
  Lanes m = reinterpret_cast<Lanes>((bits & 0x007fffffu) | 0x3f800000u);  // [1, 2)
  const LaneMask high = m > 1.41421356f;
  m = select_lanes(high, m * 0.5f, m);
  e = select_lanes(high, e + 1.0f, e);
  const Lanes f = m - 1.0f;
  const Lanes p =
      f * (1.000012755f +
           f * (-0.4998505115f + f * (0.3322587311f + f * (-0.2547246516f + f * (0.2233006805f + f * -0.1431984156f)))));
  return p + e * 0.693147181f;
}

}  // namespace kvaudit::select::detail

#pragma GCC diagnostic pop
