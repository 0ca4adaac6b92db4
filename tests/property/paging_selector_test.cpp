// Properties of the optimized Page-EntroKV selector: equal to the exact oracle up to admissible ties, exact page
// accounting and the budget for every page size, a pooled union ratio of exactly 1, and a planted mutant caught.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <set>

#include "audit/paging_findings.h"
#include "core/compression_ratio.h"
#include "core/paging/page_selector.h"
#include "oracle/page_entrokv.h"
#include "oracle/union_overhead.h"

namespace op = kvaudit::oracle::paging;
namespace pg = kvaudit::paging;
using kvaudit::Index;
using kvaudit::ScoreTensor;

namespace {

// Rows from a small pool of weights (ties and zeros on purpose), normalized in float like real attention.
ScoreTensor gen_attention(Index layers, Index heads, Index tokens) {
  ScoreTensor a{layers, heads, tokens, {}};
  for (Index r = 0; r < layers * heads; ++r) {
    const auto w = *rc::gen::container<std::vector<int>>(
        static_cast<std::size_t>(tokens),
        rc::gen::weightedOneOf<int>({{4, rc::gen::element(0, 1, 2, 4, 8)}, {1, rc::gen::inRange(0, 1000)}}));
    double sum = 0;
    for (int v : w) sum += v;
    for (int v : w) a.values.push_back(sum > 0 ? static_cast<float>(v / sum) : 0.0f);
  }
  return a;
}

kvaudit::PageParams gen_params(Index G, Index tokens) {
  kvaudit::PageParams p;
  p.group_size = G;
  p.page_size = *rc::gen::inRange<Index>(1, tokens + 2);
  p.ratio_text = kvaudit::parse_compression_ratio(*rc::gen::element<std::string>("0", "0.3", "0.5", "0.75", "0.8", "0.9", "0.95", "0.98")).text;
  p.n_sink = *rc::gen::inRange<Index>(0, 6);
  p.pooling = *rc::gen::element(kvaudit::PagePooling::Entropy, kvaudit::PagePooling::Mean);
  p.source = *rc::gen::element(kvaudit::PoolSource::SinkIsolated, kvaudit::PoolSource::Raw);
  p.page_score = *rc::gen::element(kvaudit::PageScore::Sum, kvaudit::PageScore::Max);
  p.sink_pages = *rc::gen::element(kvaudit::SinkPages::Reserved, kvaudit::SinkPages::Scored);
  p.greedy = *rc::gen::element(kvaudit::GreedyRule::SkipMisfits, kvaudit::GreedyRule::StopAtFirstMisfit);
  p.inverse_temperature = *rc::gen::element<Index>(1, 2, 3);
  p.entropy_on = *rc::gen::element(kvaudit::EntropySource::SinkIsolated, kvaudit::EntropySource::Raw);
  p.budget_unit = *rc::gen::element(kvaudit::BudgetUnit::Tokens, kvaudit::BudgetUnit::Pages);
  p.page_count_rule = *rc::gen::element(kvaudit::PageCountRule::Paper, kvaudit::PageCountRule::EntroPrefill);
  return p;
}

}  // namespace

RC_GTEST_PROP(PagingSelector, OptimizedEqualsOracleUpToAdmissibleTies, ()) {
  const Index G = *rc::gen::inRange<Index>(1, 5), groups = *rc::gen::inRange<Index>(1, 3);
  const Index T = *rc::gen::inRange<Index>(1, 48), layers = *rc::gen::inRange<Index>(1, 3);
  const ScoreTensor attn = gen_attention(layers, G * groups, T);
  const kvaudit::PageParams p = gen_params(G, T);
  const auto c = kvaudit::audit::compare_selector_with_oracle(attn, p);
  RC_ASSERT(c.verdict.passed());
  RC_ASSERT(c.groups == layers * groups);
  RC_ASSERT(c.canonical + c.tie_admissible == c.groups);
  RC_CLASSIFY(c.tie_admissible > 0, "a selection differed from the canonical one on tied pages");
  RC_CLASSIFY(kvaudit::exact_budget(T, kvaudit::parse_compression_ratio(p.ratio_text)) < T, "eviction (budget < T)");
  RC_CLASSIFY(T % p.page_size != 0, "partial last page");
}

