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

namespace {

// M: the pooled mass sum_t s(t) over the positions of non-reserved pages, from the selection's own token scores.
// It does not depend on the page asked about: computed once per selection.
Exact non_reserved_mass(const GroupResult& selection, const std::vector<Page>& pages) {
  Integer mass = 0;
  for (std::size_t k = 0; k < pages.size(); ++k)
    if (!selection.reserved[k])
      for (Index t = pages[k].begin; t < pages[k].end; ++t) mass += selection.token_scores.numerators[t];
  return Exact(mass, selection.token_scores.denominator);
}

RetentionCondition condition_at(const std::vector<ScaledRow>& sources, const PageParams& params, const GroupResult& selection,
                                const std::vector<Page>& pages, Index T, const Exact& mass, Index page) {
  RetentionCondition c;
  c.page = page;
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
  c.mass = mass;
  // a_h: head h's own pooling source scored on the page, exactly as the selector scores pages.
  for (std::size_t h = 0; h < sources.size(); ++h) {
    const Exact a = page_scores(sources[h], {pages[page]}, params.page_score)[0];
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

}  // namespace

RetentionCondition retention_condition(const std::vector<std::span<const float>>& rows, const PageParams& params,
                                       const GroupResult& selection, Index page) {
  const Index T = rows.empty() ? 0 : static_cast<Index>(rows[0].size());
  const std::vector<Page> pages = page_layout(T, params.page_size);
  if (page < 0 || page >= static_cast<Index>(pages.size())) throw std::invalid_argument("needle page out of range");
  return condition_at(pooling_sources(rows, params), params, selection, pages, T, non_reserved_mass(selection, pages), page);
}

RetentionCondition retention_condition(const std::vector<std::span<const float>>& rows, const PageParams& params, Index page) {
  return retention_condition(rows, params, page_entrokv_group(rows, params), page);
}

std::vector<std::vector<NeedlePageCheck>> check_needle_pages(const std::vector<std::span<const float>>& rows, const PageParams& params,
                                                             const std::vector<std::vector<Index>>& pages_per_needle) {
  PageParams entropy = params, mean = params;
  entropy.pooling = PagePooling::Entropy;
  mean.pooling = PagePooling::Mean;
  return check_needle_pages(rows, params, page_entrokv_group(rows, entropy), page_entrokv_group(rows, mean), pages_per_needle);
}

std::vector<std::vector<NeedlePageCheck>> check_needle_pages(const std::vector<std::span<const float>>& rows, const PageParams& params,
                                                             const GroupResult& sel_e, const GroupResult& sel_m,
                                                             const std::vector<std::vector<Index>>& pages_per_needle) {
  PageParams entropy = params, mean = params;
  entropy.pooling = PagePooling::Entropy;
  mean.pooling = PagePooling::Mean;
  const Index T = rows.empty() ? 0 : static_cast<Index>(rows[0].size());
  const std::vector<Page> layout = page_layout(T, params.page_size);
  if (sel_e.weights.size() != rows.size() || sel_m.weights.size() != rows.size() || sel_e.reserved.size() != layout.size() ||
      sel_m.reserved.size() != layout.size())
    throw std::invalid_argument("check_needle_pages: the selections are not of these rows and page size");
  // Computed once for every needle and page: the two selections (given), their masses M and the heads' sources d_h.
  const std::vector<ScaledRow> sources = pooling_sources(rows, params);
  const Exact mass_e = non_reserved_mass(sel_e, layout), mass_m = non_reserved_mass(sel_m, layout);
  std::vector<std::vector<NeedlePageCheck>> all;
  for (const std::vector<Index>& pages : pages_per_needle) {
    std::vector<NeedlePageCheck> out;
    for (Index page : pages) {
      NeedlePageCheck c;
      c.page = page;
      c.entropy = condition_at(sources, entropy, sel_e, layout, T, mass_e, page);
      c.mean = condition_at(sources, mean, sel_m, layout, T, mass_m, page);
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
    all.push_back(std::move(out));
  }
  return all;
}

std::vector<NeedlePageCheck> check_needle_pages(const std::vector<std::span<const float>>& rows, const PageParams& params,
                                                const std::vector<Index>& pages) {
  return check_needle_pages(rows, params, std::vector<std::vector<Index>>{pages})[0];
}

NeedlePageCheck check_needle_page(const std::vector<std::span<const float>>& rows, const PageParams& params, Index page) {
  return check_needle_pages(rows, params, std::vector<Index>{page})[0];
}

}  // namespace kvaudit::oracle::paging
