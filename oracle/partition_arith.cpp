// Interval masses, h(x) in double with its error bound, and exact decisions (see partition_arith.h).
#include "oracle/partition_arith.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <stdexcept>

#include <boost/multiprecision/mpfr.hpp>

#include "core/exact/log_linear_sign.h"

namespace kvaudit::oracle {

using exact::LogLinearForm;
using exact::Rational;

using Real = boost::multiprecision::mpfr_float_100;  // 100 decimal digits = 333 bits of mantissa

double h_bits(double x) { return x > 0.0 ? -x * std::log2(x) : 0.0; }

double entropy_error_bound(double entropy, Index terms) {
  return std::ldexp(1.0, -52) * ((static_cast<double>(terms) + 8.0) * std::fabs(entropy) + 4.0);
}

struct ExactPrefix::Impl {
  std::vector<Real> prefix;         // prefix[i] = p_1 + ... + p_i in 333 bits (exact when ExactPrefix::exact_)
  std::vector<Rational> rational;   // the same sums, always exact
  Rational mass(Index a, Index b) const { return rational[b] - rational[a]; }
  // compare()'s memo of its last second operand and that partition's keyed mass multiset. An ExactPrefix
  // belongs to one search, which is single-threaded.
  std::vector<Index> last_b;
  std::vector<std::pair<double, Rational>> last_b_masses;
};

ExactPrefix::ExactPrefix(std::span<const double> p) : impl_(std::make_unique<Impl>()) {
  n_ = static_cast<Index>(p.size());
  impl_->prefix.resize(p.size() + 1);
  impl_->rational.resize(p.size() + 1);
  hi_.resize(p.size() + 1);
  lo_.resize(p.size() + 1);
  Real s = 0;
  Rational exact_sum = 0;
  impl_->prefix[0] = 0;
  impl_->rational[0] = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (!std::isfinite(p[i]) || p[i] < 0) throw std::invalid_argument("probabilities must be finite and >= 0");
    // A sum of doubles in [2^-250, 2] needs at most ~305 bits: exact in 333 bits. Below that only the
    // rational sums are exact, and every decision goes to the complete procedure.
    if (p[i] != 0.0 && p[i] < std::ldexp(1.0, -250)) exact_ = false;
    s += p[i];
    exact_sum += Rational(p[i]);
    impl_->prefix[i + 1] = s;
    impl_->rational[i + 1] = exact_sum;
  }
  for (std::size_t i = 0; i <= p.size(); ++i) {
    hi_[i] = impl_->prefix[i].convert_to<double>();
    lo_[i] = Real(impl_->prefix[i] - hi_[i]).convert_to<double>();
  }
}
ExactPrefix::~ExactPrefix() = default;
ExactPrefix::ExactPrefix(ExactPrefix&&) noexcept = default;
ExactPrefix& ExactPrefix::operator=(ExactPrefix&&) noexcept = default;

double ExactPrefix::mass(Index a, Index b) const {
  // Double-double difference: TwoSum on the high parts, then the low parts; error <= u q + 2^-100.
  const double x = hi_[b], y = -hi_[a];
  const double s = x + y;
  const double bb = s - x;
  const double err = (x - (s - bb)) + (y - bb);
  const double q = s + (err + (lo_[b] - lo_[a]));
  return q > 0.0 ? q : 0.0;
}

namespace {
Real h_real(const Real& q) { return q > 0 ? Real(-q * boost::multiprecision::log2(q)) : Real(0); }

bool power_of_two_or_zero(const Real& q) {
  if (q == 0) return true;
  int e = 0;
  Real f = boost::multiprecision::frexp(q, &e);
  return f == Real(0.5);
}

struct Eval {
  Real H = 0;
  bool exact = true;           // every mass 0 or a power of two: every h and the sum were exact
  std::vector<Real> masses;
};

Eval evaluate(const std::vector<Real>& prefix, std::span<const Index> bounds) {
  Eval e;
  for (std::size_t k = 1; k < bounds.size(); ++k) {
    Real q = prefix[bounds[k]] - prefix[bounds[k - 1]];
    if (!power_of_two_or_zero(q)) e.exact = false;
    e.H += h_real(q);
    e.masses.push_back(std::move(q));
  }
  return e;
}

// MPFR's log2 and products are correctly rounded at 333 bits; m terms summed: |err| <= (m + 4) 2^-330 (H + 1).
Real mpfr_bound(const Real& H, std::size_t terms) {
  return Real(static_cast<double>(terms) + 4.0) * boost::multiprecision::ldexp(Real(1), -325) * (abs(H) + 1);
}
}  // namespace

