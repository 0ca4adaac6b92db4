// The graph oracle (oracle/partition_rcsp.h) on hand cases with known answers, exact ties of different mass
// multisets, its limits and refusals, and against exhaustive enumeration for every n <= 20, every m and budgets
// at the feasibility boundary, at a partition's exact entropy, inside and above the achievable range.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/exact/log_linear_sign.h"
#include "oracle/partition_enumerate.h"
#include "oracle/partition_rcsp.h"

using namespace kvaudit;
using namespace kvaudit::oracle;

namespace {

std::vector<double> normalize(const std::vector<int>& w) {
  double s = 0.0;
  for (int x : w) s += x;
  std::vector<double> p;
  for (int x : w) p.push_back(x / s);
  return p;
}

// Same verdict as the enumeration, field by field: feasibility, the optimum and the canonical cuts.
void expect_same(const PartitionAnswer& en, const PartitionAnswer& rc, const std::string& where) {
  ASSERT_TRUE(en.certified) << where;
  ASSERT_TRUE(rc.certified) << where << ": " << rc.note;
  ASSERT_EQ(en.feasible, rc.feasible) << where;
  if (!en.feasible) return;
  EXPECT_EQ(en.entropy_bits, rc.entropy_bits) << where;
  EXPECT_EQ(en.cuts, rc.cuts) << where;
}

}  // namespace

TEST(PoolingRcspUnit, UniformQuartersKnownOptimaAndCanonicalTie) {
  const std::vector<double> p(4, 0.25);
  // m = 2: cuts {2} give 1 bit; {1} and {3} tie at h(1/4) + h(3/4) = 0.811 bits, the lower cut is canonical.
  PartitionAnswer a = solve_rcsp({p, 1.0, 2});
  ASSERT_TRUE(a.certified && a.feasible);
  EXPECT_EQ(a.entropy_bits, 1.0);  // H exactly at R is feasible
  EXPECT_EQ(a.cuts, (std::vector<Index>{2}));
  a = solve_rcsp({p, 0.9, 2});
  ASSERT_TRUE(a.certified && a.feasible);
  EXPECT_NEAR(a.entropy_bits, 0.8112781244591328, 1e-15);
  EXPECT_EQ(a.cuts, (std::vector<Index>{1}));
  // Free form, R = 1.5: every 3-group partition has 1.5 bits (one 1/2 and two 1/4), 4 groups have 2 > R.
  a = solve_rcsp({p, 1.5, std::nullopt});
  ASSERT_TRUE(a.certified && a.feasible);
  EXPECT_EQ(a.entropy_bits, 1.5);
  EXPECT_EQ(a.cuts, (std::vector<Index>{1, 2}));
  // Every 2-group partition is above R = 0.5: infeasible, and certified so.
  a = solve_rcsp({p, 0.5, 2});
  EXPECT_TRUE(a.certified);
  EXPECT_FALSE(a.feasible);
}

TEST(PoolingRcspUnit, ZerosSlidingAcrossACutAreDominatedTies) {
  // {1/4 | 0, 1/4} and {1/4, 0 | 1/4} reach node 3 with 2 edges and equal exact entropy (1 bit): the second is
  // dominated (same masses) before it is extended. With the last group (1/2) both give 1.5 bits, the optimum
  // for m = 3 (the other 3-partition has 0.81), and the answer is the canonical cuts {1, 3}.
  RcspStats st;
  const PartitionAnswer a = solve_rcsp({{0.25, 0.0, 0.25, 0.5}, 1.5, 3}, {}, &st);
  ASSERT_TRUE(a.certified && a.feasible);
  EXPECT_EQ(a.entropy_bits, 1.5);
  EXPECT_EQ(a.cuts, (std::vector<Index>{1, 3}));
  EXPECT_GE(st.dominated, 1) << "the tie was not recognised as a dominance";
}

