// A third exact oracle for docs/specification.md section 4, as a resource-constrained path problem on the boundary DAG, solved by
// Boost.Graph's r_c_shortest_paths: nodes 0..n are cut positions, edge (i, j) is the group (i, j] of weight
// h(q_ij), an m-partition is a path 0 -> n with m edges and H(q) its length; the answer is the longest path
// with H <= R (exactly m edges, or any number). Shares nothing with the other partition oracles but the
// answer types: its own mass table, double filter and exact decisions (core/exact's complete sign).
#pragma once

#include <cstdint>

#include "oracle/partition_types.h"

namespace kvaudit::oracle {

struct RcspLimits {
  double max_seconds = 10.0;
  // Labels created: a backstop for memory, since in 10 s the search creates at most ~0.5M on 2 cores. Measured
  // ~400-520 bytes per label with short paths (docs/pooling.md, "The graph oracle"), more with long ones: 6M
  // labels stay near 3 GiB, under 4 GiB.
  std::int64_t max_labels = 6'000'000;
};

// What the label search did, for classifying cases and for the measurements in docs/pooling.md.
struct RcspStats {
  std::int64_t labels = 0;          // labels created (feasible extensions, plus the source's)
  std::int64_t refused = 0;         // extensions refused: H > R, or the edge count cannot end at m
  std::int64_t dominated = 0;       // labels removed as exact ties (same node, edge count and entropy)
  std::int64_t sink_labels = 0;     // non-dominated labels at node n: the candidates the optimum is chosen from
  std::int64_t exact_decisions = 0; // decisions the double filter left to core/exact
  double seconds = 0.0;
};

// Fixed m (problem.groups) or free form. Exact ties keep the canonical partition (fewer groups, then the
// lexicographically smaller cuts), as enumerate_partitions does, so answers compare field by field. When a
// limit stops the search: complete = certified = false, the best partition found so far (if any) and
// optimum_upper = R. Throws std::invalid_argument for m outside [1, n] or bad probabilities.
PartitionAnswer solve_rcsp(const PartitionProblem& problem, const RcspLimits& limits = {}, RcspStats* stats = nullptr);

}  // namespace kvaudit::oracle
