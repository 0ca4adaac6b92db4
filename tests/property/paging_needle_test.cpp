// Theorem N (docs/page-entrokv.md): whenever its condition holds, the needle's page is kept, for entropy and
// mean pooling, both greedy rules and both page scores; groups hold one retrieval head carrying a needle.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "oracle/needle_retention.h"

namespace op = kvaudit::oracle::paging;

namespace {

// An attention row from integer weights: each over their sum (all zeros stay zeros).
std::vector<float> normalized(const std::vector<int>& w) {
  double sum = 0;
  for (int v : w) sum += v;
  std::vector<float> row;
  for (int v : w) row.push_back(sum > 0 ? static_cast<float>(v / sum) : 0.0f);
  return row;
}

}  // namespace

using kvaudit::Index;

RC_GTEST_PROP(PagingNeedle, ConditionImpliesRetention, ()) {
  const Index G = *rc::gen::inRange<Index>(2, 5), P = *rc::gen::inRange<Index>(2, 9);
  const Index T = *rc::gen::inRange<Index>(6 * P, 24 * P);
  kvaudit::PageParams params;
  params.group_size = G;
  params.page_size = P;
  params.ratio_text = *rc::gen::element<std::string>("0.3", "0.5", "0.75", "0.8");
  params.greedy = *rc::gen::element(kvaudit::GreedyRule::SkipMisfits, kvaudit::GreedyRule::StopAtFirstMisfit);
  params.page_score = *rc::gen::element(kvaudit::PageScore::Sum, kvaudit::PageScore::Max);
  params.sink_pages = *rc::gen::element(kvaudit::SinkPages::Reserved, kvaudit::SinkPages::Scored);
  params.source = *rc::gen::element(kvaudit::PoolSource::SinkIsolated, kvaudit::PoolSource::Raw);
  const Index n_pages = (T + P - 1) / P;
  const Index needle = *rc::gen::inRange<Index>(1, n_pages);
  const Index retrieval = *rc::gen::inRange<Index>(0, G);
  std::vector<std::vector<float>> rows;
  for (Index h = 0; h < G; ++h) {
    // Weights from a small pool: ties, zeros; the retrieval head adds a block on the needle page, the others
    // may add one on a decoy page.
    auto w = *rc::gen::container<std::vector<int>>(static_cast<std::size_t>(T), rc::gen::element(0, 0, 1, 2, 4));
    for (Index t = 0; t < std::min<Index>(4, T); ++t) w[t] += *rc::gen::element(0, 20, 200);  // sinks
    if (h != retrieval) {  // a decoy page: what lets mean pooling outvote the retrieval head
      const Index decoy = *rc::gen::inRange<Index>(0, n_pages);
      const int block = *rc::gen::element(0, 100, 1000);
      for (Index t = decoy * P; t < std::min((decoy + 1) * P, T); ++t) w[t] += block;
    }
    if (h == retrieval) {
      const int block = *rc::gen::element(10, 200, 2000, 20000);
      for (Index t = needle * P; t < std::min((needle + 1) * P, T); ++t) w[t] += block;
    }
    rows.push_back(normalized(w));
  }
  std::vector<std::span<const float>> spans(rows.begin(), rows.end());
  const op::NeedlePageCheck c = op::check_needle_page(spans, params, needle);
  RC_ASSERT(c.theorem.passed());
  if (c.entropy.holds) RC_ASSERT(c.kept_entropy);
  if (c.mean.holds) RC_ASSERT(c.kept_mean);
  RC_ASSERT(c.mean_violation == (c.entropy.holds && !c.kept_mean));
  RC_CLASSIFY(c.entropy.holds, "entropy condition holds");
  RC_CLASSIFY(c.mean.holds, "mean condition holds");
  RC_CLASSIFY(c.mean_violation, "mean pooling drops a page the entropy condition protects");
}

// The batched checker (several needles of one group, the selections, masses and sources computed once) gives, page
// by page, what the one-page checker and retention_condition give when everything is recomputed for that page.
RC_GTEST_PROP(PagingNeedle, BatchedChecksEqualOnePageChecks, ()) {
  const Index G = *rc::gen::inRange<Index>(2, 5), P = *rc::gen::inRange<Index>(2, 7);
  const Index T = *rc::gen::inRange<Index>(4 * P, 12 * P);
  kvaudit::PageParams params;
  params.group_size = G;
  params.page_size = P;
  params.ratio_text = *rc::gen::element<std::string>("0.3", "0.5", "0.8");
  params.page_score = *rc::gen::element(kvaudit::PageScore::Sum, kvaudit::PageScore::Max);
  params.sink_pages = *rc::gen::element(kvaudit::SinkPages::Reserved, kvaudit::SinkPages::Scored);
  params.source = *rc::gen::element(kvaudit::PoolSource::SinkIsolated, kvaudit::PoolSource::Raw);
  std::vector<std::vector<float>> rows;
  for (Index h = 0; h < G; ++h) {
    auto w = *rc::gen::container<std::vector<int>>(static_cast<std::size_t>(T), rc::gen::element(0, 1, 3, 50));
    rows.push_back(normalized(w));
  }
  std::vector<std::span<const float>> spans(rows.begin(), rows.end());
  const Index n_pages = (T + P - 1) / P;
  std::vector<std::vector<Index>> needles;
  for (Index i = 0, n = *rc::gen::inRange<Index>(1, 4); i < n; ++i) {
    const Index begin = *rc::gen::inRange<Index>(0, T - 1);
    needles.push_back(op::needle_pages(begin, *rc::gen::inRange<Index>(begin + 1, std::min(T, begin + 2 * P) + 1), P));
  }
  const auto batched = op::check_needle_pages(spans, params, needles);
  RC_ASSERT(batched.size() == needles.size());
  kvaudit::PageParams entropy = params, mean = params;
  entropy.pooling = kvaudit::PagePooling::Entropy;
  mean.pooling = kvaudit::PagePooling::Mean;
  for (std::size_t i = 0; i < needles.size(); ++i) {
    RC_ASSERT(batched[i].size() == needles[i].size());
    for (std::size_t j = 0; j < needles[i].size(); ++j) {
      const Index page = needles[i][j];
      RC_ASSERT(page < n_pages);
      const op::NeedlePageCheck& b = batched[i][j];
      const op::NeedlePageCheck one = op::check_needle_page(spans, params, page);
      RC_ASSERT(b.page == page);
      RC_ASSERT(b.kept_entropy == one.kept_entropy);
      RC_ASSERT(b.kept_mean == one.kept_mean);
      RC_ASSERT(b.mean_violation == one.mean_violation);
      RC_ASSERT(b.theorem.kind == one.theorem.kind);
      for (const auto& [got, pooled] : {std::pair{&b.entropy, &entropy}, std::pair{&b.mean, &mean}}) {
        const op::RetentionCondition fresh = op::retention_condition(spans, *pooled, page);
        RC_ASSERT(got->applicable == fresh.applicable);
        RC_ASSERT(got->why_not == fresh.why_not);
        RC_ASSERT(got->m == fresh.m);
        RC_ASSERT(got->mass == fresh.mass);
        RC_ASSERT(got->best_head == fresh.best_head);
        RC_ASSERT(got->lhs == fresh.lhs);
        RC_ASSERT(got->rhs == fresh.rhs);
        RC_ASSERT(got->holds == fresh.holds);
      }
    }
  }
}
