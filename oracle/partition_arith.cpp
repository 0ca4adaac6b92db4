// Interval masses, h(x) in double with its error bound, and exact decisions (see partition_arith.h).
#include "oracle/partition_arith.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <map>
#include <stdexcept>
#include <unordered_map>

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
  std::size_t terms = 0;
};

// One interval's h(q) in 333 bits, and whether q is 0 or a power of two (then h(q) is exact).
struct IntervalH {
  Real h;
  bool exact = true;
};
}  // namespace

struct ExactPrefix::Impl {
  std::vector<Real> prefix;         // prefix[i] = p_1 + ... + p_i in 333 bits (exact when ExactPrefix::exact_)
  std::vector<Rational> rational;   // the same sums, always exact
  Rational mass(Index a, Index b) const { return rational[b] - rational[a]; }

  // Exact mass classes, for compare(): interval (a, b] -> a small integer, equal for two intervals exactly
  // when their rational masses are equal (class 0: mass 0). A partition's multiset of masses is then its
  // sorted vector of nonzero classes, and two multisets are equal exactly when those vectors are. Built
  // lazily, each interval's rational mass computed once: on peaked rows the search re-offers thousands of
  // partitions within rounding of the incumbent, and rebuilding their rational masses on every comparison
  // (a gmp subtraction, gcd and conversion per group) was most of the solver's time (docs/pooling.md).
  // An ExactPrefix belongs to one search, which is single-threaded.
  std::unordered_map<std::uint64_t, int> class_of_interval;
  std::map<Rational, int> class_of_mass;        // exact value -> class
  std::vector<const Rational*> mass_of_class;   // class -> exact value (a key of class_of_mass: stable)
  int mass_class(Index a, Index b) {
    const std::uint64_t key = static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(rational.size()) + static_cast<std::uint64_t>(b);
    if (auto it = class_of_interval.find(key); it != class_of_interval.end()) return it->second;
    if (mass_of_class.empty()) {
      auto zero = class_of_mass.emplace(Rational(0), 0).first;
      mass_of_class.push_back(&zero->first);
    }
    auto [it, fresh] = class_of_mass.emplace(mass(a, b), static_cast<int>(mass_of_class.size()));
    if (fresh) mass_of_class.push_back(&it->first);
    class_of_interval.emplace(key, it->second);
    return it->second;
  }
  std::vector<int> classes(std::span<const Index> bounds) {
    std::vector<int> c;
    c.reserve(bounds.size());
    for (std::size_t k = 1; k < bounds.size(); ++k)
      if (const int id = mass_class(bounds[k - 1], bounds[k]); id != 0) c.push_back(id);
    std::sort(c.begin(), c.end());
    return c;
  }
  // h of each interval in 333 bits, computed once (lazily): every 333-bit evaluation of a partition is then m
  // additions instead of m logarithms. On tie-heavy rows the searches evaluate thousands of partitions within
  // rounding of R or of the incumbent, over the same few thousand intervals. The values are the ones the
  // evaluation computed before (same difference, same h, same summation order), so every decision and every
  // reported entropy is bit for bit what it was. Capped so that a huge n cannot exhaust memory.
  static constexpr std::size_t kMaxCachedIntervals = std::size_t{1} << 22;
  std::unordered_map<std::uint64_t, IntervalH> interval_h;
  // Valid until the next call (the cache is emptied when full).
  const IntervalH& h_of(Index a, Index b) {
    const std::uint64_t key = static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(prefix.size()) + static_cast<std::uint64_t>(b);
    if (auto it = interval_h.find(key); it != interval_h.end()) return it->second;
    if (interval_h.size() >= kMaxCachedIntervals) interval_h.clear();
    const Real q = prefix[b] - prefix[a];
    return interval_h.emplace(key, IntervalH{h_real(q), power_of_two_or_zero(q)}).first->second;
  }
  Eval evaluate(std::span<const Index> bounds) {
    Eval e;
    for (std::size_t k = 1; k < bounds.size(); ++k) {
      const IntervalH& ih = h_of(bounds[k - 1], bounds[k]);
      if (!ih.exact) e.exact = false;
      e.H += ih.h;
      ++e.terms;
    }
    return e;
  }
  // compare()'s memo of its last second operand (usually the same incumbent many times in a row) and its classes.
  std::vector<Index> last_b;
  std::vector<int> last_b_classes;
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
// MPFR's log2 and products are correctly rounded at 333 bits; m terms summed: |err| <= (m + 4) 2^-330 (H + 1).
Real mpfr_bound(const Real& H, std::size_t terms) {
  return Real(static_cast<double>(terms) + 4.0) * boost::multiprecision::ldexp(Real(1), -325) * (abs(H) + 1);
}
}  // namespace

