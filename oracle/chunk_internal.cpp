// Chunk layout, validation, exact fixed-point head sums, kvpress's float32 statistics and 50-digit statistics.
#include "oracle/chunk_internal.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include <gmp.h>
#include <mpfr.h>

#include "oracle/chunk_selection.h"

namespace kvaudit::oracle::detail {

std::vector<Chunk> chunk_layout(Index tokens, Index chunk_length) {
  std::vector<Chunk> chunks;
  chunks.reserve(static_cast<std::size_t>(tokens / chunk_length + 1));
  for (Index begin = 0; begin < tokens; begin += chunk_length) chunks.push_back({begin, std::min(begin + chunk_length, tokens)});
  return chunks;
}

std::string invalid_reason(const HeadScores& scores, const SelectorParams& params) {
  if (scores.heads < 1 || scores.tokens < 1) return "scores need at least one head and one token";
  if (static_cast<Index>(scores.values.size()) != scores.heads * scores.tokens) return "scores size != heads * tokens";
  for (std::size_t i = 0; i < scores.values.size(); ++i)
    if (!std::isfinite(scores.values[i])) return "non-finite score at flat index " + std::to_string(i);
  if (params.chunk_length < 1) return "chunk_length must be >= 1";
  if (params.rescue_size < 1) return "rescue_size must be >= 1";
  if (!(params.ratio.value >= 0.0 && params.ratio.value < 1.0)) return "compression ratio must be in [0, 1)";
  if (params.flavour == Flavour::Exact) {
    try {
      (void)exact_token_budget(1, params.ratio.text);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    if (params.entropy_threshold && !std::isfinite(*params.entropy_threshold)) return "entropy threshold must be finite";
    // eps > 0 keeps p = x / (sum + eps) defined for an all-zero chunk.
    if (!(params.eps > 0.0) || !std::isfinite(params.eps)) return "eps must be finite and > 0";
    return "";
  }
  if (params.method == Method::EgChunkKV) {
    // kvpress asserts chunk_length > low_entropy_chunk_length >= 1 in __post_init__.
    if (!(params.chunk_length > params.rescue_size)) return "kvpress asserts chunk_length > low_entropy_chunk_length >= 1";
    // The released code has no knob for these: tau is always torch's lower median, EPSILON is 1e-8.
    if (params.entropy_threshold) return "kvpress flavour has no fixed entropy threshold (tau is always the median)";
    if (params.median != MedianRule::Lower) return "kvpress flavour always uses torch's lower median";
    if (params.eps != 1e-8) return "kvpress flavour uses EPSILON = 1e-8";
  }
  for (float x : float32_head_sums(scores))
    if (!std::isfinite(x)) return "a head sum overflows float32";
  return "";
}

void validate(const HeadScores& scores, const SelectorParams& params) {
  std::string why = invalid_reason(scores, params);
  if (!why.empty()) throw std::invalid_argument(why);
}

bool ratio_is_zero(const SelectorParams& params) {
  if (params.flavour == Flavour::Kvpress) return params.ratio.value == 0.0;
  return parse_rho(params.ratio.text) == 0;
}

Index eg_token_budget(Index tokens, const SelectorParams& params) {
  if (params.flavour == Flavour::Kvpress) {
    if (params.ratio.value == 0.0) return tokens;  // `if compression_ratio == 0: return keys, values`
    return kvpress_token_budget(tokens, params.ratio.value);
  }
  return exact_token_budget(tokens, params.ratio.text);
}

FixedPoint fixed_point(float value) { return fixed_point(static_cast<double>(value)); }  // exact: every float is a double

FixedPoint fixed_point(double value) {
  if (value == 0.0) return 0;
  int exponent = 0;
  double mantissa = std::frexp(std::fabs(value), &exponent);  // |value| = mantissa * 2^exponent, mantissa in [0.5, 1)
  auto integer = static_cast<std::int64_t>(std::ldexp(mantissa, 53));  // exact: 53 significant bits
  int shift = exponent - 53 + 149;
  FixedPoint result = integer;
  if (shift >= 0) {
    result <<= shift;
  } else {
    if (shift <= -63 || (integer & ((std::int64_t{1} << -shift) - 1)) != 0)
      throw std::invalid_argument("fixed_point: not a multiple of 2^-149");
    result >>= -shift;  // exact: the bits shifted out are zero
  }
  return value < 0 ? FixedPoint(-result) : result;
}

Real from_fixed_point(const FixedPoint& value) { return boost::multiprecision::ldexp(Real(value), -149); }

std::vector<FixedPoint> fixed_head_sums(const HeadScores& scores, bool clamp) {
  std::vector<FixedPoint> out(static_cast<std::size_t>(scores.tokens));
  for (Index t = 0; t < scores.tokens; ++t) {
    FixedPoint sum = 0;
    for (Index h = 0; h < scores.heads; ++h) sum += fixed_point(scores.at(h, t));
    if (clamp && sum < 0) sum = 0;
    out[static_cast<std::size_t>(t)] = std::move(sum);
  }
  return out;
}

std::vector<Real> to_reals(const std::vector<FixedPoint>& fixed) {
  std::vector<Real> out;
  out.reserve(fixed.size());
  for (const FixedPoint& v : fixed) out.push_back(from_fixed_point(v));
  return out;
}

std::vector<double> abs_head_sums(const HeadScores& scores) {
  std::vector<double> out(static_cast<std::size_t>(scores.tokens), 0.0);
  for (Index t = 0; t < scores.tokens; ++t)
    for (Index h = 0; h < scores.heads; ++h) out[static_cast<std::size_t>(t)] += std::fabs(static_cast<double>(scores.at(h, t)));
  // Round the double sum up to be safe as an upper bound (at most H roundings of relative 2^-53).
  for (double& v : out) v *= 1.0 + 1e-14;
  return out;
}

std::vector<float> float32_head_sums(const HeadScores& scores) {
  std::vector<float> out(static_cast<std::size_t>(scores.tokens), 0.0f);
  for (Index t = 0; t < scores.tokens; ++t) {
    float sum = 0.0f;
    for (Index h = 0; h < scores.heads; ++h) sum += scores.at(h, t);
    out[static_cast<std::size_t>(t)] = sum;
  }
  return out;
}

float float32_mean(const std::vector<float>& x, const Chunk& chunk) {
  float sum = 0.0f;
  for (Index j = chunk.begin; j < chunk.end; ++j) sum += x[static_cast<std::size_t>(j)];
  return sum / static_cast<float>(chunk.size());
}

float float32_entropy(const std::vector<float>& x, const Chunk& chunk) {
  Index n = chunk.size();
  if (n == 1) return 0.0f;  // kvpress: a trailing chunk of one token has entropy 0
  const float eps = 1e-8f;
  float min_value = x[static_cast<std::size_t>(chunk.begin)];
  for (Index j = chunk.begin; j < chunk.end; ++j) min_value = std::min(min_value, x[static_cast<std::size_t>(j)]);
  float shift = std::min(min_value, 0.0f);  // amin(...).clamp(max=0)
  float total = 0.0f;
  for (Index j = chunk.begin; j < chunk.end; ++j) total += x[static_cast<std::size_t>(j)] - shift;
  float h = 0.0f;
  for (Index j = chunk.begin; j < chunk.end; ++j) {
    float p = (x[static_cast<std::size_t>(j)] - shift) / (total + eps);
    h += p * std::log(p + eps);
  }
  h = -h;
  float normalized = h / static_cast<float>(std::log(static_cast<double>(n)));
  return std::clamp(normalized, 0.0f, 1.0f);
}

namespace {
constexpr int kRealBits = std::numeric_limits<Real>::digits;

// One thread's MPFR operands at Real's precision, kept between calls (the oracle runs on many threads).
struct MpfrScratch {
  MpfrScratch() {
    mpfr_init2(in, kRealBits);
    mpfr_init2(out, kRealBits);
    mpz_init(mantissa);
  }
  ~MpfrScratch() {
    mpfr_clear(in);
    mpfr_clear(out);
    mpz_clear(mantissa);
  }
  MpfrScratch(const MpfrScratch&) = delete;
  MpfrScratch& operator=(const MpfrScratch&) = delete;
  mpfr_t in, out;
  mpz_t mantissa;
};
}  // namespace

// Boost's own log for cpp_bin_float took 13 us a call against MPFR's 3.7 us, and precise_entropy takes one per
// token: 74 % of proof 15's time. Both transfers are exact: cpp_bin_float holds x as a kRealBits-bit integer (top bit
// set) times a power of two, and MPFR returns ln x, rounded once to kRealBits bits, in the same form.
Real log_50(const Real& x) {
  if (!(x > 0) || !boost::multiprecision::isfinite(x)) return log(x);
  thread_local MpfrScratch m;
  const auto& in = x.backend();  // x = bits 2^(exponent - (kRealBits - 1))
  mpz_import(m.mantissa, in.bits().size(), -1, sizeof(*in.bits().limbs()), 0, 0, in.bits().limbs());
  // Inexact only outside MPFR's exponent range (|exponent| >= 2^30), far beyond any entropy's arguments.
  if (mpfr_set_z_2exp(m.in, m.mantissa, in.exponent() - (kRealBits - 1), MPFR_RNDN) != 0) return log(x);
  mpfr_log(m.out, m.in, MPFR_RNDN);
  if (mpfr_zero_p(m.out)) return 0;  // x == 1
  const mpfr_exp_t scale = mpfr_get_z_2exp(m.mantissa, m.out);  // out = mantissa 2^scale, kRealBits bits exactly
  Real result;
  auto& out = result.backend();
  out.sign() = mpz_sgn(m.mantissa) < 0;
  mpz_abs(m.mantissa, m.mantissa);
  auto& bits = out.bits();
  bits.resize(static_cast<unsigned>(mpz_size(m.mantissa) * sizeof(mp_limb_t) / sizeof(*bits.limbs())), 0);
  std::size_t count = 0;
  mpz_export(bits.limbs(), &count, -1, sizeof(*bits.limbs()), 0, 0, m.mantissa);
  bits.normalize();
  out.exponent() = static_cast<int>(scale) + (kRealBits - 1);
  return result;
}

Real exact_mean(const std::vector<FixedPoint>& fixed, const Chunk& chunk) {
  FixedPoint sum = 0;
  for (Index j = chunk.begin; j < chunk.end; ++j) sum += fixed[static_cast<std::size_t>(j)];
  return from_fixed_point(sum) / chunk.size();
}

Real precise_entropy(const std::vector<Real>& x, const Chunk& chunk, const Real& eps) {
  Index n = chunk.size();
  if (n == 1) return 0;
  std::vector<Real> y(x.begin() + chunk.begin, x.begin() + chunk.end);
  std::sort(y.begin(), y.end());  // order-independent: equal multisets give bit-identical entropies
  Real shift = y.front() < 0 ? y.front() : Real(0);
  Real total = 0;
  for (Real& v : y) {
    v -= shift;
    total += v;
  }
  // Equal values sit side by side after the sort and give the same term: it is computed once per run of them
  // (fuzz cases and bf16 rows repeat values; each log_50 is a few microseconds). The sum, term by term, is unchanged.
  const Real denominator = total + eps;
  Real h = 0;
  Real term = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (i == 0 || y[i] != y[i - 1]) {
      const Real p = y[i] / denominator;
      term = p * log_50(p + eps);
    }
    h -= term;
  }
  Real normalized = h / log_50(Real(n));
  if (normalized < 0) return 0;
  if (normalized > 1) return 1;
  return normalized;
}

}  // namespace kvaudit::oracle::detail
