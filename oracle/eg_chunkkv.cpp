// Canonical EG-ChunkKV (docs/specification.md section 3): EntropyGatedChunkKVPress.compress line by line (kvpress flavour,
// float32 statistics on raw head sums) and the seeds' description (exact flavour: clamped scores, exact
// budget, 50-digit statistics, rescue size r and optional threshold tau, median rule). Ties toward the
// lower index in the chunk order, the within-chunk top-k and the top-up.
#include <algorithm>
#include <numeric>

#include "oracle/chunk_internal.h"
#include "oracle/chunk_selection.h"

namespace kvaudit::oracle {
namespace {

// Everything the walk needs, in the value type the flavour computes with (float or Real).
template <class V>
struct EgState {
  std::vector<detail::Chunk> chunks;
  std::vector<V> x;  // ranking values: raw head sums (kvpress) or max(0, head sum) (exact)
  std::vector<V> score, entropy;
  std::vector<bool> important, spiky;
};

template <class V>
void set_gates(EgState<V>& s, const SelectorParams& params) {
  V score_median = detail::median_of(s.score, params.median);
  V tau = params.entropy_threshold ? V(*params.entropy_threshold) : detail::median_of(s.entropy, params.median);
  for (std::size_t i = 0; i < s.chunks.size(); ++i) {
    s.important.push_back(s.score[i] >= score_median);
    s.spiky.push_back(s.entropy[i] < tau);
  }
}

EgState<float> kvpress_state(const HeadScores& scores, const SelectorParams& params) {
  EgState<float> s;
  s.chunks = detail::chunk_layout(scores.tokens, params.chunk_length);
  s.x = detail::float32_head_sums(scores);
  for (const auto& c : s.chunks) {
    s.score.push_back(detail::float32_mean(s.x, c));
    s.entropy.push_back(detail::float32_entropy(s.x, c));
  }
  set_gates(s, params);
  return s;
}

EgState<detail::Real> exact_state(const HeadScores& scores, const SelectorParams& params) {
  EgState<detail::Real> s;
  s.chunks = detail::chunk_layout(scores.tokens, params.chunk_length);
  std::vector<detail::BigInt> fixed = detail::fixed_head_sums(scores, /*clamp=*/true);
  s.x = detail::to_reals(fixed);
  detail::Real eps(params.eps);
  for (const auto& c : s.chunks) {
    s.score.push_back(detail::exact_mean(fixed, c));
    s.entropy.push_back(detail::precise_entropy(s.x, c, eps));
  }
  set_gates(s, params);
  return s;
}

template <class V>
Positions walk(const EgState<V>& s, Index budget, Index rescue) {
  Index tokens = static_cast<Index>(s.x.size());
  std::vector<bool> keep(static_cast<std::size_t>(tokens), false);
  for (Index i : detail::canonical_order(s.score)) {
    if (budget <= 0) break;
    const detail::Chunk& c = s.chunks[static_cast<std::size_t>(i)];
    Index n_kept = std::min(c.size(), budget);
    if (s.important[static_cast<std::size_t>(i)] && s.spiky[static_cast<std::size_t>(i)]) n_kept = std::min(n_kept, rescue);
    std::vector<Index> positions(static_cast<std::size_t>(c.size()));
    std::iota(positions.begin(), positions.end(), c.begin);
    // n_kept == n_i keeps the chunk whole; otherwise the chunk's top n_kept (same thing when equal).
    for (Index j : detail::canonical_top_k(s.x, positions, n_kept)) keep[static_cast<std::size_t>(j)] = true;
    budget -= n_kept;
  }
  if (budget > 0) {  // top-up with the highest-scoring positions not kept yet
    std::vector<Index> leftover;
    for (Index j = 0; j < tokens; ++j)
      if (!keep[static_cast<std::size_t>(j)]) leftover.push_back(j);
    for (Index j : detail::canonical_top_k(s.x, leftover, budget)) keep[static_cast<std::size_t>(j)] = true;
  }
  Positions kept;
  for (Index j = 0; j < tokens; ++j)
    if (keep[static_cast<std::size_t>(j)]) kept.push_back(j);
  return kept;
}

template <class V>
std::vector<ChunkStat> describe(const EgState<V>& s) {
  std::vector<ChunkStat> out;
  for (std::size_t i = 0; i < s.chunks.size(); ++i)
    out.push_back({s.chunks[i].begin, s.chunks[i].end, static_cast<double>(s.score[i]), static_cast<double>(s.entropy[i]),
                   s.important[i], s.spiky[i]});
  return out;
}

}  // namespace

Selection eg_chunkkv_select(const HeadScores& scores, const SelectorParams& params) {
  detail::validate(scores, params);
  Index budget = detail::eg_token_budget(scores.tokens, params);
  if (budget >= scores.tokens) {  // rho == 0 (kvpress returns early) or L = T (exact: keep all)
    Positions all(static_cast<std::size_t>(scores.tokens));
    std::iota(all.begin(), all.end(), Index{0});
    return {{all}};
  }
  if (params.flavour == Flavour::Kvpress) return {{walk(kvpress_state(scores, params), budget, params.rescue_size)}};
  return {{walk(exact_state(scores, params), budget, params.rescue_size)}};
}

std::vector<ChunkStat> eg_chunk_statistics(const HeadScores& scores, const SelectorParams& params) {
  detail::validate(scores, params);
  if (params.flavour == Flavour::Kvpress) return describe(kvpress_state(scores, params));
  return describe(exact_state(scores, params));
}

}  // namespace kvaudit::oracle
