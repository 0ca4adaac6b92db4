// Properties of the partition oracles (docs/specification.md section 4): the certified exact solver agrees with exhaustive
// enumeration (value, feasibility and canonical cuts), is invariant under reversing p, and the merge-delta
// bookkeeping identity holds in extended precision.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>

#include "oracle/partition_arith.h"
#include "oracle/partition_enumerate.h"
#include "oracle/partition_exact.h"
#include "oracle/partition_merge_delta.h"
#include "tests/property/exact_sign_report.h"
#include "tests/property/pooling_generators.h"

using namespace kvaudit;
using namespace kvaudit::oracle;
using kvaudit::pooling_test::genCase;

RC_GTEST_PROP(PoolingOracle, ExactEqualsEnumerationFixedM, ()) {
  const auto c = *genCase(20, /*free_form=*/false);
  RC_TAG(c.kind);
  const PartitionProblem prob{c.p, c.R, c.m};
  const PartitionAnswer en = enumerate_partitions(prob);
  const PartitionAnswer ex = solve_exact(prob);
  RC_TAG(en.feasible ? "feasible" : "infeasible");
  RC_TAG(en.extended_decisions > 0 ? "extended-precision decisions" : "double decisions only");
  RC_ASSERT(en.certified);
  RC_ASSERT(ex.certified);
  RC_ASSERT(en.feasible == ex.feasible);
  if (en.feasible) {
    RC_ASSERT(en.entropy_bits == ex.entropy_bits);
    RC_ASSERT(en.cuts == ex.cuts);  // canonical tie rule: lexicographically smallest optimal tuple
    RC_ASSERT(en.entropy_bits <= c.R || ex.extended_decisions > 0);
  }
}

// The meet-in-the-middle path (partition_mitm.h) on its own: no branch-and-bound nodes first, so every
// interior-budget case is enumerated from the middle cut; same value, feasibility and canonical cuts.
RC_GTEST_PROP(PoolingOracle, MeetInTheMiddleEqualsEnumeration, ()) {
  auto c = *genCase(18, /*free_form=*/false);
  const Index n = static_cast<Index>(c.p.size());
  if (n >= 3) c.m = *rc::gen::inRange<Index>(2, n);  // 2 <= m < n: there is something to enumerate
  // Budgets strictly inside the achievable range (where the path runs): the generator's when it is (often
  // the entropy of a random partition: a tie at R), else a random point between the extremes.
  const auto ext = entropy_extremes(c.p, c.m);
  if (!(ext.min_bits < c.R && c.R < ext.max_bits))
    c.R = ext.min_bits + (ext.max_bits - ext.min_bits) * *rc::gen::inRange(1, 1000) / 1000.0;
  RC_TAG(c.kind);
  const PartitionProblem prob{c.p, c.R, c.m};
  ExactLimits limits;
  limits.branch_first_nodes = 0;
  const PartitionAnswer en = enumerate_partitions(prob);
  const PartitionAnswer ex = solve_exact(prob, limits);
  RC_TAG(ex.strategy);
  RC_ASSERT(en.certified);
  RC_ASSERT(ex.certified);
  RC_ASSERT(en.feasible == ex.feasible);
  if (en.feasible) {
    RC_ASSERT(en.entropy_bits == ex.entropy_bits);
    RC_ASSERT(en.cuts == ex.cuts);
  }
}

RC_GTEST_PROP(PoolingOracle, ExactEqualsEnumerationFreeForm, ()) {
  const auto c = *genCase(14, /*free_form=*/true);
  RC_TAG(c.kind);
  const PartitionProblem prob{c.p, c.R, std::nullopt};
  const PartitionAnswer en = enumerate_partitions(prob);
  const PartitionAnswer ex = solve_exact(prob);
  RC_ASSERT(en.certified && ex.certified);
  // Feasible unless R is below h(total mass), which the generator reaches by rounding a one-group entropy down.
  RC_ASSERT(en.feasible == ex.feasible);
  RC_TAG(en.feasible ? "feasible" : "infeasible");
  if (en.feasible) {
    RC_ASSERT(en.entropy_bits == ex.entropy_bits);
    RC_ASSERT(en.cuts == ex.cuts);  // canonical: fewest groups, then lexicographic
  }
}

RC_GTEST_PROP(PoolingOracle, ExactInvariantUnderReversal, ()) {
  const auto c = *genCase(40, /*free_form=*/false);
  RC_TAG(c.kind);
  std::vector<double> r(c.p.rbegin(), c.p.rend());
  const ExactLimits limits{2'000'000, 5.0};
  const PartitionAnswer a = solve_exact({c.p, c.R, c.m}, limits);
  const PartitionAnswer b = solve_exact({r, c.R, c.m}, limits);
  RC_PRE(a.certified && b.certified);  // both searches finished (inputs with many exact ties may not)
  RC_ASSERT(a.feasible == b.feasible);
  if (a.feasible) RC_ASSERT(a.entropy_bits == b.entropy_bits);
}

RC_GTEST_PROP(PoolingOracle, MergeBookkeepingIdentity, ()) {
  const auto c = *genCase(24, /*free_form=*/false);
  std::vector<MergeStep> steps;
  Index blocks = static_cast<Index>(c.p.size());
  const auto picks = *rc::gen::container<std::vector<Index>>(static_cast<std::size_t>(blocks - 1),
                                                             rc::gen::inRange<Index>(0, 1 << 20));
  for (Index pick : picks) {
    steps.push_back({pick % (blocks - 1)});
    --blocks;
    if (blocks < 2) break;
  }
  RC_PRE(!steps.empty());
  const MergeBookkeeping mb = merge_bookkeeping(c.p, steps);
  RC_ASSERT(mb.all_deltas_nonnegative);
  // 332-bit arithmetic on exact masses: the identity holds to the MPFR rounding, far below 1e-90.
  RC_ASSERT(mb.max_residual_extended < 1e-90);
  // Double arithmetic: each step sums <= n terms of h <= 0.531, so a residual above 1e-12 would be a bug.
  RC_ASSERT(mb.max_residual_double < 1e-12);
  for (const MergeRecord& r : mb.steps) RC_ASSERT(r.delta >= 0.0 && r.entropy_after <= r.entropy_before);
}

TEST(PoolingOracle, GeneratorsProduceEveryKind) {
  // The properties above are only meaningful if the generator hits every input family.
  std::set<std::string> kinds;
  for (int seed = 0; seed < 400; ++seed) kinds.insert(genCase(20, false)(rc::Random(seed), 20).value().kind);
  EXPECT_TRUE(kinds.count("zeros") && kinds.count("duplicates") && kinds.count("dominant") &&
              kinds.count("uniform") && kinds.count("arbitrary"));
}
