// Check of proofs/07_needle_retention.md: Theorem N (a page whose best head has w* a* > M/(m+1) is kept, under
// any tie order, both greedy rules, both page scores, any non-negative weights) and a counterexample where
// entropy weighting satisfies it and arithmetic-mean pooling drops the needle page. Exact rationals (GMP).
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "oracle/needle_retention.h"
#include "oracle/page_entrokv.h"
#include "proofs/proof_report.h"

namespace {
using kvaudit::Index;
using kvaudit::proofs::report;
namespace pg = kvaudit::oracle::paging;
using pg::Exact;

// The walk with ties broken *against* `target` (it comes last among pages of equal score).
std::vector<Index> adversarial_walk(const pg::GroupResult& g, const std::vector<pg::Page>& pages, Index budget,
                                    kvaudit::GreedyRule rule, Index target) {
  std::vector<Index> order(pages.size());
  std::iota(order.begin(), order.end(), Index{0});
  std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) {
    if (g.reserved[a] != g.reserved[b]) return static_cast<bool>(g.reserved[a]);
    if (g.reserved[a]) return a < b;
    if (g.page_scores[a] != g.page_scores[b]) return g.page_scores[a] > g.page_scores[b];
    if ((a == target) != (b == target)) return b == target;
    return a < b;
  });
  std::vector<Index> kept;
  Index retained = 0;
  for (Index k : order) {
    if (retained + pages[k].size() <= budget) kept.push_back(k), retained += pages[k].size();
    else if (rule == kvaudit::GreedyRule::StopAtFirstMisfit) break;
  }
  std::sort(kept.begin(), kept.end());
  return kept;
}

bool contains(const std::vector<Index>& v, Index x) { return std::find(v.begin(), v.end(), x) != v.end(); }

struct Tally {
  long conditions = 0, holds = 0, kept_checks = 0;
};

// All pages of one (rows, params): where the condition holds, the proof's steps and the conclusion.
std::string check_instance(const std::vector<std::span<const float>>& rows, kvaudit::PageParams params, Tally& t) {
  const Index T = static_cast<Index>(rows[0].size());
  const auto pages = pg::page_layout(T, params.page_size);
  const Index budget = pg::page_token_budget(T, params.ratio_text);
  std::vector<pg::GroupResult> by_rule;
  for (auto rule : {kvaudit::GreedyRule::SkipMisfits, kvaudit::GreedyRule::StopAtFirstMisfit}) {
    params.greedy = rule;
    by_rule.push_back(pg::page_entrokv_group(rows, params));
  }
  const pg::GroupResult& g = by_rule[0];
  for (Index j = 0; j < static_cast<Index>(pages.size()); ++j) {
    const pg::RetentionCondition c = pg::retention_condition(rows, params, j);
    ++t.conditions;
    if (!c.holds) continue;
    ++t.holds;
    // Step 1: the page's pooled score is at least w* a*.
    if (!(g.page_scores[j] >= c.lhs)) return "step 1: S_page < w* a*";
    // Step 2: the non-reserved page scores add up to at most M.
    Exact sum = 0;
    for (std::size_t k = 0; k < pages.size(); ++k)
      if (!g.reserved[k]) sum += g.page_scores[k];
    if (sum > c.mass) return "step 2: sum of non-reserved page scores > M";
    // Step 3: at most m - 1 competitors.
    Index competitors = 0;
    for (std::size_t k = 0; k < pages.size(); ++k)
      if (static_cast<Index>(k) != j && !g.reserved[k] && g.page_scores[k] >= g.page_scores[j]) ++competitors;
    if (competitors > c.m - 1) return "step 3: more than m - 1 competitors";
    // Conclusion: kept by the oracle's walk and by the walk that breaks ties against it, both rules.
    for (int r = 0; r < 2; ++r) {
      const auto rule = r == 0 ? kvaudit::GreedyRule::SkipMisfits : kvaudit::GreedyRule::StopAtFirstMisfit;
      if (!contains(by_rule[r].kept_pages, j)) return "conclusion: page dropped by the oracle's walk";
      if (!contains(adversarial_walk(g, pages, budget, rule, j), j)) return "conclusion: page dropped under an adverse tie order";
      t.kept_checks += 2;
    }
  }
  return "";
}

