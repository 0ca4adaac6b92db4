// The exact sign of x = r_0 + sum_j r_j log2 a_j (rationals r_j, positive rationals a_j): the form of every
// entropy comparison the partition oracles make on finite binary inputs, since every double is a dyadic
// rational and so is every group mass. Complete (never undecided); statement and proof:
// proofs/12_exact_log_sign.md.
//
// Method. Each a_j = num / den splits into integer logs; the integers are refined, with gcds only, into a
// base of pairwise coprime integers b_i > 1 that always holds 2 (so every other b_i is odd), giving
// x = c_0 + sum_i c_i log2 b_i with c_0 collecting log2 2 = 1. Logs of pairwise coprime integers
// are linearly independent over Q, so x = 0 exactly when every c_i vanishes; otherwise x != 0 and an MPFR
// evaluation with a derived error bound, at doubling precision, settles its sign in finitely many rounds.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <boost/multiprecision/gmp.hpp>

namespace kvaudit::exact {

using Integer = boost::multiprecision::mpz_int;
using Rational = boost::multiprecision::mpq_rational;

class LogLinearForm {
 public:
  // x += r.
  void add_constant(const Rational& r) { constant_ += r; }
  // x += coefficient * log2(value), value > 0 (throws std::invalid_argument otherwise).
  void add_log2(const Rational& coefficient, const Rational& value);
  // x += sign * h(q), h(q) = -q log2 q, h(0) = 0; q >= 0.
  void add_entropy_term(const Rational& q, int sign);

  // -1, 0 or +1: the exact sign of x.
  int sign() const;

 private:
  Rational constant_ = 0;
  std::vector<std::pair<Rational, Integer>> logs_;  // (coefficient, integer > 1)
};

// The reduced form c_0 + sum_i c_i log2 b_i (b_i pairwise coprime, > 1, none equal to 2), for the proof's
// executable check and for tests.
struct ReducedLogForm {
  Rational constant;
  std::vector<std::pair<Rational, Integer>> terms;  // nonzero coefficients only
};
ReducedLogForm reduce_to_coprime_base(const Rational& constant, const std::vector<std::pair<Rational, Integer>>& logs);

// Pairwise coprime integers > 1 such that every input (> 1) is a product of their powers; 2 is always among
// them. Gcds and exact divisions only (no factoring).
std::vector<Integer> coprime_base(const std::vector<Integer>& values);

// How the complete decisions went, process-wide (for the audit's and the suites' closing figures).
struct ExactSignStats {
  std::int64_t decisions = 0;        // forms decided by this procedure
  std::int64_t exact_zeros = 0;      // of those, x = 0 exactly (every reduced coefficient vanished)
  std::int64_t above_332_bits = 0;   // nonzero forms whose sign needed more than 332 bits of working precision
  std::int64_t max_precision_bits = 0;  // the largest precision any nonzero form needed
};
ExactSignStats exact_sign_stats();

}  // namespace kvaudit::exact
