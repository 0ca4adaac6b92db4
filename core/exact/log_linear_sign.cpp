// Exact sign of r_0 + sum r_j log2 a_j by coprime-base reduction and MPFR at doubling precision (see
// log_linear_sign.h; proofs/12_exact_log_sign.md derives the evaluation bound used below).
#include "core/exact/log_linear_sign.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>

#include <mpfr.h>

namespace kvaudit::exact {

namespace {
std::atomic<std::int64_t> g_decisions{0}, g_exact_zeros{0}, g_above_332{0}, g_max_bits{0};

// First working precision, and a ceiling that only a bug in the reduction could reach (a nonzero form of
// this size cannot be that close to 0 in practice; the loop would otherwise not end).
constexpr mpfr_prec_t kStartBits = 128;
constexpr mpfr_prec_t kCeilingBits = mpfr_prec_t{1} << 24;

struct Mpfr {
  mpfr_t v;
  explicit Mpfr(mpfr_prec_t bits) { mpfr_init2(v, bits); }
  ~Mpfr() { mpfr_clear(v); }
  Mpfr(const Mpfr&) = delete;
  Mpfr& operator=(const Mpfr&) = delete;
};

// Adds y to the base (pairwise coprime, every element > 1) keeping it pairwise coprime, such that every
// value previously a product of powers of base elements still is, and so is y.
void insert_coprime(std::vector<Integer>& base, const Integer& y0) {
  std::vector<Integer> pending{y0};
  while (!pending.empty()) {
    Integer y = std::move(pending.back());
    pending.pop_back();
    if (y <= 1) continue;
    bool placed = false;
    for (std::size_t i = 0; i < base.size(); ++i) {
      const Integer g = gcd(y, base[i]);
      if (g == 1) continue;
      placed = true;
      if (g == y && g == base[i]) break;  // already in the base
      // y = g (y/g) and b = g (b/g): replace b by its two factors and retry all three. The product of the
      // values in base and pending drops by the factor g >= 2 each time, so this terminates.
      const Integer b = std::move(base[i]);
      base.erase(base.begin() + static_cast<std::ptrdiff_t>(i));
      pending.push_back(g);
      pending.push_back(b / g);
      pending.push_back(y / g);
      break;
    }
    if (!placed) base.push_back(std::move(y));
  }
}

// Exponent of the base element b in x (x a product of powers of pairwise coprime base elements): b^k | x
// exactly when k <= that exponent, because b is coprime to every other factor. Divides x by b^exponent.
long valuation(Integer& x, const Integer& b) {
  long e = 0;
  while (x % b == 0) {
    x /= b;
    ++e;
  }
  return e;
}

// Sign of c_0 + sum c_i log2 b_i (not all coefficients zero) at working precision `bits`, or 0 when that
// precision cannot tell. Rounding to nearest, u = 2^-bits; each term is within (3u + 3u^2 + u^3) of its
// magnitude, the recursive sum of J values within (J - 1) u / (1 - (J - 1) u) of their magnitudes, so
// |computed - exact| <= (J + 3) u S with S the sum of the computed magnitudes; we decide only past twice that.
int sign_at(const ReducedLogForm& f, mpfr_prec_t bits) {
  Mpfr sum(bits), mag(bits), term(bits), lg(bits), coeff(bits);
  mpfr_set_q(sum.v, f.constant.backend().data(), MPFR_RNDN);
  mpfr_abs(mag.v, sum.v, MPFR_RNDU);
  for (const auto& [c, b] : f.terms) {
    Mpfr exact_b(static_cast<mpfr_prec_t>(mpz_sizeinbase(b.backend().data(), 2)) + 1);
    mpfr_set_z(exact_b.v, b.backend().data(), MPFR_RNDN);  // exact at that precision
    mpfr_log2(lg.v, exact_b.v, MPFR_RNDN);
    mpfr_set_q(coeff.v, c.backend().data(), MPFR_RNDN);
    mpfr_mul(term.v, coeff.v, lg.v, MPFR_RNDN);
    mpfr_add(sum.v, sum.v, term.v, MPFR_RNDN);
    mpfr_abs(term.v, term.v, MPFR_RNDU);
    mpfr_add(mag.v, mag.v, term.v, MPFR_RNDU);
  }
  const double terms = static_cast<double>(f.terms.size() + 1);
  mpfr_mul_d(mag.v, mag.v, 2.0 * (terms + 3.0), MPFR_RNDU);
  mpfr_mul_2si(mag.v, mag.v, -static_cast<long>(bits), MPFR_RNDU);
  mpfr_abs(term.v, sum.v, MPFR_RNDN);
  if (mpfr_cmp(term.v, mag.v) <= 0) return 0;
  return mpfr_sgn(sum.v) > 0 ? 1 : -1;
}

void note_max(std::int64_t bits) {
  std::int64_t seen = g_max_bits.load();
  while (bits > seen && !g_max_bits.compare_exchange_weak(seen, bits)) {
  }
}
}  // namespace

void LogLinearForm::add_log2(const Rational& coefficient, const Rational& value) {
  if (value <= 0) throw std::invalid_argument("log2 of a non-positive value");
  if (coefficient == 0) return;
  const Integer num = numerator(value), den = denominator(value);
  if (num > 1) logs_.emplace_back(coefficient, num);
  if (den > 1) logs_.emplace_back(-coefficient, den);
}

void LogLinearForm::add_entropy_term(const Rational& q, int sign) {
  if (q < 0) throw std::invalid_argument("h of a negative mass");
  if (q == 0) return;
  add_log2(sign > 0 ? Rational(-q) : q, q);
}

std::vector<Integer> coprime_base(const std::vector<Integer>& values) {
  std::vector<Integer> base{2};
  for (const Integer& v : values) insert_coprime(base, v);
  std::sort(base.begin(), base.end());
  return base;
}

ReducedLogForm reduce_to_coprime_base(const Rational& constant,
                                      const std::vector<std::pair<Rational, Integer>>& logs) {
  std::vector<Integer> values;
  values.reserve(logs.size());
  for (const auto& term : logs) values.push_back(term.second);
  const std::vector<Integer> base = coprime_base(values);
  std::vector<Rational> coeff(base.size(), Rational(0));
  for (const auto& [c, a] : logs) {
    Integer rest = a;
    for (std::size_t i = 0; i < base.size() && rest > 1; ++i) {
      const long e = valuation(rest, base[i]);
      if (e) coeff[i] += c * e;
    }
    if (rest != 1) throw std::logic_error("coprime base does not generate an input");
  }
  ReducedLogForm out;
  out.constant = constant;
  for (std::size_t i = 0; i < base.size(); ++i) {
    if (base[i] == 2) {
      out.constant += coeff[i];  // log2 2 = 1
    } else if (coeff[i] != 0) {
      out.terms.emplace_back(coeff[i], base[i]);
    }
  }
  return out;
}

int LogLinearForm::sign() const {
  ++g_decisions;
  const ReducedLogForm f = reduce_to_coprime_base(constant_, logs_);
  if (f.terms.empty()) {  // a rational: its sign is exact
    if (f.constant == 0) ++g_exact_zeros;
    return f.constant > 0 ? 1 : f.constant < 0 ? -1 : 0;
  }
  // Linear independence of 1 = log2 2 and the log2 b_i over Q: some coefficient is nonzero, so x != 0 and
  // enough precision always decides.
  for (mpfr_prec_t bits = kStartBits; bits <= kCeilingBits; bits *= 2) {
    if (const int s = sign_at(f, bits)) {
      if (bits > 332) ++g_above_332;
      note_max(bits);
      return s;
    }
  }
  throw std::logic_error("exact sign: a nonzero log-linear form stayed undecided at 2^24 bits");
}

ExactSignStats exact_sign_stats() {
  return {g_decisions.load(), g_exact_zeros.load(), g_above_332.load(), g_max_bits.load()};
}

}  // namespace kvaudit::exact
