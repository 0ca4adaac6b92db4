// Exact solver for a fixed number of groups m by meet in the middle, for the budgets the branch-and-bound
// cannot close: R strictly inside the achievable entropies, where the optimum lies about range / C(n-1, m-1)
// below R and the bounds alone prune little.
//
// Every m-partition has exactly one position t of its (m/2)-th cut. For each t, the right parts ((t, n] in
// m - m/2 groups) are enumerated and sorted by entropy; for each left part ((0, t] in m/2 groups, entropy a)
// a binary search finds the right parts with a + b in (incumbent - w, R + w], w twice the double rounding
// bound, and each is offered to the Incumbent, which decides feasibility and order in extended precision.
// Both enumerations drop a partial part whose every completion (the suffix DP's largest and smallest
// entropies, plus the other side's range for this t) lies outside that window, with a margin of 2w: only
// parts that could beat the incumbent are stored or searched. Work is counted in enumerated part prefixes.
#pragma once

#include <chrono>
#include <cstdint>

#include "oracle/partition_incumbent.h"
#include "oracle/partition_interval_table.h"

namespace kvaudit::oracle {

// Largest / smallest entropy of covering (i, n] with k groups: up[k * stride + i], lo[...] (stride = n + 1: one
// row per k, so the DP's inner loop over i reads contiguously); NaN = impossible.
struct SuffixBounds {
  const double* up;
  const double* lo;
  Index stride;
  double upper(Index i, Index k) const { return up[k * stride + i]; }
  double lower(Index i, Index k) const { return lo[k * stride + i]; }
};

struct MitmStats {
  std::int64_t work = 0;    // part prefixes enumerated
  std::int64_t offers = 0;  // candidates offered to the Incumbent
  bool complete = false;    // false when the work limit stopped it
};

// Runs the search until done, `max_work` or `deadline`; the answer is the Incumbent's. Requires 2 <= m <= n.
MitmStats solve_mitm(const IntervalTable& h, const SuffixBounds& suffix, Incumbent& inc, Index n, Index m, double R,
                     std::int64_t max_work, std::chrono::steady_clock::time_point deadline);

}  // namespace kvaudit::oracle
