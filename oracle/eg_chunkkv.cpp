// Canonical EG-ChunkKV (docs/specification.md section 3): EntropyGatedChunkKVPress.compress line by line (kvpress flavour,
// float32 statistics on raw head sums) and the seeds' description (exact flavour: clamped scores, exact
// budget, 50-digit statistics, rescue size r and optional threshold tau, median rule). Ties toward the
// lower index in the chunk order, the within-chunk top-k and the top-up.
#include <algorithm>
#include <numeric>

#include "oracle/admissibility_bounds.h"
#include "oracle/chunk_internal.h"
#include "oracle/chunk_selection.h"
#include "oracle/lazy_statistic.h"

namespace kvaudit::oracle {
namespace {

using detail::DoubleEnclosure;

// Everything the walk needs, in the value type the flavour computes with (float or Real).
template <class V>
struct EgState {
  std::vector<detail::Chunk> chunks;
  std::vector<V> x;  // ranking values: raw head sums (kvpress) or max(0, head sum) (exact)
  std::vector<V> score, entropy;
  std::vector<bool> important, spiky;
};

template <class V>
V gate_median(const std::vector<V>& values, MedianRule rule) {
  return detail::median_of(values, rule);
}
// Only the statistics whose enclosures can hold a middle are sorted: the middles lie between the same order
// statistics of the enclosures' lower and upper ends, so a near-tie elsewhere computes no 50-digit value
// (proofs/15_filtered_admissibility.md, "Filtered canonical selection", item 5).
// Equal middles (a shared tie key, or equal points) average to the middle itself ((a + a) / 2 = a in binary floating
// point, 50 digits included), kept with its tie key so that chunks tied with it decide in double.
detail::LazyStatistic gate_median(const std::vector<detail::LazyStatistic>& values, MedianRule rule) {
  const std::size_t n = values.size(), lower = (n - 1) / 2;
  const bool two_middles = rule != MedianRule::Lower && n % 2 == 0;
  const std::size_t upper = two_middles ? lower + 1 : lower;
  std::vector<double> lows, highs;
  lows.reserve(n);
  highs.reserve(n);
  for (const auto& v : values) {
    lows.push_back(v.enclosure().lo());
    highs.push_back(v.enclosure().hi());
  }
  std::nth_element(lows.begin(), lows.begin() + static_cast<std::ptrdiff_t>(lower), lows.end());
  std::nth_element(highs.begin(), highs.begin() + static_cast<std::ptrdiff_t>(upper), highs.end());
  const double floor = lows[lower], ceiling = highs[upper];  // lower middle >= floor, upper middle <= ceiling
  std::size_t below = 0;  // statistics below every middle for certain
  // Sorted through pointers: the same comparisons, and so the same order, as sorting copies, without moving them.
  std::vector<const detail::LazyStatistic*> candidates;
  candidates.reserve(n);
  for (const auto& v : values) {
    if (v.enclosure().hi() < floor) ++below;
    else if (!(v.enclosure().lo() > ceiling)) candidates.push_back(&v);
  }
  std::sort(candidates.begin(), candidates.end(), [](const auto* a, const auto* b) { return *a < *b; });
  const detail::LazyStatistic& a = *candidates[lower - below];
  if (!two_middles) return a;
  const detail::LazyStatistic& b = *candidates[upper - below];
  if (detail::known_equal(a.enclosure(), b.enclosure())) return a;
  return detail::LazyStatistic::mean_of(a, b);
}

template <class V>
void set_gates(EgState<V>& s, const SelectorParams& params) {
  V score_median = gate_median(s.score, params.median);
  V tau = params.entropy_threshold ? V(*params.entropy_threshold) : gate_median(s.entropy, params.median);
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
  std::vector<detail::FixedPoint> fixed = detail::fixed_head_sums(scores, /*clamp=*/true);
  s.x = detail::to_reals(fixed);
  detail::Real eps(params.eps);
  for (const auto& c : s.chunks) {
    s.score.push_back(detail::exact_mean(fixed, c));
    s.entropy.push_back(detail::precise_entropy(s.x, c, eps));
  }
  set_gates(s, params);
  return s;
}

// The exact flavour's statistics as double enclosures of the 50-digit values exact_state computes (the checker's
// bounds with exact ties only, whose interval ends both enclose the one value and share its tie key), each with its
// 50-digit value on demand. A value left without a key gets one of its own, so that comparing it with a copy of
// itself (a gate against the median it is) decides in double.
struct FilteredExactState {
  FilteredExactState(const HeadScores& scores, const SelectorParams& params)
      : bounds(detail::selector_bounds<DoubleEnclosure>(scores, params, Rounding::ExactOnly, /*clamp=*/true, /*with_entropy=*/true)),
        fifty_digits(scores, /*clamp=*/true, params.eps, bounds.chunks) {}
  detail::SelectorBoundsOf<DoubleEnclosure> bounds;  // owns the tie keys the enclosures point to
  detail::FiftyDigitStatistics fifty_digits;
  std::vector<detail::TieKey> own_keys;
  EgState<detail::LazyStatistic> state;
};

DoubleEnclosure keyed(const DoubleEnclosure& v, std::vector<detail::TieKey>& own_keys) {
  if (v.key() != nullptr) return v;
  DoubleEnclosure out = v;
  out.set_key(detail::add_tie_key(own_keys, detail::TieFormula::SameComputation, static_cast<double>(own_keys.size())));
  return out;
}

void filtered_exact_state(FilteredExactState& f, const SelectorParams& params) {
  using Kind = detail::LazyStatistic::Kind;
  f.own_keys.reserve(f.bounds.x.size() + 2 * f.bounds.chunks.size());
  EgState<detail::LazyStatistic>& s = f.state;
  s.chunks = f.bounds.chunks;
  s.x.reserve(f.bounds.x.size());
  s.score.reserve(s.chunks.size());
  s.entropy.reserve(s.chunks.size());
  for (std::size_t j = 0; j < f.bounds.x.size(); ++j)
    s.x.emplace_back(keyed(f.bounds.x[j].lo, f.own_keys), Kind::TokenValue, static_cast<Index>(j), &f.fifty_digits);
  for (std::size_t i = 0; i < s.chunks.size(); ++i) {
    s.score.emplace_back(keyed(f.bounds.score[i].lo, f.own_keys), Kind::Mean, static_cast<Index>(i), &f.fifty_digits);
    // Both ends enclose the entropy (in [0, 1]), so their intersection does too.
    const auto& h = f.bounds.entropy[i];
    DoubleEnclosure both = DoubleEnclosure::between(h.lo.lo(), h.hi.hi());
    both.set_key(h.lo.key());
    s.entropy.emplace_back(keyed(both, f.own_keys), Kind::Entropy, static_cast<Index>(i), &f.fifty_digits);
  }
  set_gates(s, params);
}

template <class V>
Positions walk(const EgState<V>& s, Index budget, Index rescue) {
  Index tokens = static_cast<Index>(s.x.size());
  Positions kept;
  kept.reserve(static_cast<std::size_t>(budget));  // the walk keeps `budget` positions (budget < tokens)
  std::vector<bool> keep(static_cast<std::size_t>(tokens), false);
  for (Index i : detail::canonical_order(s.score)) {
    if (budget <= 0) break;
    const detail::Chunk& c = s.chunks[static_cast<std::size_t>(i)];
    Index n_kept = std::min(c.size(), budget);
    if (s.important[static_cast<std::size_t>(i)] && s.spiky[static_cast<std::size_t>(i)]) n_kept = std::min(n_kept, rescue);
    budget -= n_kept;
    if (n_kept == c.size()) {  // the chunk whole: its top n_i is all of it, in any order of its values
      std::fill(keep.begin() + c.begin, keep.begin() + c.end, true);
      continue;
    }
    std::vector<Index> positions(static_cast<std::size_t>(c.size()));
    std::iota(positions.begin(), positions.end(), c.begin);
    for (Index j : detail::canonical_top_k(s.x, positions, n_kept)) keep[static_cast<std::size_t>(j)] = true;
  }
  if (budget > 0) {  // top-up with the highest-scoring positions not kept yet
    std::vector<Index> leftover;
    leftover.reserve(static_cast<std::size_t>(tokens));
    for (Index j = 0; j < tokens; ++j)
      if (!keep[static_cast<std::size_t>(j)]) leftover.push_back(j);
    for (Index j : detail::canonical_top_k(s.x, leftover, budget)) keep[static_cast<std::size_t>(j)] = true;
  }
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

namespace detail {
FilteredSelection filtered_eg_chunkkv_select(const HeadScores& scores, const SelectorParams& params) {
  Index budget = eg_token_budget(scores.tokens, params);
  if (budget >= scores.tokens) return {eg_chunkkv_select(scores, params), false};
  try {
    FilteredExactState f(scores, params);
    filtered_exact_state(f, params);
    Selection selection{{walk(f.state, budget, params.rescue_size)}};
    return {std::move(selection), f.fifty_digits.used()};
  } catch (const UndecidedInDouble&) {  // the enclosures themselves (not a comparison) need 50 digits
    return {eg_chunkkv_select(scores, params), true};
  }
}
}  // namespace detail

std::vector<ChunkStat> eg_chunk_statistics(const HeadScores& scores, const SelectorParams& params) {
  detail::validate(scores, params);
  if (params.flavour == Flavour::Kvpress) return describe(kvpress_state(scores, params));
  return describe(exact_state(scores, params));
}

}  // namespace kvaudit::oracle