double ExactPrefix::entropy_extended(std::span<const Index> full_bounds) const {
  return impl_->evaluate(full_bounds).H.convert_to<double>();
}

namespace {
ExactPrefix::Decision from_sign(int sign) {
  using D = ExactPrefix::Decision;
  return sign < 0 ? D::Less : sign > 0 ? D::Greater : D::Equal;
}
}  // namespace

ExactPrefix::Decision ExactPrefix::compare_with(std::span<const Index> full_bounds, double R) const {
  if (exact_) {  // fast path: 332-bit evaluation, decisive unless H is within its error bound of R
    const Eval e = impl_->evaluate(full_bounds);
    const Real d = e.H - Real(R);
    if (e.exact) return from_sign(d < 0 ? -1 : d > 0 ? 1 : 0);
    const Real tol = mpfr_bound(e.H, e.terms);
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
  // Checked first, on exact mass classes (Impl::mass_class): callers come here when the doubles are within
  // rounding of each other, which on tie-heavy rows is mostly such a tie.
  Impl& impl = *impl_;
  if (impl.class_of_interval.size() >= Impl::kMaxCachedIntervals) {  // bounded memory: start the classes afresh
    impl.class_of_interval.clear();
    impl.class_of_mass.clear();
    impl.mass_of_class.clear();
    impl.last_b.clear();
    impl.last_b_classes.clear();
  }
  if (!std::equal(full_b.begin(), full_b.end(), impl.last_b.begin(), impl.last_b.end())) {
    impl.last_b.assign(full_b.begin(), full_b.end());
    impl.last_b_classes = impl.classes(full_b);
  }
  const std::vector<int> ka = impl.classes(full_a);
  const std::vector<int>& kb = impl.last_b_classes;
  if (ka == kb) return Decision::Equal;

  if (exact_) {  // fast path, as in compare_with
    const Eval a = impl_->evaluate(full_a), b = impl_->evaluate(full_b);
    const Real d = a.H - b.H;
    if (a.exact && b.exact) return from_sign(d < 0 ? -1 : d > 0 ? 1 : 0);
    const Real tol = mpfr_bound(a.H, a.terms) + mpfr_bound(b.H, b.terms);
    if (d > tol) return Decision::Greater;
    if (d < -tol) return Decision::Less;
  }
  // Masses the two share cancel: only the multiset difference enters the form (usually a handful of terms).
  // Sorted classes serve set_difference as they are: two classes are equal exactly when the rationals are.
  std::vector<int> only_a, only_b;
  std::set_difference(ka.begin(), ka.end(), kb.begin(), kb.end(), std::back_inserter(only_a));
  std::set_difference(kb.begin(), kb.end(), ka.begin(), ka.end(), std::back_inserter(only_b));
  LogLinearForm x;  // H(a) - H(b)
  for (const int q : only_a) x.add_entropy_term(*impl.mass_of_class[static_cast<std::size_t>(q)], +1);
  for (const int q : only_b) x.add_entropy_term(*impl.mass_of_class[static_cast<std::size_t>(q)], -1);
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