TEST(PoolingRcspUnit, CommensurableMassesOfDifferentMultisetsTieExactly) {
  // 18 atoms of x = fl(1/18), m = 3. Group sizes (1, 8, 9) and (3, 3, 12): 8 log 8 + 9 log 9 = 24 + 18 log 3 =
  // 2 (3 log 3) + 12 log 12, so all their orderings have exactly equal entropy although the mass multisets
  // differ; only core/exact's complete sign can say so. With R just above that entropy (and below the next
  // one) the optimum is this tie class, the canonical member is (1, 8, 9) -> cuts {1, 9}, and the sink's ties
  // must be dominated, not kept as distinct.
  const std::vector<double> p(18, 1.0 / 18);
  const double x = p[0];
  auto h = [](double q) { return -q * std::log2(q); };
  const double H = h(x) + h(8 * x) + h(9 * x);
  const double R = H + 1e-9;
  const auto zeros_before = exact::exact_sign_stats().exact_zeros;
  RcspStats st;
  const PartitionAnswer a = solve_rcsp({p, R, 3}, {}, &st);
  EXPECT_GE(exact::exact_sign_stats().exact_zeros - zeros_before, 1) << "no exact tie of different multisets was decided";
  EXPECT_GE(st.dominated, 1);
  ASSERT_TRUE(a.certified && a.feasible);
  EXPECT_EQ(a.cuts, (std::vector<Index>{1, 9}));
  expect_same(enumerate_partitions({p, R, 3}), a, "18 atoms, m = 3");
}

TEST(PoolingRcspUnit, GroupMassesAboveOneLoosenTheInteriorPruning) {
  // p sums to 1.2: h(1.2) < 0, so a path above R so far can come back below it (by at most -h(1.2)). The second
  // row is the planted case: {0.1 | 1.1} has H = h(0.1) + h(1.1) = 0.181 bits, the only partition within R = 0.2,
  // although its first group alone has 0.332 > R; pruning on "H > R so far" would call it infeasible.
  const PartitionAnswer planted = solve_rcsp({{0.1, 0.3, 0.5, 0.3}, 0.2, 2});
  ASSERT_TRUE(planted.certified);
  ASSERT_TRUE(planted.feasible);
  EXPECT_EQ(planted.cuts, (std::vector<Index>{1}));
  for (const std::vector<double>& p : {std::vector<double>{0.3, 0.5, 0.1, 0.3}, std::vector<double>{0.1, 0.3, 0.5, 0.3}})
    for (double R : {-0.3, -0.2, 0.0, 0.2, 0.5, 0.9, 1.5})
      for (const std::optional<Index>& m : {std::optional<Index>{}, std::optional<Index>{2}, std::optional<Index>{3}}) {
        const PartitionProblem prob{p, R, m};
        expect_same(enumerate_partitions(prob), solve_rcsp(prob), "sum 1.2, R = " + std::to_string(R));
      }
}

TEST(PoolingRcspUnit, RefusesBadInput) {
  EXPECT_THROW(solve_rcsp({{}, 1.0, std::nullopt}), std::invalid_argument);
  EXPECT_THROW(solve_rcsp({{0.5, 0.5}, 1.0, 0}), std::invalid_argument);
  EXPECT_THROW(solve_rcsp({{0.5, 0.5}, 1.0, 3}), std::invalid_argument);
  EXPECT_THROW(solve_rcsp({{0.5, -0.5}, 1.0, 1}), std::invalid_argument);
  EXPECT_THROW(solve_rcsp({{0.5, std::nan("")}, 1.0, 1}), std::invalid_argument);
  EXPECT_THROW(solve_rcsp({{0.5, 0.5}, std::nan(""), 1}), std::invalid_argument);
}

TEST(PoolingRcspUnit, StoppedSearchIsNeverCertified) {
  std::vector<int> w;
  for (int i = 0; i < 24; ++i) w.push_back(1 + (i * 7919) % 97);
  RcspLimits limits;
  limits.max_labels = 1000;
  RcspStats st;
  const PartitionAnswer a = solve_rcsp({normalize(w), 3.0, std::nullopt}, limits, &st);
  EXPECT_FALSE(a.complete);
  EXPECT_FALSE(a.certified);
  EXPECT_EQ(a.upper_source, "budget");
  EXPECT_EQ(a.optimum_upper, 3.0);
  EXPECT_NE(a.note.find("label limit"), std::string::npos) << a.note;
  if (a.feasible) {
    EXPECT_LE(a.entropy_bits, 3.0);
  }
  limits = {};
  limits.max_seconds = 0.0;
  const PartitionAnswer b = solve_rcsp({normalize(w), 3.0, std::nullopt}, limits);
  EXPECT_FALSE(b.certified);
  EXPECT_NE(b.note.find("time limit"), std::string::npos) << b.note;
}

