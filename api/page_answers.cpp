// Page-EntroKV answers (see page_answers.h).
#include "api/page_answers.h"

#include <cmath>

#include "audit/conform/page_case.h"
#include "core/compression_ratio.h"
#include "core/error.h"
#include "core/paging/page_selector.h"
#include "oracle/page_entrokv.h"
#include "oracle/page_params.h"
#include "oracle/union_overhead.h"

namespace kvaudit::api {

namespace op = oracle::paging;
using nlohmann::json;

void require_whole_groups(const ScoreTensor& attn, Index group_size) {
  if (attn.heads % group_size != 0)
    throw InputError("--group-size", "group_size", "q_heads " + std::to_string(attn.heads) + " is not divisible by " + std::to_string(group_size));
}

Answer page_select_answer(const ScoreTensor& attn, const PageParams& p, const Float32Input& input) {
  require_whole_groups(attn, p.group_size);
  const paging::PageSelection s = paging::select_pages(attn, p);
  const audit::SelectorComparison c = audit::compare_selector_with_oracle(attn, p);
  json groups = json::array();
  Index total_pages = 0, total_tokens = 0;
  for (Index g = 0; g < s.groups; ++g) {
    json w = json::array(), h2 = json::array(), heads = json::array();
    for (Index h = g * p.group_size; h < (g + 1) * p.group_size; ++h) {
      heads.push_back(h);
      w.push_back(s.weights[static_cast<std::size_t>(h)]);
      const double col = s.collision[static_cast<std::size_t>(h)];
      h2.push_back(col > 0 ? json(-std::log(col)) : json(nullptr));
    }
    const auto kept = s.kept_pages(0, g);
    const Index retained = s.retained[static_cast<std::size_t>(g)];
    total_pages += static_cast<Index>(kept.size());
    total_tokens += retained;
    groups.push_back({{"group", g}, {"heads", heads}, {"weights", w},
                      {p.entropy_on == EntropySource::Raw ? "renyi2_raw" : "renyi2_sink_isolated", h2}, {"kept_pages", kept},
                      {"kept_page_count", kept.size()}, {"retained_tokens", retained}});
  }
  Answer a;
  a.verdict = c.verdict.kind;
  a.body = {{"tokens", s.tokens},
            {"page_size", s.page_size},
            {"pages", s.pages},
            {"budget", s.budget},
            {"compression_ratio", p.ratio_text},
            {"sinks", p.n_sink},
            {"knobs", audit::page_knobs_json(p)},
            {"precision", input.describe()},
            {"groups", groups},
            {"total_kept_pages", total_pages},
            {"ledger_kept_tuples", s.kept_total()},
            {"total_retained_tokens", total_tokens},
            {"oracle", {{"verdict", to_string(c.verdict.kind)}, {"rule", c.verdict.rule}, {"message", c.verdict.message},
                        {"canonical", c.canonical}, {"tie_admissible", c.tie_admissible}}}};
  return a;
}

Answer check_pages_answer(const ScoreTensor& attn, const PageParams& p, const audit::PageClaim& claim,
                          const paging::PrecisionModel& precision, const Float32Input& input) {
  require_whole_groups(attn, p.group_size);
  const audit::PageCheck check = audit::check_page_claim(attn, 0, p, claim, precision);
  conform::PageCase replay{attn.heads, attn.tokens, attn.values, p, "check-pages"};
  Answer a;
  a.verdict = check.verdict.kind;
  a.body = {{"tokens", attn.tokens},
            {"q_heads", attn.heads},
            {"group_size", p.group_size},
            {"page_size", p.page_size},
            {"compression_ratio", p.ratio_text},
            {"budget", check.budget},
            {"knobs", audit::page_knobs_json(p)},
            {"score_precision", paging::to_string(precision)},
            {"rel_tolerance", check.rel_tolerance},
            {"precision", input.describe()},
            {"admissible", check.verdict.passed()},
            {"verdict", to_string(check.verdict.kind)},
            {"rule", check.verdict.rule},
            {"message", check.verdict.message},
            {"admissible_answer", check.canonical},
            {"replay", conform::encode_page_request(0, replay)}};
  return a;
}

namespace {

json describe_union(const op::UnionOverhead& u, const Verdict& v) {
  json j = {{"k", u.k}, {"union", u.union_size}, {"ratio", u.ratio.str()}, {"ratio_value", u.ratio.convert_to<double>()},
            {"sum_sizes", u.s1}, {"sum_pairwise", u.s2}, {"sum_triple", u.s3},
            {"bonferroni_lower", u.bonferroni_lower}, {"bonferroni_upper", u.bonferroni_upper},
            {"verdict", to_string(v.kind)}, {"rule", v.rule}};
  if (u.g == 2) j["two_head_identity"] = (op::Ratio(2) - op::Ratio(u.min_pairwise_intersection, u.k)).str();
  return j;
}

}  // namespace

Answer union_overhead_answer(const ScoreTensor& attn, const UnionOptions& o, const Float32Input& input) {
  if (o.group_size < 1) throw InputError("--group-size", "group_size", "must be >= 1, got " + std::to_string(o.group_size));
  if (o.page_size < 1) throw InputError("--page-size", "page_size", "must be >= 1, got " + std::to_string(o.page_size));
  if (o.page_score != "sum" && o.page_score != "max")
    throw InputError("--page-score", "page_score", "expected sum or max, got '" + o.page_score + "'");
  const CompressionRatio rho = parse_compression_ratio(o.ratio);
  require_whole_groups(attn, o.group_size);
  const Index G = o.group_size, k = op::page_token_budget(attn.tokens, rho.text);
  const auto kind = o.page_score == "sum" ? PageScore::Sum : PageScore::Max;
  // Page-EntroKV at the same budget: each query head h reads the pages of its KV group h / G (HF repeat_kv).
  PageParams pp;
  pp.group_size = G;
  pp.page_size = o.page_size;
  pp.ratio_text = rho.text;
  pp.page_score = kind;
  const paging::PageSelection pooled = paging::select_pages(attn, pp);
  json groups = json::array();
  op::Ratio max_tok = 0, max_page = 0, max_pooled = 0;
  bool broken = false, pooled_defined = false;
  for (Index g = 0; g < attn.heads / G; ++g) {
    std::vector<std::span<const float>> rows;
    std::vector<std::vector<Index>> reads;
    for (Index h = g * G; h < (g + 1) * G; ++h) {
      rows.push_back(attn.row(0, h));
      reads.push_back(pooled.kept_tokens(0, h / G));
    }
    const op::UnionOverhead tu = op::token_union_overhead(rows, k);
    const op::UnionOverhead pu = op::page_union_overhead(rows, k, o.page_size, kind);
    const Verdict vt = op::check_union_identities(tu), vp = op::check_union_identities(pu);
    broken = broken || !vt.passed() || !vp.passed();
    max_tok = std::max(max_tok, tu.ratio);
    max_page = std::max(max_page, pu.ratio);
    json entry = {{"group", g}, {"token", describe_union(tu, vt)}, {"page", describe_union(pu, vp)}};
    if (!reads[0].empty()) {  // empty when the budget is below one page
      const op::UnionOverhead po = op::union_overhead(reads);
      entry["pooled_ratio"] = po.ratio.str();
      max_pooled = pooled_defined ? std::max(max_pooled, po.ratio) : po.ratio;
      pooled_defined = true;
    }
    groups.push_back(entry);
  }
  Answer a;
  a.verdict = broken ? VerdictKind::Violates : VerdictKind::Conforms;
  a.body = {{"tokens", attn.tokens},
            {"group_size", G},
            {"compression_ratio", rho.text},
            {"k", k},
            {"page_size", o.page_size},
            {"page_k", op::page_level_k(k, o.page_size)},
            {"precision", input.describe()},
            {"groups", groups},
            {"max_token_ratio", max_tok.str()},
            {"max_page_ratio", max_page.str()},
            // |union of the pages each head reads| / |the group's pages|: 1 by construction (one page set per KV
            // group), computed here from the selection; null when every group's selection is empty.
            {"pooled_ratio", pooled_defined ? json(max_pooled.str()) : json(nullptr)},
            {"verdict", to_string(a.verdict)}};
  return a;
}

}  // namespace kvaudit::api