TEST(Proof07, ExhaustiveTwoHeadsFourTokens) {
  Tally t;
  long instances = 0;
  std::vector<float> r0(4), r1(4);
  // Heads are interchangeable (weights, pooled scores and walk are symmetric in them), so unordered pairs suffice.
  for (int a = 0; a < 81; ++a)
    for (int b = a; b < 81; ++b) {
      for (int i = 0, x = a, y = b; i < 4; ++i, x /= 3, y /= 3) r0[i] = static_cast<float>(x % 3), r1[i] = static_cast<float>(y % 3);
      const std::vector<std::span<const float>> rows = {r0, r1};
      for (Index P : {1, 2})
        for (Index n_sink : {0, 1})
          for (auto pooling : {kvaudit::PagePooling::Entropy, kvaudit::PagePooling::Mean})
            for (auto score : {kvaudit::PageScore::Sum, kvaudit::PageScore::Max})
              for (const char* rho : {"0.25", "0.5"}) {
                kvaudit::PageParams params;
                params.group_size = 2;
                params.page_size = P;
                params.n_sink = n_sink;
                params.pooling = pooling;
                params.page_score = score;
                params.ratio_text = rho;
                ASSERT_EQ(check_instance(rows, params, t), "") << "a=" << a << " b=" << b << " P=" << P << " rho=" << rho;
                ++instances;
              }
    }
  ASSERT_GT(t.holds, 0);
  report().cover("exhaustive", std::to_string(instances) + " (rows, params) instances: G=2, T=4, every pair of rows in {0,1,2}^4, "
                                   "(unordered), P in {1,2}, n_sink in {0,1}, both poolings, both page scores, rho in {0.25,0.5}; " +
                                   std::to_string(t.conditions) + " page conditions, " + std::to_string(t.holds) + " hold, " +
                                   std::to_string(t.kept_checks) + " kept-checks (2 rules x oracle/adverse tie order)");
}

TEST(Proof07, RandomRapidCheck) {
  Tally t;
  long cases = 0;
  const bool ok = rc::check("Theorem N", [&] {
    const Index G = *rc::gen::inRange<Index>(1, 7), T = *rc::gen::inRange<Index>(1, 65);
    kvaudit::PageParams params;
    params.group_size = G;
    params.page_size = *rc::gen::inRange<Index>(1, 17);
    params.n_sink = *rc::gen::inRange<Index>(0, 6);
    params.pooling = *rc::gen::element(kvaudit::PagePooling::Entropy, kvaudit::PagePooling::Mean);
    params.source = *rc::gen::element(kvaudit::PoolSource::SinkIsolated, kvaudit::PoolSource::Raw);
    params.page_score = *rc::gen::element(kvaudit::PageScore::Sum, kvaudit::PageScore::Max);
    params.sink_pages = *rc::gen::element(kvaudit::SinkPages::Reserved, kvaudit::SinkPages::Scored);
    const int a = *rc::gen::inRange(1, 20);
    params.ratio_text = a == 1 ? "0.05" : "0." + std::to_string(a * 5);
    std::vector<std::vector<float>> data;
    for (Index h = 0; h < G; ++h) {
      // Peaked and diffuse heads: a small pool with many zeros, sometimes one large spike.
      auto row = *rc::gen::container<std::vector<float>>(static_cast<std::size_t>(T), rc::gen::element(0.0f, 0.0f, 0.0f, 1.0f, 0.5f, 2.0f));
      if (*rc::gen::inRange(0, 2) == 0) row[*rc::gen::inRange<Index>(0, T)] = 64.0f;
      data.push_back(row);
    }
    const std::vector<std::span<const float>> rows(data.begin(), data.end());
    RC_ASSERT(check_instance(rows, params, t) == std::string());
    for (Index j = 0; j < static_cast<Index>(pg::page_layout(T, params.page_size).size()); ++j)
      RC_ASSERT(pg::check_needle_page(rows, params, j).theorem.passed());
    ++cases;
  });
  ASSERT_TRUE(ok);
  ASSERT_GT(t.holds, 0);
  report().cover("random", std::to_string(cases) + " RapidCheck groups (G<=6, T<=64, P<=16, all parameter choices): " +
                               std::to_string(t.conditions) + " page conditions, " + std::to_string(t.holds) + " hold, all kept");
}

