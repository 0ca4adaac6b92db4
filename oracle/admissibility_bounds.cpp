// Error intervals for float32 evaluation of head sums, chunk means and chunk entropies (bounds derived in
// the header and in docs/chunk-selection.md), transcribed once and evaluated in 50 digits (Real) or in
// double enclosures of those 50-digit values (DoubleEnclosure).
#include "oracle/admissibility_bounds.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>

namespace kvaudit::oracle::detail {

// Covers the 50-digit path's rounding in its (sorted) summation order and its log (log_50) inside one
// normalized entropy, for chunks below 2^31 tokens and any eps > 0 (proofs/15_filtered_admissibility.md).
constexpr double kFilteredEntropySlack = 0x1p-100;

// Static bounds (proofs/15_filtered_admissibility.md, "Static bounds for the entropy terms"): when every head sum of
// a chunk is a double (a point enclosure), the entropy and the per-token sums of its error term are evaluated once
// in plain double and enclosed by an a-priori bound on that evaluation's error, instead of an enclosure per
// operation (about ten outward-rounded operations per token). Not eligible: the general path below decides.
namespace {
bool all_points(const std::vector<DoubleEnclosure>& x, const Chunk& chunk) {
  for (Index j = chunk.begin; j < chunk.end; ++j)
    if (x[static_cast<std::size_t>(j)].lo() != x[static_cast<std::size_t>(j)].hi()) return false;  // scores are finite (validated)
  return true;
}

// kvpress's rebase shift of a chunk, min(0, min_j x_j), when every head sum in it is a point; nullopt otherwise.
std::optional<double> point_shift(const std::vector<DoubleEnclosure>& x, const Chunk& chunk) {
  if (!all_points(x, chunk)) return std::nullopt;
  double lowest = x[static_cast<std::size_t>(chunk.begin)].lo();
  for (Index j = chunk.begin; j < chunk.end; ++j) lowest = min_of(lowest, x[static_cast<std::size_t>(j)].lo());
  return min_of(lowest, 0.0);
}

constexpr double kDoubleUnit = 0x1p-53;
// The eps the static entropy bound is derived for: 2^-900 <= eps <= 1 (kvpress: 1e-8).
bool static_entropy_eps(double eps) { return eps >= 0x1p-900 && eps <= 1.0; }
}  // namespace

// |H^ - H| <= (4n + 32) u (Lambda + 1) + 2^-1000 for the double evaluation H^ of the normalized entropy H (exact
// reals), Lambda = -ln eps >= |ln(p + eps)|; plus kFilteredEntropySlack for the 50-digit run's own rounding.
std::optional<DoubleEnclosure> entropy_by_static_bound(const std::vector<DoubleEnclosure>& x, const Chunk& chunk,
                                                       const DoubleEnclosure& eps_enclosure) {
  const Index n = chunk.size();
  const double eps = eps_enclosure.lo();
  if (n < 2 || eps != eps_enclosure.hi() || !static_entropy_eps(eps)) return std::nullopt;
  const std::optional<double> rebase = point_shift(x, chunk);
  if (!rebase) return std::nullopt;
  const double shift = *rebase;
  double total = 0;
  for (Index j = chunk.begin; j < chunk.end; ++j) total += x[static_cast<std::size_t>(j)].lo() - shift;
  const double denominator = total + eps;
  double h = 0;
  for (Index j = chunk.begin; j < chunk.end; ++j) {
    const double p = (x[static_cast<std::size_t>(j)].lo() - shift) / denominator;
    h -= p * std::log(p + eps);
  }
  const double normalized = h / std::log(static_cast<double>(n));
  // Lambda + 1 <= -log(eps) + 2 (glibc's log within one ulp, eps <= 1); the bound itself is evaluated outward.
  const DoubleEnclosure lambda_plus_one = DoubleEnclosure(-std::log(eps)) + DoubleEnclosure(2.0);
  const DoubleEnclosure bound =
      DoubleEnclosure(4.0 * static_cast<double>(n) + 32.0) * DoubleEnclosure(kDoubleUnit) * lambda_plus_one + DoubleEnclosure(0x1p-1000);
  DoubleEnclosure e = widened(widened(DoubleEnclosure(normalized), bound.hi()), kFilteredEntropySlack);
  return lesser(greater(e, DoubleEnclosure(0.0)), DoubleEnclosure(1.0));  // clamp is monotone
}

// Chunks with at most one nonzero rebased value (proofs/15_filtered_admissibility.md, item 11), where the static bound
// would give [0, ~1e-13] and every comparison among them would need 50 digits: every rebased value 0 (each term is
// 0 log(eps) = 0), or one nonzero rebased value v with p + eps - 1 = eps (v + eps - 1) / (v + eps) above 2^-160 (then
// the 50-digit p + eps exceeds 1, -p log(p + eps) < 0, and the clamp gives 0), give exactly 0. One nonzero value with
// p + eps <= 1/2 gives -p log(p + eps) / log n, which the 50-digit run computes within a relative 2^-160: its enclosure
// one ulp wider on each side holds it (fuzz inputs with one tiny score in a chunk of zeros). Needs point head sums and
// 0 < eps <= 1; nullopt otherwise.
std::optional<DoubleEnclosure> entropy_of_one_value(const std::vector<DoubleEnclosure>& x, const Chunk& chunk, const DoubleEnclosure& eps) {
  if (chunk.size() < 2 || eps.lo() != eps.hi() || !(eps.lo() > 0 && eps.lo() <= 1)) return std::nullopt;
  const std::optional<double> rebase = point_shift(x, chunk);
  if (!rebase) return std::nullopt;
  const double shift = *rebase;
  Index nonzero = 0;
  double single = 0;
  for (Index j = chunk.begin; j < chunk.end; ++j)  // v - shift is 0 in 50 digits iff v == shift (a faithful difference)
    if (x[static_cast<std::size_t>(j)].lo() != shift) {
      ++nonzero;
      single = x[static_cast<std::size_t>(j)].lo();
    }
  if (nonzero == 0) return DoubleEnclosure(0.0);
  if (nonzero > 1) return std::nullopt;
  const DoubleEnclosure v = DoubleEnclosure(single) - DoubleEnclosure(shift);
  const DoubleEnclosure above_one = eps * (v + eps - DoubleEnclosure(1.0)) / (v + eps);
  if (above_one.lo() > 0x1p-160) return DoubleEnclosure(0.0);
  const DoubleEnclosure p = v / (v + eps);
  const DoubleEnclosure argument = p + eps;
  if (!(argument.hi() <= 0.5)) return std::nullopt;  // |log(p + eps)| >= log 2: the 50-digit log's error stays relative
  const DoubleEnclosure h = (DoubleEnclosure(0.0) - p * log(argument)) / log(DoubleEnclosure(chunk.size()));
  const DoubleEnclosure wider = DoubleEnclosure::between(DoubleEnclosure::down(h.lo()), DoubleEnclosure::up(h.hi()));
  return lesser(greater(wider, DoubleEnclosure(0.0)), DoubleEnclosure(1.0));  // clamp is monotone
}

namespace {

// The exact statistics both paths start from: head sums x_j (clamped at 0 when asked) and chunk means.
template <class V>
struct ExactStatistics {
  std::vector<V> x;
  std::vector<V> means;
};

ExactStatistics<Real> exact_statistics(const HeadScores& scores, const std::vector<Chunk>& chunks, bool clamp,
                                       std::vector<TieKey>&, Real*) {
  std::vector<FixedPoint> fixed = fixed_head_sums(scores, clamp);
  ExactStatistics<Real> s;
  s.x = to_reals(fixed);
  s.means.reserve(chunks.size());
  for (const Chunk& c : chunks) s.means.push_back(exact_mean(fixed, c));
  return s;
}

// Whether the exact value of a canonical pair has at most the 50-digit format's 168 significant bits: the 50-digit
// run's rounding of it is then exact, and the pair is its 50-digit value.
bool fits_fifty_digits(const ExactDoubleSum::Pair& p) {
  if (p.remainder == 0) return true;
  const int lowest_bit = std::max(std::ilogb(p.remainder) - 52, -1074);
  return std::ilogb(p.rounded) - lowest_bit < std::numeric_limits<Real>::digits;
}

// A 50-digit value in doubles: exactly a pair d + r (a point when r = 0), which then names it in a tie key, or else the
// doubles around it. Every claim is checked in 50 digits, so nothing rests on how Boost converts to double.
struct FiftyDigitEnclosure {
  DoubleEnclosure value;
  std::optional<ExactDoubleSum::Pair> pair;
};
FiftyDigitEnclosure enclose_fifty_digit(const Real& v) {
  const double d = static_cast<double>(v);
  if (!std::isfinite(d) || (d == 0) != (v == 0)) throw UndecidedInDouble();
  const Real dv(d);
  // Sterbenz: with d within a factor 2 of v (same sign), v - d is exact in 50 digits; if it is a double r too, v = d + r.
  const bool near = d == 0 || (d > 0 ? dv / 2 <= v && v <= dv * 2 : dv * 2 <= v && v <= dv / 2);
  const Real rest = v - dv;
  const double r = static_cast<double>(rest);
  if (near && Real(r) == rest) return {DoubleEnclosure(d) + DoubleEnclosure(r), ExactDoubleSum::Pair{d, r}};
  const DoubleEnclosure around = DoubleEnclosure::between(DoubleEnclosure::down(d), DoubleEnclosure::up(d));
  if (!(Real(around.lo()) <= v && v <= Real(around.hi()))) throw UndecidedInDouble();
  return {around, std::nullopt};
}

// An exact sum that does not fit 50 digits: the 50-digit run's value of it, by the same functions on the same integer
// (the sum times 2^149, here from its canonical pair), enclosed in doubles.
Real fifty_digit_value(const ExactDoubleSum::Pair& p) { return from_fixed_point(fixed_point(p.rounded) + fixed_point(p.remainder)); }

// Head sums as exact pairs of doubles (float32 values are exact doubles); a pair that lost bits becomes a plain
// enclosure without a tie key, and the 50-digit path, which rounds the exact sum once, lies inside. Where the exact
// sum does not fit 50 digits (huge and subnormal scores in one column) its 50-digit value is computed as the 50-digit
// path does: sums that differ only below 50 digits then share a value and a key instead of overlapping undecided.
// Keys of token values and chunk sums name the 50-digit value as a pair of doubles (for sums that fit, the exact
// sum's canonical pair).
ExactStatistics<DoubleEnclosure> exact_statistics(const HeadScores& scores, const std::vector<Chunk>& chunks, bool clamp,
                                                  std::vector<TieKey>& keys, DoubleEnclosure*) {
  ExactStatistics<DoubleEnclosure> s;
  std::vector<ExactDoubleSum> sums(static_cast<std::size_t>(scores.tokens));
  std::map<std::pair<double, double>, DoubleEnclosure> beyond_fifty_digits;  // by canonical pair: tie-heavy columns repeat
  s.x.reserve(sums.size());
  s.means.reserve(chunks.size());
  for (Index t = 0; t < scores.tokens; ++t) {
    ExactDoubleSum& sum = sums[static_cast<std::size_t>(t)];
    for (Index h = 0; h < scores.heads; ++h) sum.add(static_cast<double>(scores.at(h, t)));
    DoubleEnclosure v = sum.enclosure();
    if (clamp) {
      v = greater(v, DoubleEnclosure(0.0));  // max(0, x) is monotone
      // The chunk sums below add max(0, x_j), so a sum known to be <= 0 becomes an exact 0 (inexact ones too: the
      // pair's own value would put a negative term into a clamped chunk mean), and one of unknown sign is undecided.
      // An exact sum's sign is its canonical pair's: (hi, lo) can be (1e-40, -1) after cancellation.
      const bool negative = sum.exact ? sum.canonical().rounded < 0 : sum.enclosure().hi() <= 0;
      if (negative) sum = ExactDoubleSum{};
      else if (sum.enclosure().lo() < 0) throw UndecidedInDouble();
    }
    if (sum.exact) {
      const ExactDoubleSum::Pair p = sum.canonical();
      if (fits_fifty_digits(p)) {
        v.set_key(add_tie_key(keys, TieFormula::ExactTokenValue, p.rounded, p.remainder));
      } else {
        auto [it, added] = beyond_fifty_digits.try_emplace({p.rounded, p.remainder});
        if (added) {
          const FiftyDigitEnclosure x50 = enclose_fifty_digit(fifty_digit_value(p));
          it->second = x50.value;
          if (x50.pair) it->second.set_key(add_tie_key(keys, TieFormula::ExactTokenValue, x50.pair->rounded, x50.pair->remainder));
        }
        v = it->second;
      }
    }
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
    if (all_exact) {
      const ExactDoubleSum::Pair p = total.canonical();
      if (fits_fifty_digits(p)) {
        mean.set_key(add_tie_key(keys, TieFormula::ExactChunkMean, p.rounded, p.remainder, static_cast<double>(c.size())));
      } else {  // as exact_mean computes it: the exact sum rounded to 50 digits, divided by n in 50 digits
        const Real sum50 = fifty_digit_value(p);
        mean = enclose_fifty_digit(sum50 / c.size()).value;
        if (const auto named = enclose_fifty_digit(sum50).pair)
          mean.set_key(add_tie_key(keys, TieFormula::ExactChunkMean, named->rounded, named->remainder, static_cast<double>(c.size())));
      }
    }
    s.means.push_back(mean);
  }
  return s;
}

// The 50-digit path sorts a chunk's values before summing; the filtered one sums in index order and adds
// a slack covering any order's 50-digit rounding and log_50 (proofs/15_filtered_admissibility.md).
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

Real entropy_of(const std::vector<Real>& x, const Chunk& chunk, const Real& eps) { return precise_entropy(x, chunk, eps); }
DoubleEnclosure entropy_of(const std::vector<DoubleEnclosure>& x, const Chunk& chunk, const DoubleEnclosure& eps) {
  if (auto e = entropy_of_one_value(x, chunk, eps)) return *e;
  if (auto e = entropy_by_static_bound(x, chunk, eps)) return *e;
  return precise_entropy(x, chunk, eps);
}

// The two sums of the entropy's error term over a chunk: total = sum y_j and perturbation = sum (err_j + extra) +
// unit |y_j|, y_j = x_j - shift, in index order (both runs).
template <class V>
struct EntropyErrorSums {
  V total, perturbation;
};
template <class V>
EntropyErrorSums<V> entropy_error_sums_by_operation(const std::vector<V>& x, const std::vector<V>& err, const Chunk& c, const V& shift,
                                                    const V& extra, const V& unit) {
  V total(0.0), perturbation(0.0);
  for (Index j = c.begin; j < c.end; ++j) {
    V y = x[static_cast<std::size_t>(j)] - shift;
    total += y;
    perturbation += err[static_cast<std::size_t>(j)] + extra + unit * abs(y);
  }
  return {total, perturbation};
}
EntropyErrorSums<Real> entropy_error_sums(const std::vector<Real>& x, const std::vector<Real>& err, const Chunk& c, const Real& shift,
                                          const Real& extra, const Real& unit) {
  return entropy_error_sums_by_operation(x, err, c, shift, extra, unit);
}
// Static bounds: every term is >= 0 (err_j and extra are enclosures of products of nonnegative numbers), so a
// recursive double sum is within gamma(k) (relative) of the exact sum and the 50-digit run's within 2^-150 of it;
// the radii (2n + 4) u and (2n + 8) u cover both with headroom (proofs/15_filtered_admissibility.md).
EntropyErrorSums<DoubleEnclosure> entropy_error_sums(const std::vector<DoubleEnclosure>& x, const std::vector<DoubleEnclosure>& err,
                                                     const Chunk& c, const DoubleEnclosure& shift, const DoubleEnclosure& extra,
                                                     const DoubleEnclosure& unit) {
  if (shift.lo() != shift.hi() || unit.lo() != unit.hi() || extra.lo() < 0 || !all_points(x, c))
    return entropy_error_sums_by_operation(x, err, c, shift, extra, unit);
  const double s = shift.lo(), scale = unit.lo();
  double total = 0, low = 0, high = 0;
  for (Index j = c.begin; j < c.end; ++j) {
    const double y = x[static_cast<std::size_t>(j)].lo() - s;
    const DoubleEnclosure& e = err[static_cast<std::size_t>(j)];
    total += y;
    low += (e.lo() + extra.lo()) + scale * y;
    high += (e.hi() + extra.hi()) + scale * y;
  }
  // Each end scaled by [1 - r, 1 + r] in outward arithmetic; n 2^-1074 covers unit * y rounding below 2^-1022.
  const auto n = static_cast<double>(c.size());
  auto scaled = [](double radius) { return DoubleEnclosure::between(1.0 - radius, DoubleEnclosure::up(1.0 + radius)); };
  const DoubleEnclosure underflow = DoubleEnclosure::between(-n * 0x1p-1074, n * 0x1p-1074);
  EntropyErrorSums<DoubleEnclosure> out;
  out.total = DoubleEnclosure(total) * scaled((2.0 * n + 4.0) * kDoubleUnit);
  const DoubleEnclosure sum = greater(DoubleEnclosure::between(low, high) + underflow, DoubleEnclosure(0.0));  // the sums are >= 0
  out.perturbation = sum * scaled((2.0 * n + 8.0) * kDoubleUnit);
  return out;
}

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
    v.lo.set_key(add_tie_key(keys, TieFormula::TokenValueMinusError, k->a, k->b, mass));
    v.hi.set_key(add_tie_key(keys, TieFormula::TokenValuePlusError, k->a, k->b, mass));
  }
}
// A chunk mean's ends: the mean alone (ExactOnly), or the mean -/+ an error that is a function of n and of
// the 50-digit sum A_i of the chunk's mass_j. That sum is exact when the masses (all >= 0) span fewer than
// 160 binary orders: every partial sum then fits the 50-digit format's 166 bits.
void key_means(IntervalOf<Real>&, const Real&, std::span<const double>, bool, std::vector<TieKey>&) {}
void key_means(IntervalOf<DoubleEnclosure>& v, const DoubleEnclosure& mean, std::span<const double> masses, bool exact,
               std::vector<TieKey>& keys) {
  const TieKey* k = mean.key();
  if (k == nullptr || k->formula != TieFormula::ExactChunkMean) return;
  if (exact) {
    v.lo.set_key(k);
    v.hi.set_key(k);
    return;
  }
  ExactDoubleSum total;
  int lowest_bit = std::numeric_limits<int>::max();
  for (const double m : masses) {
    total.add(m);
    if (m != 0) lowest_bit = std::min(lowest_bit, std::ilogb(m) - 52);
  }
  if (!total.exact) return;
  if (total.hi != 0 && std::ilogb(total.hi) + 1 - lowest_bit >= 160) return;
  const ExactDoubleSum::Pair mass_sum = total.canonical();
  v.lo.set_key(add_tie_key(keys, TieFormula::ChunkMeanMinusError, k->a, k->b, k->c, mass_sum.rounded, mass_sum.remainder));
  v.hi.set_key(add_tie_key(keys, TieFormula::ChunkMeanPlusError, k->a, k->b, k->c, mass_sum.rounded, mass_sum.remainder));
}