RC_GTEST_PROP(PagingSelector, BudgetAndAccountingHoldForEveryPageSize, ()) {
  const Index G = *rc::gen::inRange<Index>(1, 4), T = *rc::gen::inRange<Index>(1, 40);
  const ScoreTensor attn = gen_attention(2, 2 * G, T);
  kvaudit::PageParams p = gen_params(G, T);
  for (Index P = 1; P <= T; ++P) {
    p.page_size = P;
    const Index budget = op::page_token_capacity(T, p);  // tokens: B; a page count K: min(T, K P)
    const pg::PageSelection s = pg::select_pages(attn, p);
    RC_ASSERT(s.budget == op::page_walk_budget(T, p));
    if (p.budget_unit == kvaudit::BudgetUnit::Pages)
      for (Index l = 0; l < s.layers; ++l)
        for (Index g = 0; g < s.groups; ++g) RC_ASSERT(static_cast<Index>(s.kept_pages(l, g).size()) <= s.budget);
    std::vector<kvaudit::Positions> sets;
    for (Index l = 0; l < s.layers; ++l)
      for (Index g = 0; g < s.groups; ++g) {
        sets.push_back(s.kept_tokens(l, g));
        RC_ASSERT(s.retained[static_cast<std::size_t>(l * s.groups + g)] <= budget);
      }
    const auto v = op::check_page_accounting({s.layers, s.groups, s.pages, s.ledger}, sets, T, P, budget);
    RC_ASSERT(v.passed());
  }
}

// Every query head reads its KV group's ledger row, so the union over the group's heads is the selection.
RC_GTEST_PROP(PagingSelector, PooledSelectionHasUnionRatioExactlyOne, ()) {
  const Index G = *rc::gen::inRange<Index>(1, 5), T = *rc::gen::inRange<Index>(4, 48);
  const ScoreTensor attn = gen_attention(1, 2 * G, T);
  const pg::PageSelection s = pg::select_pages(attn, gen_params(G, T));
  for (Index g = 0; g < s.groups; ++g) {
    std::set<Index> uni;
    for (Index h = g * G; h < (g + 1) * G; ++h)
      for (Index t : s.kept_tokens(0, h / G)) uni.insert(t);
    const auto own = s.kept_tokens(0, g);
    // The invariant is U == S; the ratio |U|/|S| is then 1 whenever a page fits (B >= smallest page).
    RC_ASSERT(std::set<Index>(own.begin(), own.end()) == uni);
    if (!own.empty()) RC_ASSERT(op::Ratio(static_cast<Index>(uni.size()), static_cast<Index>(own.size())) == 1);
    RC_CLASSIFY(own.empty(), "no page fits the budget");
  }
}

// A mutant that swaps one kept page for a strictly lower-scoring dropped page must be rejected.
RC_GTEST_PROP(PagingSelector, SwappedPageMutantIsRejected, ()) {
  const Index T = *rc::gen::inRange<Index>(8, 48);
  const ScoreTensor attn = gen_attention(1, 3, T);
  kvaudit::PageParams p;
  p.group_size = 3;
  p.page_size = *rc::gen::inRange<Index>(1, 5);
  p.ratio_text = "0.5";
  std::vector<std::span<const float>> rows = {attn.row(0, 0), attn.row(0, 1), attn.row(0, 2)};
  const auto r = op::page_entrokv_group(rows, p);
  const auto pages = op::page_layout(T, p.page_size);
  Index a = -1, b = -1;
  for (Index k : r.kept_pages)
    for (Index j = 0; j < static_cast<Index>(pages.size()); ++j)
      if (!r.reserved[k] && !std::binary_search(r.kept_pages.begin(), r.kept_pages.end(), j) && !r.reserved[j] &&
          pages[j].size() == pages[k].size() && r.page_scores[j] < r.page_scores[k])
        a = k, b = j;
  RC_PRE(a >= 0);
  std::vector<Index> mutant = r.kept_pages;
  std::replace(mutant.begin(), mutant.end(), a, b);
  std::sort(mutant.begin(), mutant.end());
  const Index budget = op::page_token_budget(T, p.ratio_text);
  const auto v = op::check_pages_admissible(r.page_scores, pages, r.reserved, budget, p.greedy, mutant, op::Exact(0));
  RC_ASSERT(v.kind == kvaudit::VerdictKind::Violates);
  // tie-order only where pages tie at the decision and their order matters there; otherwise score-order.
  RC_ASSERT(v.rule == std::string("tie-order") || v.rule == std::string("score-order"));
  RC_ASSERT(op::check_pages_admissible(r.page_scores, pages, r.reserved, budget, p.greedy, r.kept_pages, op::Exact(0)).passed());
}
