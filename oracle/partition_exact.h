// Certified exact solver for docs/specification.md section 4 (fixed m and free form), reaching far beyond enumeration.
//
// H(q) = sum_k h(q_k) is additive over groups, so the largest and smallest entropies of an m-aggregation of
// every suffix (i, n] are O(n^2 m) dynamic programmes (Cicalese & Vaccaro, arXiv:1805.05375). A depth-first
// branch-and-bound over the boundary DAG uses them as bounds: a subtree is cut when even its smallest
// entropy exceeds R or its largest cannot beat the incumbent, and a subtree whose largest entropy is below R
// is answered by the max-entropy DP path directly. Every prune is taken only with a margin of the derived
// double rounding bound (partition_arith.h); leaf decisions inside the margin are re-decided in 332 bits.
// New incumbents are polished toward R (partition_polish.h). With m fixed and R strictly inside the
// achievable range the bounds prune little (the optimum sits where partition entropies are densest), so
// after `branch_first_nodes` the search continues as a complete meet-in-the-middle enumeration
// (partition_mitm.h) seeded with the polished incumbent.
#pragma once

#include <cstdint>

#include "oracle/partition_reach.h"
#include "oracle/partition_types.h"

namespace kvaudit::oracle {

struct ExactLimits {
  std::int64_t max_nodes = 200'000'000;
  double max_seconds = 10.0;
  // Fixed m with R strictly inside the achievable entropies: nodes the branch and bound gets (and at most
  // half the time) before meet in the middle takes over with the rest (partition_mitm.h).
  std::int64_t branch_first_nodes = 1'000'000;
  // Stop once the proven bracket [entropy_bits, optimum_upper] is at most this wide (0: search on until the
  // answer is certified or a limit stops it). Used by callers that need a bracket, not a certificate.
  double stop_at_bracket_bits = 0.0;
  // When the search stops with R strictly inside the achievable range, the interval-cover DP bounds the optimum
  // (partition_reach.h); its work counts separately, in shifted intervals. Its deadline is the time limit's.
  ReachLimits reach{};
};

// The max- and min-entropy m-aggregations (unconstrained by R), in double; ties toward lower cuts.
struct EntropyExtremes {
  double max_bits = 0.0, min_bits = 0.0;
  std::vector<Index> max_cuts, min_cuts;
};
EntropyExtremes entropy_extremes(const std::vector<double>& p, Index m);

// The suffix DP tables themselves (largest / smallest sum of h over k groups covering (i, n], NaN where
// impossible), in the layout partition_mitm.h's SuffixBounds reads; for the interval-cover bound's checks.
struct SuffixTables {
  std::vector<double> up, lo;
  Index stride = 0;
  SuffixBounds view() const { return {up.data(), lo.data(), stride}; }
};
SuffixTables suffix_tables(const IntervalTable& h, Index n, Index m);

// Solves the problem. When a limit stops the search the answer holds the best partition found, complete =
// false, certified = false and optimum_upper a proven upper bound on the optimum. Exact ties keep the
// canonical partition (fewer groups, then lexicographically smaller cuts), as the enumeration does.
// Throws std::invalid_argument for m outside [1, n] or bad probabilities.
PartitionAnswer solve_exact(const PartitionProblem& problem, const ExactLimits& limits = {});

}  // namespace kvaudit::oracle
