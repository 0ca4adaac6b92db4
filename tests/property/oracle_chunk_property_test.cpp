// Properties of the ChunkKV / EG-ChunkKV oracles and the admissibility checker on generated cases
// (audit/selector_cases.h): canonical output admissible, budgets exact, flavours agreeing where the spec says
// so, rescue only in gated chunks, tie swaps admissible, mutants rejected, and the checker equal to a
// brute-force enumeration of every tie order on tiny inputs.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <numeric>
#include <set>

#include <boost/multiprecision/cpp_int.hpp>

#include "audit/selector_cases.h"
#include "oracle/chunk_selection.h"
#include "tests/support/rapidcheck_cases.h"

namespace kvaudit::oracle {
namespace {

using audit::CaseOptions;
using audit::SelectorCase;
using Rational = boost::multiprecision::cpp_rational;

// Case counts: 500 per property unless RC_PARAMS sets max_success (keeps the file under a minute on
// two shared cores; measured figures in the report).
const bool kDefaultParams = kvaudit_test_support::default_case_count(500);

constexpr Index kMaxTokens = 600;  // long contexts: a few hundred chunks are enough to exercise the walk

struct Owned {
  std::vector<float> storage;
  HeadScores view;
  explicit Owned(const SelectorCase& c) : storage(audit::flatten(c)), view(audit::head_scores(c, storage)) {}
};

CaseOptions options(Method m, Flavour f, Index max_tokens = kMaxTokens) {
  CaseOptions o;
  o.method = m;
  o.flavour = f;
  o.max_tokens = max_tokens;
  return o;
}

Index chunk_count(Index tokens, Index c) { return (tokens + c - 1) / c; }

// Kept count per chunk.
std::vector<Index> kept_per_chunk(const Positions& kept, Index tokens, Index c) {
  std::vector<Index> k(static_cast<std::size_t>(chunk_count(tokens, c)), 0);
  for (Index p : kept) ++k[static_cast<std::size_t>(p / c)];
  return k;
}

bool column_equal(const SelectorCase& c, Index a, Index b) {
  for (const auto& row : c.scores)
    if (row[static_cast<std::size_t>(a)] != row[static_cast<std::size_t>(b)]) return false;
  return true;
}

// Exact head sums (clamped when the flavour clamps): the test's own arithmetic, independent of the oracle's.
std::vector<Rational> exact_x(const SelectorCase& c, bool clamp) {
  std::vector<Rational> x(static_cast<std::size_t>(c.tokens()), Rational(0));
  for (const auto& row : c.scores)
    for (std::size_t j = 0; j < row.size(); ++j) x[j] += Rational(static_cast<double>(row[j]));  // float -> double -> rational: exact
  if (clamp)
    for (auto& v : x)
      if (v < 0) v = 0;
  return x;
}

std::vector<Rational> exact_means(const std::vector<Rational>& x, Index c) {
  std::vector<Rational> s;
  for (Index b = 0; b < static_cast<Index>(x.size()); b += c) {
    Index e = std::min<Index>(b + c, static_cast<Index>(x.size()));
    Rational sum = 0;
    for (Index j = b; j < e; ++j) sum += x[static_cast<std::size_t>(j)];
    s.push_back(sum / (e - b));
  }
  return s;
}

bool has_exact_ties(const std::vector<Rational>& v) {
  std::set<Rational> distinct(v.begin(), v.end());
  return distinct.size() < v.size();
}

std::string verdict_text(const Verdict& v) { return std::string(to_string(v.kind)) + " " + v.rule + ": " + v.message; }

void assert_strictly_increasing(const Positions& p) {
  for (std::size_t i = 1; i < p.size(); ++i) RC_ASSERT(p[i - 1] < p[i]);
}

void assert_conforms(const Verdict& v) {
  if (!v.passed()) RC_FAIL(verdict_text(v));
}

}  // namespace

// ---- Canonical selections are admissible, exactly the declared budget, sorted and unique --------------------
RC_GTEST_PROP(OracleChunkProperty, EgKvpressCanonicalIsAdmissible, ()) {
  SelectorCase c = *audit::gen_selector_case(options(Method::EgChunkKV, Flavour::Kvpress));
  Owned s(c);
  Selection sel = eg_chunkkv_select(s.view, c.params);
  RC_ASSERT(sel.kept.size() == 1u);
  RC_ASSERT(static_cast<Index>(sel.kept[0].size()) == std::min(declared_budget(c.tokens(), c.params), c.tokens()));
  assert_strictly_increasing(sel.kept[0]);
  RC_CLASSIFY(has_exact_ties(exact_x(c, false)), "tied head sums");
  RC_CLASSIFY(c.tokens() < c.params.chunk_length, "T < c");
  RC_CLASSIFY(c.tokens() % c.params.chunk_length == 1, "one-token tail");
  RC_TAG(c.kind);
  assert_conforms(check_admissible(s.view, c.params, sel));
}

RC_GTEST_PROP(OracleChunkProperty, EgExactCanonicalIsAdmissibleInBothRoundingModes, ()) {
  SelectorCase c = *audit::gen_selector_case(options(Method::EgChunkKV, Flavour::Exact));
  Owned s(c);
  Selection sel = eg_chunkkv_select(s.view, c.params);
  RC_ASSERT(sel.kept.size() == 1u);
  RC_ASSERT(static_cast<Index>(sel.kept[0].size()) == exact_token_budget(c.tokens(), c.params.ratio.text));
  assert_strictly_increasing(sel.kept[0]);
  RC_CLASSIFY(has_exact_ties(exact_x(c, true)), "tied clamped sums");
  RC_CLASSIFY(c.params.chunk_length == 1, "c = 1");
  RC_CLASSIFY(c.params.rescue_size >= c.params.chunk_length, "r >= c");
  RC_CLASSIFY(c.params.entropy_threshold.has_value(), "fixed threshold");
  RC_TAG(c.kind);
  assert_conforms(check_admissible(s.view, c.params, sel, {Rounding::ExactOnly}));
  assert_conforms(check_admissible(s.view, c.params, sel, {Rounding::Float32Evaluation}));
}

RC_GTEST_PROP(OracleChunkProperty, ChunkKvCanonicalIsAdmissibleWithAChunkBudget, ()) {
  Flavour f = *rc::gen::element(Flavour::Kvpress, Flavour::Exact);
  SelectorCase c = *audit::gen_selector_case(options(Method::ChunkKV, f));
  Owned s(c);
  Selection sel = chunkkv_select(s.view, c.params);
  ChunkKvBudget b = chunkkv_budget(c.tokens(), c.params);
  bool per_head = b.fallback && f == Flavour::Kvpress;
  RC_ASSERT(sel.kept.size() == (per_head ? static_cast<std::size_t>(c.heads()) : 1u));
  for (const auto& k : sel.kept) {
    auto n = static_cast<Index>(k.size());
    RC_ASSERT(n == b.min_tokens || n == b.max_tokens);
    assert_strictly_increasing(k);
  }
  RC_CLASSIFY(b.fallback, "fallback (no complete chunk)");
  RC_CLASSIFY(b.min_tokens != b.max_tokens, "kept tokens depend on the partial chunk");
  RC_CLASSIFY(has_exact_ties(exact_means(exact_x(c, false), c.params.chunk_length)), "tied chunk means");
  assert_conforms(check_admissible(s.view, c.params, sel, {f == Flavour::Exact ? Rounding::ExactOnly : Rounding::Float32Evaluation}));
}

// ---- The flavours agree where docs/specification.md says they do: non-negative scores, r < c, median tau -----------------------
RC_GTEST_PROP(OracleChunkProperty, FlavoursAgreeOnNonNegativeScoresUpToTheBudgetRule, ()) {
  Method m = *rc::gen::element(Method::EgChunkKV, Method::ChunkKV);
  CaseOptions o = options(m, Flavour::Kvpress);
  o.non_negative = true;
  SelectorCase c = *audit::gen_selector_case(o);
  Owned s(c);
  SelectorParams exact = c.params;
  exact.flavour = Flavour::Exact;
  Selection kv = select(s.view, c.params), ex = select(s.view, exact);
  bool same_budget = m == Method::EgChunkKV
                         ? declared_budget(c.tokens(), c.params) == declared_budget(c.tokens(), exact)
                         : chunkkv_budget(c.tokens(), c.params).chunks_kept == chunkkv_budget(c.tokens(), exact).chunks_kept &&
                               chunkkv_budget(c.tokens(), c.params).fallback_tokens == chunkkv_budget(c.tokens(), exact).fallback_tokens;
  bool per_head_fallback = m == Method::ChunkKV && chunkkv_budget(c.tokens(), c.params).fallback && c.heads() > 1;
  RC_CLASSIFY(!same_budget, "float and exact budgets differ");
  RC_CLASSIFY(per_head_fallback, "per-head fallback (flavours differ by design)");
  if (per_head_fallback) return;  // kvpress keeps per-head sets there, the exact flavour one shared set
  if (!same_budget) {
    Verdict v = check_admissible(s.view, exact, kv);
    RC_ASSERT(v.kind == VerdictKind::Violates);
    RC_ASSERT(v.rule == "budget");
    return;
  }
  RC_CLASSIFY(kv.kept == ex.kept, "identical canonical selections");
  assert_conforms(check_admissible(s.view, exact, kv));
  assert_conforms(check_admissible(s.view, c.params, ex));
}

// ---- Rescue only in important-and-spiky chunks -------------------------------------------------------------
RC_GTEST_PROP(OracleChunkProperty, OnlyTheLastVisitedChunkIsCutWithoutBeingGated, ()) {
  Flavour f = *rc::gen::element(Flavour::Kvpress, Flavour::Exact);
  SelectorCase c = *audit::gen_selector_case(options(Method::EgChunkKV, f));
  Owned s(c);
  Selection sel = eg_chunkkv_select(s.view, c.params);
  auto stats = eg_chunk_statistics(s.view, c.params);
  auto k = kept_per_chunk(sel.kept[0], c.tokens(), c.params.chunk_length);
  std::vector<std::size_t> cut_plain;
  bool rescued = false;
  for (std::size_t i = 0; i < stats.size(); ++i) {
    Index n = stats[i].end - stats[i].begin;
    bool gated = stats[i].important && stats[i].spiky;
    if (k[i] > 0 && k[i] < n && !gated) cut_plain.push_back(i);
    rescued |= gated && k[i] > 0 && k[i] < n;
  }
  RC_CLASSIFY(rescued, "a gated chunk was cut");
  RC_ASSERT(cut_plain.size() <= 1u);
  if (cut_plain.size() == 1) {
    // ... and it is where the budget ran out: no visited chunk scores strictly below it.
    double s_cut = stats[cut_plain[0]].score;
    for (std::size_t i = 0; i < stats.size(); ++i)
      if (k[i] > 0) RC_ASSERT(stats[i].score >= s_cut);
  }
}

// ---- Threshold 0 turns EG-ChunkKV into whole-chunk retention under its budget ------------------------------
RC_GTEST_PROP(OracleChunkProperty, ThresholdZeroIsWholeChunkRetention, ()) {
  SelectorCase c = *audit::gen_selector_case(options(Method::EgChunkKV, Flavour::Exact));
  c.params.entropy_threshold = 0.0;
  Owned s(c);
  // Straightforward reimplementation: exact rational means, chunks in (mean desc, index asc), whole chunks
  // until the budget runs out, the last one cut to its top (value desc, index asc).
  Index T = c.tokens(), C = c.params.chunk_length, L = exact_token_budget(T, c.params.ratio.text);
  std::vector<Rational> x = exact_x(c, true), means = exact_means(x, C);
  std::vector<Index> order(means.size());
  std::iota(order.begin(), order.end(), Index{0});
  std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) { return means[a] > means[b]; });
  std::vector<bool> keep(static_cast<std::size_t>(T), L >= T);
  Index b = L >= T ? 0 : L;
  for (Index i : order) {
    if (b == 0) break;
    std::vector<Index> pos;
    for (Index j = i * C; j < std::min(T, (i + 1) * C); ++j) pos.push_back(j);
    std::stable_sort(pos.begin(), pos.end(), [&](Index p, Index q) { return x[p] > x[q]; });
    Index take = std::min<Index>(b, static_cast<Index>(pos.size()));
    for (Index t = 0; t < take; ++t) keep[static_cast<std::size_t>(pos[t])] = true;
    b -= take;
  }
  Positions expected;
  for (Index j = 0; j < T; ++j)
    if (keep[static_cast<std::size_t>(j)]) expected.push_back(j);
  RC_CLASSIFY(has_exact_ties(means), "tied chunk means");
  RC_ASSERT(eg_chunkkv_select(s.view, c.params).kept == std::vector<Positions>{expected});
}

