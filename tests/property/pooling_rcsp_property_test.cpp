// Properties of the graph oracle (oracle/partition_rcsp.h): it agrees with exhaustive enumeration (feasibility,
// optimum, canonical cuts) for fixed m and the free form, with the certified exact solver past enumeration's
// reach, and its optimum is invariant under reversing p. Inputs from pooling_generators.h: zeros, duplicate and
// uniform masses (exact ties, slid zeros), a dominant mass, arbitrary rows; budgets at a partition's exact
// entropy, at log2 m fractions, at the DP extremes.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "oracle/partition_enumerate.h"
#include "oracle/partition_exact.h"
#include "oracle/partition_rcsp.h"
#include "tests/property/exact_sign_report.h"
#include "tests/property/pooling_generators.h"

using namespace kvaudit;
using namespace kvaudit::oracle;
using kvaudit::pooling_test::genCase;

namespace {
void classify(const pooling_test::Case& c, const PartitionAnswer& en, const RcspStats& st) {
  RC_TAG(c.kind);
  RC_CLASSIFY(!en.feasible, "infeasible");
  RC_CLASSIFY(en.feasible && en.entropy_bits == c.R, "optimum equals R in double");
  RC_CLASSIFY(st.dominated > 0, "exact ties dominated");
  RC_CLASSIFY(st.exact_decisions > 0, "decided by core/exact");
}
}  // namespace

RC_GTEST_PROP(PoolingRcsp, EqualsEnumerationFixedM, ()) {
  const auto c = *genCase(15, /*free_form=*/false);
  const PartitionProblem prob{c.p, c.R, c.m};
  const PartitionAnswer en = enumerate_partitions(prob);
  RcspStats st;
  const PartitionAnswer rc = solve_rcsp(prob, {}, &st);
  classify(c, en, st);
  RC_ASSERT(en.certified);
  RC_ASSERT(rc.certified);
  RC_ASSERT(en.feasible == rc.feasible);
  if (en.feasible) {
    RC_ASSERT(en.entropy_bits == rc.entropy_bits);
    RC_ASSERT(en.cuts == rc.cuts);  // canonical tie rule: the lexicographically smallest optimal tuple
  }
}

RC_GTEST_PROP(PoolingRcsp, EqualsEnumerationFreeForm, ()) {
  const auto c = *genCase(12, /*free_form=*/true);
  const PartitionProblem prob{c.p, c.R, std::nullopt};
  const PartitionAnswer en = enumerate_partitions(prob);
  RcspStats st;
  const PartitionAnswer rc = solve_rcsp(prob, {}, &st);
  classify(c, en, st);
  RC_ASSERT(en.certified && rc.certified);
  RC_ASSERT(en.feasible == rc.feasible);
  if (en.feasible) {
    RC_ASSERT(en.entropy_bits == rc.entropy_bits);
    RC_ASSERT(en.cuts == rc.cuts);  // canonical: fewest groups, then lexicographic
  }
}

// Past enumeration: n up to 40, with m where the label search stays small (2, 3, n - 2, n - 1).
RC_GTEST_PROP(PoolingRcsp, EqualsCertifiedSolverBeyondEnumeration, ()) {
  auto c = *genCase(40, /*free_form=*/false, /*min_n=*/21);
  const Index n = static_cast<Index>(c.p.size());
  c.m = *rc::gen::element<Index>(2, 3, n - 2, n - 1);
  const PartitionProblem prob{c.p, c.R, c.m};
  RcspStats st;
  const PartitionAnswer rc = solve_rcsp(prob, {}, &st);
  const PartitionAnswer ex = solve_exact(prob, {20'000'000, 5.0});
  RC_TAG(c.kind);
  RC_CLASSIFY(!rc.feasible, "infeasible");
  RC_CLASSIFY(st.dominated > 0, "exact ties dominated");
  RC_CLASSIFY(!ex.certified, "solver bracket only");
  RC_ASSERT(rc.certified);
  if (ex.certified) {
    RC_ASSERT(ex.feasible == rc.feasible);
    if (rc.feasible) {
      RC_ASSERT(ex.entropy_bits == rc.entropy_bits);
      RC_ASSERT(ex.cuts == rc.cuts);
    }
  } else if (ex.feasible) {
    RC_ASSERT(rc.feasible);
    RC_ASSERT(ex.entropy_bits <= rc.entropy_bits && rc.entropy_bits <= ex.optimum_upper);
  }
}

RC_GTEST_PROP(PoolingRcsp, OptimumInvariantUnderReversal, ()) {
  const auto c = *genCase(15, /*free_form=*/false);
  RC_TAG(c.kind);
  const std::vector<double> r(c.p.rbegin(), c.p.rend());
  const PartitionAnswer a = solve_rcsp({c.p, c.R, c.m});
  const PartitionAnswer b = solve_rcsp({r, c.R, c.m});
  RC_ASSERT(a.certified && b.certified);
  RC_ASSERT(a.feasible == b.feasible);
  if (a.feasible) RC_ASSERT(a.entropy_bits == b.entropy_bits);
}

TEST(PoolingRcsp, GeneratedCasesExerciseTiesAndTheBudget) {
  // The properties above are only meaningful if the cases reach the regimes they are about: exact ties that the
  // dominance removes, optima exactly at R, infeasible budgets, and decisions the double filter leaves to
  // core/exact.
  long dominated = 0, at_budget = 0, infeasible = 0, exact = 0;
  for (int seed = 0; seed < 300; ++seed) {
    const auto c = genCase(15, false)(rc::Random(seed), rc::kNominalSize).value();
    const PartitionProblem prob{c.p, c.R, c.m};
    RcspStats st;
    const PartitionAnswer a = solve_rcsp(prob, {}, &st);
    ASSERT_TRUE(a.certified);
    dominated += st.dominated > 0;
    exact += st.exact_decisions > 0;
    infeasible += !a.feasible;
    at_budget += a.feasible && a.entropy_bits == c.R;
  }
  std::printf("300 generated cases: %ld with dominated ties, %ld with exact decisions, %ld infeasible, %ld with the optimum at R\n",
              dominated, exact, infeasible, at_budget);
  EXPECT_GT(dominated, 0);
  EXPECT_GT(exact, 0);
  EXPECT_GT(infeasible, 0);
  EXPECT_GT(at_budget, 0);
}
