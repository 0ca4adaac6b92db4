// Exact decisions in the partition oracles (proofs/12_exact_log_sign.md): float64 inputs with R one ulp either
// side of an irrational H(q*), dyadic masses with H(q) = R exactly, zero-mass ties; enumeration and the exact
// solver, each certified and equal to an independent brute force (exact rational masses, 4096-bit logs).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <boost/multiprecision/mpfr.hpp>
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "core/exact/log_linear_sign.h"
#include "oracle/partition_arith.h"
#include "oracle/partition_enumerate.h"
#include "oracle/partition_exact.h"
#include "tests/property/exact_sign_report.h"

using namespace kvaudit;
using namespace kvaudit::oracle;
using kvaudit::exact::Rational;

namespace {
using Wide = boost::multiprecision::number<boost::multiprecision::mpfr_float_backend<1250>>;  // ~4150 bits
using D = ExactPrefix::Decision;

Wide wide(const Rational& r) {
  return Wide(boost::multiprecision::numerator(r).str()) / Wide(boost::multiprecision::denominator(r).str());
}

// The brute force: every partition (fixed m or free), H from exact rational masses with 4096-bit logs; values
// within 2^-4000 of each other or of R count as equal (no nonzero difference here comes near that), and
// equal values keep the canonical partition (fewer groups, then lexicographically smaller cuts).
struct Brute {
  bool feasible = false;
  std::vector<Index> cuts;
  Wide H = 0;
};
Brute brute_force(const std::vector<double>& p, double R, std::optional<Index> m) {
  const Index n = static_cast<Index>(p.size());
  std::vector<Rational> prefix(1, Rational(0));
  for (double x : p) prefix.push_back(prefix.back() + Rational(x));
  std::vector<Wide> h(static_cast<std::size_t>((n + 1) * (n + 1)), Wide(0));
  for (Index a = 0; a < n; ++a)
    for (Index b = a + 1; b <= n; ++b) {
      const Rational q = prefix[b] - prefix[a];
      if (q > 0) h[a * (n + 1) + b] = -wide(q) * boost::multiprecision::log2(wide(q));
    }
  const Wide tie = boost::multiprecision::ldexp(Wide(1), -4000), r = Wide(R);
  Brute best;
  for (std::uint64_t mask = 0; mask < (std::uint64_t{1} << (n - 1)); ++mask) {
    std::vector<Index> cuts;
    for (Index i = 1; i < n; ++i)
      if (mask >> (i - 1) & 1) cuts.push_back(i);
    if (m && static_cast<Index>(cuts.size()) + 1 != *m) continue;
    Wide H = 0;
    Index a = 0;
    for (Index b : cuts) H += h[a * (n + 1) + b], a = b;
    H += h[a * (n + 1) + n];
    if (H - r > tie) continue;
    const bool canonical = cuts.size() < best.cuts.size() || (cuts.size() == best.cuts.size() && cuts < best.cuts);
    if (!best.feasible || H - best.H > tie || (abs(H - best.H) <= tie && canonical)) best = {true, cuts, H};
  }
  return best;
}

// Both solvers certified, equal to each other and to the brute force.
void assert_all_agree(const std::vector<double>& p, double R, std::optional<Index> m) {
  const PartitionProblem prob{p, R, m};
  const PartitionAnswer en = enumerate_partitions(prob);
  const PartitionAnswer ex = solve_exact(prob);
  const Brute bf = brute_force(p, R, m);
  RC_ASSERT(en.certified);
  RC_ASSERT(ex.certified);
  RC_ASSERT(en.feasible == bf.feasible);
  RC_ASSERT(ex.feasible == bf.feasible);
  if (bf.feasible) {
    RC_ASSERT(en.cuts == bf.cuts);
    RC_ASSERT(ex.cuts == bf.cuts);
  }
}

// Small rationals stored as float64: weights k / sum (the sum rarely a power of two), or multiples of 1/1016
// (the family of the seed that exposed the undecided tie): the stored values are not the rationals.
rc::Gen<std::vector<double>> genDecimalRow(int max_n) {
  return rc::gen::exec([=] {
    const int n = *rc::gen::inRange(2, max_n + 1);
    std::vector<int> w(static_cast<std::size_t>(n));
    for (int& x : w) x = *rc::gen::weightedElement<int>({{2, 0}, {3, 1}, {2, 2}, {1, 3}, {1, 7}});
    int s = 0;
    for (int x : w) s += x;
    if (s == 0) w[0] = s = 1;
    const bool per_1016 = *rc::gen::arbitrary<bool>();
    RC_TAG(per_1016 ? "multiples of 1/1016" : "k / sum");
    std::vector<double> p;
    for (int x : w) p.push_back(per_1016 ? std::round(1016.0 * x / s) / 1016.0 : static_cast<double>(x) / s);
    return p;
  });
}

std::vector<Index> random_bounds(Index n, std::optional<Index> m) {
  const Index groups = m ? *m : *rc::gen::inRange<Index>(1, n + 1);
  std::vector<Index> b{0};
  for (Index k = 1; k < groups; ++k) {  // increasing cuts, each leaving room for the groups after it
    const Index lo = b.back() + 1, hi = n - (groups - k);
    b.push_back(*rc::gen::inRange<Index>(lo, hi + 1));
  }
  b.push_back(n);
  return b;
}
}  // namespace

