// Pieces shared by the ChunkKV and EG-ChunkKV admissibility checks: top-k admissibility over intervals,
// number formatting for messages, and the EG-ChunkKV rule stage. Each is generic over the number type:
// Real (the naive 50-digit reference) or DoubleEnclosure (the filtered path, which throws
// UndecidedInDouble when a comparison or a printed digit cannot be decided in double).
#pragma once

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/verdict.h"
#include "oracle/admissibility_bounds.h"

namespace kvaudit::oracle::detail {

std::string show(const Real& v);  // 9 significant digits, for messages
// The same digits, or UndecidedInDouble when the enclosure's ends print differently.
std::string show(const DoubleEnclosure& v);

template <class V>
std::string show_interval(const IntervalOf<V>& v) {
  if (v.lo == v.hi) return show(v.lo);
  return "[" + show(v.lo) + ", " + show(v.hi) + "]";
}

// `kept` is an admissible top-|kept| of kept + dropped iff some choice of values inside the intervals
// puts every kept value >= every dropped value, i.e. min over kept of hi >= max over dropped of lo.
// Returns the violating pair (kept position, dropped position) otherwise.
struct TopKWitness {
  Index kept = -1;
  Index dropped = -1;
};
template <class V>
std::optional<TopKWitness> top_k_violation(const std::vector<IntervalOf<V>>& values, const std::vector<Index>& kept,
                                           const std::vector<Index>& dropped) {
  if (kept.empty() || dropped.empty()) return std::nullopt;
  auto at = [&](Index p) -> const IntervalOf<V>& { return values[static_cast<std::size_t>(p)]; };
  if constexpr (std::is_same_v<V, DoubleEnclosure>) {
    // Admissible for certain when every kept upper end's enclosure lies above every dropped lower end's: decided
    // without ordering the kept (or the dropped) ends among themselves, where a near-tie would throw and cannot
    // change the answer. Otherwise the witness search below decides, or throws.
    double kept_floor = std::numeric_limits<double>::infinity(), dropped_ceiling = -kept_floor;
    for (Index p : kept) kept_floor = std::min(kept_floor, at(p).hi.lo());
    for (Index p : dropped) dropped_ceiling = std::max(dropped_ceiling, at(p).lo.hi());
    if (kept_floor >= dropped_ceiling) return std::nullopt;
  }
  // Lowest index among equals so messages are reproducible.
  Index weakest = *std::min_element(kept.begin(), kept.end(), [&](Index a, Index b) { return at(a).hi < at(b).hi; });
  Index strongest = *std::min_element(dropped.begin(), dropped.end(), [&](Index a, Index b) { return at(a).lo > at(b).lo; });
  if (at(weakest).hi >= at(strongest).lo) return std::nullopt;
  return TopKWitness{weakest, strongest};
}

// The 50-digit token-value intervals, `selector_bounds<Real>(...).x` (which with_entropy does not change), computed on
// first use. The filtered EG-ChunkKV rule stage compares two near-tied token values with them (proof 15, item 17)
// instead of re-running every rule, entropies included, in 50 digits.
class FiftyDigitTokenValues {
 public:
  FiftyDigitTokenValues(const HeadScores& scores, const SelectorParams& params, Rounding rounding, bool clamp)
      : scores_(scores), params_(params), rounding_(rounding), clamp_(clamp) {}
  FiftyDigitTokenValues(const FiftyDigitTokenValues&) = delete;
  FiftyDigitTokenValues& operator=(const FiftyDigitTokenValues&) = delete;

  const IntervalOf<Real>& at(Index j) {
    if (!x_) x_ = selector_bounds<Real>(scores_, params_, rounding_, clamp_, /*with_entropy=*/false).x;
    return (*x_)[static_cast<std::size_t>(j)];
  }
  bool used() const { return x_.has_value(); }

 private:
  const HeadScores& scores_;
  const SelectorParams& params_;
  Rounding rounding_;
  bool clamp_;
  std::optional<std::vector<IntervalOf<Real>>> x_;
};

// EG-ChunkKV's rule-by-rule stage, run after shape/range/unique/order/budget passed and L < T.
// `keep` marks the claimed positions. V = Real or DoubleEnclosure (explicitly instantiated). `fifty_digit_x`, for
// DoubleEnclosure: the same bounds' 50-digit token values, for the near-ties the enclosures leave undecided; without
// it those throw UndecidedInDouble.
template <class V>
Verdict eg_rule_check(const SelectorBoundsOf<V>& bounds, const SelectorParams& params, Index budget,
                      const std::vector<bool>& keep, FiftyDigitTokenValues* fifty_digit_x = nullptr);

}  // namespace kvaudit::oracle::detail