// ---- Ties: trading places between identical positions / chunks keeps a selection admissible ----------------
RC_GTEST_PROP(OracleChunkProperty, SwappingTiedPositionsInsideAChunkStaysAdmissible, ()) {
  Flavour f = *rc::gen::element(Flavour::Kvpress, Flavour::Exact);
  SelectorCase c = *audit::gen_selector_case(options(Method::EgChunkKV, f));
  Owned s(c);
  Selection sel = eg_chunkkv_select(s.view, c.params);
  std::vector<bool> keep(static_cast<std::size_t>(c.tokens()), false);
  for (Index p : sel.kept[0]) keep[static_cast<std::size_t>(p)] = true;
  Index C = c.params.chunk_length, swaps = 0;
  for (Index p = 0; p < c.tokens() && swaps < 4; ++p) {
    if (!keep[static_cast<std::size_t>(p)]) continue;
    for (Index q = (p / C) * C; q < std::min(c.tokens(), (p / C + 1) * C); ++q) {
      if (keep[static_cast<std::size_t>(q)] || !column_equal(c, p, q)) continue;
      keep[static_cast<std::size_t>(p)] = false;  // p and q trade roles: every head's score is identical
      keep[static_cast<std::size_t>(q)] = true;
      ++swaps;
      break;
    }
  }
  RC_CLASSIFY(swaps > 0, "tied positions swapped");
  Positions swapped;
  for (Index j = 0; j < c.tokens(); ++j)
    if (keep[static_cast<std::size_t>(j)]) swapped.push_back(j);
  assert_conforms(check_admissible(s.view, c.params, Selection{{swapped}},
                                   {f == Flavour::Exact ? Rounding::ExactOnly : Rounding::Float32Evaluation}));
}

