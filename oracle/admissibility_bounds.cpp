// Error intervals for float32 evaluation of head sums, chunk means and chunk entropies (bounds derived in
// the header and in docs/chunk-selection.md), transcribed once and evaluated in 50 digits (Real) or in
// double enclosures of those 50-digit values (DoubleEnclosure).
#include "oracle/admissibility_bounds.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <type_traits>

namespace kvaudit::oracle::detail {
namespace {

// Covers the 50-digit path's rounding in its (sorted) summation order and Boost's log inside one
// normalized entropy, for chunks below 2^31 tokens and any eps > 0 (proofs/15_filtered_admissibility.md).
constexpr double kFilteredEntropySlack = 0x1p-100;

// The exact statistics both paths start from: head sums x_j (clamped at 0 when asked) and chunk means.
template <class V>
struct ExactStatistics {
  std::vector<V> x;
  std::vector<V> means;
};

ExactStatistics<Real> exact_statistics(const HeadScores& scores, const std::vector<Chunk>& chunks, bool clamp,
                                       std::vector<TieKey>&, Real*) {
  std::vector<BigInt> fixed = fixed_head_sums(scores, clamp);
  ExactStatistics<Real> s;
  s.x = to_reals(fixed);
  for (const Chunk& c : chunks) s.means.push_back(exact_mean(fixed, c));
  return s;
}

// Head sums as exact pairs of doubles (float32 values are exact doubles); a pair that lost bits becomes a
// plain enclosure without a tie key. The 50-digit path rounds the exact sum once, so it lies inside.
ExactStatistics<DoubleEnclosure> exact_statistics(const HeadScores& scores, const std::vector<Chunk>& chunks, bool clamp,
                                                  std::vector<TieKey>& keys, DoubleEnclosure*) {
  ExactStatistics<DoubleEnclosure> s;
  std::vector<ExactDoubleSum> sums(static_cast<std::size_t>(scores.tokens));
  s.x.reserve(sums.size());
  for (Index t = 0; t < scores.tokens; ++t) {
    ExactDoubleSum& sum = sums[static_cast<std::size_t>(t)];
    for (Index h = 0; h < scores.heads; ++h) sum.add(static_cast<double>(scores.at(h, t)));
    DoubleEnclosure v = sum.enclosure();
    if (clamp) {
      v = greater(v, DoubleEnclosure(0.0));  // max(0, x) is monotone
      if (sum.exact && (sum.hi < 0 || (sum.hi == 0 && sum.lo < 0))) sum = ExactDoubleSum{};  // exactly 0
    }
    if (sum.exact) v.set_key(add_tie_key(keys, TieKey{TieFormula::ExactTokenValue, sum.hi, sum.lo}));
    s.x.push_back(v);
  }
  for (const Chunk& c : chunks) {
    ExactDoubleSum total;
    DoubleEnclosure inexact_part(0.0);
    for (Index j = c.begin; j < c.end; ++j) {
      const ExactDoubleSum& x = sums[static_cast<std::size_t>(j)];
      total.add(x.hi);
      total.add(x.lo);
      if (!x.exact) inexact_part = inexact_part + DoubleEnclosure::between(-x.slack, x.slack);
    }
    DoubleEnclosure mean = (total.enclosure() + inexact_part) / DoubleEnclosure(c.size());
    bool all_exact = total.exact;
    for (Index j = c.begin; j < c.end && all_exact; ++j) all_exact = sums[static_cast<std::size_t>(j)].exact;
    if (all_exact) mean.set_key(add_tie_key(keys, TieKey{TieFormula::ExactChunkMean, total.hi, total.lo, static_cast<double>(c.size())}));
    s.means.push_back(mean);
  }
  return s;
}

// The 50-digit path sorts a chunk's values before summing; the filtered one sums in index order and adds
// a slack covering any order's 50-digit rounding and Boost's log (proofs/15_filtered_admissibility.md).
DoubleEnclosure precise_entropy(const std::vector<DoubleEnclosure>& x, const Chunk& chunk, const DoubleEnclosure& eps) {
  Index n = chunk.size();
  if (n == 1) return DoubleEnclosure(0.0);
  DoubleEnclosure lowest = x[static_cast<std::size_t>(chunk.begin)];
  for (Index j = chunk.begin; j < chunk.end; ++j) lowest = lesser(lowest, x[static_cast<std::size_t>(j)]);
  DoubleEnclosure shift = lesser(lowest, DoubleEnclosure(0.0));
  DoubleEnclosure total(0.0);
  for (Index j = chunk.begin; j < chunk.end; ++j) total += x[static_cast<std::size_t>(j)] - shift;
  DoubleEnclosure h(0.0);
  for (Index j = chunk.begin; j < chunk.end; ++j) {
    DoubleEnclosure p = (x[static_cast<std::size_t>(j)] - shift) / (total + eps);
    h -= p * log(p + eps);
  }
  DoubleEnclosure normalized = widened(h / log(DoubleEnclosure(n)), kFilteredEntropySlack);
  return lesser(greater(normalized, DoubleEnclosure(0.0)), DoubleEnclosure(1.0));  // clamp is monotone
}

Real lesser(const Real& a, const Real& b) { return std::min(a, b); }
Real greater(const Real& a, const Real& b) { return std::max(a, b); }

template <class V>
V gamma(Index k) {
  const V unit(std::ldexp(1.0, -24));  // float32 unit roundoff
  return k <= 0 ? V(0.0) : V(k) * unit / (V(1.0) - V(k) * unit);
}

// Tie keys: the 50-digit value of an endpoint is a function of the exact head sum and (with an error
// term) of mass_j alone, so equal keys mean equal values. Nothing to do in 50 digits.
void key_endpoints(IntervalOf<Real>&, const Real&, double, bool, std::vector<TieKey>&) {}
void key_endpoints(IntervalOf<DoubleEnclosure>& v, const DoubleEnclosure& x, double mass, bool exact, std::vector<TieKey>& keys) {
  const TieKey* k = x.key();
  if (k == nullptr || k->formula != TieFormula::ExactTokenValue) return;
  if (exact) {
    v.lo.set_key(k);
    v.hi.set_key(k);
  } else {
    v.lo.set_key(add_tie_key(keys, TieKey{TieFormula::TokenValueMinusError, k->a, k->b, mass}));
    v.hi.set_key(add_tie_key(keys, TieKey{TieFormula::TokenValuePlusError, k->a, k->b, mass}));
  }
}
// A chunk mean's ends: the mean alone (ExactOnly), or the mean -/+ an error that is a function of n and of
// the 50-digit sum A_i of the chunk's mass_j. That sum is exact when the masses (all >= 0) span fewer than
// 160 binary orders: every partial sum then fits the 50-digit format's 166 bits.
void key_means(IntervalOf<Real>&, const Real&, const double*, const double*, bool, std::vector<TieKey>&) {}
void key_means(IntervalOf<DoubleEnclosure>& v, const DoubleEnclosure& mean, const double* mass_begin,
               const double* mass_end, bool exact, std::vector<TieKey>& keys) {
  const TieKey* k = mean.key();
  if (k == nullptr || k->formula != TieFormula::ExactChunkMean) return;
  if (exact) {
    v.lo.set_key(k);
    v.hi.set_key(k);
    return;
  }
  ExactDoubleSum total;
  int lowest_bit = std::numeric_limits<int>::max();
  for (const double* m = mass_begin; m != mass_end; ++m) {
    total.add(*m);
    if (*m != 0) lowest_bit = std::min(lowest_bit, std::ilogb(*m) - 52);
  }
  if (!total.exact) return;
  if (total.hi != 0 && std::ilogb(total.hi) + 1 - lowest_bit >= 160) return;
  v.lo.set_key(add_tie_key(keys, TieKey{TieFormula::ChunkMeanMinusError, k->a, k->b, k->c, total.hi, total.lo}));
  v.hi.set_key(add_tie_key(keys, TieKey{TieFormula::ChunkMeanPlusError, k->a, k->b, k->c, total.hi, total.lo}));
}

// A chunk's entropy ends are functions of its sequence of exact head sums and masses (and of eps, r, H,
// shared by the check): chunks with equal sequences get equal ids, and so bit-identical 50-digit ends.
class ChunkContentIds {
 public:
  void key(IntervalOf<Real>&, const std::vector<Real>&, const std::vector<double>&, const Chunk&, std::vector<TieKey>&) {}
  void key(IntervalOf<DoubleEnclosure>& v, const std::vector<DoubleEnclosure>& x, const std::vector<double>& mass, const Chunk& c,
           std::vector<TieKey>& keys) {
    std::vector<double> content;
    content.reserve(static_cast<std::size_t>(3 * c.size()));
    for (Index j = c.begin; j < c.end; ++j) {
      const TieKey* k = x[static_cast<std::size_t>(j)].key();
      if (k == nullptr || k->formula != TieFormula::ExactTokenValue) return;
      content.insert(content.end(), {k->a, k->b, mass[static_cast<std::size_t>(j)]});
    }
    auto [it, added] = ids_.try_emplace(std::move(content), static_cast<double>(ids_.size()));
    v.lo.set_key(add_tie_key(keys, TieKey{TieFormula::EntropyLow, it->second}));
    v.hi.set_key(add_tie_key(keys, TieKey{TieFormula::EntropyHigh, it->second}));
  }

