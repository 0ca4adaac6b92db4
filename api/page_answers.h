// Page-EntroKV questions, front-end neutral: `kvaudit page-select | check-pages | union-overhead` and
// kvaudit.page_select, kvaudit.check_pages, kvaudit.union_overhead are translators around these functions.
// attn is one layer, (1, q_heads, T), already checked as distributions (api/input_checks.h).
#pragma once

#include <string>

#include "api/answer.h"
#include "api/input_checks.h"
#include "audit/page_check.h"
#include "core/paging/page_options.h"
#include "core/paging/page_score_bound.h"
#include "core/types.h"

namespace kvaudit::api {

// InputError("--group-size", ...) unless group_size divides q_heads.
void require_whole_groups(const ScoreTensor& attn, Index group_size);

// `page-select`: the optimized selector's pages per KV group, head weights and Renyi-2 entropies, and the exact
// oracle's verdict on the same input (Violates when they disagree beyond the float64 bound).
Answer page_select_answer(const ScoreTensor& attn, const PageParams& params, const Float32Input& input);

// `check-pages`: the one page checker's verdict on a claimed selection under a precision model, with the
// canonical selection and the replay line `kvaudit conform --replay` accepts.
Answer check_pages_answer(const ScoreTensor& attn, const PageParams& params, const audit::PageClaim& claim,
                          const paging::PrecisionModel& precision, const Float32Input& input);

// `union-overhead`: |U|/k of head-independent eviction per KV group (token and page level, exact, with the
// identities checked: Violates when one breaks), and Page-EntroKV's pooled ratio on the same input.
struct UnionOptions {
  long long group_size = 0, page_size = 16;
  std::string ratio, page_score = "sum";
};
Answer union_overhead_answer(const ScoreTensor& attn, const UnionOptions& options, const Float32Input& input);

}  // namespace kvaudit::api
