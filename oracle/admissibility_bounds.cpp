// Error intervals for float32 evaluation of head sums, chunk means and chunk entropies (bounds derived in
// the header and in docs/chunk-selection.md).
#include "oracle/admissibility_bounds.h"

#include <cmath>

namespace kvaudit::oracle::detail {
namespace {

const Real kUnit = boost::multiprecision::ldexp(Real(1), -24);   // float32 unit roundoff
const Real kTiny = boost::multiprecision::ldexp(Real(1), -149);  // smallest float32 subnormal: underflow slack
const Real kSafety = 2;                                           // headroom on every first-order bound

Real gamma(Index k) { return k <= 0 ? Real(0) : Real(k) * kUnit / (1 - Real(k) * kUnit); }

}  // namespace

SelectorBounds selector_bounds(const HeadScores& scores, const SelectorParams& params, Rounding rounding, bool clamp,
                               bool with_entropy) {
  bool exact = rounding == Rounding::ExactOnly;
  SelectorBounds b;
  b.chunks = chunk_layout(scores.tokens, params.chunk_length);
  std::vector<BigInt> fixed = fixed_head_sums(scores, clamp);
  std::vector<Real> x = to_reals(fixed);
  std::vector<double> mass = abs_head_sums(scores);
  std::vector<Real> err(x.size(), Real(0));
  if (!exact)
    for (std::size_t j = 0; j < x.size(); ++j) err[j] = kSafety * gamma(scores.heads - 1) * Real(mass[j]);
  for (std::size_t j = 0; j < x.size(); ++j) b.x.push_back({x[j] - err[j], x[j] + err[j]});

  Real eps(params.eps);
  Real sensitivity = 2 * (abs(log(eps)) + 1);  // D in the header
  for (const Chunk& c : b.chunks) {
    Index n = c.size();
    Real mean = exact_mean(fixed, c);
    Real mean_err = 0;
    if (!exact) {
      Real abs_mass = 0;
      for (Index j = c.begin; j < c.end; ++j) abs_mass += Real(mass[static_cast<std::size_t>(j)]);
      mean_err = kSafety * (gamma(scores.heads + n) * abs_mass / n + kTiny);
    }
    b.score.push_back({mean - mean_err, mean + mean_err});
    if (!with_entropy) continue;
    Real h = precise_entropy(x, c, eps);
    Real h_err = 0;
    if (!exact && n > 1) {
      Real min_x = x[static_cast<std::size_t>(c.begin)], max_err = 0;
      for (Index j = c.begin; j < c.end; ++j) {
        min_x = std::min(min_x, x[static_cast<std::size_t>(j)]);
        max_err = std::max(max_err, err[static_cast<std::size_t>(j)]);
      }
      // Rebasing by the minimum happens when the computed minimum may be negative.
      bool rebased = min_x - max_err < 0;
      Real shift = min_x < 0 ? min_x : Real(0);
      Real total = 0, perturbation = 0;
      for (Index j = c.begin; j < c.end; ++j) {
        Real y = x[static_cast<std::size_t>(j)] - shift;
        total += y;
        perturbation += err[static_cast<std::size_t>(j)] + (rebased ? max_err : Real(0)) + kUnit * abs(y);
      }
      Real log_n = log(Real(n));
      h_err = kSafety * ((sensitivity * perturbation / (total + eps) + gamma(n + 6) * (log_n + 2)) / log_n + kUnit);
    }
    Real lo = h - h_err, hi = h + h_err;
    b.entropy.push_back({lo < 0 ? Real(0) : lo, hi > 1 ? Real(1) : hi});  // the computed value is clamped to [0, 1]
  }
  return b;
}

}  // namespace kvaudit::oracle::detail
