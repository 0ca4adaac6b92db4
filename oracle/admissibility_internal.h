// Pieces shared by the ChunkKV and EG-ChunkKV admissibility checks: top-k admissibility over intervals,
// number formatting for messages, and the EG-ChunkKV rule stage.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/verdict.h"
#include "oracle/admissibility_bounds.h"

namespace kvaudit::oracle::detail {

std::string show(const Real& v);  // 9 significant digits, for messages
std::string show_interval(const Interval& v);

// `kept` is an admissible top-|kept| of kept + dropped iff some choice of values inside the intervals
// puts every kept value >= every dropped value, i.e. min over kept of hi >= max over dropped of lo.
// Returns the violating pair (kept position, dropped position) otherwise.
struct TopKWitness {
  Index kept = -1;
  Index dropped = -1;
};
std::optional<TopKWitness> top_k_violation(const std::vector<Interval>& values, const std::vector<Index>& kept,
                                           const std::vector<Index>& dropped);

// EG-ChunkKV's rule-by-rule stage, run after shape/range/unique/order/budget passed and L < T.
// `keep` marks the claimed positions.
Verdict eg_rule_check(const SelectorBounds& bounds, const SelectorParams& params, Index budget,
                      const std::vector<bool>& keep);

}  // namespace kvaudit::oracle::detail
