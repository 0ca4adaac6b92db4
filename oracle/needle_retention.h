// Reference needle retention for Page-EntroKV: the fraction of a needle span kept, the sufficient condition
// of the needle-page retention theorem (docs/page-entrokv.md, "Theorem N"), and a checker that pits the
// condition against what entropy and mean pooling actually keep.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/types.h"
#include "core/verdict.h"
#include "oracle/page_entrokv.h"
#include "oracle/union_overhead.h"

namespace kvaudit::oracle::paging {

// |kept ∩ [begin, end)| / (end - begin), exact. Throws std::invalid_argument on an empty span.
Ratio needle_recall(const Positions& kept, Index begin, Index end);

// Theorem N's hypotheses and inequality for page `page` of one (layer, group):
//   (H1) the page is not reserved;  (H2) R := tokens of all reserved pages <= B;
//   (H3) m := floor((B - R) / P) >= 1;
//   (H4) some head h* has w_{h*} * a_{h*} > M / (m + 1), where a_h is head h's own page score of its pooling
//        source d_h on the page (sum or max, as the selector scores pages) and M is the pooled mass
//        sum_t s(t) over the positions of non-reserved pages (M <= 1 for sink-isolated pooling).
// Conclusion: the page is kept, under either greedy rule and any order of tied pages.
struct RetentionCondition {
  Index page = 0;
  bool applicable = false;   // (H1)-(H3)
  std::string why_not;       // which of (H1)-(H3) failed
  Index m = 0;
  Exact mass = 0;            // M
  Index best_head = -1;      // argmax_h w_h a_h (lowest index on ties), within the group
  Exact best_weight = 0;     // w_{h*}
  Exact best_head_mass = 0;  // a_{h*}
  Exact lhs = 0;             // w_{h*} a_{h*}
  Exact rhs = 0;             // M / (m + 1)
  bool holds = false;        // applicable && lhs > rhs
};

RetentionCondition retention_condition(const std::vector<std::span<const float>>& rows, const PageParams& params, Index page);
// The same, reusing the group's selection (its weights and pooled scores) computed under `params`.
RetentionCondition retention_condition(const std::vector<std::span<const float>>& rows, const PageParams& params,
                                       const GroupResult& selection, Index page);

// One needle page under both poolings (everything else in `params` unchanged).
struct NeedlePageCheck {
  Index page = 0;
  RetentionCondition entropy, mean;
  bool kept_entropy = false, kept_mean = false;
  // Violates("theorem") when a pooling's condition holds and that pooling drops the page: a bug in the
  // selector or in the theorem, never an acceptable outcome.
  Verdict theorem;
  // The preprint's point: the condition holds for entropy weighting and mean pooling drops the page.
  bool mean_violation = false;
};

NeedlePageCheck check_needle_page(const std::vector<std::span<const float>>& rows, const PageParams& params, Index page);
// Every page in `pages`, each pooling's selection computed once.
std::vector<NeedlePageCheck> check_needle_pages(const std::vector<std::span<const float>>& rows, const PageParams& params,
                                                const std::vector<Index>& pages);
// The pages of several needles of one (layer, group), one list per needle: the two selections, their pooled
// masses M and the heads' pooling sources d_h are computed once for all of them (they depend on neither the
// needle nor the page). Equal, list by list, to check_needle_pages on each list.
std::vector<std::vector<NeedlePageCheck>> check_needle_pages(const std::vector<std::span<const float>>& rows, const PageParams& params,
                                                             const std::vector<std::vector<Index>>& pages_per_needle);
// The same with the group's two selections given: `sel_entropy` and `sel_mean` must be page_entrokv_group of `rows`
// under `params` with PagePooling::Entropy and PagePooling::Mean (a caller that needs them for other checks computes them once).
std::vector<std::vector<NeedlePageCheck>> check_needle_pages(const std::vector<std::span<const float>>& rows, const PageParams& params,
                                                             const GroupResult& sel_entropy, const GroupResult& sel_mean,
                                                             const std::vector<std::vector<Index>>& pages_per_needle);

// The pages a needle span [begin, end) touches.
std::vector<Index> needle_pages(Index begin, Index end, Index page_size);

}  // namespace kvaudit::oracle::paging
