// Arithmetic shared by the partition oracles: interval masses from exact prefix sums, h(x) = -x log2 x in
// double with a derived error bound, and exact decisions: first in 332-bit MPFR, and where that cannot tell,
// by the complete procedure of log_linear_sign.h on the exact rational masses.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "core/types.h"

namespace kvaudit::oracle {

// h(x) = -x log2 x with h(0) = 0 (0 log 0 = 0), in double.
double h_bits(double x);

// Upper bound on |H_double - H_exact| for a sum of `terms` values h(q_k) computed by this file's double
// path, where H is the computed sum (>= 0). Derivation (docs/pooling.md, "rounding"): q_k is within
// u q_k + 2^-100 of the exact mass (double-double prefix sums), log2 within 2 ulp, one product, then
// `terms` - 1 additions: |err| <= u ((terms + 6) H + 2 Q) + terms 2^-90 with Q = sum q_k <= 1 + 2^-40.
// We double u for safety: bound = 2^-52 ((terms + 8) H + 4).
double entropy_error_bound(double entropy, Index terms);

// Exact prefix sums of p (rationals; also in 332-bit MPFR, exact unless some input is below 2^-250) and the
// masses of intervals (a, b].
class ExactPrefix {
 public:
  explicit ExactPrefix(std::span<const double> p);
  ~ExactPrefix();
  ExactPrefix(ExactPrefix&&) noexcept;
  ExactPrefix& operator=(ExactPrefix&&) noexcept;

  Index size() const { return n_; }
  // Mass of (a, b] rounded to double: faithful, within u q + 2^-100 of the exact value.
  double mass(Index a, Index b) const;
  // h(mass(a, b)) in double.
  double h(Index a, Index b) const { return h_bits(mass(a, b)); }

  // H of the partition given by full boundaries 0 = b_0 < ... < b_m = n, in 332-bit precision, rounded to
  // double (for reporting).
  double entropy_extended(std::span<const Index> full_bounds) const;

  // Every decision is exact: there is no undecided outcome on finite input.
  enum class Decision { Less, Equal, Greater };
  // Compares H(partition) with R exactly (R as the double it is, a dyadic rational).
  Decision compare_with(std::span<const Index> full_bounds, double R) const;
  // Compares H(a) with H(b) exactly. Equal multisets of masses (zeros sliding across a boundary, mirrored
  // groups) are recognised as ties without evaluating anything.
  Decision compare(std::span<const Index> full_a, std::span<const Index> full_b) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<double> hi_, lo_;  // double-double copy of the exact prefix sums
  Index n_ = 0;
  bool exact_ = true;
};

// cuts (b_1..b_{m-1}) -> full bounds (0, cuts..., n).
std::vector<Index> full_bounds(const std::vector<Index>& cuts, Index n);

}  // namespace kvaudit::oracle
