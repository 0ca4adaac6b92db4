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
  const auto kind = *rc::gen::element(op::PageScore::Sum, op::PageScore::Max);
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
