// Hand-computed cases of the Page-EntroKV oracle: budget, sink isolation, weights, the greedy walk with the
// partial page under both rules, ties, admissibility (accepted and rejected), page accounting, union overhead.
#include <gtest/gtest.h>

#include "oracle/needle_retention.h"
#include "oracle/page_entrokv.h"
#include "oracle/union_overhead.h"

namespace op = kvaudit::oracle::paging;
using kvaudit::Index;
using op::Exact;

TEST(PagingOracle, ExactBudgetFromText) {
  EXPECT_EQ(op::page_token_budget(1000, "0.9"), 100);
  EXPECT_EQ(op::page_token_budget(1000, "0.98"), 20);
  EXPECT_EQ(op::page_token_budget(3, "0.95"), 1);  // floor(0.15) = 0 -> max(1, 0)
  EXPECT_EQ(op::page_token_budget(10, "0"), 10);
  // 0.7 is not a double; (1 - 7/10) * 10 = 3 exactly, while 10 * (1 - 0.7) = 3.0000000000000004 in IEEE.
  EXPECT_EQ(op::page_token_budget(10, "0.7"), 3);
  EXPECT_THROW(op::page_token_budget(10, "1"), std::invalid_argument);
  EXPECT_THROW(op::page_token_budget(10, "1e-1"), std::invalid_argument);
}

TEST(PagingOracle, SinkIsolationAndCollision) {
  const std::vector<float> p = {0.5f, 0.125f, 0.125f, 0.0f, 0.1875f, 0.0625f};
  auto q = op::sink_isolate(p, 4);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ((*q)[0], 0);
  EXPECT_EQ((*q)[4], Exact(3, 4));
  EXPECT_EQ((*q)[5], Exact(1, 4));
  EXPECT_EQ(op::collision_probability(*q), Exact(5, 8));
  EXPECT_NEAR(op::renyi2_entropy(Exact(5, 8)), -std::log(0.625), 1e-15);
  // All mass on the sinks: p~ does not exist.
  const std::vector<float> sinks_only = {0.5f, 0.5f, 0.0f, 0.0f, 0.0f};
  EXPECT_FALSE(op::sink_isolate(sinks_only, 4).has_value());
  EXPECT_FALSE(op::sink_isolate(p, 6).has_value());
}

TEST(PagingOracle, EntropyAndMeanWeights) {
  std::vector<std::optional<op::ScaledRow>> iso = {std::vector<Exact>{1, 0, 0, 0},
                                                        std::vector<Exact>{Exact(1, 4), Exact(1, 4), Exact(1, 4), Exact(1, 4)},
                                                        std::nullopt};
  auto w = op::group_weights(iso, kvaudit::PagePooling::Entropy);
  EXPECT_EQ(w[0], Exact(4, 5));  // c = 1 and 1/4, and 0 for the head without p~
  EXPECT_EQ(w[1], Exact(1, 5));
  EXPECT_EQ(w[2], 0);
  auto m = op::group_weights(iso, kvaudit::PagePooling::Mean);
  EXPECT_EQ(m[2], Exact(1, 3));
  std::vector<std::optional<op::ScaledRow>> none = {std::nullopt, std::nullopt};
  EXPECT_EQ(op::group_weights(none, kvaudit::PagePooling::Entropy)[0], Exact(1, 2));
}

// T = 10, P = 4: pages [0,4) [4,8) [8,10); budget 6.
TEST(PagingOracle, GreedyWalkWithPartialPage) {
  const auto pages = op::page_layout(10, 4);
  ASSERT_EQ(pages.size(), 3u);
  EXPECT_EQ(pages[2].size(), 2);
  const std::vector<bool> none(3, false);
  const std::vector<Exact> order_1_0_2 = {Exact(2), Exact(3), Exact(1)};
  EXPECT_EQ(op::select_pages(order_1_0_2, pages, none, 6, kvaudit::GreedyRule::SkipMisfits), (std::vector<Index>{1, 2}));
  EXPECT_EQ(op::select_pages(order_1_0_2, pages, none, 6, kvaudit::GreedyRule::StopAtFirstMisfit), (std::vector<Index>{1}));
  const std::vector<Exact> order_1_2_0 = {Exact(1), Exact(3), Exact(2)};
  EXPECT_EQ(op::select_pages(order_1_2_0, pages, none, 6, kvaudit::GreedyRule::StopAtFirstMisfit), (std::vector<Index>{1, 2}));
  // Reserved page 0 goes first whatever its score.
  const std::vector<bool> sink = {true, false, false};
  EXPECT_EQ(op::select_pages(order_1_2_0, pages, sink, 6, kvaudit::GreedyRule::SkipMisfits), (std::vector<Index>{0, 2}));
  // Ties go to the lowest page index.
  const std::vector<Exact> tied = {Exact(1), Exact(1), Exact(1)};
  EXPECT_EQ(op::select_pages(tied, pages, none, 4, kvaudit::GreedyRule::SkipMisfits), (std::vector<Index>{0}));
}