RC_GTEST_PROP(OracleChunkProperty, SwappingIdenticalChunksStaysAdmissible, ()) {
  Flavour f = *rc::gen::element(Flavour::Kvpress, Flavour::Exact);
  SelectorCase c = *audit::gen_selector_case(options(Method::ChunkKV, f));
  Owned s(c);
  ChunkKvBudget b = chunkkv_budget(c.tokens(), c.params);
  RC_PRE(!b.fallback);
  Selection sel = chunkkv_select(s.view, c.params);
  Index C = c.params.chunk_length, T = c.tokens();
  auto k = kept_per_chunk(sel.kept[0], T, C);
  // Swap one kept complete chunk with a dropped complete chunk holding the same columns in the same order.
  auto same_chunk = [&](Index a, Index d) {
    for (Index t = 0; t < C; ++t)
      if (!column_equal(c, a * C + t, d * C + t)) return false;
    return true;
  };
  Index complete = T / C;
  bool swapped = false;
  for (Index a = 0; a < complete && !swapped; ++a)
    for (Index d = 0; d < complete && !swapped; ++d)
      if (k[a] > 0 && k[d] == 0 && same_chunk(a, d)) {
        k[a] = 0;
        k[d] = C;
        swapped = true;
      }
  RC_CLASSIFY(swapped, "identical chunks swapped");
  Positions kept;
  for (Index j = 0; j < T; ++j)
    if (k[static_cast<std::size_t>(j / C)] > 0) kept.push_back(j);
  assert_conforms(check_admissible(s.view, c.params, Selection{{kept}},
                                   {f == Flavour::Exact ? Rounding::ExactOnly : Rounding::Float32Evaluation}));
}

