// The seeds claim EG-ChunkKV and ChunkKV are "budget-matched by construction" and that EG-ChunkKV keeps
// "exactly max(1, floor((1 - rho) T))". Both are checked here on the grid of settings the seeds report.
#include "audit/budget_match.h"
#include "audit/claims.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

#include "core/compression_ratio.h"
#include "oracle/chunk_selection.h"

namespace kvaudit::audit {
namespace {

using nlohmann::json;

struct GridRow {
  std::string setting;      // which seed result the row stands for
  std::string ratio;        // decimal text
  Index chunk_length;
  Index t_min, t_max;
};

std::string budget_command(Index t, const std::string& ratio, Index c) {
  return "kvaudit budget --tokens " + std::to_string(t) + " --compression-ratio " + ratio + " --chunk-length " + std::to_string(c);
}

bool chunkkv_can_keep(const ChunkKVTokenCounts& k, Index tokens) { return k.without_partial == tokens || k.with_partial == tokens; }

}  // namespace

ChunkKVTokenCounts chunkkv_token_counts(Index tokens, const CompressionRatio& rho, Index chunk_length) {
  SelectorParams p;
  p.method = Method::ChunkKV;
  p.flavour = Flavour::Kvpress;
  p.ratio = rho;
  p.chunk_length = chunk_length;
  const oracle::ChunkKvBudget b = oracle::chunkkv_budget(tokens, p);
  ChunkKVTokenCounts k;
  k.kept_chunks = b.chunks_kept;
  k.per_head_fallback = b.fallback;
  if (b.fallback) {
    k.kept_chunks = 0;
    k.without_partial = b.fallback_tokens;
    return k;
  }
  // max_tokens: only complete chunks kept; min_tokens: the trailing partial chunk among them (equal when there
  // is no partial chunk or every chunk is kept).
  k.without_partial = b.max_tokens;
  if (tokens % chunk_length != 0) k.with_partial = b.min_tokens;
  return k;
}

Section budget_match_section(const AuditContext& ctx) {
  // Seed 000/001 settings: RULER at T = 4096 (cr 0.85/0.9/0.95, c = 10); LongBench ratios 0.7/0.8/0.9 over
  // realistic lengths (here 1,000..32,000 tokens); ChunkKV's own default c = 20 alongside.
  const Index t_max = ctx.quick ? 8000 : 32000;
  std::vector<GridRow> grid;
  for (const char* r : {"0.85", "0.9", "0.95"}) grid.push_back({"RULER-4096", r, 10, 4096, 4096});
  for (const char* r : {"0.7", "0.8", "0.9"})
    for (Index c : {10, 20}) grid.push_back({"LongBench", r, c, 1000, t_max});
  for (const char* r : {"0.5", "0.85", "0.95"}) grid.push_back({"other ratios", r, 10, 1000, t_max});

  json rows = json::array(), findings = json::array(), chart_series = json::array();
  Index total = 0, mismatched = 0, exact_float_diverged = 0, cases_float_vs_exact = 0;
  json smallest_mismatch, smallest_divergence;
  for (const auto& g : grid) {
    CompressionRatio rho = parse_compression_ratio(g.ratio);
    Index n = 0, bad = 0, diverged = 0, first_bad = -1, first_div = -1, max_gap = 0;
    json points = json::array();
    for (Index t = g.t_min; t <= g.t_max; ++t) {
      Index eg = oracle::kvpress_token_budget(t, rho.value);
      Index exact = oracle::exact_token_budget(t, g.ratio);
      ChunkKVTokenCounts ck = chunkkv_token_counts(t, rho, g.chunk_length);
      ++n;
      if (!chunkkv_can_keep(ck, eg)) {
        ++bad;
        if (first_bad < 0) first_bad = t;
        max_gap = std::max(max_gap, std::abs(ck.without_partial - eg));
      }
      if (exact != eg) {
        ++diverged;
        if (first_div < 0) first_div = t;
      }
      if (g.setting == "LongBench" && g.chunk_length == 10 && g.ratio == "0.9" && t <= 2000)
        points.push_back({t, static_cast<double>(ck.without_partial - eg)});
    }
    total += n;
    mismatched += bad;
    cases_float_vs_exact += n;
    exact_float_diverged += diverged;
    rows.push_back({g.setting, g.ratio, g.chunk_length, std::to_string(g.t_min) + ".." + std::to_string(g.t_max), n, bad,
                    static_cast<double>(bad) / static_cast<double>(n), max_gap, diverged});
    if (first_bad >= 0) {
      Index eg = oracle::kvpress_token_budget(first_bad, rho.value);
      ChunkKVTokenCounts ck = chunkkv_token_counts(first_bad, rho, g.chunk_length);
      json cx = {{"tokens", first_bad}, {"compression_ratio", g.ratio}, {"chunk_length", g.chunk_length},
                 {"eg_chunkkv_kept", eg}, {"chunkkv_kept_chunks", ck.kept_chunks},
                 {"chunkkv_kept_tokens_without_partial", ck.without_partial}, {"chunkkv_kept_tokens_with_partial", ck.with_partial}};
      findings.push_back({{"id", "budget-mismatch-" + g.setting + "-cr" + g.ratio + "-c" + std::to_string(g.chunk_length)},
                          {"rule", "budget-match"}, {"verdict", to_string(VerdictKind::Violates)},
                          {"message", "ChunkKV and EG-ChunkKV keep different numbers of tokens on " + std::to_string(bad) + " of " +
                                          std::to_string(n) + " lengths; smallest T = " + std::to_string(first_bad)},
                          {"reproduce", budget_command(first_bad, g.ratio, g.chunk_length)}, {"counterexample", cx}});
      if (smallest_mismatch.is_null() || first_bad < smallest_mismatch["tokens"].get<Index>()) smallest_mismatch = cx;
    }
    if (first_div >= 0) {
      json cx = {{"tokens", first_div}, {"compression_ratio", g.ratio},
                 {"kvpress_float_budget", oracle::kvpress_token_budget(first_div, rho.value)},
                 {"exact_budget", oracle::exact_token_budget(first_div, g.ratio)}};
      findings.push_back({{"id", "float-vs-exact-budget-cr" + g.ratio + "-c" + std::to_string(g.chunk_length) + "-" + g.setting},
                          {"rule", "budget-exact"}, {"verdict", to_string(VerdictKind::Violates)},
                          {"message", "int(T*(1-rho)) in double differs from floor((1-rho)T) on " + std::to_string(diverged) + " of " +
                                          std::to_string(n) + " lengths; smallest T = " + std::to_string(first_div)},
                          {"reproduce", budget_command(first_div, g.ratio, g.chunk_length)}, {"counterexample", cx}});
      if (smallest_divergence.is_null() || first_div < smallest_divergence["tokens"].get<Index>()) smallest_divergence = cx;
    }
    if (!points.empty()) chart_series.push_back({{"name", "cr " + g.ratio + ", c " + std::to_string(g.chunk_length)}, {"points", points}});
  }

  // Recorded selections: tokens actually kept per layer by each real press at each ratio.
  json recorded = json::array();
  if (ctx.dumps)
    for (const auto& d : *ctx.dumps)
      for (const auto& [name, tensor] : d.tensors) {
        if (name.rfind("kept.", 0) != 0 || tensor.shape.size() != 2) continue;
        std::map<Index, Index> histogram;  // kept count -> layers
        for (Index l = 0; l < tensor.shape[0]; ++l) {
          Index count = 0;
          for (Index j = 0; j < tensor.shape[1]; ++j) count += tensor.integers[static_cast<std::size_t>(l * tensor.shape[1] + j)] >= 0;
          ++histogram[count];
        }
        std::string counts;
        for (auto [k, layers] : histogram) counts += (counts.empty() ? "" : ", ") + std::to_string(k) + " (x" + std::to_string(layers) + ")";
        recorded.push_back({d.name, d.tokens, name.substr(5), counts});
      }

  json section = {{"section", "budget-match"}, {"title", "Budget match: ChunkKV vs EG-ChunkKV, float vs exact budget"}, {"status", "ran"}};
  section["summary"] = {{"grid_cases", total}, {"chunkkv_eg_mismatches", mismatched},
                        {"mismatch_fraction", static_cast<double>(mismatched) / static_cast<double>(total)},
                        {"float_vs_exact_divergences", exact_float_diverged}, {"float_vs_exact_cases", cases_float_vs_exact}};
  section["tables"] = json::array(
      {{{"title", "ChunkKV vs EG-ChunkKV kept tokens (kvpress 0.5.5 rules) over the seeds' settings"},
        {"columns", {"setting", "cr", "chunk", "T range", "cases", "mismatches", "fraction", "max |gap|", "float != exact"}},
        {"rows", rows}}});
  if (!recorded.empty())
    section["tables"].push_back({{"title", "Tokens kept per layer by the real kvpress presses (count (x layers))"},
                                 {"columns", {"prompt", "T", "press.ratio", "kept per layer"}}, {"rows", recorded}});
  section["charts"] = json::array({{{"title", "ChunkKV kept tokens minus EG-ChunkKV budget (cr 0.9, c 10), partial chunk not kept"},
                                    {"kind", "line"}, {"x_label", "T (tokens)"}, {"y_label", "token difference"}, {"series", chart_series}}});
  section["findings"] = findings;
  char measured[160];
  std::snprintf(measured, sizeof measured, "%lld of %lld (T, cr, c) grid cases differ", static_cast<long long>(mismatched),
                static_cast<long long>(total));
  // All three are for-all statements about formulas, judged on the formulas themselves (kvpress 0.5.5's rules):
  // one grid case that differs refutes; a grid without one is a sample of the settings, not all of them.
  const ClaimRow matched{
      .claim = "EG-ChunkKV and ChunkKV are budget-matched by construction",
      .source = "seed 001 (PR description)",
      .measured = measured,
      .why = mismatched ? "smallest counterexample: " + smallest_mismatch.dump() : "no (T, cr, c) in the grid differs",
      .kind = ClaimKind::Universal,
      .evidence = mismatched ? Evidence::Counterexample : Evidence::HoldsOnSample,
      .observations = total};
  const ClaimRow exact{
      .claim = "EG-ChunkKV keeps exactly max(1, floor((1 - rho) T)) tokens",
      .source = "seed 001 (PR description)",
      .measured = std::to_string(exact_float_diverged) + " of " + std::to_string(cases_float_vs_exact) +
                  " grid cases where kvpress's int(T*(1-rho)) differs",
      .why = exact_float_diverged ? "smallest counterexample: " + smallest_divergence.dump() : "float and exact budgets agree on the grid",
      .kind = ClaimKind::Universal,
      .evidence = exact_float_diverged ? Evidence::Counterexample : Evidence::HoldsOnSample,
      .observations = cases_float_vs_exact};
  // The printed formula fails at every rho > 0; one case (rho = 0.5, any T > 2) shows it.
  const ClaimRow printed{
      .claim = "L = max(1, floor(1 - rho) * T) (formula as printed)",
      .source = "seed 000",
      .measured = "floor(1 - rho) = 0 for every rho > 0, so the printed formula keeps 1 token",
      .why = "a typo: the PR text states floor((1 - rho) T); the toolkit uses the PR's formula",
      .kind = ClaimKind::Universal,
      .evidence = Evidence::Counterexample,
      .observations = 1};
  section["claims"] = json::array({to_json(matched), to_json(exact), to_json(printed)});
  return section;
}

}  // namespace kvaudit::audit
