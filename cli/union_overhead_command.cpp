// `kvaudit union-overhead`: how much a paged engine must keep when each query head of a KV group evicts on its
// own scores: |U|/k at token and page level per group, exact, with the identities checked (exit 1 if broken).
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/command_registry.h"
#include "cli/paging_input.h"
#include "core/compression_ratio.h"
#include "oracle/page_entrokv.h"
#include "oracle/union_overhead.h"

namespace {

struct UnionArgs {
  kvaudit::cli::AttnSource input;
  long long group_size = 0, page_size = 16;
  std::string ratio, page_score = "sum";
};

nlohmann::json describe(const kvaudit::oracle::paging::UnionOverhead& u, const kvaudit::Verdict& v) {
  nlohmann::json j = {{"k", u.k}, {"union", u.union_size}, {"ratio", u.ratio.str()}, {"ratio_value", u.ratio.convert_to<double>()},
                      {"sum_sizes", u.s1}, {"sum_pairwise", u.s2}, {"sum_triple", u.s3},
                      {"bonferroni_lower", u.bonferroni_lower}, {"bonferroni_upper", u.bonferroni_upper},
                      {"verdict", kvaudit::to_string(v.kind)}, {"rule", v.rule}};
  if (u.g == 2) j["two_head_identity"] = (kvaudit::oracle::paging::Ratio(2) - kvaudit::oracle::paging::Ratio(u.min_pairwise_intersection, u.k)).str();
  return j;
}

const bool registered = kvaudit::cli::register_command([](CLI::App& root) {
  auto a = std::make_shared<UnionArgs>();
  auto* cmd = root.add_subcommand("union-overhead", "Union overhead of head-independent top-k eviction per KV group (token and page level)");
  kvaudit::cli::add_attn_options(cmd, a->input);
  cmd->add_option("--group-size", a->group_size, "G: query heads per KV head")->required();
  cmd->add_option("--compression-ratio", a->ratio, "rho, the fraction removed, as a decimal")->required();
  cmd->add_option("--page-size", a->page_size, "P: tokens per page (page level: each head keeps max(1, floor(k/P)) pages)")->capture_default_str();
  cmd->add_option("--page-score", a->page_score, "sum | max")->capture_default_str();
  cmd->callback([a] {
    using namespace kvaudit;
    namespace op = oracle::paging;
    if (a->group_size < 1) throw InputError("--group-size", "group_size", "must be >= 1");
    if (a->page_size < 1) throw InputError("--page-size", "page_size", "must be >= 1");
    if (a->page_score != "sum" && a->page_score != "max") throw InputError("--page-score", "page_score", "expected sum or max");
    const CompressionRatio rho = parse_compression_ratio(a->ratio);
    cli::Float32Input precision;
    const ScoreTensor attn = cli::load_attention(a->input, precision);
    if (attn.heads % a->group_size != 0)
      throw InputError("--group-size", "group_size", "q_heads " + std::to_string(attn.heads) + " is not divisible by " + std::to_string(a->group_size));
    const Index k = op::page_token_budget(attn.tokens, rho.text);
    const auto kind = a->page_score == "sum" ? op::PageScore::Sum : op::PageScore::Max;
    nlohmann::json groups = nlohmann::json::array();
    op::Ratio max_tok = 0, max_page = 0;
    bool broken = false;
    for (Index g = 0; g < attn.heads / a->group_size; ++g) {
      std::vector<std::span<const float>> rows;
      for (Index h = g * a->group_size; h < (g + 1) * a->group_size; ++h) rows.push_back(attn.row(0, h));
      const op::UnionOverhead tu = op::token_union_overhead(rows, k);
      const op::UnionOverhead pu = op::page_union_overhead(rows, k, a->page_size, kind);
      const Verdict vt = op::check_union_identities(tu), vp = op::check_union_identities(pu);
      broken = broken || !vt.passed() || !vp.passed();
      max_tok = std::max(max_tok, tu.ratio);
      max_page = std::max(max_page, pu.ratio);
      groups.push_back({{"group", g}, {"token", describe(tu, vt)}, {"page", describe(pu, vp)}});
    }
    std::cout << nlohmann::json{{"tokens", attn.tokens},
                                {"group_size", a->group_size},
                                {"compression_ratio", rho.text},
                                {"k", k},
                                {"page_size", a->page_size},
                                {"page_k", op::page_level_k(k, a->page_size)},
                                {"precision", precision.describe()},
                                {"groups", groups},
                                {"max_token_ratio", max_tok.str()},
                                {"max_page_ratio", max_page.str()},
                                {"pooled_ratio", "1"}}
                     .dump()
              << "\n";
    if (broken) cli::exit_code() = 1;
  });
});

}  // namespace
