// The one judge of a claimed Page-EntroKV selection (kept pages per KV group of one layer): `kvaudit
// check-pages`, kvaudit.check_pages, `kvaudit conform --method page-entrokv`, the audit's selector-vs-oracle
// comparison and the fuzzers all call it. Page scores come from the exact oracle (oracle/page_entrokv.h); the
// only tolerance is the precision model's bound (core/paging/page_score_bound.h).
#pragma once

#include <optional>

#include <nlohmann/json.hpp>
#include <span>
#include <vector>

#include "core/paging/page_score_bound.h"
#include "core/types.h"
#include "core/verdict.h"
#include "core/paging/page_selector.h"

namespace kvaudit::oracle::paging {
struct GroupResult;  // oracle/page_entrokv.h; declared only, so that front ends including this header reach no GMP
}  // namespace kvaudit::oracle::paging

namespace kvaudit::audit {

struct PageClaim {
  std::vector<std::vector<Index>> kept_pages;               // one list per KV group, as claimed
  std::optional<std::vector<Positions>> kept_tokens;        // per KV group, when the claim states its token sets
};

struct PageCheck {
  Verdict verdict;
  Index budget = 0;            // the walk's budget: max(1, floor((1 - rho) T)) tokens, or the page count K
  BudgetUnit budget_unit = BudgetUnit::Tokens;
  double rel_tolerance = 0.0;  // the precision model's tolerance on this (T, G, P)
  std::vector<std::vector<Index>> canonical;  // the oracle's canonical kept pages per KV group (score desc, index asc)
};

// attn (layers, q_heads, T), rows non-negative; `layer` is the one judged. Stages, the first failure reported:
// "shape" (one list per group), "range", "order" (strictly increasing); with kept_tokens the ledger rules
// ("token-set", "pages-agree", "tokens-agree", "whole-pages", "budget"); then per group the oracle's
// admissibility ("budget", "reserved", "tie-order": the claim leaves every walk at pages tied within
// |a - b| <= tol (a + b) whose order matters there, their scores in the message; "score-order": the decreasing
// score order alone decides against it), walked in the params' budget unit (a page count: each page costs one).
// A violation of "budget", "reserved", "tie-order" or "score-order" is named after the known mistake whose pages it
// is, when one is, the narrowest first: "float-budget" (kvpress's float token budget), "per-head-union" (the union
// of the heads' own selections), "sink-isolation" (the other pooled source), "weights-entropy" (entropy weights on
// the other rows: raw where sink-isolated are asked, or the reverse), "weights" (the other pooling), "pooling-max"
// (max over the group's heads), "page-score" (the other page score), "walk" (the other greedy rule),
// "temperature" (the other published head-weight temperature, tau = 1 or 0.5), "page-count-budget" (a page count
// by top-k where tokens are walked, the other page-count rule, or the token walk where a page count is asked; an
// overrun of a token budget is never page-count-budget), "under-fill" (a page that still fits was left out, skip-misfits),
// "budget-off-by-one" (a budget one token, or one page of a page count, off); the message lists every mistake
// that fits. Throws std::invalid_argument when G does not divide q_heads, P < 1, sinks < 0, a value of the layer
// is negative or not finite, or the ratio is not a plain decimal in [0, 1).
PageCheck check_page_claim(const ScoreTensor& attn, Index layer, const PageParams& params, const PageClaim& claim,
                           const paging::PrecisionModel& precision);

// Every choice knob of `p` by its option name, as text ("budget_unit": "pages", "temperature": "0.5", ...): what
// page-select, check-pages and conform reports print.
nlohmann::json page_knobs_json(const PageParams& p);

// The oracle's canonical kept pages (score desc, page index asc) per KV group of `layer`.
std::vector<std::vector<Index>> canonical_page_selection(const ScoreTensor& attn, Index layer, const PageParams& params);

// One (layer, group) without naming: the oracle's canonical pages, or admissible within rel_tolerance. What
// check_page_claim does per group, and compare_selector_with_oracle per (layer, group). `canonical` (optional)
// receives whether the claim is the oracle's canonical selection itself.
Verdict check_group_pages(const std::vector<std::span<const float>>& rows, const PageParams& params,
                          const std::vector<Index>& claimed, double rel_tolerance, bool* canonical = nullptr);

// core/paging vs oracle/page_entrokv on every (layer, group) of `attn` with layer < max_layers (all when
// max_layers < 0): budgets agree, the retained counts agree with the ledger, every selection is the
// oracle's canonical one or admissible within the float64 page-score bound, and the page accounting of the
// optimized ledger holds. `canonical` + `tie_admissible` == `groups` when the verdict conforms.
struct SelectorComparison {
  Verdict verdict;
  Index groups = 0;          // (layer, group) pairs compared
  Index canonical = 0;       // identical to the oracle's (score desc, index asc) selection
  Index tie_admissible = 0;  // different, but admissible: tied (within tolerance) pages chosen otherwise
  Index layer = 0;           // the layer of the first violation
};
SelectorComparison compare_selector_with_oracle(const ScoreTensor& attn, const kvaudit::PageParams& params,
                                                Index max_layers = -1);

// One (layer, group) of the comparison: whether the optimized selection `claimed` is the oracle's canonical one,
// and its admissibility within the float64 page-score bound. `ref` is oracle::paging::page_entrokv_group of the
// group's rows under `params` (a caller that needs it for other checks too computes it once).
struct GroupComparison {
  bool canonical = false;
  Verdict verdict;
};
GroupComparison compare_group_with_oracle(const oracle::paging::GroupResult& ref, Index tokens, const kvaudit::PageParams& params,
                                          const std::vector<Index>& claimed);

// compare_selector_with_oracle for the optimized selection `fast` of `attn` under `params`, with the per-group
// outcomes already computed: compare_group_with_oracle of every (layer, group) with layer < max_layers (all when
// max_layers < 0), row-major. The judging is the same.
SelectorComparison compare_selector_with_oracle(const ScoreTensor& attn, const kvaudit::PageParams& params,
                                                const paging::PageSelection& fast, Index max_layers,
                                                const std::vector<GroupComparison>& outcomes);

}  // namespace kvaudit::audit
