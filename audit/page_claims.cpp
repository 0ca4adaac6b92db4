// Claimed Page-EntroKV selections judged by the exact oracle (see page_claims.h).
#include "audit/page_claims.h"

#include <cmath>
#include <span>
#include <string>

#include "audit/paging_findings.h"
#include "oracle/page_entrokv.h"

namespace kvaudit::audit {

namespace op = oracle::paging;

namespace {

std::vector<std::span<const float>> rows_of_group(const ScoreTensor& attn, Index g, Index G) {
  std::vector<std::span<const float>> rows;
  for (Index h = g * G; h < (g + 1) * G; ++h) rows.push_back(attn.row(0, h));
  return rows;
}

}  // namespace

Verdict check_claimed_pages(const ScoreTensor& attn, const paging::PageParams& params, const std::vector<Positions>& claimed,
                            double rel_tolerance) {
  const Index groups = attn.heads / params.group_size;
  if (static_cast<Index>(claimed.size()) != groups)
    return Verdict::violates("shape", "claimed " + std::to_string(claimed.size()) + " group selection(s), the input has " +
                                          std::to_string(groups) + " KV group(s) (q_heads " + std::to_string(attn.heads) +
                                          " / group_size " + std::to_string(params.group_size) + ")");
  const op::PageParams o = to_oracle_params(params);
  const Index budget = op::page_token_budget(attn.tokens, o.ratio_text);
  const std::vector<op::Page> pages = op::page_layout(attn.tokens, params.page_size);
  const op::Exact tol(rel_tolerance);
  for (Index g = 0; g < groups; ++g) {
    const op::GroupResult ref = op::page_entrokv_group(rows_of_group(attn, g, params.group_size), o);
    const Positions& c = claimed[static_cast<std::size_t>(g)];
    if (c == ref.kept_pages) continue;
    const Verdict v = op::check_pages_admissible(ref.page_scores, pages, ref.reserved, budget, o.greedy, c, tol);
    if (!v.passed()) {
      if (v.kind == VerdictKind::Violates) return Verdict::violates(v.rule, "group " + std::to_string(g) + ": " + v.message);
      return Verdict{v.kind, v.rule, "group " + std::to_string(g) + ": " + v.message};
    }
  }
  return Verdict::conforms();
}

std::vector<Positions> canonical_page_selection(const ScoreTensor& attn, const paging::PageParams& params) {
  const op::PageParams o = to_oracle_params(params);
  std::vector<Positions> out;
  for (Index g = 0; g < attn.heads / params.group_size; ++g)
    out.push_back(op::page_entrokv_group(rows_of_group(attn, g, params.group_size), o).kept_pages);
  return out;
}

double page_score_rel_tolerance_float32(Index tokens, Index group_size, Index page_size) {
  const double n = 8.0 * static_cast<double>(tokens) + 2.0 * static_cast<double>(group_size) + static_cast<double>(page_size) + 16.0;
  const double nu = n * std::ldexp(1.0, -24);
  return nu / (1.0 - nu);
}

}  // namespace kvaudit::audit
