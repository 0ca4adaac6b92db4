// Optimized Page-EntroKV selector (docs/specification.md section 5): batched over (layers, KV groups), every head of a group
// reduced in one pass, pages picked with a partial sort, OpenMP over layers. Double precision; checked
// against oracle/page_entrokv.h up to ties within the float64 page-score bound (core/paging/page_score_bound.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/types.h"

namespace kvaudit::paging {

// The parameters are kvaudit::PageParams (core/types.h), shared with the oracle.

struct PageSelection {
  Index layers = 0, groups = 0, group_size = 0, pages = 0, tokens = 0, page_size = 0;
  Index budget = 0;                   // in budget_unit: the exact token budget, or the page count K
  BudgetUnit budget_unit = BudgetUnit::Tokens;
  std::vector<std::uint8_t> ledger;   // (layers, groups, pages): 1 = the page frame is kept
  std::vector<Index> retained;        // (layers, groups): tokens in the kept pages
  std::vector<double> weights;        // (layers, q_heads): w_h within its group
  std::vector<double> collision;      // (layers, q_heads): sum_t p~_h(t)^2 (0 when p~_h does not exist)
  std::vector<double> page_scores;    // (layers, groups, pages)

  bool kept(Index l, Index g, Index p) const { return ledger[static_cast<std::size_t>((l * groups + g) * pages + p)] != 0; }
  std::vector<Index> kept_pages(Index l, Index g) const;
  Positions kept_tokens(Index l, Index g) const;
  Index kept_total() const;
};

// attn: (layers, q_heads, T), rows non-negative. Throws InputError("page-select", ...) when q_heads is not a
// multiple of group_size, P < 1 or n_sink < 0.
PageSelection select_pages(const ScoreTensor& attn, const PageParams& params);

// The walk's budget in params.budget_unit: max(1, floor((1 - rho) T)) tokens, or the page count K of
// params.page_count_rule (core/types.h), rho read exactly.
Index walk_budget(Index tokens, const PageParams& params);


}  // namespace kvaudit::paging