// ---- Mutants: trading a kept position for a strictly weaker dropped one is rejected -------------------------
RC_GTEST_PROP(OracleChunkProperty, EgMutantInsideACutChunkIsRejected, ()) {
  Flavour f = *rc::gen::element(Flavour::Kvpress, Flavour::Exact);
  SelectorCase c = *audit::gen_selector_case(options(Method::EgChunkKV, f));
  Owned s(c);
  Selection sel = eg_chunkkv_select(s.view, c.params);
  auto x = token_value_intervals(s.view, c.params);
  std::vector<bool> keep(static_cast<std::size_t>(c.tokens()), false);
  for (Index p : sel.kept[0]) keep[static_cast<std::size_t>(p)] = true;
  Index C = c.params.chunk_length;
  Index from = -1, to = -1;
  for (Index p = 0; p < c.tokens() && from < 0; ++p) {
    if (!keep[static_cast<std::size_t>(p)]) continue;
    for (Index q = (p / C) * C; q < std::min(c.tokens(), (p / C + 1) * C); ++q)
      if (!keep[static_cast<std::size_t>(q)] && x[static_cast<std::size_t>(p)].lo > x[static_cast<std::size_t>(q)].hi) {
        from = p;
        to = q;
        break;
      }
  }
  RC_CLASSIFY(from >= 0, "mutant built");
  if (from < 0) return;  // no strictly ordered kept/dropped pair inside one chunk
  keep[static_cast<std::size_t>(from)] = false;
  keep[static_cast<std::size_t>(to)] = true;
  Positions mutant;
  for (Index j = 0; j < c.tokens(); ++j)
    if (keep[static_cast<std::size_t>(j)]) mutant.push_back(j);
  Verdict v = check_admissible(s.view, c.params, Selection{{mutant}});
  RC_ASSERT(v.kind == VerdictKind::Violates);
  RC_ASSERT(v.rule == "token-choice");
}

