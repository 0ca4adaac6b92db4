// Reference Page-EntroKV (docs/specification.md section 5): sink isolation, Renyi-2 head weights, pooled scores, pages,
// page selection within the exact token budget, the page ledger, exact page accounting and the
// admissibility of a claimed page selection. Naive, one function per definition, exact rationals (GMP).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <boost/multiprecision/gmp.hpp>

#include "core/types.h"
#include "core/verdict.h"
#include "oracle/page_params.h"

namespace kvaudit::oracle::paging {

// Every float input is an exact binary fraction, so every quantity below is an exact rational.
using Exact = boost::multiprecision::mpq_rational;

using Integer = boost::multiprecision::mpz_int;

// Rationals n_t / d over one positive denominator d, left unreduced: the form the oracle's rows, collision sums and
// pooled scores are computed in. GMP reduces every rational sum and product by a gcd; over one denominator a sum of
// T terms is T integer additions (a 16k-token row's rationals were most of the oracle's time). row[t] is the
// reduced rational n_t / d.
struct ScaledRow {
  std::vector<Integer> numerators;
  Integer denominator{1};
  ScaledRow() = default;
  ScaledRow(std::vector<Integer> n, Integer d);      // d != 0; a negative d is moved into the numerators
  ScaledRow(const std::vector<Exact>& values);       // over the lcm of their denominators
  std::size_t size() const { return numerators.size(); }
  Exact operator[](std::size_t t) const { return Exact(numerators[t], denominator); }
  std::vector<Exact> values() const;
};

// ---- Budget --------------------------------------------------------------------------------------------
// max(1, floor((1 - rho) T)) with rho read exactly from its decimal text ("0.95" is 19/20).
// Throws std::invalid_argument for text that is not a plain decimal in [0, 1).
Index page_token_budget(Index tokens, const std::string& rho_text);

// The page count K of BudgetUnit::Pages: Paper floor((1 - rho) T / P) (may be 0), EntroPrefill
// max(1, floor((1 - rho) ceil(T / P))), exact rationals.
Index page_count_budget(Index tokens, Index page_size, const std::string& rho_text, PageCountRule rule);

// The walk's budget in params.budget_unit: page_token_budget (tokens) or page_count_budget (pages).
Index page_walk_budget(Index tokens, const PageParams& params);

// The most tokens a selection may retain: the token budget, or min(T, K P) for a page count.
Index page_token_capacity(Index tokens, const PageParams& params);

// ---- Heads ---------------------------------------------------------------------------------------------
// p~(t) = p(t) / sum_{u >= n_sink} p(u) for t >= n_sink, and 0 on the sinks. nullopt when the non-sink mass
// is zero (no position beyond the sinks, or all of it 0): p~ does not exist.
// Throws std::invalid_argument for a value that is not finite.
std::optional<ScaledRow> sink_isolate(std::span<const float> p, Index n_sink);

// The raw row as exact rationals (PoolSource::Raw, and H2 "without sink isolation").
ScaledRow exact_row(std::span<const float> p);

// sum_t q(t)^2 = exp(-H2(q)): the collision probability, the unnormalized entropy weight.
Exact collision_probability(const ScaledRow& q);

// H2(q) = -log sum_t q(t)^2, for reporting only (the selection never needs the log: w ∝ exp(-H2)).
double renyi2_entropy(const Exact& collision);

// Weights of the G heads of one group. Entropy: w_h = c_h^k / sum_g c_g^k, k = 1/tau (exp(-H2/tau) = c^(1/tau)),
// with c_h the collision probability of the head's entropy row (p~_h, or the raw p_h under EntropySource::Raw)
// and c_h = 0 for a head without p~ (it says nothing about non-sink positions); if every c is 0 the weights
// fall back to 1/G. Mean: w_h = 1/G.
std::vector<Exact> group_weights(const std::vector<std::optional<ScaledRow>>& entropy_rows, PagePooling pooling,
                                 Index inverse_temperature = 1);

// d_h of every head: the pooling source params.source names (p~_h, 0 where p~_h does not exist, or the raw p_h).
std::vector<ScaledRow> pooling_sources(const std::vector<std::span<const float>>& rows, const PageParams& params);

// s(t) = sum_h w_h d_h(t), d_h = p~_h (0 where p~_h does not exist) or the raw p_h.
ScaledRow pooled_scores(const std::vector<ScaledRow>& sources, const std::vector<Exact>& weights);

// ---- Pages ---------------------------------------------------------------------------------------------
struct Page {
  Index begin = 0;  // first position
  Index end = 0;    // one past the last; end - begin == P except for a partial last page
  Index size() const { return end - begin; }
};

// ceil(T / P) pages [kP, min((k+1)P, T)). Throws std::invalid_argument if P < 1.
std::vector<Page> page_layout(Index tokens, Index page_size);

// Sum or max of the scores over each page's positions.
std::vector<Exact> page_scores(const ScaledRow& token_scores, const std::vector<Page>& pages, PageScore kind);

// What each page costs the walk: the pages themselves (tokens), or one unit per page ([k, k + 1): pages).
std::vector<Page> walk_costs(const std::vector<Page>& pages, BudgetUnit unit);

// Pages holding a sink position (begin < n_sink) when SinkPages::Reserved; none when Scored.
std::vector<bool> reserved_pages(const std::vector<Page>& pages, Index n_sink, SinkPages policy);

// The walk: reserved pages in index order, then the others by (score desc, page index asc); a page is kept
// if the retained count plus its size stays <= budget; on a misfit SkipMisfits goes on, StopAtFirstMisfit
// stops. Returns the kept page indices in increasing order.
std::vector<Index> select_pages(const std::vector<Exact>& scores, const std::vector<Page>& pages,
                                const std::vector<bool>& reserved, Index budget, GreedyRule rule);

// ---- One group, one layer ------------------------------------------------------------------------------
struct GroupResult {
  std::vector<Exact> weights;        // w_h, h = 0..G-1 within the group
  ScaledRow token_scores;            // s(t)
  std::vector<Exact> page_scores;    // per page
  std::vector<bool> reserved;        // per page
  Index budget = 0;                  // the walk's budget in params.budget_unit
  std::vector<Index> kept_pages;     // increasing
  Positions kept_tokens;             // the union of the kept pages' positions, increasing
};

// `rows` are the G query-head distributions of one KV group at one layer, each of length T.
GroupResult page_entrokv_group(const std::vector<std::span<const float>>& rows, const PageParams& params);

// ---- All layers and groups: the page ledger --------------------------------------------------------------
// One entry per (layer, KV group, page) tuple: whether the engine keeps that page frame.
struct PageLedger {
  Index layers = 0, groups = 0, pages = 0;
  std::vector<std::uint8_t> kept;  // row-major (layers, groups, pages)
  bool at(Index l, Index g, Index p) const { return kept[static_cast<std::size_t>((l * groups + g) * pages + p)] != 0; }
  Index kept_total() const;  // number of kept tuples: the page frames the engine stores
};

struct PagedSelection {
  Index tokens = 0, page_size = 0, budget = 0;  // budget: page_token_capacity
  PageLedger ledger;
  std::vector<Positions> kept_tokens;  // per (layer, group), row-major: the selected token sets
  std::vector<GroupResult> groups;     // per (layer, group), row-major
};

// attn is (layers, q_heads, T); q_heads must be a multiple of params.group_size (else std::invalid_argument).
PagedSelection page_entrokv(const ScoreTensor& attn, const PageParams& params);

// ---- Exact page accounting -------------------------------------------------------------------------------
// Counts pages and retained tokens two independent ways, per (layer, group): from the ledger (kept tuples,
// sum of their page sizes) and from the selected token set (distinct t / P, number of positions), and
// checks: the two agree, every selected token set is a union of whole pages, retained <= budget, and the
// global identity sum over (layer, group) of kept pages == ledger.kept_total(). Rules: "token-set",
// "pages-agree", "tokens-agree", "whole-pages", "budget", "total".
Verdict check_page_accounting(const PageLedger& ledger, const std::vector<Positions>& token_sets, Index tokens,
                              Index page_size, Index budget);

// ---- Admissibility of a claimed selection ----------------------------------------------------------------
// Pages whose exact scores a, b satisfy |a - b| <= rel_tol * (a + b) are tied (rel_tol = 0: exact ties
// only); tie classes are the connected runs of the sorted scores. `claimed` (increasing page indices) is
// admissible iff the walk of select_pages produces it for some order of the pages inside each tie class.
// `pages` are what each page costs the walk and `budget` is in that unit (walk_costs: the pages themselves for a
// token budget, one unit per page for a page count, where every page is full and the walk keeps the top K).
// Rules: "shape", "budget", "reserved", then where the claim leaves every walk (the class at which the order
// that follows it furthest keeps something else): "tie-order" only when that class holds tied pages whose order
// changes what the walk keeps there (the message prints their exact scores), else "score-order" (the decreasing
// score order alone decides against the claim: a page that must be kept or cannot be, with its score).
Verdict check_pages_admissible(const std::vector<Exact>& scores, const std::vector<Page>& pages,
                               const std::vector<bool>& reserved, Index budget, GreedyRule rule,
                               const std::vector<Index>& claimed, const Exact& rel_tol);

}  // namespace kvaudit::oracle::paging
