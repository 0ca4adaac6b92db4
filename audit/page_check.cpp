// The one page checker (see page_check.h): shape, ledger, exact admissibility per group, then the mistake that
// explains a walk the specification cannot produce.
#include "audit/page_check.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <string>

#include "audit/parallel_rows.h"
#include "core/paging/page_options.h"
#include "core/paging/page_selector.h"
#include "oracle/page_entrokv.h"

namespace kvaudit::audit {

namespace op = oracle::paging;

namespace {

std::vector<std::span<const float>> group_rows(const ScoreTensor& attn, Index layer, Index g, Index G) {
  std::vector<std::span<const float>> rows;
  for (Index h = g * G; h < (g + 1) * G; ++h) rows.push_back(attn.row(layer, h));
  return rows;
}

op::PageLedger ledger_of(const paging::PageSelection& s) { return {s.layers, s.groups, s.pages, s.ledger}; }

std::string list_text(const std::vector<Index>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

void require_valid(const ScoreTensor& attn, Index layer, const PageParams& p) {
  if (attn.tokens < 1 || attn.heads < 1) throw std::invalid_argument("attention must have at least one head and one token");
  if (layer < 0 || layer >= attn.layers) throw std::invalid_argument("layer " + std::to_string(layer) + " out of range");
  if (p.group_size < 1 || attn.heads % p.group_size != 0)
    throw std::invalid_argument("q_heads " + std::to_string(attn.heads) + " is not a multiple of group_size " +
                                std::to_string(p.group_size));
  if (p.page_size < 1) throw std::invalid_argument("page_size must be >= 1");
  if (p.n_sink < 0) throw std::invalid_argument("sinks must be >= 0");
  for (Index h = 0; h < attn.heads; ++h)
    for (float v : attn.row(layer, h))
      if (!(v >= 0.0f) || !std::isfinite(v)) throw std::invalid_argument("attention values must be finite and >= 0");
}

// What a walk sees: page scores, reserved pages, budget and greedy rule.
struct WalkInput {
  std::vector<op::Exact> scores;
  std::vector<bool> reserved;
  Index budget = 0;
  GreedyRule greedy = GreedyRule::SkipMisfits;
  std::vector<op::Page> costs;  // what each page costs the walk (op::walk_costs)
};

WalkInput walk_input(const std::vector<std::span<const float>>& rows, const PageParams& p) {
  op::GroupResult r = op::page_entrokv_group(rows, p);
  return {std::move(r.page_scores), std::move(r.reserved), r.budget, p.greedy,
          op::walk_costs(op::page_layout(static_cast<Index>(rows[0].size()), p.page_size), p.budget_unit)};
}

// Two mistakes no PageParams knob expresses, built from the oracle's definitions.
// Entropy weights computed on the raw rows (sinks not isolated before H2).
WalkInput walk_with_raw_weights(const std::vector<std::span<const float>>& rows, const PageParams& p) {
  PageParams q = p;
  q.entropy_on = p.entropy_on == EntropySource::SinkIsolated ? EntropySource::Raw : EntropySource::SinkIsolated;
  return walk_input(rows, q);
}

// The max over the group's heads instead of a weighted pool: s(t) = max_h d_h(t).
WalkInput walk_with_max_over_heads(const std::vector<std::span<const float>>& rows, const PageParams& p) {
  WalkInput w = walk_input(rows, p);
  const auto sources = op::pooling_sources(rows, p);
  std::vector<op::Exact> s = sources[0].values();
  for (std::size_t h = 1; h < sources.size(); ++h)
    for (std::size_t t = 0; t < s.size(); ++t) s[t] = std::max(s[t], sources[h][t]);
  w.scores = op::page_scores(op::ScaledRow(s), op::page_layout(static_cast<Index>(rows[0].size()), p.page_size), p.page_score);
  return w;
}

// The claim against a walk, each page costing what the walk's budget unit charges (w.costs).
Verdict admissible(const WalkInput& w, const std::vector<Index>& claimed, double tol) {
  return op::check_pages_admissible(w.scores, w.costs, w.reserved, w.budget, w.greedy, claimed, op::Exact(tol));
}

// Union of per-head selections: each query head of the group walks alone (a group of one, its own budget) and the
// group keeps every page some head kept. Compared as one set with the union of the oracle's canonical per-head walks
// (ties toward the lower page index): unlike a single walk, a union of tie choices has no per-class form to check.
std::vector<Index> union_of_per_head_selections(const std::vector<std::span<const float>>& rows, const PageParams& p) {
  std::set<Index> pages;
  PageParams alone = p;
  alone.group_size = 1;
  for (const auto& row : rows)
    for (Index k : op::page_entrokv_group({row}, alone).kept_pages) pages.insert(k);
  return {pages.begin(), pages.end()};
}

// The published variants' two differences no other rule names (docs/page-entrokv.md section 8): the head-weight
// temperature (tau = 1 against tau = 0.5) and the budget unit (a token budget walked against a page count by
// top-k, under either page-count rule). Each entry: the rule and what keeps the claimed pages.
std::vector<std::pair<std::string, std::string>> variant_mistakes(const std::vector<std::span<const float>>& rows, const PageParams& p,
                                                                  const std::vector<Index>& claimed, double tol, bool over_budget) {
  std::vector<std::pair<std::string, std::string>> out;
  if (p.pooling == PagePooling::Entropy && rows.size() > 1)
    for (Index k : {Index{1}, Index{2}}) {
      if (k == p.inverse_temperature) continue;
      PageParams q = p;
      q.inverse_temperature = k;
      if (admissible(walk_input(rows, q), claimed, tol).passed())
        out.emplace_back("temperature", "head weights at tau = " + paging::temperature_text(k) + " (w proportional to c^" + std::to_string(k) +
                                            ", asked tau = " + paging::temperature_text(p.inverse_temperature) + ")");
    }
  const Index T = static_cast<Index>(rows[0].size());
  auto try_budget = [&](BudgetUnit unit, PageCountRule rule) {
    PageParams q = p;
    q.budget_unit = unit;
    q.page_count_rule = rule;
    if (unit == p.budget_unit && (unit == BudgetUnit::Tokens || rule == p.page_count_rule)) return;
    // No token budget may be exceeded, whatever a page count would keep: a token overrun stays `budget`.
    if (over_budget && p.budget_unit == BudgetUnit::Tokens) return;
    const WalkInput w = walk_input(rows, q);
    if (!admissible(w, claimed, tol).passed()) return;
    out.emplace_back("page-count-budget",
                     unit == BudgetUnit::Tokens
                         ? "the token budget B = " + std::to_string(w.budget) + " walked (asked: a page count K = " +
                               std::to_string(op::page_walk_budget(T, p)) + " by top-k)"
                         : "a page count K = " + std::to_string(w.budget) + " (" + op::to_string(rule) + " rule) by top-k" +
                               (p.budget_unit == BudgetUnit::Tokens ? " (asked: the token budget B = " + std::to_string(op::page_walk_budget(T, p)) + ")"
                                                                    : std::string(" (asked: the other page-count rule)")));
  };
  try_budget(BudgetUnit::Pages, PageCountRule::Paper);
  try_budget(BudgetUnit::Pages, PageCountRule::EntroPrefill);
  try_budget(BudgetUnit::Tokens, PageCountRule::Paper);
  return out;
}

// A walk the specification cannot produce, named after the mistake whose pages it is (if any).
// A violation of "budget" can only be explained by a walk with another budget (float-budget, page-count-budget,
// budget-off-by-one; a token overrun is never page-count-budget); the others by any mistake. Every check walks in
// the budget unit the params ask (a page count: one unit per page) and honours the temperature and entropy source.
Verdict name_mistake(const std::vector<std::span<const float>>& rows, const PageParams& p, const std::vector<Index>& claimed, double tol,
                     Verdict v) {
  const Index T = static_cast<Index>(rows[0].size());
  const Index budget = op::page_walk_budget(T, p);  // in the walk's unit: tokens, or a page count
  const bool tokens = p.budget_unit == BudgetUnit::Tokens;
  const char* unit = tokens ? " tokens" : " pages";
  std::string rule, explained;
  auto found = [&](const char* r, const std::string& what) {
    if (rule.empty()) rule = r;
    explained += (explained.empty() ? "" : ", or ") + what;
  };
  auto with = [&](auto change) {
    PageParams q = p;
    change(q);
    return q;
  };
  // kvpress-style float budget int(T (1 - rho)) in double, where the exact decimal token budget is required (a
  // page count is not kvpress's budget: not tried there).
  WalkInput f = walk_input(rows, p);
  f.budget = std::max<Index>(1, static_cast<Index>(static_cast<double>(T) * (1.0 - std::stod(p.ratio_text))));
  if (tokens && f.budget != budget && admissible(f, claimed, tol).passed())
    found("float-budget", "the float budget int(T (1 - rho)) = " + std::to_string(f.budget) + " (exact budget " + std::to_string(budget) + ")");
  if (rows.size() > 1 && claimed == union_of_per_head_selections(rows, p))
    found("per-head-union", "the union of the " + std::to_string(rows.size()) + " heads' own selections (each head walking alone)");
  // The pooling mistakes, the narrowest first: on a small case several can keep the same pages (near-uniform
  // weights make mean pooling fit whatever the weights were computed from), and the first named is the rule.
  const bool entropy = p.pooling == PagePooling::Entropy;
  const bool isolated = p.source == PoolSource::SinkIsolated;
  if (admissible(walk_input(rows, with([&](PageParams& q) { q.source = isolated ? PoolSource::Raw : PoolSource::SinkIsolated; })),
                 claimed, tol).passed())
    found("sink-isolation", isolated ? "pooling the raw rows" : "pooling the sink-isolated rows");
  if (entropy && admissible(walk_with_raw_weights(rows, p), claimed, tol).passed())
    found("weights-entropy", p.entropy_on == EntropySource::SinkIsolated ? "entropy weights computed on the raw rows (sinks not isolated before H2)"
                                                                         : "entropy weights computed on the sink-isolated rows (the raw rows asked)");
  if (admissible(walk_input(rows, with([&](PageParams& q) { q.pooling = entropy ? PagePooling::Mean : PagePooling::Entropy; })),
                 claimed, tol).passed())
    found("weights", entropy ? "mean pooling (w = 1/G)" : "entropy pooling");
  if (rows.size() > 1 && admissible(walk_with_max_over_heads(rows, p), claimed, tol).passed())
    found("pooling-max", "the max over the group's heads instead of a weighted pool");
  const bool sum = p.page_score == PageScore::Sum;
  if (admissible(walk_input(rows, with([&](PageParams& q) { q.page_score = sum ? PageScore::Max : PageScore::Sum; })),
                 claimed, tol).passed())
    found("page-score", sum ? "max page scores" : "sum page scores");
  const bool skip = p.greedy == GreedyRule::SkipMisfits;
  if (admissible(walk_input(rows, with([&](PageParams& q) { q.greedy = skip ? GreedyRule::StopAtFirstMisfit : GreedyRule::SkipMisfits; })),
                 claimed, tol).passed())
    found("walk", skip ? "stopping at the first misfit" : "skipping misfits");
  for (const auto& [variant_rule, what] : variant_mistakes(rows, p, claimed, tol, v.rule == "budget")) found(variant_rule.c_str(), what);
  // Under a token budget a page count by top-k leaves out pages that still fit: the under-fill is the fact, the
  // page count one explanation of it, listed in the message (under-fill is the narrower name).
  if (skip && (rule.empty() || (tokens && rule == "page-count-budget"))) {
    // Skipping misfits, the walk ends only when no page left out still fits: one that does is an under-fill (in the
    // walk's unit: a page count fills up to K pages).
    const WalkInput w = walk_input(rows, p);
    Index retained = 0;
    std::set<Index> kept(claimed.begin(), claimed.end());
    for (Index k : claimed) retained += w.costs[k].size();
    for (Index k = 0; k < static_cast<Index>(w.costs.size()); ++k)
      if (!kept.count(k) && retained + w.costs[k].size() <= budget)
        return Verdict::violates("under-fill", v.message + "; page " + std::to_string(k) + " (" + std::to_string(w.costs[k].size()) + unit +
                                                   ") still fits: " + std::to_string(retained) + " retained of budget " +
                                                   std::to_string(budget) + unit +
                                                   (explained.empty() ? std::string() : "; the pages are what " + explained + " keeps"));
  }
  // A budget one off (a token, or a page of a page count), tried last as the most generic explanation (after
  // under-fill: a walk that needs one token of room too many leaves a page out that still fits).
  if (rule.empty())
    for (Index d : {Index{1}, Index{-1}}) {
      WalkInput b = walk_input(rows, p);
      b.budget = budget + d;
      if (b.budget >= (tokens ? 1 : 0) && admissible(b, claimed, tol).passed())
        found("budget-off-by-one", "a budget off by one: " + std::to_string(b.budget) + unit + " (the budget is " + std::to_string(budget) + unit + ")");
    }
  if (rule.empty()) return v;
  return Verdict::violates(rule, v.message + "; the pages are what " + explained + " keeps");
}

// `claimed` against one group's oracle result: its canonical pages, or admissible within rel_tolerance.
Verdict admissible_against(const op::GroupResult& ref, Index tokens, const PageParams& params, const std::vector<Index>& claimed,
                           double rel_tolerance) {
  if (claimed == ref.kept_pages) return Verdict::conforms();
  return op::check_pages_admissible(ref.page_scores, op::walk_costs(op::page_layout(tokens, params.page_size), params.budget_unit),
                                    ref.reserved, ref.budget, params.greedy, claimed, op::Exact(rel_tolerance));
}

}  // namespace

Verdict check_group_pages(const std::vector<std::span<const float>>& rows, const PageParams& params,
                          const std::vector<Index>& claimed, double rel_tolerance, bool* canonical) {
  const op::GroupResult ref = op::page_entrokv_group(rows, params);
  if (canonical) *canonical = claimed == ref.kept_pages;
  return admissible_against(ref, static_cast<Index>(rows[0].size()), params, claimed, rel_tolerance);
}

PageCheck check_page_claim(const ScoreTensor& attn, Index layer, const PageParams& p, const PageClaim& claim,
                           const paging::PrecisionModel& precision) {
  require_valid(attn, layer, p);
  PageCheck out;
  out.budget = op::page_walk_budget(attn.tokens, p);  // throws std::invalid_argument for a bad ratio
  out.budget_unit = p.budget_unit;
  out.rel_tolerance = paging::rel_tolerance(precision, attn.tokens, p.group_size, p.page_size, p.inverse_temperature);
  const std::vector<op::Page> pages = op::page_layout(attn.tokens, p.page_size);
  const Index groups = attn.heads / p.group_size, n = static_cast<Index>(pages.size());
  // The oracle's result per group, computed once: the canonical answer every front end reports, and stage 3's scores.
  std::vector<op::GroupResult> refs;
  for (Index g = 0; g < groups; ++g) {
    refs.push_back(op::page_entrokv_group(group_rows(attn, layer, g, p.group_size), p));
    out.canonical.push_back(refs.back().kept_pages);
  }
  // Stage 1: shape, range, order.
  if (static_cast<Index>(claim.kept_pages.size()) != groups) {
    out.verdict = Verdict::violates("shape", "expected one kept_pages list per KV group (" + std::to_string(groups) + " = " +
                                                 std::to_string(attn.heads) + " heads / G " + std::to_string(p.group_size) + "), got " +
                                                 std::to_string(claim.kept_pages.size()));
    return out;
  }
  for (Index g = 0; g < groups; ++g) {
    const auto& k = claim.kept_pages[g];
    for (std::size_t i = 0; i < k.size(); ++i) {
      if (k[i] < 0 || k[i] >= n) {
        out.verdict = Verdict::violates("range", "group " + std::to_string(g) + ": page " + std::to_string(k[i]) + " outside [0, " +
                                                     std::to_string(n) + ")");
        return out;
      }
      if (i > 0 && k[i] <= k[i - 1]) {
        out.verdict = Verdict::violates("order", "group " + std::to_string(g) + ": kept pages " + list_text(k) + " are not strictly increasing");
        return out;
      }
    }
  }
  // Stage 2: the ledger, when the claim also states its token sets.
  if (claim.kept_tokens) {
    if (static_cast<Index>(claim.kept_tokens->size()) != groups) {
      out.verdict = Verdict::violates("token-set", "expected one kept_tokens list per KV group, got " + std::to_string(claim.kept_tokens->size()));
      return out;
    }
    op::PageLedger ledger{1, groups, n, std::vector<std::uint8_t>(static_cast<std::size_t>(groups * n), 0)};
    for (Index g = 0; g < groups; ++g)
      for (Index k : claim.kept_pages[g]) ledger.kept[static_cast<std::size_t>(g * n + k)] = 1;
    std::vector<Positions> sets = *claim.kept_tokens;
    for (auto& s : sets) std::sort(s.begin(), s.end());  // the order of a token set is not a rule; duplicates are
    Verdict v = op::check_page_accounting(ledger, sets, attn.tokens, p.page_size, op::page_token_capacity(attn.tokens, p));
    if (!v.passed()) {
      out.verdict = v;
      return out;
    }
  }
  // Stage 3: per group, the oracle's admissibility, and the mistake that explains a walk it cannot produce.
  for (Index g = 0; g < groups; ++g) {
    Verdict v = admissible_against(refs[static_cast<std::size_t>(g)], attn.tokens, p, claim.kept_pages[g], out.rel_tolerance);
    if (v.passed()) continue;
    const auto rows = group_rows(attn, layer, g, p.group_size);
    v.message = "group " + std::to_string(g) + ": " + v.message + " (kept " + list_text(claim.kept_pages[g]) + ")";
    if (v.rule == "tie-order" || v.rule == "score-order" || v.rule == "reserved" || v.rule == "budget")
      v = name_mistake(rows, p, claim.kept_pages[g], out.rel_tolerance, v);
    out.verdict = v;
    return out;
  }
  out.verdict = Verdict::conforms();
  return out;
}

nlohmann::json page_knobs_json(const PageParams& p) {
  return {{"pooling", op::to_string(p.pooling)},
          {"temperature", paging::temperature_text(p.inverse_temperature)},
          {"entropy_on", op::to_string(p.entropy_on)},
          {"source", op::to_string(p.source)},
          {"page_score", op::to_string(p.page_score)},
          {"sink_pages", op::to_string(p.sink_pages)},
          {"budget_unit", op::to_string(p.budget_unit)},
          {"page_count_rule", op::to_string(p.page_count_rule)},
          {"greedy", op::to_string(p.greedy)}};
}

std::vector<std::vector<Index>> canonical_page_selection(const ScoreTensor& attn, Index layer, const PageParams& p) {
  require_valid(attn, layer, p);
  std::vector<std::vector<Index>> out;
  for (Index g = 0; g < attn.heads / p.group_size; ++g)
    out.push_back(op::page_entrokv_group(group_rows(attn, layer, g, p.group_size), p).kept_pages);
  return out;
}

namespace {
// The optimized selector computes in double: ties within the float64 bound may go either way.
double selector_tolerance(Index tokens, const kvaudit::PageParams& params) {
  return paging::page_score_rel_bound(paging::ScorePrecision::Float64, tokens, params.group_size, params.page_size,
                                      params.inverse_temperature);
}
}  // namespace

GroupComparison compare_group_with_oracle(const op::GroupResult& ref, Index tokens, const kvaudit::PageParams& params,
                                          const std::vector<Index>& claimed) {
  GroupComparison out;
  out.canonical = claimed == ref.kept_pages;
  out.verdict = admissible_against(ref, tokens, params, claimed, selector_tolerance(tokens, params));
  return out;
}

SelectorComparison compare_selector_with_oracle(const ScoreTensor& attn, const kvaudit::PageParams& params, Index max_layers) {
  const paging::PageSelection fast = paging::select_pages(attn, params);
  const Index layers = max_layers < 0 ? attn.layers : std::min(max_layers, attn.layers);
  // The oracle's verdict on every (layer, group), as parallel rows (audit/parallel_rows.h): each writes its own
  // slot; the judging reads them in (layer, group) order, so the result is the same for every thread count.
  std::vector<GroupComparison> outcomes(static_cast<std::size_t>(layers * fast.groups));
  for_each_row(outcomes.size(), [&](std::size_t i) {
    const Index l = static_cast<Index>(i) / fast.groups, g = static_cast<Index>(i) % fast.groups;
    outcomes[i] = compare_group_with_oracle(op::page_entrokv_group(group_rows(attn, l, g, params.group_size), params), attn.tokens, params,
                                            fast.kept_pages(l, g));
  });
  return compare_selector_with_oracle(attn, params, fast, max_layers, outcomes);
}

SelectorComparison compare_selector_with_oracle(const ScoreTensor& attn, const kvaudit::PageParams& params,
                                                const paging::PageSelection& fast, Index max_layers,
                                                const std::vector<GroupComparison>& outcomes) {
  SelectorComparison out;
  const Index budget = op::page_walk_budget(attn.tokens, params);
  if (budget != fast.budget) {
    out.verdict = Verdict::violates("budget", "optimized budget " + std::to_string(fast.budget) + " != exact " + std::to_string(budget));
    return out;
  }
  const std::vector<op::Page> pages = op::page_layout(attn.tokens, params.page_size);
  const Index layers = max_layers < 0 ? attn.layers : std::min(max_layers, attn.layers);
  if (static_cast<Index>(outcomes.size()) != layers * fast.groups)
    throw std::invalid_argument("compare_selector_with_oracle: one outcome per (layer, group) compared expected");
  for (Index l = 0; l < layers; ++l) {
    for (Index g = 0; g < fast.groups; ++g) {
      const std::string where = "layer " + std::to_string(l) + " group " + std::to_string(g);
      const std::vector<Index> claimed = fast.kept_pages(l, g);
      Index from_ledger = 0;
      for (Index p : claimed) from_ledger += pages[p].size();
      if (from_ledger != fast.retained[static_cast<std::size_t>(l * fast.groups + g)]) {
        out.verdict = Verdict::violates("retained", where + ": retained counter disagrees with the ledger");
        out.layer = l;
        return out;
      }
      ++out.groups;
      const GroupComparison& o = outcomes[static_cast<std::size_t>(l * fast.groups + g)];
      if (o.canonical) {
        ++out.canonical;
        continue;
      }
      if (!o.verdict.passed()) {
        out.verdict = Verdict::violates(o.verdict.rule, where + ": " + o.verdict.message);
        out.layer = l;
        return out;
      }
      ++out.tie_admissible;
    }
  }
  std::vector<Positions> sets;
  for (Index l = 0; l < fast.layers; ++l)
    for (Index g = 0; g < fast.groups; ++g) sets.push_back(fast.kept_tokens(l, g));
  Verdict acc = op::check_page_accounting(ledger_of(fast), sets, attn.tokens, params.page_size, op::page_token_capacity(attn.tokens, params));
  out.verdict = acc.passed() ? Verdict::conforms() : acc;
  return out;
}

}  // namespace kvaudit::audit
