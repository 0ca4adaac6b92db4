// Judging a *claimed* Page-EntroKV selection (kept pages per KV group of one layer) with the exact oracle: the
// checker behind the Python package's kvaudit.check_pages (python/src/kvaudit_ext.cpp); a CLI subcommand can
// call it as it is.
#pragma once

#include <vector>

#include "core/paging/page_selector.h"
#include "core/types.h"
#include "core/verdict.h"

namespace kvaudit::audit {

// attn: (1, q_heads, T), rows already validated as distributions; claimed[g] = the page indices kept for KV
// group g (q_heads / group_size groups). Per group, the oracle (oracle/page_entrokv.h) computes the exact page
// scores and the walk; the claim conforms iff it is the canonical walk or check_pages_admissible accepts it
// with page scores tied within rel_tolerance (|a - b| <= rel_tolerance (a + b)). Rules: "shape" (wrong number
// of groups), then the oracle's ("shape", "budget", "reserved", "tie-order"), the message prefixed "group g: ".
Verdict check_claimed_pages(const ScoreTensor& attn, const paging::PageParams& params,
                            const std::vector<Positions>& claimed, double rel_tolerance);

// The oracle's canonical kept pages (score desc, page index asc) per KV group of layer 0.
std::vector<Positions> canonical_page_selection(const ScoreTensor& attn, const paging::PageParams& params);

// paging::page_score_rel_tolerance's chain evaluated in float32 (u = 2^-24) instead of double, with one more
// rounding per position because p^2 of a float32 is not exact in float32: n = 8T + 2G + P + 16,
// gamma = n u / (1 - n u). For implementations that compute the pooled page scores in float32 (torch defaults).
double page_score_rel_tolerance_float32(Index tokens, Index group_size, Index page_size);

}  // namespace kvaudit::audit