 private:
  std::map<std::vector<double>, double> ids_;
};

}  // namespace

template <class V>
SelectorBoundsOf<V> selector_bounds(const HeadScores& scores, const SelectorParams& params, Rounding rounding, bool clamp,
                                    bool with_entropy) {
  const V unit(std::ldexp(1.0, -24));   // float32 unit roundoff
  const V tiny(std::ldexp(1.0, -149));  // smallest float32 subnormal: underflow slack
  const V safety(2.0);                  // headroom on every first-order bound
  bool exact = rounding == Rounding::ExactOnly;
  SelectorBoundsOf<V> b;
  b.chunks = chunk_layout(scores.tokens, params.chunk_length);
  // Keys: one per head sum, two per token value interval, one per chunk mean, two per score and entropy interval.
  if constexpr (std::is_same_v<V, DoubleEnclosure>) b.tie_keys.reserve(static_cast<std::size_t>(3 * scores.tokens) + 5 * b.chunks.size());
  ExactStatistics<V> stats = exact_statistics(scores, b.chunks, clamp, b.tie_keys, static_cast<V*>(nullptr));
  const std::vector<V>& x = stats.x;
  std::vector<double> mass = abs_head_sums(scores);
  std::vector<V> err(x.size(), V(0.0));
  if (!exact) {
    const V head_sum_factor = safety * gamma<V>(scores.heads - 1);
    for (std::size_t j = 0; j < x.size(); ++j) err[j] = head_sum_factor * V(mass[j]);
  }
  b.x.reserve(x.size());
  for (std::size_t j = 0; j < x.size(); ++j) {
    IntervalOf<V> v{x[j] - err[j], x[j] + err[j]};
    key_endpoints(v, x[j], mass[j], exact, b.tie_keys);
    b.x.push_back(v);
  }

  ChunkContentIds content_ids;
  V eps(params.eps);
  V sensitivity = V(2.0) * (abs(log(eps)) + V(1.0));  // D in the header
  for (std::size_t i = 0; i < b.chunks.size(); ++i) {
    const Chunk& c = b.chunks[i];
    Index n = c.size();
    const V& mean = stats.means[i];
    V mean_err(0.0);
    if (!exact) {
      V abs_mass(0.0);
      for (Index j = c.begin; j < c.end; ++j) abs_mass += V(mass[static_cast<std::size_t>(j)]);
      mean_err = safety * (gamma<V>(scores.heads + n) * abs_mass / V(n) + tiny);
    }
    IntervalOf<V> s{mean - mean_err, mean + mean_err};
    key_means(s, mean, mass.data() + c.begin, mass.data() + c.end, exact, b.tie_keys);
    b.score.push_back(s);
    if (!with_entropy) continue;
    V h = precise_entropy(x, c, eps);
    V h_err(0.0);
    if (!exact && n > 1) {
      V min_x = x[static_cast<std::size_t>(c.begin)], max_err(0.0);
      for (Index j = c.begin; j < c.end; ++j) {
        min_x = lesser(min_x, x[static_cast<std::size_t>(j)]);
        max_err = greater(max_err, err[static_cast<std::size_t>(j)]);
      }
      // Rebasing by the minimum happens when the computed minimum may be negative.
      bool rebased = min_x - max_err < V(0.0);
      V shift = lesser(min_x, V(0.0));
      V total(0.0), perturbation(0.0);
      for (Index j = c.begin; j < c.end; ++j) {
        V y = x[static_cast<std::size_t>(j)] - shift;
        total += y;
        perturbation += err[static_cast<std::size_t>(j)] + (rebased ? max_err : V(0.0)) + unit * abs(y);
      }
      V log_n = log(V(n));
      h_err = safety * ((sensitivity * perturbation / (total + eps) + gamma<V>(n + 6) * (log_n + V(2.0))) / log_n + unit);
    }
    V lo = h - h_err, hi = h + h_err;
    IntervalOf<V> entropy{greater(lo, V(0.0)), lesser(hi, V(1.0))};  // the computed value is clamped to [0, 1]
    content_ids.key(entropy, x, mass, c, b.tie_keys);
    b.entropy.push_back(entropy);
  }
  return b;
}

template SelectorBoundsOf<Real> selector_bounds<Real>(const HeadScores&, const SelectorParams&, Rounding, bool, bool);
template SelectorBoundsOf<DoubleEnclosure> selector_bounds<DoubleEnclosure>(const HeadScores&, const SelectorParams&, Rounding,
                                                                            bool, bool);

}  // namespace kvaudit::oracle::detail