RC_GTEST_PROP(OracleChunkProperty, ChunkKvMutantIsRejected, ()) {
  Flavour f = *rc::gen::element(Flavour::Kvpress, Flavour::Exact);
  SelectorCase c = *audit::gen_selector_case(options(Method::ChunkKV, f));
  Owned s(c);
  Selection sel = chunkkv_select(s.view, c.params);
  ChunkKvBudget b = chunkkv_budget(c.tokens(), c.params);
  Index T = c.tokens(), C = c.params.chunk_length;
  if (b.fallback) {  // top-k of head 0's own scores (kvpress) or of the head sums (exact): strictly lower swap
    auto x = token_value_intervals(s.view, c.params);
    auto strictly_above = [&](Index p, Index q) {
      return f == Flavour::Kvpress ? c.scores[0][p] > c.scores[0][q] : x[static_cast<std::size_t>(p)].lo > x[static_cast<std::size_t>(q)].hi;
    };
    Positions k0 = sel.kept[0];
    std::set<Index> kept(k0.begin(), k0.end());
    for (Index p : k0)
      for (Index q = 0; q < T; ++q)
        if (!kept.count(q) && strictly_above(p, q)) {
          kept.erase(p);
          kept.insert(q);
          Selection mutant = sel;
          mutant.kept[0] = Positions(kept.begin(), kept.end());
          Verdict v = check_admissible(s.view, c.params, mutant);
          RC_TAG("fallback mutant");
          RC_ASSERT(v.kind == VerdictKind::Violates);
          RC_ASSERT(v.rule == "token-choice");
          return;
        }
    RC_TAG("no mutant");
    return;
  }
  if (C < 2 || static_cast<Index>(sel.kept[0].size()) == T) {
    RC_TAG("no mutant");
    return;
  }
  // Trade the first kept position for the first dropped one: both chunks become partial (length >= 2).
  std::set<Index> kept(sel.kept[0].begin(), sel.kept[0].end());
  Index p = sel.kept[0][0], q = 0;
  while (kept.count(q)) ++q;
  if (std::min(T, (p / C + 1) * C) - (p / C) * C < 2 || std::min(T, (q / C + 1) * C) - (q / C) * C < 2) {
    RC_TAG("no mutant");
    return;
  }
  kept.erase(p);
  kept.insert(q);
  Verdict v = check_admissible(s.view, c.params, Selection{{Positions(kept.begin(), kept.end())}});
  RC_TAG("chunk mutant");
  RC_ASSERT(v.kind == VerdictKind::Violates);
  RC_ASSERT(v.rule == "whole-chunk" || v.rule == "boundary");
}