TEST(Proof07, MeanPoolingDropsTheCertifiedNeedle) {
  const std::vector<float> head0 = {7.0f / 8, 0.0f, 1.0f / 8, 0.0f};  // retrieval head
  const std::vector<float> head1 = {0.0f, 0.0f, 0.5f, 0.5f};          // diffuse head
  const std::vector<std::span<const float>> rows = {head0, head1};
  kvaudit::PageParams params;
  params.group_size = 2;
  params.page_size = 2;
  params.n_sink = 0;
  params.ratio_text = "0.5";
  params.page_score = kvaudit::PageScore::Sum;
  for (auto rule : {kvaudit::GreedyRule::SkipMisfits, kvaudit::GreedyRule::StopAtFirstMisfit}) {
    params.greedy = rule;
    params.pooling = kvaudit::PagePooling::Entropy;
    const pg::GroupResult e = pg::page_entrokv_group(rows, params);
    ASSERT_EQ(e.weights, (std::vector<Exact>{Exact(25, 41), Exact(16, 41)}));
    ASSERT_EQ(e.page_scores, (std::vector<Exact>{Exact(175, 328), Exact(153, 328)}));
    ASSERT_EQ(e.kept_pages, (std::vector<Index>{0}));
    const pg::RetentionCondition ce = pg::retention_condition(rows, params, 0);
    ASSERT_TRUE(ce.applicable);
    ASSERT_EQ(ce.m, 1);
    ASSERT_EQ(ce.mass, Exact(1));
    ASSERT_EQ(ce.lhs, Exact(175, 328));
    ASSERT_EQ(ce.rhs, Exact(1, 2));
    ASSERT_TRUE(ce.holds);
    params.pooling = kvaudit::PagePooling::Mean;
    const pg::GroupResult m = pg::page_entrokv_group(rows, params);
    ASSERT_EQ(m.page_scores, (std::vector<Exact>{Exact(7, 16), Exact(9, 16)}));
    ASSERT_EQ(m.kept_pages, (std::vector<Index>{1})) << "mean pooling must drop the needle page";
    const pg::RetentionCondition cm = pg::retention_condition(rows, params, 0);
    ASSERT_FALSE(cm.holds);  // consistent with the theorem: the mean-weighted hypothesis fails
    ASSERT_EQ(cm.lhs, Exact(7, 16));
    const pg::NeedlePageCheck check = pg::check_needle_page(rows, params, 0);
    ASSERT_TRUE(check.theorem.passed());
    ASSERT_TRUE(check.mean_violation);
    ASSERT_TRUE(check.kept_entropy);
    ASSERT_FALSE(check.kept_mean);
    ASSERT_EQ(pg::needle_recall(m.kept_tokens, 0, 1), 0);
    ASSERT_EQ(pg::needle_recall(e.kept_tokens, 0, 1), 1);
  }
  report().cover("mean-counterexample", "G=2, T=4, P=2, rho=0.5: entropy w=(25/41,16/41), w*a* = 175/328 > M/2 = 1/2, needle page kept; "
                                        "mean pooling scores (7/16, 9/16) and drops it (needle recall 1 vs 0), both greedy rules");
}

TEST(Proof07, Verdict) {
  report().conclude("07_needle_retention", "proved-and-checked", {"exhaustive", "random", "mean-counterexample"});
}

}  // namespace