// R one ulp above and one ulp below H(q*), q* a random partition with an irrational entropy.
RC_GTEST_PROP(PoolingExactDecision, Float64BudgetOneUlpAroundIrrationalEntropy, ()) {
  const std::vector<double> p = *genDecimalRow(11);
  const Index n = static_cast<Index>(p.size());
  const bool fixed = *rc::gen::arbitrary<bool>();
  std::optional<Index> m;
  if (fixed) m = *rc::gen::inRange<Index>(1, n + 1);
  const std::vector<Index> star = random_bounds(n, m);
  const ExactPrefix prefix(p);
  const double Hd = prefix.entropy_extended(star);
  const D where = prefix.compare_with(star, Hd);
  RC_PRE(where != D::Equal);  // a dyadic entropy has no ulp neighbourhood to test
  const double up = where == D::Less ? Hd : std::nextafter(Hd, INFINITY);
  const double down = where == D::Less ? std::nextafter(Hd, -INFINITY) : Hd;
  RC_ASSERT(prefix.compare_with(star, up) == D::Less);
  RC_ASSERT(prefix.compare_with(star, down) == D::Greater);
  RC_TAG(fixed ? "fixed m" : "free form");
  assert_all_agree(p, up, m);
  assert_all_agree(p, down, m);
  // With R just above H(q*), the optimum is at least H(q*); just below, q* itself is excluded.
  const PartitionAnswer above = solve_exact({p, up, m});
  RC_ASSERT(above.feasible);
  RC_ASSERT(prefix.compare(full_bounds(above.cuts, n), star) != D::Less);
}

// Power-of-two group masses split into dyadic atoms: H(q*) is a dyadic rational, exact as a double; R = H(q*).
RC_GTEST_PROP(PoolingExactDecision, DyadicMassesWithEntropyExactlyAtBudget, ()) {
  const int groups = *rc::gen::inRange(1, 6);
  std::vector<int> exps;  // group k has mass 2^-e_k; the masses sum to 1 (a random dyadic split of 1)
  std::vector<int> pending{0};
  while (!pending.empty() && static_cast<int>(exps.size() + pending.size()) < groups) {
    const int e = pending.back();
    pending.pop_back();
    pending.push_back(e + 1), pending.push_back(e + 1);
  }
  exps.insert(exps.end(), pending.begin(), pending.end());
  std::vector<double> p;
  std::vector<Index> star{0};
  double R = 0;
  for (int e : exps) {
    const double q = std::ldexp(1.0, -e);
    R += e * q;  // h(2^-e) = e 2^-e, exact
    const int atoms = *rc::gen::inRange(1, 4);
    double left = q;
    for (int a = 0; a + 1 < atoms; ++a) {
      const double part = *rc::gen::element(0.0, left / 2, left / 4);
      p.push_back(part);
      left -= part;
    }
    p.push_back(left);
    star.push_back(static_cast<Index>(p.size()));
  }
  RC_PRE(p.size() <= 12);
  const Index n = static_cast<Index>(p.size());
  const ExactPrefix prefix(p);
  RC_ASSERT(prefix.compare_with(star, R) == D::Equal);
  const std::optional<Index> m = *rc::gen::arbitrary<bool>() ? std::optional<Index>(static_cast<Index>(star.size()) - 1)
                                                             : std::nullopt;
  RC_TAG(m ? "fixed m" : "free form");
  assert_all_agree(p, R, m);
  const PartitionAnswer ex = solve_exact({p, R, m});
  RC_ASSERT(ex.feasible);
  RC_ASSERT(prefix.compare_with(full_bounds(ex.cuts, n), R) == D::Equal);  // the optimum hits R exactly
}

// Zeros sliding across boundaries make many partitions tie exactly; the canonical one must win everywhere.
RC_GTEST_PROP(PoolingExactDecision, ZeroMassTiesAreBrokenCanonically, ()) {
  const int n = *rc::gen::inRange(2, 13);
  std::vector<int> w(static_cast<std::size_t>(n));
  for (int& x : w) x = *rc::gen::weightedElement<int>({{3, 0}, {2, 1}, {1, 3}});
  int s = 0;
  for (int x : w) s += x;
  if (s == 0) w[0] = s = 1;
  RC_PRE(std::count(w.begin(), w.end(), 0) >= 2);
  std::vector<double> p;
  for (int x : w) p.push_back(static_cast<double>(x) / s);
  const bool fixed = *rc::gen::arbitrary<bool>();
  const std::optional<Index> m = fixed ? std::optional<Index>(*rc::gen::inRange<Index>(1, n + 1)) : std::nullopt;
  const ExactPrefix prefix(p);
  const double R = *rc::gen::element(0.0, 0.5, 1.0, 1.5, 2.0, prefix.entropy_extended(random_bounds(n, m)));
  RC_TAG(fixed ? "fixed m" : "free form");
  assert_all_agree(p, R, m);
}
