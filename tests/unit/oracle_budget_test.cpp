// Budgets (docs/specification.md section 1): the exact rational rule, kvpress's float rule, where they part, ChunkKV's chunk budget.
#include <gtest/gtest.h>

#include <stdexcept>

#include "oracle/chunk_selection.h"

namespace kvaudit::oracle {
namespace {

SelectorParams params(Method method, Flavour flavour, const std::string& rho, Index chunk) {
  SelectorParams p;
  p.method = method;
  p.flavour = flavour;
  p.ratio = {rho, std::stod(rho)};
  p.chunk_length = chunk;
  return p;
}

TEST(OracleBudget, ExactRuleReadsTheDecimalText) {
  // (1 - 9/10) * 20 = 2 exactly.
  EXPECT_EQ(exact_token_budget(20, "0.9"), 2);
  EXPECT_EQ(exact_token_budget(20, ".9"), 2);
  EXPECT_EQ(exact_token_budget(20, "0.90"), 2);
  // floor(0.3 * 10) = 3; floor(0.15 * 7) = floor(1.05) = 1.
  EXPECT_EQ(exact_token_budget(10, "0.7"), 3);
  EXPECT_EQ(exact_token_budget(7, "0.85"), 1);
  // max(1, .): floor(0.05 * 10) = 0 -> 1.
  EXPECT_EQ(exact_token_budget(10, "0.95"), 1);
  EXPECT_EQ(exact_token_budget(1, "0"), 1);
  EXPECT_EQ(exact_token_budget(1000, "0"), 1000);
}

TEST(OracleBudget, ExactRuleRejectsWhatIsNotAPlainDecimalInUnitInterval) {
  EXPECT_THROW(exact_token_budget(10, "1"), std::invalid_argument);
  EXPECT_THROW(exact_token_budget(10, "1.0"), std::invalid_argument);
  EXPECT_THROW(exact_token_budget(10, "1e-1"), std::invalid_argument);
  EXPECT_THROW(exact_token_budget(10, "-0.1"), std::invalid_argument);
  EXPECT_THROW(exact_token_budget(10, ""), std::invalid_argument);
  EXPECT_THROW(exact_token_budget(0, "0.5"), std::invalid_argument);
}

TEST(OracleBudget, FloatRuleMatchesPython) {
  // Python: 1 - 0.8 == 0.19999999999999996, so int(10 * (1 - 0.8)) == int(1.9999999999999996) == 1.
  EXPECT_EQ(kvpress_token_budget(10, 0.8), 1);
  // 1 - 0.9 == 0.09999999999999998: int(20 * 0.09999999999999998) == 1.
  EXPECT_EQ(kvpress_token_budget(20, 0.9), 1);
  // 1 - 0.3 == 0.7: 90 * 0.7 == 62.99999999999999 -> 62.
  EXPECT_EQ(kvpress_token_budget(90, 0.3), 62);
  // 1 - 0.7 == 0.30000000000000004: 10 * that == 3.0000000000000004 -> 3 (agrees with the exact 3).
  EXPECT_EQ(kvpress_token_budget(10, 0.7), 3);
  EXPECT_EQ(kvpress_token_budget(3, 0.95), 1);  // max(1, int(0.15)) = 1
  EXPECT_EQ(kvpress_token_budget(7, 0.0), 7);
}

TEST(OracleBudget, RulesDivergeExactlyWhereComputedByHand) {
  // Hand-checked with Python's fractions.Fraction against int(T * (1 - float(rho))), T in 1..200:
  //   rho 0.8: 39 divergences, the first (10, 2, 1), (15, 3, 2), (20, 4, 3);
  //   rho 0.9: 19 divergences, the first (20, 2, 1), (30, 3, 2);
  //   rho 0.3: (90, 63, 62), (170, 119, 118), (180, 126, 125);
  //   rho 0.1, 0.5, 0.7, 0.85, 0.95: none.
  auto d = budget_divergences(1, 200, {"0.8"});
  ASSERT_EQ(d.size(), 39u);
  EXPECT_EQ(d[0].tokens, 10);
  EXPECT_EQ(d[0].exact, 2);
  EXPECT_EQ(d[0].kvpress, 1);
  EXPECT_EQ(d[1].tokens, 15);
  EXPECT_EQ(d[2].tokens, 20);
  EXPECT_EQ(budget_divergences(1, 200, {"0.9"}).size(), 19u);
  auto d3 = budget_divergences(1, 200, {"0.3"});
  ASSERT_EQ(d3.size(), 3u);
  EXPECT_EQ(d3[0].tokens, 90);
  EXPECT_EQ(d3[0].exact, 63);
  EXPECT_EQ(d3[0].kvpress, 62);
  EXPECT_EQ(d3[1].tokens, 170);
  EXPECT_EQ(d3[2].tokens, 180);
  EXPECT_TRUE(budget_divergences(1, 200, {"0.1", "0.5", "0.7", "0.85", "0.95"}).empty());
}

TEST(OracleBudget, DeclaredBudgetFollowsTheFlavour) {
  EXPECT_EQ(declared_budget(20, params(Method::EgChunkKV, Flavour::Kvpress, "0.9", 10)), 1);
  EXPECT_EQ(declared_budget(20, params(Method::EgChunkKV, Flavour::Exact, "0.9", 10)), 2);
  EXPECT_EQ(declared_budget(20, params(Method::EgChunkKV, Flavour::Kvpress, "0", 10)), 20);
  // ChunkKV counts chunks: T = 25, c = 10 -> 3 chunks; int(3 * 0.5) = 1.
  EXPECT_EQ(declared_budget(25, params(Method::ChunkKV, Flavour::Kvpress, "0.5", 10)), 1);
}

TEST(OracleBudget, ChunkKvKeptTokensDependOnWhetherThePartialChunkIsKept) {
  // T = 25, c = 10, rho = 0.5: one chunk of three is kept: 10 tokens, or 5 if it is the partial chunk,
  // while EG-ChunkKV's budget at the same ratio is 12.
  ChunkKvBudget b = chunkkv_budget(25, params(Method::ChunkKV, Flavour::Kvpress, "0.5", 10));
  EXPECT_EQ(b.chunks_total, 3);
  EXPECT_EQ(b.chunks_kept, 1);
  EXPECT_FALSE(b.fallback);
  EXPECT_EQ(b.min_tokens, 5);
  EXPECT_EQ(b.max_tokens, 10);
  EXPECT_EQ(declared_budget(25, params(Method::EgChunkKV, Flavour::Kvpress, "0.5", 10)), 12);
  // Float rule on the chunk count: 20 chunks at rho 0.9: int(20 * 0.09999999999999998) = 1; exact gives 2.
  EXPECT_EQ(chunkkv_budget(200, params(Method::ChunkKV, Flavour::Kvpress, "0.9", 10)).chunks_kept, 1);
  EXPECT_EQ(chunkkv_budget(200, params(Method::ChunkKV, Flavour::Exact, "0.9", 10)).chunks_kept, 2);
}

TEST(OracleBudget, ChunkKvFallbackAndZeroRatio) {
  ChunkKvBudget f = chunkkv_budget(5, params(Method::ChunkKV, Flavour::Kvpress, "0.5", 10));
  EXPECT_TRUE(f.fallback);
  EXPECT_EQ(f.fallback_tokens, 2);  // compute_n_kept(5, 0.5) = max(1, int(2.5))
  ChunkKvBudget z = chunkkv_budget(5, params(Method::ChunkKV, Flavour::Kvpress, "0", 10));
  EXPECT_FALSE(z.fallback);  // rho == 0 returns before the fallback
  EXPECT_EQ(z.max_tokens, 5);
  ChunkKvBudget e = chunkkv_budget(9, params(Method::ChunkKV, Flavour::Exact, "0.8", 10));
  EXPECT_TRUE(e.fallback);
  EXPECT_EQ(e.fallback_tokens, 1);  // floor(0.2 * 9) = 1
}

}  // namespace
}  // namespace kvaudit::oracle