TEST(PagingOracle, AdmissibilityAcceptsTieChoicesAndRejectsTheRest) {
  const auto pages = op::page_layout(10, 4);
  const std::vector<bool> none(3, false);
  const std::vector<Exact> tied = {Exact(1), Exact(1), Exact(1)};
  // Budget 4: any single full page is admissible; the short page alone too (visited first, then full pages
  // misfit); keeping nothing is not (the first page visited always fits).
  EXPECT_TRUE(op::check_pages_admissible(tied, pages, none, 4, kvaudit::GreedyRule::StopAtFirstMisfit, {1}, Exact(0)).passed());
  EXPECT_TRUE(op::check_pages_admissible(tied, pages, none, 4, kvaudit::GreedyRule::SkipMisfits, {2}, Exact(0)).passed());
  EXPECT_TRUE(op::check_pages_admissible(tied, pages, none, 4, kvaudit::GreedyRule::StopAtFirstMisfit, {2}, Exact(0)).passed());
  EXPECT_EQ(op::check_pages_admissible(tied, pages, none, 4, kvaudit::GreedyRule::SkipMisfits, {}, Exact(0)).rule, "tie-order");
  EXPECT_EQ(op::check_pages_admissible(tied, pages, none, 4, kvaudit::GreedyRule::StopAtFirstMisfit, {}, Exact(0)).rule, "tie-order");
  const std::vector<Exact> strict = {Exact(3), Exact(2), Exact(1)};
  auto v = op::check_pages_admissible(strict, pages, none, 4, kvaudit::GreedyRule::SkipMisfits, {1}, Exact(0));
  EXPECT_EQ(v.kind, kvaudit::VerdictKind::Violates);
  // No tie at the decision (page 0 scores 3, tied with nothing): the score order alone rules the claim out.
  EXPECT_EQ(v.rule, "score-order");
  EXPECT_NE(v.message.find("page 0 (exact score 3, tied with no other page) must be kept"), std::string::npos) << v.message;
  // Where the tied pages' order decides (the short page first or not), tie-order, with the tied scores printed.
  const auto tie = op::check_pages_admissible(tied, pages, none, 4, kvaudit::GreedyRule::SkipMisfits, {}, Exact(0));
  EXPECT_NE(tie.message.find("pages [0, 1, 2] tie (exact scores page 0 1, page 1 1, page 2 1"), std::string::npos) << tie.message;
  // Tied full pages whose order changes nothing: every order keeps one of them, so keeping none is no tie-order.
  const auto full_pages = op::page_layout(8, 4);
  const std::vector<bool> two(2, false);
  const auto none_kept = op::check_pages_admissible({Exact(1), Exact(1)}, full_pages, two, 4, kvaudit::GreedyRule::SkipMisfits, {}, Exact(0));
  EXPECT_EQ(none_kept.rule, "score-order") << none_kept.message;
  EXPECT_NE(none_kept.message.find("every order of them keeps 1 of them"), std::string::npos) << none_kept.message;
  EXPECT_TRUE(op::check_pages_admissible({Exact(1), Exact(1)}, full_pages, two, 4, kvaudit::GreedyRule::SkipMisfits, {1}, Exact(0)).passed());
  EXPECT_EQ(op::check_pages_admissible(strict, pages, none, 4, kvaudit::GreedyRule::SkipMisfits, {0, 2}, Exact(0)).rule, "budget");
  EXPECT_EQ(op::check_pages_admissible(strict, pages, none, 8, kvaudit::GreedyRule::SkipMisfits, {2, 1}, Exact(0)).rule, "shape");
  // Within a relative tolerance, 3 vs 2.9 counts as a tie.
  const std::vector<Exact> near = {Exact(3), Exact(29, 10), Exact(1)};
  EXPECT_FALSE(op::check_pages_admissible(near, pages, none, 4, kvaudit::GreedyRule::SkipMisfits, {1}, Exact(0)).passed());
  EXPECT_TRUE(op::check_pages_admissible(near, pages, none, 4, kvaudit::GreedyRule::SkipMisfits, {1}, Exact(1, 50)).passed());
}

