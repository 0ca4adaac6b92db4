// Properties of the greedy merge heuristic against the certified exact oracle (SPEC section 4): greedy never
// beats the optimum, its feasibility claim is true in extended precision, it returns the documented number of
// groups, and how often it fails when a feasible partition exists is classified (a finding, not a pass rule).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>

#include "core/pooling/greedy_partition.h"
#include "oracle/partition_arith.h"
#include "oracle/partition_exact.h"
#include "tests/property/pooling_generators.h"

using namespace kvaudit;
using namespace kvaudit::oracle;
using kvaudit::pooling_test::genCase;

RC_GTEST_PROP(PoolingGreedy, NeverBeatsExactAndClaimsOnlyTrueFeasibility, ()) {
  const auto c = *genCase(20, /*free_form=*/false);
  RC_TAG(c.kind);
  const auto g = pooling::greedy_partition(c.p, c.m, c.R);
  RC_ASSERT(static_cast<Index>(g.cuts.size()) == c.m - 1);
  const PartitionAnswer ex = solve_exact({c.p, c.R, c.m});
  RC_ASSERT(ex.certified);
  const ExactPrefix prefix(c.p);
  const auto gb = full_bounds(g.cuts, static_cast<Index>(c.p.size()));
  const auto gd = prefix.compare_with(gb, c.R);
  RC_TAG(g.feasible ? "greedy feasible" : "greedy infeasible");
  RC_TAG(ex.feasible ? "exact feasible" : "exact infeasible");
  RC_TAG(g.near_budget ? "greedy H within rounding of R" : "greedy H clear of R");
  if (g.feasible && !g.near_budget) {
    RC_ASSERT(ex.feasible);
    RC_ASSERT(gd != ExactPrefix::Decision::Greater);  // greedy's double decision H <= R is true exactly
    const auto cmp = prefix.compare(gb, full_bounds(ex.cuts, static_cast<Index>(c.p.size())));
    RC_ASSERT(cmp != ExactPrefix::Decision::Greater);  // greedy <= exact
  } else if (!g.feasible && !g.near_budget) {
    RC_ASSERT(gd == ExactPrefix::Decision::Greater);  // a failure claim is true too
  }
  if (ex.feasible && !g.feasible) RC_TAG("greedy failed although feasible");
}

RC_GTEST_PROP(PoolingGreedy, FreeFormStopsAtBudget, ()) {
  const auto c = *genCase(20, /*free_form=*/true);
  RC_TAG(c.kind);
  const auto g = pooling::greedy_partition(c.p, std::nullopt, c.R);
  const PartitionAnswer ex = solve_exact({c.p, c.R, std::nullopt}, {2'000'000, 5.0});
  // Free-form greedy merges until H <= R or one group is left, and one group is the least entropy: it fails
  // only when the one-group entropy h(total) exceeds R, i.e. when the exact solver finds nothing either
  // (up to the double rounding of h(total) against R).
  double total = 0.0;
  for (double x : c.p) total += x;
  const double h_total = total > 0 ? -total * std::log2(total) : 0.0;
  if (ex.feasible && c.R - h_total > entropy_error_bound(h_total, 1)) RC_ASSERT(g.feasible);
  RC_TAG(g.feasible ? "greedy feasible" : "greedy infeasible");
  if (g.feasible && !g.near_budget && ex.complete) {
    RC_ASSERT(ex.feasible);
    RC_ASSERT(g.entropy_bits <= ex.entropy_bits + entropy_error_bound(ex.entropy_bits, c.p.size()));
  }
}
