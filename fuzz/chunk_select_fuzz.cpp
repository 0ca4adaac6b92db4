// Differential libFuzzer harness: optimized ChunkKV / EG-ChunkKV (core/select) against the oracle
// (oracle/chunk_selection.h). Bytes -> parameters and a (heads x T) score matrix. The two must agree on
// whether the input is valid; when both select, the optimized output must equal the canonical one or be
// admissible (the checker accepts it under float32-evaluation ties). Anything else prints the case and traps.
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "core/compression_ratio.h"
#include "core/error.h"
#include "core/select/chunk_select.h"
#include "fuzz/fuzz_support.h"
#include "oracle/chunk_selection.h"

using namespace kvaudit;
using kvaudit::fuzz::report_and_trap;

namespace {

// Ratios users write, the ones kvpress's float rule rounds differently from the exact one, and edge cases.
const char* const kRatios[] = {"0", "0.1", "0.25", "0.3", "0.5", ".5", "0.7", "0.75", "0.8", "0.85",
                               "0.9", "0.95", "0.99", "0.999", "0.333", "0.05"};

std::string ratio_text(FuzzedDataProvider& in) {
  if (in.ConsumeBool()) return in.PickValueInArray(kRatios);
  std::string t = "0.";  // a random plain decimal in [0, 1) with up to 6 digits
  int digits = in.ConsumeIntegralInRange(1, 6);
  for (int i = 0; i < digits; ++i) t += static_cast<char>('0' + in.ConsumeIntegralInRange(0, 9));
  return t;
}

// Scores in one of several regimes: few distinct small values (ties everywhere), arbitrary float bits (NaN,
// Inf, negatives, denormals), uniform [0, 1), and huge magnitudes that overflow float32 head sums.
float score(FuzzedDataProvider& in, int regime) {
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

std::string describe(const HeadScores& s, const SelectorParams& p) {
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

std::string positions(const Selection& s) {
  std::string out;
  for (const auto& k : s.kept) {
    out += "[";
    for (Index p : k) out += std::to_string(p) + " ";
    out += "] ";
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  SelectorParams p;
  p.method = in.ConsumeBool() ? Method::ChunkKV : Method::EgChunkKV;
  p.flavour = in.ConsumeBool() ? Flavour::Kvpress : Flavour::Exact;
  try {
    p.ratio = parse_compression_ratio(ratio_text(in), "fuzz");
  } catch (const InputError&) {
    return 0;
  }
  p.chunk_length = in.ConsumeIntegralInRange<Index>(0, 24);
  p.rescue_size = in.ConsumeIntegralInRange<Index>(0, 12);
  const std::uint8_t knobs = in.ConsumeIntegral<std::uint8_t>();
  if (knobs & 1) p.entropy_threshold = in.ConsumeFloatingPointInRange<double>(-0.5, 1.5);
  if (knobs & 2) p.median = MedianRule::MeanOfMiddles;
  if (knobs & 4) p.eps = (knobs & 8) ? 1e-3 : 0.0;
  const Index heads = in.ConsumeIntegralInRange<Index>(1, 4);
  const Index tokens = in.ConsumeIntegralInRange<Index>(0, 160);
  const int regime = in.ConsumeIntegralInRange(0, 4);
  std::vector<float> values(static_cast<std::size_t>(heads * tokens));
  for (float& v : values) v = score(in, regime);
  const HeadScores s{heads, tokens, {values.data(), values.size()}};

  Selection fast, canonical;
  std::string fast_error, oracle_error;
  try {
    select::validate_params(p);
    fast = select::select_layer(s, p);
  } catch (const InputError& e) {
    fast_error = e.what();
  }
  try {
    canonical = oracle::select(s, p);
  } catch (const std::invalid_argument& e) {
    oracle_error = e.what();
  }
  if (fast_error.empty() != oracle_error.empty()) {
    report_and_trap("chunk select: validity disagreement",
                    describe(s, p) + "\noptimized: " + (fast_error.empty() ? "accepted" : fast_error) +
                        "\noracle: " + (oracle_error.empty() ? "accepted" : oracle_error));
  }
  if (!fast_error.empty()) return 0;

  if (fast.kept != canonical.kept) {
    Verdict v = oracle::check_admissible(s, p, fast);
    if (!v.passed()) {
      report_and_trap("chunk select: optimized output neither canonical nor admissible",
                      describe(s, p) + "\noptimized: " + positions(fast) + "\ncanonical: " + positions(canonical) +
                          "\nverdict: " + to_string(v.kind) + " " + v.rule + ": " + v.message);
    }
  }
  // The canonical selection must itself pass the checker with exact ties only (oracle self-consistency).
  oracle::AdmissibilityOptions exact_ties{oracle::Rounding::ExactOnly};
  if (p.flavour == Flavour::Exact) {
    Verdict v = oracle::check_admissible(s, p, canonical, exact_ties);
    if (!v.passed())
      report_and_trap("chunk select: canonical selection rejected by the admissibility checker",
                      describe(s, p) + "\ncanonical: " + positions(canonical) + "\nverdict: " + v.rule + ": " + v.message);
  }
  return 0;
}