// A chunk's entropy ends are functions of its sequence of exact head sums and masses (and of eps, r, H,
// shared by the check): chunks with equal sequences get equal ids, and so bit-identical 50-digit ends. With
// ExactOnly the ends are the 50-digit entropy itself (no error term), which precise_entropy computes from the
// sorted values: a function of the multiset of exact head sums, so the id is that multiset's (permuted chunks
// tie: common in tie-heavy scores, where they made the fuzz harness's exact-ties self-check fall back).
// Each distinct sequence is stored once, back to back in one buffer, where each chunk used to allocate three times (its
// sequence, a sorted copy, a map node): the fuzz harness allocates for every input (docs/hardening.md, "Fuzzing").
class ChunkContentIds {
 public:
  explicit ChunkContentIds(std::size_t capacity) : ids_(ContentLess{&contents_}) { contents_.reserve(capacity); }
  ChunkContentIds(const ChunkContentIds&) = delete;  // ids_ orders through a pointer to contents_
  ChunkContentIds& operator=(const ChunkContentIds&) = delete;

  void key(IntervalOf<Real>&, const std::vector<Real>&, const std::vector<double>&, const Chunk&, bool, std::vector<TieKey>&) {}
  void key(IntervalOf<DoubleEnclosure>& v, const std::vector<DoubleEnclosure>& x, const std::vector<double>& mass, const Chunk& c,
           bool exact, std::vector<TieKey>& keys) {
    const std::size_t begin = contents_.size();
    for (Index j = c.begin; j < c.end; ++j) {
      const TieKey* k = x[static_cast<std::size_t>(j)].key();
      if (k == nullptr || k->formula != TieFormula::ExactTokenValue) {
        contents_.resize(begin);
        return;
      }
      if (exact) contents_.insert(contents_.end(), {k->a, k->b});
      else contents_.insert(contents_.end(), {k->a, k->b, mass[static_cast<std::size_t>(j)]});
    }
    if (exact) {  // the multiset: its (a, b) pairs in one fixed order
      pairs_.clear();
      for (std::size_t i = begin; i < contents_.size(); i += 2) pairs_.emplace_back(contents_[i], contents_[i + 1]);
      std::sort(pairs_.begin(), pairs_.end());
      for (std::size_t i = 0; i < pairs_.size(); ++i) std::tie(contents_[begin + 2 * i], contents_[begin + 2 * i + 1]) = pairs_[i];
    }
    auto [it, added] = ids_.try_emplace(Content{begin, contents_.size() - begin}, static_cast<double>(ids_.size()));
    if (!added) contents_.resize(begin);  // stored already
    if (exact) {  // both ends are the entropy in [0, 1] (precise_entropy clamps): chunk i's lower end ties chunk j's upper
      const TieKey* k = add_tie_key(keys, TieFormula::ExactOnlyEntropy, it->second);
      v.lo.set_key(k);
      v.hi.set_key(k);
      return;
    }
    v.lo.set_key(add_tie_key(keys, TieFormula::EntropyLow, it->second));
    v.hi.set_key(add_tie_key(keys, TieFormula::EntropyHigh, it->second));
  }