double ExactPrefix::entropy_extended(std::span<const Index> full_bounds) const {
  return evaluate(impl_->prefix, full_bounds).H.convert_to<double>();
}

namespace {
ExactPrefix::Decision from_sign(int sign) {
  using D = ExactPrefix::Decision;
  return sign < 0 ? D::Less : sign > 0 ? D::Greater : D::Equal;
}
}  // namespace

ExactPrefix::Decision ExactPrefix::compare_with(std::span<const Index> full_bounds, double R) const {
  if (exact_) {  // fast path: 332-bit evaluation, decisive unless H is within its error bound of R
    const Eval e = evaluate(impl_->prefix, full_bounds);
    const Real d = e.H - Real(R);
    if (e.exact) return from_sign(d < 0 ? -1 : d > 0 ? 1 : 0);
    const Real tol = mpfr_bound(e.H, e.masses.size());
    if (d > tol) return Decision::Greater;
    if (d < -tol) return Decision::Less;
  }
  LogLinearForm x;  // H - R on the exact masses
  for (std::size_t k = 1; k < full_bounds.size(); ++k) x.add_entropy_term(impl_->mass(full_bounds[k - 1], full_bounds[k]), +1);
  x.add_constant(-Rational(R));
  return from_sign(x.sign());
}

ExactPrefix::Decision ExactPrefix::compare(std::span<const Index> full_a, std::span<const Index> full_b) const {
  // H depends only on the multiset of masses (zero masses contribute nothing): equal multisets tie exactly.
  // Checked first: callers come here when the doubles are within rounding of each other, which on tie-heavy
  // rows is mostly such a tie, and rational masses cost far less than 333-bit logarithms.
  // Sorted by (nearest double, exact value): the double decides almost every comparison, and equal rationals
  // have equal doubles, so equal multisets still sort identically. The second operand is usually the same
  // incumbent many times in a row: its multiset is kept (Impl::last_b) rather than rebuilt on every call.
  using Keyed = std::pair<double, Rational>;
  auto masses = [&](std::span<const Index> bounds) {
    std::vector<Keyed> q;
    for (std::size_t k = 1; k < bounds.size(); ++k)
      if (Rational m = impl_->mass(bounds[k - 1], bounds[k]); m != 0) q.emplace_back(m.convert_to<double>(), std::move(m));
    std::sort(q.begin(), q.end());  // pairs order by the double first
    return q;
  };
  if (!std::equal(full_b.begin(), full_b.end(), impl_->last_b.begin(), impl_->last_b.end())) {
    impl_->last_b.assign(full_b.begin(), full_b.end());
    impl_->last_b_masses = masses(full_b);
  }
  const std::vector<Keyed> ka = masses(full_a);
  const std::vector<Keyed>& kb = impl_->last_b_masses;
  if (ka == kb) return Decision::Equal;

  if (exact_) {  // fast path, as in compare_with
    const Eval a = evaluate(impl_->prefix, full_a), b = evaluate(impl_->prefix, full_b);
    const Real d = a.H - b.H;
    if (a.exact && b.exact) return from_sign(d < 0 ? -1 : d > 0 ? 1 : 0);
    const Real tol = mpfr_bound(a.H, a.masses.size()) + mpfr_bound(b.H, b.masses.size());
    if (d > tol) return Decision::Greater;
    if (d < -tol) return Decision::Less;
  }
  // Masses the two share cancel: only the multiset difference enters the form (usually a handful of terms).
  // The keyed order serves set_difference as it is: two keyed masses are equivalent exactly when the rationals
  // are equal.
  std::vector<Keyed> only_a, only_b;
  std::set_difference(ka.begin(), ka.end(), kb.begin(), kb.end(), std::back_inserter(only_a));
  std::set_difference(kb.begin(), kb.end(), ka.begin(), ka.end(), std::back_inserter(only_b));
  LogLinearForm x;  // H(a) - H(b)
  for (const Keyed& q : only_a) x.add_entropy_term(q.second, +1);
  for (const Keyed& q : only_b) x.add_entropy_term(q.second, -1);
  return from_sign(x.sign());
}

std::vector<Index> full_bounds(const std::vector<Index>& cuts, Index n) {
  std::vector<Index> b;
  b.reserve(cuts.size() + 2);
  b.push_back(0);
  b.insert(b.end(), cuts.begin(), cuts.end());
  b.push_back(n);
  return b;
}

}  // namespace kvaudit::oracle
