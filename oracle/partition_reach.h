// A proven upper bound on max{H(q) : H(q) <= R} for the partition problem (docs/specification.md section 4) from an
// over-approximation of the set of achievable entropies, for the budgets a stopped search cannot close.
//
// A forward DP over states (j, k) = (prefix (0, j], k groups) carries, per state, a sorted list of at most K
// disjoint intervals covering the double value v of every partial partition reaching it (v summed in group
// order, exactly as IntervalTable::entropy sums: the value entropy_error_bound covers). Shifting an interval by
// the same double h(i, j) keeps it a cover because rounding is monotone (x <= y implies fl(x + h) <= fl(y + h)),
// so no outward rounding is needed until the end; when a list exceeds K intervals the pair with the smallest
// gap is merged (a superset: still a cover). Intervals whose every completion (the suffix DP's range, with a
// rounding margin) lies outside (incumbent - margin, R + margin] are dropped whole, never clipped, so every
// interval end is the double value of a real partial partition, and backtracking an end's provenance yields a
// witness. The bound: the largest point <= R + e covered at the final state, plus e (proof 13). Refinement
// re-runs with K multiplied and the window raised to the better incumbent. Statement and proof:
// proofs/13_reach_bound.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "oracle/partition_incumbent.h"
#include "oracle/partition_interval_table.h"
#include "oracle/partition_mitm.h"

namespace kvaudit::oracle {

// One interval of a state's cover; lo_from / hi_from: the source interval (in state (prev, k - 1)) whose end,
// shifted by h(prev, j), is this end. The start state (0, 0) holds [0, 0] with prev = -1.
struct ReachInterval {
  double lo = 0.0, hi = 0.0;
  std::int32_t lo_prev = -1, lo_at = -1, hi_prev = -1, hi_at = -1;
};

// Reduces a sorted list of disjoint intervals (sorted by lo, gaps > 0) to at most `max_intervals` by merging the
// pairs with the smallest gaps. A parameter of the search so a test can plant a wrong reducer (a mutant).
using ReachReducer = void (*)(std::vector<ReachInterval>& list, int max_intervals);
void reduce_to_closest(std::vector<ReachInterval>& list, int max_intervals);

struct ReachLimits {
  // K of the first round. Small on purpose: on real rows (n = 256, m = 32) K = 2 already lets the targeted
  // witness search land within 1e-7 of R, at a seventh of the work of K = 16; rounds refine only when needed.
  int first_intervals = 2;
  int growth = 4;                 // K is multiplied by this each refinement round
  int max_intervals = 1024;       // no round uses more
  std::int64_t max_stored = 32'000'000;  // intervals held by one round (32 bytes each); a round beyond stops
  std::int64_t max_work = 400'000'000;  // shifted intervals generated, over all rounds (deterministic)
  double target_bits = 0.0;       // stop once upper - incumbent.lower() <= target
  std::int64_t witness_nodes = 200'000;  // per window of the targeted witness search
  // Banded witness round before the full ones (fixed m): cuts within this many positions of the incumbent's
  // (0: none), covers of `band_intervals` intervals.
  Index band_width = 16;
  int band_intervals = 8;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  ReachReducer reducer = reduce_to_closest;
};

struct ReachResult {
  // Proven: every feasible partition has exact H <= upper (and upper <= R). NaN when no round finished.
  double upper = std::numeric_limits<double>::quiet_NaN();
  bool none_feasible = false;     // the final cover holds nothing <= R + e: no partition is feasible
  std::int64_t work = 0;          // shifted intervals generated
  int rounds = 0;                 // rounds that finished
  int last_intervals = 0;         // K of the last finished round
  std::int64_t witnesses_offered = 0;
};

// Suffix ranges of the completions: fixed m, `suffix` as in partition_mitm.h (NaN = impossible); free form
// (groups = nullopt), the range of any number of groups over (j, n]: [h(j, n), sum of singletons].
// Offers witnesses (backtracked interval ends) to `inc`, which decides them exactly.
ReachResult reach_upper_bound(const IntervalTable& h, const SuffixBounds& suffix, const std::vector<double>& free_up,
                              Incumbent& inc, Index n, std::optional<Index> groups, double R, double hmax,
                              const ReachLimits& limits);

}  // namespace kvaudit::oracle
