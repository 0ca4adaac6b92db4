// Properties of the greedy merge heuristic against the certified exact oracle (docs/specification.md section 4): greedy never
// beats the optimum, its feasibility claim is true in extended precision, it returns the documented number of
// groups, and how often it fails when a feasible partition exists is classified (a finding, not a pass rule).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>

#include "core/pooling/greedy_partition.h"
#include "oracle/partition_arith.h"
#include "oracle/partition_exact.h"
#include "tests/property/exact_sign_report.h"
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
  RC_TAG(g.near_budget ? "greedy H within rounding of R (decided exactly)" : "greedy H clear of R");
  RC_ASSERT(g.feasible == (gd != ExactPrefix::Decision::Greater));  // greedy's feasibility is exact
  if (g.feasible) {
    RC_ASSERT(ex.feasible);
    const auto cmp = prefix.compare(gb, full_bounds(ex.cuts, static_cast<Index>(c.p.size())));
    RC_ASSERT(cmp != ExactPrefix::Decision::Greater);  // greedy <= exact
  }
  if (ex.feasible && !g.feasible) RC_TAG("greedy failed although feasible");
}

RC_GTEST_PROP(PoolingGreedy, FreeFormStopsAtBudget, ()) {
  const auto c = *genCase(20, /*free_form=*/true);
  RC_TAG(c.kind);
  const auto g = pooling::greedy_partition(c.p, std::nullopt, c.R);
  const PartitionAnswer ex = solve_exact({c.p, c.R, std::nullopt}, {2'000'000, 5.0});
  // Free-form greedy merges until H <= R (decided exactly) or one group is left, and one group is the least
  // entropy: it fails exactly when the one-group entropy h(total) exceeds R, i.e. when nothing is feasible.
  if (ex.feasible) RC_ASSERT(g.feasible);                // a partition found proves feasibility
  if (ex.complete) RC_ASSERT(g.feasible == ex.feasible);  // a finished search proves infeasibility too
  RC_TAG(g.feasible ? "greedy feasible" : "greedy infeasible");
  RC_TAG(g.exact_decisions > 0 ? "stop decided exactly" : "stop decided in double");
  if (g.feasible && ex.complete) {
    RC_ASSERT(ex.feasible);
    RC_ASSERT(g.entropy_bits <= ex.entropy_bits + entropy_error_bound(ex.entropy_bits, c.p.size()));
  }
}
