// Plain types of the entropy-budgeted contiguous partition problem (docs/specification.md section 4): inputs and answers.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/types.h"

namespace kvaudit::oracle {

// max H(q) subject to H(q) <= R over contiguous aggregations q of p; `groups` fixes m (absent = free form).
struct PartitionProblem {
  std::vector<double> p;           // probabilities, finite, >= 0 (callers validate the sum)
  double budget_bits = 0.0;        // R
  std::optional<Index> groups;     // m; nullopt = free form (any number of groups)
};

// What a solver concluded. Groups are (b_{k-1}, b_k] with b_0 = 0, b_m = n; `cuts` holds b_1..b_{m-1}.
struct PartitionAnswer {
  std::string solver;                // "enumerate", "exact", "greedy", "rcsp" (the graph oracle)
  std::string strategy;              // exact: "branch-and-bound" or "meet-in-the-middle"
  bool feasible = false;             // some partition has H <= R (for greedy: the one it returned does)
  std::vector<Index> cuts;           // interior boundaries, strictly increasing, each in [1, n-1]
  std::vector<double> masses;        // q_k, rounded to double from the exact group sums
  double entropy_bits = std::numeric_limits<double>::quiet_NaN();  // H(q), rounded from extended precision
  // True exactly when the search finished: every decision is exact (a double outcome within its rounding
  // bound is re-decided exactly), so only a node or time limit leaves an answer uncertified.
  bool certified = false;
  bool complete = true;              // false when a node or time limit stopped the search
  // A proven upper bound on the optimum: equals entropy_bits when certified; else the least of R, the
  // max-entropy DP and the interval-cover bound (partition_reach.h). `upper_source` says which.
  double optimum_upper = std::numeric_limits<double>::quiet_NaN();
  std::string upper_source;          // "certified", "budget", "max-entropy", "reach"
  std::int64_t reach_work = 0;       // shifted intervals the interval-cover DP generated
  int reach_rounds = 0;              // its finished rounds
  // optimum_upper - entropy_bits (0 when certified; NaN when infeasible).
  double bracket_width() const { return feasible ? optimum_upper - entropy_bits : std::numeric_limits<double>::quiet_NaN(); }
  std::int64_t nodes = 0;            // search nodes (exact) or tuples (enumerate) visited
  std::int64_t extended_decisions = 0;  // decisions re-done exactly because double could not tell
  std::string note;                  // why not certified / why stopped, when relevant
};

}  // namespace kvaudit::oracle
