// Check of proofs/13_reach_bound.md: the interval-cover bound (oracle/partition_reach.h) is at least the
// exact optimum for every K and incumbent floor, infeasibility is claimed only when true, witnesses are real
// feasible partitions, the bound is tight when nothing merges, and a reducer that drops an interval is caught.
// Exhaustive over small dyadic vectors (every partition in MPFR), RapidCheck at larger n.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <boost/multiprecision/mpfr.hpp>
#include <cmath>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "oracle/partition_arith.h"
#include "oracle/partition_enumerate.h"
#include "oracle/partition_exact.h"
#include "oracle/partition_reach.h"
#include "proofs/proof_report.h"
#include "tests/property/pooling_generators.h"

namespace {
using Real = boost::multiprecision::mpfr_float_100;
using kvaudit::Index;
using kvaudit::proofs::report;
namespace oracle = kvaudit::oracle;
using D = oracle::ExactPrefix::Decision;

Real h(const Real& x) { return x > 0 ? Real(-x * boost::multiprecision::log2(x)) : Real(0); }

// MPFR values of every partition (fixed m, or every m when m is absent), exact masses.
std::vector<Real> all_values(const std::vector<double>& p, std::optional<Index> m) {
  const Index n = static_cast<Index>(p.size());
  std::vector<Real> out;
  for (unsigned mask = 0; mask < (1u << (n - 1)); ++mask) {
    if (m && __builtin_popcount(mask) + 1 != *m) continue;
    Real v = 0, q = 0;
    for (Index i = 0; i < n; ++i) {
      q += Real(p[i]);
      if (i == n - 1 || (mask & (1u << i))) v += h(q), q = 0;
    }
    out.push_back(v);
  }
  return out;
}

// The planted bug of the mutant part: the second interval of a merged pair is dropped, not absorbed.
void drop_on_merge(std::vector<oracle::ReachInterval>& list, int max_intervals) {
  while (list.size() > static_cast<std::size_t>(std::max(1, max_intervals))) list.erase(list.begin() + 1);
}

struct Stats {
  long problems = 0, rounds = 0, tight_checked = 0, below_r = 0, infeasible = 0, violations = 0;
};

// One problem, one K, one floor: the assertions of (R1)-(R4). Returns "" or what failed.
std::string check_one(const std::vector<double>& p, std::optional<Index> m, double R, int K, bool with_floor,
                      oracle::ReachReducer reducer, Stats& st) {
  const Index n = static_cast<Index>(p.size());
  const oracle::PartitionAnswer en = oracle::enumerate_partitions({p, R, m});
  if (!en.certified) return "enumeration not certified";
  const oracle::ExactPrefix prefix(p);
  const oracle::IntervalTable table(prefix);
  oracle::Incumbent inc(prefix, R);
  oracle::SuffixTables suffix;
  std::vector<double> free_up(static_cast<std::size_t>(n + 1), 0.0);
  double hmax = 0.0;
  if (m) {
    suffix = oracle::suffix_tables(table, n, *m);
    hmax = suffix.view().upper(0, *m);
  } else {
    for (Index i = n - 1; i >= 0; --i) free_up[i] = free_up[i + 1] + table(i, i + 1);
    hmax = free_up[0];
  }
  const Index terms = m ? *m : n;
  hmax += oracle::entropy_error_bound(hmax, terms);
  if (with_floor && en.feasible) {
    // Floor from a feasible incumbent: the least-entropy partition (all in one group but the last m - 1 atoms).
    std::vector<Index> b{0};
    for (Index c = n - (m ? *m : 1) + 1; c < n; ++c) b.push_back(c);
    b.push_back(n);
    inc.offer(b, table.entropy(b));
  }
  oracle::ReachLimits rl;
  rl.first_intervals = rl.max_intervals = K;
  rl.reducer = reducer;
  const oracle::ReachResult r = oracle::reach_upper_bound(table, suffix.view(), free_up, inc, n, m, R, hmax, rl);
  ++st.problems;
  st.rounds += r.rounds;
  if (r.rounds != 1) return "the round did not finish";
  if (r.none_feasible) {
    ++st.infeasible;
    return en.feasible ? "claimed infeasible, but a partition is feasible" : "";
  }
  if (!en.feasible) return inc.has() ? "an infeasible problem got a witness" : "";
  const auto opt = oracle::full_bounds(en.cuts, n);
  if (!(r.upper <= R)) return "upper above R";
  if (prefix.compare_with(opt, r.upper) == D::Greater) {
    ++st.violations;
    return "upper below the optimum";
  }
  if (!inc.has()) return "no witness although feasible";
  if (prefix.compare_with(inc.bounds(), R) == D::Greater) return "infeasible witness";
  if (inc.bounds().front() != 0 || inc.bounds().back() != n) return "witness not a partition";
  if (m && static_cast<Index>(inc.bounds().size()) - 1 != *m) return "witness with the wrong number of groups";
  if (r.upper < R) ++st.below_r;
  // Non-vacuity: with no merging the cover is the set of double values, so the bound sits within 4e + 2^-40 of
  // the optimum and the witness is an optimum, unless some infeasible partition lies within 4e above R.
  const bool merges_nothing = K >= (1 << 6);
  if (merges_nothing) {
    const double e = oracle::entropy_error_bound(std::max(hmax, R), terms);
    const Real slack = Real(4.0 * e + std::ldexp(1.0, -40));
    bool near_r = false;
    for (const Real& v : all_values(p, m))
      if (v > Real(R) && v <= Real(R) + slack) near_r = true;
    if (!near_r) {
      ++st.tight_checked;
      const Real ov = Real(prefix.entropy_extended(opt));
      if (Real(r.upper) - ov > slack + boost::multiprecision::ldexp(Real(1), -50)) return "bound not tight without merging";
      if (prefix.compare(inc.bounds(), opt) != D::Equal) return "the top end's witness is not an optimum";
    }
  }
  return "";
}

// Budgets for p: a grid with exact dyadic hits, one off-grid value, and midpoints between attainable values
// (the sparse case: R in a gap, where the bound must fall below R).
std::vector<double> budgets(const std::vector<double>& p, std::optional<Index> m) {
  std::vector<double> out{0.0, 1.0, 1.5, 2.3};
  std::set<double> vals;
  for (const Real& v : all_values(p, m)) vals.insert(v.convert_to<double>());
  std::vector<double> sorted(vals.begin(), vals.end());
  for (std::size_t i = 1; i < sorted.size(); i += std::max<std::size_t>(1, sorted.size() / 3))
    out.push_back((sorted[i - 1] + sorted[i]) / 2);
  return out;
}

template <class F>
void for_each_vector(int max_n, int D, const F& f) {
  for (int n = 1; n <= max_n; ++n) {
    std::vector<int> k(static_cast<std::size_t>(n), 0);
    std::function<void(int, int)> rec = [&](int i, int left) {
      if (i == n - 1) {
        k[i] = left;
        std::vector<double> p;
        for (int x : k) p.push_back(x / static_cast<double>(D));
        f(p);
        return;
      }
      for (int v = 0; v <= left; ++v) k[i] = v, rec(i + 1, left - v);
    };
    rec(0, D);
  }
}

TEST(Proof13, ExhaustiveSmallDyadic) {
  Stats st;
  long vectors = 0;
  for_each_vector(6, 8, [&](const std::vector<double>& p) {
    ++vectors;
    const Index n = static_cast<Index>(p.size());
    for (Index mm = 0; mm <= n; ++mm) {
      const std::optional<Index> m = mm == 0 ? std::nullopt : std::optional<Index>(mm);
      for (double R : budgets(p, m))
        for (int K : {1, 2, 64})
          for (bool floor : {false, true}) {
            const std::string why = check_one(p, m, R, K, floor, oracle::reduce_to_closest, st);
            ASSERT_EQ(why, "") << "n=" << n << " m=" << mm << " R=" << R << " K=" << K << " floor=" << floor;
          }
    }
  });
  ASSERT_GT(st.below_r, 0);        // the bound does more than repeat R
  ASSERT_GT(st.tight_checked, 0);
  ASSERT_GT(st.infeasible, 0);
  report().cover("exhaustive", std::to_string(vectors) + " vectors k/8 (n<=6), " + std::to_string(st.problems) +
                                   " bound computations (every m and free form, K in {1,2,64}, with and without a floor): "
                                   "0 below the optimum, " + std::to_string(st.below_r) + " strictly below R, " +
                                   std::to_string(st.tight_checked) + " tight within 4e without merging, " +
                                   std::to_string(st.infeasible) + " proven infeasible");
}

TEST(Proof13, RandomLargerRapidCheck) {
  Stats st;
  long cases = 0;
  const bool ok = rc::check("interval-cover bound >= optimum", [&] {
    const bool free_form = *rc::gen::inRange(0, 4) == 0;
    const auto c = *kvaudit::pooling_test::genCase(free_form ? 12 : 16, free_form);
    const int K = *rc::gen::element(1, 2, 3, 5, 16);
    const bool floor = *rc::gen::arbitrary<bool>();
    const std::optional<Index> m = free_form ? std::nullopt : std::optional<Index>(c.m);
    RC_TAG(c.kind);
    RC_ASSERT(check_one(c.p, m, c.R, K, floor, oracle::reduce_to_closest, st) == std::string());
    ++cases;
  });
  ASSERT_TRUE(ok);
  report().cover("random", std::to_string(cases) + " RapidCheck problems (n<=16, pooling generators, K in {1,2,3,5,16}): 0 "
                               "below the optimum, " + std::to_string(st.below_r) + " strictly below R");
}

TEST(Proof13, DroppedIntervalMutantIsCaught) {
  Stats st;
  for_each_vector(5, 8, [&](const std::vector<double>& p) {
    const Index n = static_cast<Index>(p.size());
    for (Index mm = 1; mm <= n; ++mm)
      for (double R : budgets(p, mm)) check_one(p, mm, R, 1, false, drop_on_merge, st);
  });
  ASSERT_GT(st.violations, 0) << "the planted bug went unnoticed";
  report().cover("mutant", "a reducer dropping the second interval of each merge: " + std::to_string(st.violations) +
                               " of " + std::to_string(st.problems) + " bounds below the optimum (caught)");
}

TEST(Proof13, Verdict) { report().conclude("13_reach_bound", "proved-and-checked", {"exhaustive", "random", "mutant"}); }

}  // namespace