 private:
  struct Content {
    std::size_t begin, size;  // in contents_
  };
  struct ContentLess {  // lexicographic, as std::vector<double>'s operator<
    const std::vector<double>* contents;
    bool operator()(const Content& a, const Content& b) const {
      const double* first = contents->data();
      return std::lexicographical_compare(first + a.begin, first + a.begin + a.size, first + b.begin, first + b.begin + b.size);
    }
  };
  std::vector<double> contents_;
  std::vector<std::pair<double, double>> pairs_;  // the multiset's scratch, reused
  std::map<Content, double, ContentLess> ids_;
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
  // The float32 evaluation's error terms, from mass_j = sum_h |s_hj|: ExactOnly has none.
  std::vector<double> mass;
  std::vector<V> err;
  if (!exact) {
    mass = abs_head_sums(scores);
    const V head_sum_factor = safety * gamma<V>(scores.heads - 1);
    err.reserve(x.size());
    for (std::size_t j = 0; j < x.size(); ++j) err.push_back(head_sum_factor * V(mass[j]));
  }
  b.x.reserve(x.size());
  b.score.reserve(b.chunks.size());
  if (with_entropy) b.entropy.reserve(b.chunks.size());
  for (std::size_t j = 0; j < x.size(); ++j) {
    IntervalOf<V> v = exact ? IntervalOf<V>{x[j], x[j]} : IntervalOf<V>{x[j] - err[j], x[j] + err[j]};
    key_endpoints(v, x[j], exact ? 0.0 : mass[j], exact, b.tie_keys);
    b.x.push_back(v);
  }

