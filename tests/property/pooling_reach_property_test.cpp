// Properties of the bracket the exact partition solver reports when its search is stopped (issue 16): the
// interval-cover bound (oracle/partition_reach.h) and its witnesses always bracket the enumeration optimum,
// certified means equality, and a planted bound bug (an interval dropped when merging) is caught.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "oracle/partition_arith.h"
#include "oracle/partition_enumerate.h"
#include "oracle/partition_exact.h"
#include "oracle/partition_reach.h"
#include "tests/property/exact_sign_report.h"
#include "tests/property/pooling_generators.h"

using namespace kvaudit;
using namespace kvaudit::oracle;
using kvaudit::pooling_test::genCase;

namespace {
using D = ExactPrefix::Decision;

// The planted bug: when two intervals merge, the second is dropped instead of absorbed (its values lost).
void drop_on_merge(std::vector<ReachInterval>& list, int max_intervals) {
  while (list.size() > static_cast<std::size_t>(std::max(1, max_intervals))) {
    std::size_t best = 0;
    for (std::size_t t = 1; t + 1 < list.size(); ++t)
      if (list[t + 1].lo - list[t].hi < list[best + 1].lo - list[best].hi) best = t;
    list.erase(list.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
}

// Limits that stop the search almost at once, so the bracket comes from the interval-cover bound, with a
// small K so that intervals really merge.
ExactLimits stopped_limits(std::int64_t nodes, int first_intervals, int growth_rounds, ReachReducer reducer) {
  ExactLimits limits;
  limits.max_nodes = nodes;
  limits.branch_first_nodes = nodes;
  limits.reach.first_intervals = first_intervals;
  limits.reach.growth = 2;
  limits.reach.max_intervals = first_intervals << growth_rounds;
  limits.reach.reducer = reducer;
  return limits;
}

// The bracket property for one case: "" or the first rule broken.
std::string bracket_violation(const pooling_test::Case& c, bool free_form, const ExactLimits& limits, std::string* tag) {
  const std::optional<Index> m = free_form ? std::nullopt : std::optional<Index>(c.m);
  const PartitionProblem prob{c.p, c.R, m};
  const PartitionAnswer en = enumerate_partitions(prob);
  const PartitionAnswer ex = solve_exact(prob, limits);
  if (tag) *tag = ex.certified ? "certified" : "bracket from " + ex.upper_source;
  if (!en.certified) return "enumeration not certified";
  const Index n = static_cast<Index>(c.p.size());
  const ExactPrefix prefix(c.p);
  if (!en.feasible) return ex.feasible ? "a witness for an infeasible problem" : "";
  // A finished search or a finished reach round always holds a witness (the cover's lowest end is offered).
  if ((ex.complete || ex.reach_rounds > 0) && !ex.feasible) return "no witness although feasible";
  if (!ex.feasible) return "";
  const auto eb = full_bounds(ex.cuts, n), nb = full_bounds(en.cuts, n);
  // lower: a certified-feasible witness, so never above the optimum.
  if (prefix.compare_with(eb, c.R) == D::Greater) return "infeasible witness";
  if (prefix.compare(eb, nb) == D::Greater) return "witness above the optimum";
  if (ex.certified) {
    // Certified: lower == upper, decided exactly (both ends are the witness; the doubles are its rounding).
    if (prefix.compare(eb, nb) != D::Equal) return "certified but not optimal";
    if (ex.optimum_upper != ex.entropy_bits) return "certified with a bracket";
    return "";
  }
  // upper: a proven bound, decided exactly against the optimum.
  if (prefix.compare_with(nb, ex.optimum_upper) == D::Greater) return "upper bound below the optimum";
  if (!(ex.optimum_upper <= c.R)) return "upper bound above R";
  if (tag && ex.upper_source == "reach" && ex.optimum_upper < c.R) *tag += ", below R";
  return "";
}

void check_bracket(bool free_form) {
  const auto c = *genCase(free_form ? 12 : 16, free_form);
  const ExactLimits limits = stopped_limits(*rc::gen::element<std::int64_t>(1, 4, 32), *rc::gen::element(1, 2, 3, 8),
                                            *rc::gen::element(0, 2), reduce_to_closest);
  std::string tag;
  const std::string why = bracket_violation(c, free_form, limits, &tag);
  RC_TAG(c.kind);
  RC_TAG(tag);
  RC_ASSERT(why == std::string());
}
}  // namespace

RC_GTEST_PROP(PoolingReach, BracketContainsOptimumFixedM, ()) { check_bracket(false); }

RC_GTEST_PROP(PoolingReach, BracketContainsOptimumFreeForm, ()) { check_bracket(true); }

// The mutant must be caught: the same property, with the planted reducer and K = 1 (every merge drops), over
// 300 generated cases; the first one it breaks is printed.
TEST(PoolingReach, DroppedIntervalMutantIsCaught) {
  int caught = 0, ran = 0;
  std::string first;
  for (int seed = 0; seed < 300; ++seed) {
    const auto c = genCase(16, false)(rc::Random(static_cast<std::uint64_t>(seed)), 30).value();
    const std::string why = bracket_violation(c, false, stopped_limits(1, 1, 0, drop_on_merge), nullptr);
    ++ran;
    if (!why.empty() && caught++ == 0) first = why + " (generator seed " + std::to_string(seed) + ")";
  }
  EXPECT_GT(caught, 0) << "a reducer that drops intervals went unnoticed in " << ran << " cases";
  std::printf("[mutant] dropped-interval reducer caught on %d of %d cases; first: %s\n", caught, ran, first.c_str());
  // The right reducer passes the same cases.
  for (int seed = 0; seed < 300; ++seed) {
    const auto c = genCase(16, false)(rc::Random(static_cast<std::uint64_t>(seed)), 30).value();
    EXPECT_EQ(bracket_violation(c, false, stopped_limits(1, 1, 0, reduce_to_closest), nullptr), "") << "seed " << seed;
  }
}

// Non-vacuity on a hand-checked sparse instance: p = (1/2, 1/4, 1/8, 1/8), m = 2 has the 2-partition
// entropies 1, h(1/4) + h(3/4) = 0.811..., and h(7/8) + h(1/8) = 0.543...; with R = 0.9 nothing lies in
// (0.811, 0.9], so a search stopped at once must still report a bracket of width ~1e-15 around 0.811, far
// below R (the old bound was R itself).
TEST(PoolingReach, SparseBudgetGetsATightBracket) {
  const std::vector<double> p{0.5, 0.25, 0.125, 0.125};
  ExactLimits limits;
  limits.max_nodes = 1;
  limits.branch_first_nodes = 1;
  const PartitionAnswer a = solve_exact({p, 0.9, 2}, limits);
  ASSERT_TRUE(a.feasible);
  EXPECT_FALSE(a.complete);
  EXPECT_EQ(a.upper_source, "reach");
  EXPECT_EQ(a.cuts, std::vector<Index>{2});  // (3/4 | 1/4)
  EXPECT_LT(a.optimum_upper, 0.82);
  EXPECT_LE(a.bracket_width(), 1e-12);
  EXPECT_GE(a.bracket_width(), 0.0);
}

TEST(PoolingReach, ReducerKeepsAHull) {
  // Merging the closest pairs keeps every value covered: [0,1] [1.5,2] [5,6] [6.1,7] -> 2 intervals.
  std::vector<ReachInterval> l{{0, 1}, {1.5, 2}, {5, 6}, {6.1, 7}};
  reduce_to_closest(l, 2);
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].lo, 0.0);
  EXPECT_EQ(l[0].hi, 2.0);
  EXPECT_EQ(l[1].lo, 5.0);
  EXPECT_EQ(l[1].hi, 7.0);
}