TEST(PagingOracle, PageAccountingCatchesEveryDisagreement) {
  op::PageLedger ledger{1, 1, 3, {0, 1, 1}};
  EXPECT_TRUE(op::check_page_accounting(ledger, {{4, 5, 6, 7, 8, 9}}, 10, 4, 6).passed());
  EXPECT_EQ(op::check_page_accounting(ledger, {{4, 5, 6, 7, 8, 9}}, 10, 4, 5).rule, "budget");
  EXPECT_EQ(op::check_page_accounting(ledger, {{4, 5, 6, 7, 8}}, 10, 4, 6).rule, "tokens-agree");
  EXPECT_EQ(op::check_page_accounting(ledger, {{4, 5, 6, 7}}, 10, 4, 6).rule, "pages-agree");
  EXPECT_EQ(op::check_page_accounting(ledger, {{0, 1, 2, 3, 8, 9}}, 10, 4, 6).rule, "whole-pages");
  EXPECT_EQ(op::check_page_accounting(ledger, {{4, 4, 6, 7, 8, 9}}, 10, 4, 6).rule, "token-set");
}

TEST(PagingOracle, UnionOverheadIdentities) {
  auto two = op::union_overhead({{0, 1, 2}, {1, 2, 3}});
  EXPECT_EQ(two.union_size, 4);
  EXPECT_EQ(two.ratio, op::Ratio(4, 3));
  EXPECT_EQ(two.ratio, op::Ratio(2) - op::Ratio(2, 3));
  EXPECT_TRUE(op::check_union_identities(two).passed());
  auto three = op::union_overhead({{0, 1}, {1, 2}, {2, 0}});
  EXPECT_EQ(three.union_size, 3);
  EXPECT_EQ(three.s1, 6);
  EXPECT_EQ(three.s2, 3);
  EXPECT_EQ(three.s3, 0);
  EXPECT_EQ(three.bonferroni_lower, 3);
  EXPECT_EQ(three.inclusion_exclusion, 3);
  // Broken record: a union larger than the sum of sizes must be caught.
  auto bad = three;
  bad.union_size = 7;
  bad.ratio = op::Ratio(7, 2);
  EXPECT_EQ(op::check_union_identities(bad).rule, "range");
  bad.union_size = 2;
  bad.ratio = 1;
  EXPECT_EQ(op::check_union_identities(bad).rule, "bonferroni");
  EXPECT_THROW(op::union_overhead({{0, 1}, {1}}), std::invalid_argument);
}

// One retrieval head on the needle page, two heads on one competitor page: entropy keeps the needle page
// (Theorem N holds: w* a = 0.564... > 1/2), mean pooling drops it (S(2) = 0.4 > S(5) = 1/3).
TEST(PagingOracle, NeedleTheoremHoldsForEntropyAndMeanDropsThePage) {
  const Index T = 64, P = 8;
  std::vector<float> retrieval(T, 0.0f), other(T, 0.0f);
  for (Index t = 0; t < 4; ++t) retrieval[t] = other[t] = 0.125f;  // half the mass on the sinks
  for (Index t = 40; t < 48; ++t) retrieval[t] = 0.0625f;           // page 5: the needle
  for (Index t = 16; t < 24; ++t) other[t] = 0.0375f;               // page 2: 0.6 of the non-sink mass
  for (Index t = 8; t < T; ++t)
    if (t < 16 || t >= 24) other[t] = static_cast<float>(0.2 / 48.0);
  std::vector<std::span<const float>> rows = {retrieval, other, other};
  kvaudit::PageParams params;
  params.page_size = P;
  params.ratio_text = "0.75";  // budget 16: reserved page 0 + one page (m = 1)
  const auto c = op::check_needle_page(rows, params, 5);
  EXPECT_TRUE(c.entropy.applicable);
  EXPECT_EQ(c.entropy.m, 1);
  EXPECT_TRUE(c.entropy.holds);
  EXPECT_TRUE(c.kept_entropy);
  EXPECT_FALSE(c.mean.holds);
  EXPECT_FALSE(c.kept_mean);
  EXPECT_TRUE(c.mean_violation);
  EXPECT_TRUE(c.theorem.passed());
  EXPECT_EQ(op::needle_recall(op::page_entrokv_group(rows, params).kept_tokens, 40, 48), op::Ratio(1));
}