  // Up to three doubles per token for the chunks' contents (DoubleEnclosure only: the 50-digit path keys nothing).
  ChunkContentIds content_ids(std::is_same_v<V, DoubleEnclosure> ? static_cast<std::size_t>(3 * scores.tokens) : 0);
  // log n for each chunk length (c, and the partial chunk's): the same call on the same n gives the same value, and
  // Boost's 50-digit log took 2.6 % of the fuzz harness when it was called once per chunk.
  std::map<Index, V> log_of_length;
  auto log_length = [&](Index n) -> const V& {
    auto [it, added] = log_of_length.try_emplace(n);
    if (added) it->second = log(V(n));
    return it->second;
  };
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
    const std::span<const double> chunk_mass =
        exact ? std::span<const double>{} : std::span<const double>(mass).subspan(static_cast<std::size_t>(c.begin), static_cast<std::size_t>(n));
    key_means(s, mean, chunk_mass, exact, b.tie_keys);
    b.score.push_back(s);
    if (!with_entropy) continue;
    V h = entropy_of(x, c, eps);
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
      auto [total, perturbation] = entropy_error_sums(x, err, c, shift, rebased ? max_err : V(0.0), unit);
      const V& log_n = log_length(n);
      h_err = safety * ((sensitivity * perturbation / (total + eps) + gamma<V>(n + 6) * (log_n + V(2.0))) / log_n + unit);
    }
    V lo = h - h_err, hi = h + h_err;
    IntervalOf<V> entropy{greater(lo, V(0.0)), lesser(hi, V(1.0))};  // the computed value is clamped to [0, 1]
    content_ids.key(entropy, x, mass, c, exact, b.tie_keys);
    b.entropy.push_back(entropy);
  }
  return b;
}

template SelectorBoundsOf<Real> selector_bounds<Real>(const HeadScores&, const SelectorParams&, Rounding, bool, bool);
template SelectorBoundsOf<DoubleEnclosure> selector_bounds<DoubleEnclosure>(const HeadScores&, const SelectorParams&, Rounding,
                                                                            bool, bool);

}  // namespace kvaudit::oracle::detail
