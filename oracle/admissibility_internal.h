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

// EG-ChunkKV's rule-by-rule stage, run after shape/range/unique/order/budget passed and L < T.
// `keep` marks the claimed positions. V = Real or DoubleEnclosure (explicitly instantiated).
template <class V>
Verdict eg_rule_check(const SelectorBoundsOf<V>& bounds, const SelectorParams& params, Index budget,
                      const std::vector<bool>& keep);

}  // namespace kvaudit::oracle::detail