// ---- The checker equals brute force over every tie order on tiny inputs (exact flavour, exact ties) ---------
// All orders of `values` descending with ties permuted, or empty if there are more than `cap`.
std::vector<std::vector<Index>> tie_orders(const std::vector<Rational>& values, std::size_t cap) {
  std::vector<Index> base(values.size());
  std::iota(base.begin(), base.end(), Index{0});
  std::stable_sort(base.begin(), base.end(), [&](Index a, Index b) { return values[a] > values[b]; });
  std::vector<std::pair<std::size_t, std::size_t>> groups;  // [begin, end) in `base` of equal values
  for (std::size_t i = 0; i < base.size();) {
    std::size_t j = i;
    while (j < base.size() && values[base[j]] == values[base[i]]) ++j;
    groups.push_back({i, j});
    i = j;
  }
  std::vector<std::vector<Index>> out{base};
  for (auto [gb, ge] : groups) {
    std::vector<std::vector<Index>> next;
    for (const auto& o : out) {
      std::vector<Index> perm = o;
      std::sort(perm.begin() + static_cast<long>(gb), perm.begin() + static_cast<long>(ge));
      do {
        next.push_back(perm);
        if (next.size() > cap) return {};
      } while (std::next_permutation(perm.begin() + static_cast<long>(gb), perm.begin() + static_cast<long>(ge)));
    }
    out = std::move(next);
  }
  return out;
}

