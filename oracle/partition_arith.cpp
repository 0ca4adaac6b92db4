// Interval masses, h(x) in double with its error bound, and 332-bit MPFR re-decisions (see partition_arith.h).
#include "oracle/partition_arith.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <boost/multiprecision/mpfr.hpp>
#include <gmp.h>

namespace kvaudit::oracle {

using Real = boost::multiprecision::mpfr_float_100;  // 100 decimal digits = 333 bits of mantissa

double h_bits(double x) { return x > 0.0 ? -x * std::log2(x) : 0.0; }

double entropy_error_bound(double entropy, Index terms) {
  return std::ldexp(1.0, -52) * ((static_cast<double>(terms) + 8.0) * std::fabs(entropy) + 4.0);
}

struct ExactPrefix::Impl {
  std::vector<Real> prefix;  // prefix[i] = p_1 + ... + p_i, exact
};

ExactPrefix::ExactPrefix(std::span<const double> p) : impl_(std::make_unique<Impl>()) {
  n_ = static_cast<Index>(p.size());
  impl_->prefix.resize(p.size() + 1);
  hi_.resize(p.size() + 1);
  lo_.resize(p.size() + 1);
  Real s = 0;
  impl_->prefix[0] = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (!std::isfinite(p[i]) || p[i] < 0) throw std::invalid_argument("probabilities must be finite and >= 0");
    // A sum of doubles in [2^-250, 2] needs at most ~305 bits: exact in 333 bits.
    if (p[i] != 0.0 && p[i] < std::ldexp(1.0, -250)) exact_ = false;
    s += p[i];
    impl_->prefix[i + 1] = s;
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

// Exact tie-break for commensurable masses. Every mass is a dyadic rational M 2^e (a sum of doubles), so with a
// common exponent and g = gcd of the nonzero M, q_i = c_i g 2^E. Both partitions cover the same total, so
// sum c_i is the same, and H = -g 2^E (sum c_i log2 c_i + sum c_i log2(g 2^E)): H_a < H_b exactly when
// prod c_i^c_i of a exceeds that of b. Decided with GMP integers when sum c_i is small enough to raise
// (<= 200000); returns Undecided otherwise. Needed because distinct multisets can tie exactly, e.g.
// x{1,1,2,3,6,10} and x{3,3,3,4,10}: 2 + 3 log 3 + 6 log 6 = 8 + 9 log 3 = 3 (3 log 3) + 4 log 4.
ExactPrefix::Decision commensurable_compare(const std::vector<Real>& a, const std::vector<Real>& b) {
  using D = ExactPrefix::Decision;
  struct Z {
    mpz_t v;
    Z() { mpz_init(v); }
    ~Z() { mpz_clear(v); }
    Z(const Z&) = delete;
  };
  std::vector<std::unique_ptr<Z>> za, zb;
  std::vector<long> ea, eb;
  long emin = std::numeric_limits<long>::max();
  auto load = [&](const std::vector<Real>& src, std::vector<std::unique_ptr<Z>>& z, std::vector<long>& e) {
    for (const Real& q : src) {
      if (q == 0) continue;
      z.push_back(std::make_unique<Z>());
      const long ex = mpfr_get_z_2exp(z.back()->v, q.backend().data());
      e.push_back(ex);
      emin = std::min(emin, ex);
    }
  };
  load(a, za, ea);
  load(b, zb, eb);
  Z g;
  auto align = [&](std::vector<std::unique_ptr<Z>>& z, const std::vector<long>& e) {
    for (std::size_t i = 0; i < z.size(); ++i) {
      mpz_mul_2exp(z[i]->v, z[i]->v, static_cast<mp_bitcnt_t>(e[i] - emin));
      mpz_gcd(g.v, g.v, z[i]->v);
    }
  };
  align(za, ea);
  align(zb, eb);
  if (mpz_sgn(g.v) == 0) return D::Undecided;
  auto power_product = [&](std::vector<std::unique_ptr<Z>>& z, Z& out) {
    mpz_set_ui(out.v, 1);
    unsigned long total = 0;
    Z c, t;
    for (auto& zi : z) {
      mpz_divexact(c.v, zi->v, g.v);
      if (!mpz_fits_ulong_p(c.v)) return false;
      const unsigned long cu = mpz_get_ui(c.v);
      total += cu;
      if (total > 200000) return false;
      mpz_pow_ui(t.v, c.v, cu);
      mpz_mul(out.v, out.v, t.v);
    }
    return true;
  };
  Z pa, pb;
  if (!power_product(za, pa) || !power_product(zb, pb)) return D::Undecided;
  const int cmp = mpz_cmp(pa.v, pb.v);
  return cmp == 0 ? D::Equal : cmp > 0 ? D::Less : D::Greater;
}

// MPFR's log2 and products are correctly rounded at 333 bits; m terms summed: |err| <= (m + 4) 2^-330 (H + 1).
Real mpfr_bound(const Real& H, std::size_t terms) {
  return Real(static_cast<double>(terms) + 4.0) * boost::multiprecision::ldexp(Real(1), -325) * (abs(H) + 1);
}
}  // namespace

double ExactPrefix::entropy_extended(std::span<const Index> full_bounds) const {
  return evaluate(impl_->prefix, full_bounds).H.convert_to<double>();
}

ExactPrefix::Decision ExactPrefix::compare_with(std::span<const Index> full_bounds, double R) const {
  const Eval e = evaluate(impl_->prefix, full_bounds);
  const Real d = e.H - Real(R);
  if (e.exact && exact_) return d < 0 ? Decision::Less : d > 0 ? Decision::Greater : Decision::Equal;
  const Real tol = mpfr_bound(e.H, e.masses.size());
  if (d > tol) return Decision::Greater;
  if (d < -tol) return Decision::Less;
  return Decision::Undecided;
}

ExactPrefix::Decision ExactPrefix::compare(std::span<const Index> full_a, std::span<const Index> full_b) const {
  Eval a = evaluate(impl_->prefix, full_a);
  Eval b = evaluate(impl_->prefix, full_b);
  const Real d = a.H - b.H;
  if (a.exact && b.exact && exact_) return d < 0 ? Decision::Less : d > 0 ? Decision::Greater : Decision::Equal;
  const Real tol = mpfr_bound(a.H, a.masses.size()) + mpfr_bound(b.H, b.masses.size());
  if (d > tol) return Decision::Greater;
  if (d < -tol) return Decision::Less;
  // H depends only on the multiset of masses (zero masses contribute nothing): equal multisets tie exactly.
  auto nonzero_sorted = [](std::vector<Real>& v) {
    v.erase(std::remove(v.begin(), v.end(), Real(0)), v.end());
    std::sort(v.begin(), v.end());
  };
  nonzero_sorted(a.masses);
  nonzero_sorted(b.masses);
  if (exact_ && a.masses == b.masses) return Decision::Equal;
  return exact_ ? commensurable_compare(a.masses, b.masses) : Decision::Undecided;
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
