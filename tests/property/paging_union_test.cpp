// Properties of the union overhead of head-independent eviction: 1 <= |U|/k <= G, the two-head identity,
// Bonferroni bounds and full inclusion-exclusion, at token and page level, on rows full of ties.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <set>

#include "oracle/page_entrokv.h"
#include "oracle/union_overhead.h"

namespace op = kvaudit::oracle::paging;
using kvaudit::Index;

namespace {
std::vector<std::vector<float>> gen_rows(Index G, Index T) {
  std::vector<std::vector<float>> rows;
  for (Index h = 0; h < G; ++h)
    rows.push_back(*rc::gen::container<std::vector<float>>(
        static_cast<std::size_t>(T), rc::gen::weightedOneOf<float>({{4, rc::gen::element(0.0f, 0.25f, 0.5f, 1.0f)},
                                                                    {1, rc::gen::map(rc::gen::inRange(0, 1 << 20), [](int v) { return v / 1048576.0f; })}})));
  return rows;
}
std::vector<std::span<const float>> spans(const std::vector<std::vector<float>>& rows) {
  return {rows.begin(), rows.end()};
}
}  // namespace

RC_GTEST_PROP(PagingUnion, TokenLevelRatioBoundsAndIdentities, ()) {
  const Index G = *rc::gen::inRange<Index>(1, 7), T = *rc::gen::inRange<Index>(1, 60);
  const auto rows = gen_rows(G, T);
  const std::string rho = *rc::gen::element<std::string>("0", "0.5", "0.8", "0.9", "0.95", "0.98");
  const Index k = op::page_token_budget(T, rho);
  const op::UnionOverhead u = op::token_union_overhead(spans(rows), k);
  RC_ASSERT(op::check_union_identities(u).passed());
  RC_ASSERT(u.ratio >= 1 && u.ratio <= G);
  RC_ASSERT(u.bonferroni_lower <= u.union_size && u.union_size <= u.bonferroni_upper && u.union_size <= u.s1);
  RC_ASSERT(u.inclusion_exclusion == u.union_size);
  if (G == 2) RC_ASSERT(u.ratio == op::Ratio(2) - op::Ratio(u.min_pairwise_intersection, k));
  // Each head's set is a valid top-k: every value strictly above a kept one is kept.
  for (const auto& row : rows) {
    const auto kept = op::head_top_k(row, k);
    RC_ASSERT(static_cast<Index>(kept.size()) == k);
    float lowest = 2.0f;
    for (Index t : kept) lowest = std::min(lowest, row[t]);
    for (Index t = 0; t < T; ++t)
      if (row[t] > lowest) RC_ASSERT(std::binary_search(kept.begin(), kept.end(), t));
  }
  RC_CLASSIFY(u.ratio > 1, "heads disagree");
  RC_CLASSIFY(G == 2, "two heads");
}

RC_GTEST_PROP(PagingUnion, PageLevelRatioBoundsAndIdentities, ()) {
  const Index G = *rc::gen::inRange<Index>(1, 7), T = *rc::gen::inRange<Index>(1, 80);
  const auto rows = gen_rows(G, T);
  const Index P = *rc::gen::inRange<Index>(1, 17);
  const Index k = op::page_token_budget(T, *rc::gen::element<std::string>("0", "0.5", "0.8", "0.9"));
  const auto kind = *rc::gen::element(kvaudit::PageScore::Sum, kvaudit::PageScore::Max);
  const op::UnionOverhead u = op::page_union_overhead(spans(rows), k, P, kind);
  const Index n_pages = (T + P - 1) / P;
  RC_ASSERT(u.k == std::min(op::page_level_k(k, P), n_pages));
  RC_ASSERT(op::check_union_identities(u).passed());
  RC_ASSERT(u.ratio >= 1 && u.ratio <= G);
  RC_CLASSIFY(u.ratio > 1, "heads disagree on pages");
}

// The identities are sharp enough to catch a miscounted union.
RC_GTEST_PROP(PagingUnion, MiscountedUnionIsRejected, ()) {
  const Index G = *rc::gen::inRange<Index>(2, 6), T = *rc::gen::inRange<Index>(4, 40);
  const auto rows = gen_rows(G, T);
  op::UnionOverhead u = op::token_union_overhead(spans(rows), op::page_token_budget(T, "0.5"));
  const Index off = *rc::gen::element<Index>(-1, 1);
  u.union_size += off;
  u.ratio = op::Ratio(u.union_size, u.k);
  RC_ASSERT(!op::check_union_identities(u).passed());
}

// head_top_pages scores pages in exact integers (floats times 2^149): the pages it keeps are those of a plain
// rational transcription (score desc, page index asc), on rows that mix subnormals, huge values, zeros and ties.
RC_GTEST_PROP(PagingUnion, TopPagesAgreeWithRationalScores, ()) {
  const Index T = *rc::gen::inRange<Index>(1, 80), P = *rc::gen::inRange<Index>(1, 9);
  const auto kind = *rc::gen::element(kvaudit::PageScore::Sum, kvaudit::PageScore::Max);
  const auto row = *rc::gen::container<std::vector<float>>(
      static_cast<std::size_t>(T),
      rc::gen::element(0.0f, 1e-45f, 2e-45f, 1.5e-39f, 0.25f, 0.5f, 1.0f, 3.0e38f, 1.0f + 1.0f / 8388608.0f, 0.1f));
  const Index n_pages = (T + P - 1) / P;
  const Index k = *rc::gen::inRange<Index>(0, n_pages + 1);
  std::vector<op::Ratio> score;
  for (Index b = 0; b < T; b += P) {
    op::Ratio v(static_cast<double>(row[b]));
    for (Index t = b + 1; t < std::min(b + P, T); ++t) {
      const op::Ratio x(static_cast<double>(row[t]));
      if (kind == kvaudit::PageScore::Sum) v += x;
      else if (x > v) v = x;
    }
    score.push_back(v);
  }
  std::vector<Index> order(score.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<Index>(i);
  std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) { return score[a] > score[b]; });
  std::vector<Index> expected(order.begin(), order.begin() + k);
  std::sort(expected.begin(), expected.end());
  RC_ASSERT(op::head_top_pages(row, P, k, kind) == expected);
}
