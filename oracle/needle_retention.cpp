// Reference needle retention: Theorem N's condition evaluated in exact rationals, beside the real selection.
#include "oracle/needle_retention.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

namespace kvaudit::oracle::paging {

Ratio needle_recall(const Positions& kept, Index begin, Index end) {
  if (end <= begin) throw std::invalid_argument("empty needle span");
  Index n = 0;
  for (Index t : kept) n += (t >= begin && t < end);
  return Ratio(n, end - begin);
}

std::vector<Index> needle_pages(Index begin, Index end, Index page_size) {
  if (end <= begin || page_size < 1) throw std::invalid_argument("empty needle span or page size < 1");
  std::vector<Index> out;
  for (Index p = begin / page_size; p <= (end - 1) / page_size; ++p) out.push_back(p);
  return out;
}

RetentionCondition retention_condition(const std::vector<std::span<const float>>& rows, const PageParams& params,
                                       const GroupResult& selection, Index page) {
  RetentionCondition c;
  c.page = page;
  const Index T = rows.empty() ? 0 : static_cast<Index>(rows[0].size());
  const std::vector<Page> pages = page_layout(T, params.page_size);
  if (page < 0 || page >= static_cast<Index>(pages.size())) throw std::invalid_argument("needle page out of range");
  const std::vector<bool>& reserved = selection.reserved;
  const Index budget = page_token_budget(T, params.ratio_text);
  Index R = 0;
  for (std::size_t k = 0; k < pages.size(); ++k)
    if (reserved[k]) R += pages[k].size();
  if (reserved[page]) c.why_not = "H1: the page is reserved";
  else if (R > budget) c.why_not = "H2: reserved pages exceed the budget";
  else if ((budget - R) / params.page_size < 1) c.why_not = "H3: no full page fits after the reserved pages";
  c.applicable = c.why_not.empty();
  c.m = R <= budget ? (budget - R) / params.page_size : 0;

  // M: the pooled mass on non-reserved positions, from the selection's own token scores.
  for (std::size_t k = 0; k < pages.size(); ++k)
    if (!reserved[k])
      for (Index t = pages[k].begin; t < pages[k].end; ++t) c.mass += selection.token_scores[t];
  // a_h: head h's own pooling source scored on the page, exactly as the selector scores pages.
  for (std::size_t h = 0; h < rows.size(); ++h) {
    std::vector<Exact> d;
    if (params.source == PoolSource::Raw) {
      d = exact_row(rows[h]);
    } else {
      auto iso = sink_isolate(rows[h], params.n_sink);
      d = iso ? *iso : std::vector<Exact>(static_cast<std::size_t>(T), Exact(0));
    }
    const Exact a = page_scores(d, {pages[page]}, params.page_score)[0];
    const Exact& w = selection.weights[h];
    if (c.best_head < 0 || w * a > c.lhs) {
      c.best_head = static_cast<Index>(h);
      c.best_weight = w;
      c.best_head_mass = a;
      c.lhs = w * a;
    }
  }
  c.rhs = c.mass / (c.m + 1);
  c.holds = c.applicable && c.lhs > c.rhs;
  return c;
}

RetentionCondition retention_condition(const std::vector<std::span<const float>>& rows, const PageParams& params, Index page) {
  return retention_condition(rows, params, page_entrokv_group(rows, params), page);
}

std::vector<NeedlePageCheck> check_needle_pages(const std::vector<std::span<const float>>& rows, const PageParams& params,
                                                const std::vector<Index>& pages) {
  PageParams entropy = params, mean = params;
  entropy.pooling = Pooling::Entropy;
  mean.pooling = Pooling::Mean;
  const GroupResult sel_e = page_entrokv_group(rows, entropy);
  const GroupResult sel_m = page_entrokv_group(rows, mean);
  std::vector<NeedlePageCheck> out;
  for (Index page : pages) {
    NeedlePageCheck c;
    c.page = page;
    c.entropy = retention_condition(rows, entropy, sel_e, page);
    c.mean = retention_condition(rows, mean, sel_m, page);
    c.kept_entropy = std::binary_search(sel_e.kept_pages.begin(), sel_e.kept_pages.end(), page);
    c.kept_mean = std::binary_search(sel_m.kept_pages.begin(), sel_m.kept_pages.end(), page);
    c.theorem = Verdict::conforms();
    if (c.entropy.holds && !c.kept_entropy)
      c.theorem = Verdict::violates("theorem", "entropy condition holds but page " + std::to_string(page) + " was dropped");
    else if (c.mean.holds && !c.kept_mean)
      c.theorem = Verdict::violates("theorem", "mean condition holds but page " + std::to_string(page) + " was dropped");
    c.mean_violation = c.entropy.holds && !c.kept_mean;
    out.push_back(std::move(c));
  }
  return out;
}

NeedlePageCheck check_needle_page(const std::vector<std::span<const float>>& rows, const PageParams& params, Index page) {
  return check_needle_pages(rows, params, {page})[0];
}

}  // namespace kvaudit::oracle::paging
