// Canonical ChunkKV (docs/specification.md section 2): kvpress's ChunkKVPress.compress line by line, and the exact flavour.
//
// kvpress:  rho == 0 keeps all. No complete chunk -> the inner ScorerPress keeps, per head, the top
//           compute_n_kept(T, rho) = max(1, int(T (1 - rho))) positions of that head's own scores.
//           Otherwise x = head sum (float32), S_i = float32 mean over chunk i (the trailing partial
//           chunk included), the top max(1, int(n_chunks (1 - rho))) chunks by S are kept whole.
// exact:    the same chunk rule with the exact budget applied to the chunk count and exact means; with no
//           complete chunk, the head-summed top-L (L the exact token budget), shared by all heads.
//           (The exact flavour does not reproduce the per-head fallback: a per-head set is not a
//           selection one KV cache can store for all heads, and the seeds never describe it.)
// Ties toward the lower index.
#include <algorithm>
#include <numeric>

#include "oracle/admissibility_bounds.h"
#include "oracle/chunk_internal.h"
#include "oracle/chunk_selection.h"
#include "oracle/lazy_statistic.h"

namespace kvaudit::oracle {
namespace {

Positions all_positions(Index tokens) {
  Positions p(static_cast<std::size_t>(tokens));
  std::iota(p.begin(), p.end(), Index{0});
  return p;
}

Positions sorted(Positions p) {
  std::sort(p.begin(), p.end());
  return p;
}

Selection per_head_fallback(const HeadScores& scores, Index n_kept) {
  Selection s;
  for (Index h = 0; h < scores.heads; ++h) {
    std::vector<float> row(scores.values.begin() + h * scores.tokens, scores.values.begin() + (h + 1) * scores.tokens);
    s.kept.push_back(sorted(detail::canonical_top_k(row, all_positions(scores.tokens), n_kept)));
  }
  return s;
}

template <class T>
Positions keep_top_chunks(const std::vector<T>& chunk_scores, const std::vector<detail::Chunk>& chunks, Index n_kept) {
  std::vector<Index> order = detail::canonical_order(chunk_scores);
  Positions kept;
  for (Index i = 0; i < n_kept; ++i)
    for (Index j = chunks[order[i]].begin; j < chunks[order[i]].end; ++j) kept.push_back(j);
  return sorted(kept);
}

}  // namespace

Selection chunkkv_select(const HeadScores& scores, const SelectorParams& params) {
  detail::validate(scores, params);
  ChunkKvBudget budget = chunkkv_budget(scores.tokens, params);
  if (detail::ratio_is_zero(params)) return {{all_positions(scores.tokens)}};
  std::vector<detail::Chunk> chunks = detail::chunk_layout(scores.tokens, params.chunk_length);
  if (params.flavour == Flavour::Kvpress) {
    if (budget.fallback) return per_head_fallback(scores, budget.fallback_tokens);
    std::vector<float> x = detail::float32_head_sums(scores);
    std::vector<float> chunk_scores;
    for (const auto& c : chunks) chunk_scores.push_back(detail::float32_mean(x, c));
    return {{keep_top_chunks(chunk_scores, chunks, budget.chunks_kept)}};
  }
  std::vector<detail::FixedPoint> fixed = detail::fixed_head_sums(scores, /*clamp=*/false);
  if (budget.fallback) return {{sorted(detail::canonical_top_k(fixed, all_positions(scores.tokens), budget.fallback_tokens))}};
  std::vector<detail::Real> chunk_scores;
  for (const auto& c : chunks) chunk_scores.push_back(detail::exact_mean(fixed, c));
  return {{keep_top_chunks(chunk_scores, chunks, budget.chunks_kept)}};
}

Selection select(const HeadScores& scores, const SelectorParams& params) {
  return params.method == Method::ChunkKV ? chunkkv_select(scores, params) : eg_chunkkv_select(scores, params);
}

namespace detail {
// The chunk order on double enclosures of the exact means (the checker's bounds with exact ties only), each with its
// 50-digit mean on demand. The no-complete-chunk fallback ranks exact head sums, which the bounds round to 50
// digits: it stays in exact integers.
FilteredSelection filtered_chunkkv_select(const HeadScores& scores, const SelectorParams& params) {
  ChunkKvBudget budget = chunkkv_budget(scores.tokens, params);
  if (ratio_is_zero(params) || budget.fallback) return {chunkkv_select(scores, params), false};
  try {
    auto bounds = selector_bounds<DoubleEnclosure>(scores, params, Rounding::ExactOnly, /*clamp=*/false, /*with_entropy=*/false);
    FiftyDigitStatistics fifty_digits(scores, /*clamp=*/false, params.eps, bounds.chunks);
    std::vector<LazyStatistic> chunk_scores;
    chunk_scores.reserve(bounds.score.size());
    for (std::size_t i = 0; i < bounds.score.size(); ++i)
      chunk_scores.emplace_back(bounds.score[i].lo, LazyStatistic::Kind::Mean, static_cast<Index>(i), &fifty_digits);
    Selection selection{{keep_top_chunks(chunk_scores, bounds.chunks, budget.chunks_kept)}};
    return {std::move(selection), fifty_digits.used()};
  } catch (const UndecidedInDouble&) {  // the enclosures themselves (not a comparison) need 50 digits
    return {chunkkv_select(scores, params), true};
  }
}
}  // namespace detail

Selection select(const HeadScores& scores, const SelectorParams& params, Arithmetic arithmetic, ArithmeticCounts* counts) {
  if (arithmetic == Arithmetic::Reference50Digit || params.flavour == Flavour::Kvpress) return select(scores, params);
  detail::validate(scores, params);
  detail::FilteredSelection f = params.method == Method::ChunkKV ? detail::filtered_chunkkv_select(scores, params)
                                                                 : detail::filtered_eg_chunkkv_select(scores, params);
  if (counts) ++(f.used_fifty_digits ? counts->fell_back_to_50_digits : counts->decided_in_double);
  return std::move(f.selection);
}
}  // namespace kvaudit::oracle
