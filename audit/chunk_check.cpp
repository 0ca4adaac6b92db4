// The one chunk checker (see chunk_check.h): the oracle's admissibility, then the known mistake that explains a
// violation, each mistake a what-if judgement by the same admissibility check.
#include "audit/chunk_check.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "audit/conform/conform_case.h"
#include "oracle/chunk_selection.h"

namespace kvaudit::audit {

using conform::ConformCase;

namespace {

// A shared list and H identical per-head lists describe the same cache; the oracle expects per-head lists
// exactly where kvpress keeps per-head sets (ChunkKV's fallback with no complete chunk) and one list
// elsewhere. Convert between the two forms only when they mean the same thing, so an implementation is
// free to always send one form; lists that differ are never merged.
Selection normalize_form(Selection s, const ConformCase& c) {
  bool per_head_expected = false;
  if (c.params.method == Method::ChunkKV && c.params.flavour == Flavour::Kvpress && c.tokens >= 1 &&
      c.params.chunk_length >= 1 && !c.params.ratio.text.empty()) {
    try {
      per_head_expected = oracle::chunkkv_budget(c.tokens, c.params).fallback;
    } catch (const std::invalid_argument&) {
      return s;  // invalid case: check_admissible says so
    }
  }
  if (per_head_expected && s.kept.size() == 1 && c.heads > 1) {
    s.kept.assign(static_cast<std::size_t>(c.heads), s.kept[0]);
  } else if (!per_head_expected && s.kept.size() > 1 &&
             std::all_of(s.kept.begin(), s.kept.end(), [&](const Positions& p) { return p == s.kept[0]; })) {
    s.kept.resize(1);
  }
  return s;
}

// `s` in the form a check expects: one shared list (H identical lists collapsed) or H per-head lists (a shared
// list repeated).
Selection in_form(Selection s, bool per_head, Index heads) {
  if (per_head && s.kept.size() == 1 && heads > 1) {
    s.kept.assign(static_cast<std::size_t>(heads), s.kept[0]);
  } else if (!per_head && s.kept.size() > 1 &&
             std::all_of(s.kept.begin(), s.kept.end(), [&](const Positions& p) { return p == s.kept[0]; })) {
    s.kept.resize(1);
  }
  return s;
}

// A violation explained by a known wrong walk, named after it. Each mistake is a what-if judgement by the
// oracle's own admissibility check (oracle::AdmissibilityOptions, or a transformed case): the answer is named
// only when it is admissible under the mistake, ties and float32 rounding included, never by comparing it
// with one canonical wrong answer. Every mistake that explains the answer is listed; the rule is the first one's,
// in the order below (specific walks first, the generic off-by-one budget last: small cases can fit several).
Verdict name_chunk_mistake(const ConformCase& c, const Selection& answer, Verdict v) {
  if (v.rule == "range" || v.rule == "unique" || v.rule == "order") return v;  // rules of their own
  const auto& p = c.params;
  const HeadScores scores = c.view();
  const bool chunkkv = p.method == Method::ChunkKV;
  oracle::ChunkKvBudget cb;
  try {
    if (chunkkv) cb = oracle::chunkkv_budget(c.tokens, p);
  } catch (const std::invalid_argument&) {
    return v;
  }
  std::string rule, explained;
  auto consider = [&](const char* name, const std::string& what, const HeadScores& s, const SelectorParams& q,
                      const oracle::AdmissibilityOptions& o, const Selection& a) {
    bool ok = false;
    try {
      ok = oracle::check_admissible(s, q, a, o).passed();
    } catch (const std::invalid_argument&) {
      ok = false;
    }
    if (!ok) return;
    if (rule.empty()) rule = name;
    explained += (explained.empty() ? "" : ", or ") + what;
  };
  const bool per_head_now = chunkkv && cb.fallback && p.flavour == Flavour::Kvpress;
  const Selection as_is = in_form(answer, per_head_now, c.heads);
  const oracle::AdmissibilityOptions spec;
  // Budget mistakes: the other flavour's rule here, one more or one fewer (tokens, or ChunkKV's chunks) last of all,
  // as the most generic explanation (a walk without the partial chunk keeps one chunk fewer too).
  const bool zero = p.ratio.value == 0.0;
  const Index n = !chunkkv || cb.fallback ? c.tokens : cb.chunks_total;
  Index b = 0;
  try {
    b = !chunkkv ? std::min(oracle::declared_budget(c.tokens, p), c.tokens) : (cb.fallback ? cb.fallback_tokens : cb.chunks_kept);
  } catch (const std::invalid_argument&) {
    return v;
  }
  const std::string unit = chunkkv && !cb.fallback ? " chunks" : " tokens";
  auto with_budget = [&](Index budget) {
    oracle::AdmissibilityOptions o;
    o.budget = budget;
    return o;
  };
  if (!zero) {
    const Index as_float = oracle::kvpress_token_budget(n, p.ratio.value);
    const Index as_exact = oracle::exact_token_budget(n, p.ratio.text);
    if (p.flavour == Flavour::Exact && as_float != b)
      consider("float-budget", "kvpress's float budget int(N (1 - rho)) = " + std::to_string(as_float) + unit +
                                   " of N = " + std::to_string(n) + " (the exact budget is " + std::to_string(b) + ")",
               scores, p, with_budget(as_float), as_is);
    if (p.flavour == Flavour::Kvpress && as_exact != b)
      consider("exact-budget", "the exact budget floor((1 - rho) N) = " + std::to_string(as_exact) + unit + " of N = " +
                                   std::to_string(n) + " (kvpress's float budget is " + std::to_string(b) + ")",
               scores, p, with_budget(as_exact), as_is);
  }
  // ChunkKV with no complete chunk: the other fallback form.
  if (chunkkv && cb.fallback && !zero) {
    oracle::AdmissibilityOptions o;
    o.per_head_fallback = !per_head_now;
    if (per_head_now)
      consider("shared-selection", "one head-summed top-" + std::to_string(cb.fallback_tokens) +
                                       " shared by every head (kvpress's fallback keeps each head's own top-k)",
               scores, p, o, in_form(answer, false, c.heads));
    else if (answer.kept.size() > 1)
      consider("per-head-selection", "each head's own top-" + std::to_string(cb.fallback_tokens) +
                                         " (kvpress's per-head fallback) where one selection is shared by every head",
               scores, p, o, in_form(answer, true, c.heads));
  }
  // ChunkKV without its trailing partial chunk: the walk over the complete chunks only (a prefix case).
  const Index complete = p.chunk_length >= 1 ? c.tokens / p.chunk_length * p.chunk_length : 0;
  if (chunkkv && !zero && complete >= 1 && complete < c.tokens && !cb.fallback && as_is.kept.size() == 1 &&
      std::all_of(as_is.kept[0].begin(), as_is.kept[0].end(), [&](Index t) { return t < complete; })) {
    ConformCase cut = c.prefix(complete);
    consider("no-partial-chunk", "a walk without the trailing partial chunk [" + std::to_string(complete) + ", " +
                                     std::to_string(c.tokens) + ") (chunks over the complete ones only)",
             cut.view(), p, spec, as_is);
  }
  // Head aggregation: the maximum over heads, or head 0 alone, instead of the sum.
  if (c.heads > 1 && !per_head_now) {
    std::vector<float> max_row(static_cast<std::size_t>(c.tokens)), first_row(c.values.begin(), c.values.begin() + c.tokens);
    for (Index t = 0; t < c.tokens; ++t) {
      float m = c.values[static_cast<std::size_t>(t)];
      for (Index h = 1; h < c.heads; ++h) m = std::max(m, c.values[static_cast<std::size_t>(h * c.tokens + t)]);
      max_row[static_cast<std::size_t>(t)] = m;
    }
    consider("heads-max", "scores reduced by the maximum over the heads instead of their sum",
             HeadScores{1, c.tokens, max_row}, p, spec, as_is);
    consider("heads-first", "the first head's scores alone instead of the sum over heads",
             HeadScores{1, c.tokens, first_row}, p, spec, as_is);
  }
  // EG-ChunkKV: the mean of the two middles where torch's lower median is the rule.
  if (!chunkkv && p.median == MedianRule::Lower && !zero) {
    SelectorParams q = p;
    q.median = MedianRule::MeanOfMiddles;
    oracle::AdmissibilityOptions o;
    o.any_median = true;
    consider("median-mean", "medians taken as the mean of the two middle values (torch.median keeps the lower one)",
             scores, q, o, as_is);
  }
  if (!zero)
    for (Index d : {Index{1}, Index{-1}})
      if (b + d >= 1 && b + d <= n)
        consider("budget-off-by-one", "a budget off by one: " + std::to_string(b + d) + unit + " (the budget is " +
                                          std::to_string(b) + ")",
                 scores, p, with_budget(b + d), as_is);
  if (rule.empty()) return v;
  return Verdict::violates(rule, v.message + "; the answer is what " + explained + " keeps");
}


ConformCase case_of(const HeadScores& scores, const SelectorParams& params) {
  ConformCase c;
  c.heads = scores.heads;
  c.tokens = scores.tokens;
  c.values.assign(scores.values.begin(), scores.values.end());
  c.params = params;
  return c;
}

}  // namespace

Selection normalize_chunk_claim(Selection claim, const HeadScores& scores, const SelectorParams& params) {
  return normalize_form(std::move(claim), case_of(scores, params));
}

Verdict check_chunk_claim(const HeadScores& scores, const SelectorParams& params, const Selection& claim,
                          const ChunkClaimOptions& options) {
  const ConformCase c = case_of(scores, params);
  const Selection answer = normalize_form(claim, c);
  // Equal to the canonical selection is a sound reason to conform (it is a spec output), tested first or, where
  // the admissibility procedure cannot decide (a float32 evaluation that may overflow), last.
  bool canonical_known = false;
  if (options.equals_canonical) *options.equals_canonical = false;
  auto is_canonical = [&] {
    std::optional<Selection> canonical;
    try {
      canonical = oracle::select(scores, params);
    } catch (const std::invalid_argument&) {
      // Parameters or scores the flavour rejects: the admissibility check says which (Unsupported).
    }
    canonical_known = true;
    const bool equal = canonical && canonical->kept == answer.kept;
    if (options.canonical) *options.canonical = std::move(canonical);
    if (options.equals_canonical) *options.equals_canonical = equal;
    return equal;
  };
  if (options.canonical_first.value_or(params.flavour == Flavour::Kvpress) && is_canonical()) return Verdict::conforms();
  oracle::AdmissibilityOptions admissibility;
  admissibility.counts = options.counts;
  Verdict v = oracle::check_admissible(scores, params, answer, admissibility);
  if (v.kind == VerdictKind::Inconclusive && !canonical_known && is_canonical()) return Verdict::conforms();
  if (v.kind == VerdictKind::Violates) v = name_chunk_mistake(c, answer, std::move(v));
  return v;
}

}  // namespace kvaudit::audit