// Every n <= 20 and every m, on a tie-heavy row (small weights with zeros: many exact ties and slid zeros), an
// arbitrary one and equal dyadic atoms, at budgets: below every partition (0), fractions of log2 m, the entropy
// of two fixed partitions in double and one ulp below each (a tie at R, or within an ulp of it), and above
// everything. Past n = 14 the budgets above log2(m) / 2 keep to m where the label count stays small (m <= 3 or
// m >= n - 2): without pruning the search holds every distinct-entropy path, C(n - 1, m - 1)
// at the sink, and its dominance pass is quadratic in that (docs/pooling.md, "The graph oracle").
TEST(PoolingRcspUnit, AgreesWithEnumerationForEveryMUpToTwenty) {
  const auto t0 = std::chrono::steady_clock::now();
  long instances = 0, feasible = 0, at_budget = 0;
  for (Index n = 1; n <= 20; ++n) {
    const auto tn = std::chrono::steady_clock::now();
    std::vector<int> ties, arbitrary;
    for (Index i = 0; i < n; ++i) {
      ties.push_back(static_cast<int>((i * 5 + 3) % 7) % 4);  // weights in {0, 1, 2, 3}: zeros and equal masses
      arbitrary.push_back(1 + static_cast<int>((i * 2654435761u) % 1000003));
    }
    if (ties == std::vector<int>(static_cast<std::size_t>(n), 0)) ties[0] = 1;
    // Atoms of 2^-ceil(log2 n) (sum <= 1): groups of power-of-two size have dyadic entropy, so a budget equal to
    // a partition's entropy in double is exactly its entropy (optimum exactly at R).
    const std::vector<double> dyadic(static_cast<std::size_t>(n), std::ldexp(1.0, -static_cast<int>(std::ceil(std::log2(static_cast<double>(n))))));
    for (const auto& p : {normalize(ties), normalize(arbitrary), dyadic}) {
      for (Index m = 1; m <= n; ++m) {
        const bool small_paths = n <= 14 || m <= 3 || m >= n - 2;
        // Two partitions' own entropies: m - 1 singletons then the rest (near the bottom of the range: a budget
        // there prunes hard), and equal groups as far as they go (near the top).
        auto entropy = [&](const std::vector<Index>& b) {
          double H = 0.0;
          for (std::size_t k = 1; k < b.size(); ++k) {
            double q = 0.0;
            for (Index i = b[k - 1]; i < b[k]; ++i) q += p[i];
            H += q > 0 ? -q * std::log2(q) : 0.0;
          }
          return H;
        };
        std::vector<Index> low{0}, even{0};
        for (Index k = 1; k < m; ++k) {
          low.push_back(k);
          even.push_back(k * (n / m));
        }
        low.push_back(n);
        even.push_back(n);
        const double Hlow = entropy(low), Heven = entropy(even), l = std::log2(static_cast<double>(m));
        std::vector<double> budgets{0.0, 0.25 * l, 0.5 * l};
        if (small_paths) budgets.insert(budgets.end(), {Hlow, std::nextafter(Hlow, 0.0), Heven, std::nextafter(Heven, 0.0), l, 100.0});
        for (double R : budgets) {
          const PartitionProblem prob{p, R, m};
          const PartitionAnswer en = enumerate_partitions(prob);
          const PartitionAnswer rc = solve_rcsp(prob);
          expect_same(en, rc, "n=" + std::to_string(n) + " m=" + std::to_string(m) + " R=" + std::to_string(R));
          ++instances;
          feasible += en.feasible;
          at_budget += en.feasible && en.entropy_bits == R;
        }
      }
      // Free form: 2^(n-1) paths without pruning, so the large budget only where that is small.
      for (double R : {0.0, 0.5, 1.0, 2.0, 100.0}) {
        if (n > 11 && R > 1.0) continue;
        const PartitionProblem prob{p, R, std::nullopt};
        expect_same(enumerate_partitions(prob), solve_rcsp(prob), "free n=" + std::to_string(n) + " R=" + std::to_string(R));
        ++instances;
      }
    }
    std::printf("n = %d: %.2f s\n", static_cast<int>(n), std::chrono::duration<double>(std::chrono::steady_clock::now() - tn).count());
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("graph oracle vs enumeration: %ld instances (%ld feasible, %ld with the optimum exactly at R), %.1f s\n",
              instances, feasible, at_budget, secs);
  EXPECT_GT(at_budget, 0) << "no budget landed exactly on an optimum: the tie-at-R regime went untested";
  EXPECT_LT(feasible, instances) << "no infeasible instance";
}
