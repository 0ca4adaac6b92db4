// The input format the chunk selection harnesses share (chunk_select_fuzz, chunk_oracle_fuzz): bytes -> ChunkKV /
// EG-ChunkKV parameters and a (heads x T) score matrix, and how a case is printed when a harness traps. One
// decoder, so that the two harnesses read every corpus file alike.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/compression_ratio.h"
#include "core/error.h"
#include "core/types.h"

namespace kvaudit::fuzz {

// Ratios users write, the ones kvpress's float rule rounds differently from the exact one, and edge cases.
inline const char* const kRatios[] = {"0",   "0.1",  "0.25", "0.3",  "0.5",   ".5",    "0.7", "0.75",
                                     "0.8", "0.85", "0.9",  "0.95", "0.99", "0.999", "0.333", "0.05"};

inline std::string ratio_text(FuzzedDataProvider& in) {
  if (in.ConsumeBool()) return in.PickValueInArray(kRatios);
  std::string t = "0.";  // a random plain decimal in [0, 1) with up to 6 digits
  int digits = in.ConsumeIntegralInRange(1, 6);
  for (int i = 0; i < digits; ++i) t += static_cast<char>('0' + in.ConsumeIntegralInRange(0, 9));
  return t;
}

// Scores in one of several regimes: few distinct small values (ties everywhere), arbitrary float bits (NaN,
// Inf, negatives, denormals), uniform [0, 1), and huge magnitudes that overflow float32 head sums.
inline float score(FuzzedDataProvider& in, int regime) {
  switch (regime) {
    case 0: return static_cast<float>(in.ConsumeIntegralInRange(0, 3));
    case 1: {
      std::uint32_t bits = in.ConsumeIntegral<std::uint32_t>();
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    case 2: return in.ConsumeFloatingPointInRange<float>(0.0f, 1.0f);
    case 3: return static_cast<float>(in.ConsumeIntegralInRange(-2, 2)) * 0.125f;
    default: return in.ConsumeBool() ? 3.0e38f : static_cast<float>(in.ConsumeIntegralInRange(0, 1)) * 1e-40f;
  }
}

inline std::string describe(const HeadScores& s, const SelectorParams& p) {
  std::ostringstream o;
  o.precision(9);
  o << "method=" << (p.method == Method::ChunkKV ? "chunkkv" : "eg-chunkkv")
    << " flavour=" << (p.flavour == Flavour::Kvpress ? "kvpress" : "exact") << " rho='" << p.ratio.text
    << "' C=" << p.chunk_length << " r=" << p.rescue_size
    << " tau=" << (p.entropy_threshold ? std::to_string(*p.entropy_threshold) : "median")
    << " median=" << (p.median == MedianRule::Lower ? "lower" : "mean") << " eps=" << p.eps << "\nscores ("
    << s.heads << " x " << s.tokens << "):";
  for (Index h = 0; h < s.heads; ++h) {
    o << "\n ";
    for (Index t = 0; t < s.tokens; ++t) o << ' ' << s.at(h, t);
  }
  return o.str();
}

inline std::string positions(const Selection& s) {
  std::string out;
  for (const auto& k : s.kept) {
    out += "[";
    for (Index p : k) out += std::to_string(p) + " ";
    out += "] ";
  }
  return out;
}

// Score regimes 0 and 3 (small integers, multiples of 1/8): their sums and means are exact in double.
inline bool exactly_representable(int regime) { return regime == 0 || regime == 3; }

struct ChunkCase {
  SelectorParams params;
  Index heads = 1, tokens = 0;
  int regime = 0;
  std::vector<float> values;
  HeadScores scores() const { return HeadScores{heads, tokens, {values.data(), values.size()}}; }
};

// nullopt when the ratio text is not one the parser accepts (nothing to compare).
inline std::optional<ChunkCase> decode_chunk_case(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  ChunkCase c;
  SelectorParams& p = c.params;
  p.method = in.ConsumeBool() ? Method::ChunkKV : Method::EgChunkKV;
  p.flavour = in.ConsumeBool() ? Flavour::Kvpress : Flavour::Exact;
  try {
    p.ratio = parse_compression_ratio(ratio_text(in), "fuzz");
  } catch (const InputError&) {
    return std::nullopt;
  }
  p.chunk_length = in.ConsumeIntegralInRange<Index>(0, 24);
  p.rescue_size = in.ConsumeIntegralInRange<Index>(0, 12);
  const std::uint8_t knobs = in.ConsumeIntegral<std::uint8_t>();
  if (knobs & 1) p.entropy_threshold = in.ConsumeFloatingPointInRange<double>(-0.5, 1.5);
  if (knobs & 2) p.median = MedianRule::MeanOfMiddles;
  if (knobs & 4) p.eps = (knobs & 8) ? 1e-3 : 0.0;
  c.heads = in.ConsumeIntegralInRange<Index>(1, 4);
  c.tokens = in.ConsumeIntegralInRange<Index>(0, 160);
  c.regime = in.ConsumeIntegralInRange(0, 4);
  c.values.resize(static_cast<std::size_t>(c.heads * c.tokens));
  for (float& v : c.values) v = score(in, c.regime);
  return c;
}

}  // namespace kvaudit::fuzz