RC_GTEST_PROP(OracleChunkProperty, CheckerEqualsBruteForceOverTieOrders, ()) {
  Method m = *rc::gen::element(Method::EgChunkKV, Method::ChunkKV);
  CaseOptions o = options(m, Flavour::Exact, /*max_tokens=*/7);
  o.max_heads = 2;
  SelectorCase c = *audit::gen_selector_case(o);
  Owned s(c);
  Index T = c.tokens(), C = c.params.chunk_length, r = c.params.rescue_size;
  std::vector<Rational> x = exact_x(c, m == Method::EgChunkKV), means = exact_means(x, C);
  auto chunk_orders = tie_orders(means, 2000), token_orders = tie_orders(x, 2000);
  RC_CLASSIFY(chunk_orders.size() * token_orders.size() > 1, "several tie orders");
  if (chunk_orders.empty() || token_orders.empty() || chunk_orders.size() * token_orders.size() > 20000) {
    RC_TAG("too many tie orders to enumerate");
    return;
  }
  std::vector<ChunkStat> stats;
  if (m == Method::EgChunkKV) stats = eg_chunk_statistics(s.view, c.params);
  ChunkKvBudget cb = chunkkv_budget(T, c.params);
  Index L = m == Method::EgChunkKV ? exact_token_budget(T, c.params.ratio.text) : cb.max_tokens;
  std::set<Positions> reachable;
  for (const auto& chunk_order : chunk_orders) {
    for (const auto& token_order : token_orders) {
      std::vector<Index> rank(static_cast<std::size_t>(T));
      for (std::size_t i = 0; i < token_order.size(); ++i) rank[static_cast<std::size_t>(token_order[i])] = static_cast<Index>(i);
      auto top = [&](std::vector<Index> pos, Index k) {
        std::sort(pos.begin(), pos.end(), [&](Index a, Index b) { return rank[a] < rank[b]; });
        pos.resize(static_cast<std::size_t>(std::min<Index>(k, static_cast<Index>(pos.size()))));
        return pos;
      };
      std::vector<bool> keep(static_cast<std::size_t>(T), false);
      if (m == Method::ChunkKV) {
        if (!cb.fallback && cb.chunks_kept == cb.chunks_total) {
          std::fill(keep.begin(), keep.end(), true);
        } else if (cb.fallback) {
          std::vector<Index> all(static_cast<std::size_t>(T));
          std::iota(all.begin(), all.end(), Index{0});
          for (Index p : top(all, cb.fallback_tokens)) keep[static_cast<std::size_t>(p)] = true;
        } else {
          for (Index i = 0; i < cb.chunks_kept; ++i)
            for (Index j = chunk_order[i] * C; j < std::min(T, (chunk_order[i] + 1) * C); ++j) keep[static_cast<std::size_t>(j)] = true;
        }
      } else if (L >= T) {
        std::fill(keep.begin(), keep.end(), true);
      } else {
        Index b = L;
        for (Index i : chunk_order) {
          if (b <= 0) break;
          std::vector<Index> pos;
          for (Index j = i * C; j < std::min(T, (i + 1) * C); ++j) pos.push_back(j);
          Index n_kept = std::min<Index>(static_cast<Index>(pos.size()), b);
          if (stats[i].important && stats[i].spiky) n_kept = std::min(n_kept, r);
          for (Index p : top(pos, n_kept)) keep[static_cast<std::size_t>(p)] = true;
          b -= n_kept;
        }
        if (b > 0) {
          std::vector<Index> left;
          for (Index j = 0; j < T; ++j)
            if (!keep[static_cast<std::size_t>(j)]) left.push_back(j);
          for (Index p : top(left, b)) keep[static_cast<std::size_t>(p)] = true;
        }
      }
      Positions out;
      for (Index j = 0; j < T; ++j)
        if (keep[static_cast<std::size_t>(j)]) out.push_back(j);
      reachable.insert(out);
    }
  }
  RC_CLASSIFY(reachable.size() > 1, "several admissible selections");
  // Every subset of every size the budget allows: admissible under exact ties iff some tie order produces it.
  std::vector<Index> sizes = m == Method::EgChunkKV ? std::vector<Index>{std::min(L, T)}
                                                    : std::vector<Index>{cb.min_tokens, cb.max_tokens};
  for (Index size : std::set<Index>(sizes.begin(), sizes.end())) {
    for (unsigned mask = 0; mask < (1u << T); ++mask) {
      if (static_cast<Index>(__builtin_popcount(mask)) != size) continue;
      Positions subset;
      for (Index j = 0; j < T; ++j)
        if (mask & (1u << j)) subset.push_back(j);
      Verdict exact = check_admissible(s.view, c.params, Selection{{subset}}, {Rounding::ExactOnly});
      bool in = reachable.count(subset) > 0;
      if (exact.passed() != in) RC_FAIL("subset " + std::to_string(mask) + (in ? " reachable but " : " unreachable but ") + verdict_text(exact));
      if (in) assert_conforms(check_admissible(s.view, c.params, Selection{{subset}}, {Rounding::Float32Evaluation}));
    }
  }
}

}  // namespace kvaudit::oracle
