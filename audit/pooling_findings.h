// Audit stage for entropy-budgeted contiguous pooling (docs/specification.md section 4, seed 002): the greedy gap against the
// certified exact oracle, the seed's tail bound under both readings of h (with shrunk counterexamples), and
// the attention-output cosine error of K/V pooling on real queries versus uniform pooling and top-k eviction.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "audit/audit_context.h"
#include "core/types.h"
#include "oracle/partition_exact.h"
#include "oracle/partition_tail_bound.h"

namespace kvaudit::audit {

// The stage: section id "pooling".
Section pooling_section(const AuditContext& ctx);

// One instance of the partition problem with greedy and exact answers side by side.
struct PoolingInstance {
  std::vector<double> p;
  std::optional<Index> groups;  // nullopt = free form
  double R = 0.0;
};

struct GapRecord {
  bool exact_feasible = false, exact_certified = false, exact_complete = false;
  bool greedy_feasible = false, greedy_near_budget = false, greedy_certified_optimal = false;
  double exact_bits = 0.0, exact_upper = 0.0, greedy_bits = 0.0;  // greedy_bits from 332-bit evaluation
  // The greedy gap (optimum - greedy) as the interval [lower - greedy, upper - greedy] of the exact bracket.
  double gap_low = 0.0, gap_high = 0.0;
  double bracket_bits = 0.0;          // exact_upper - exact_bits (0 when certified)
  std::string upper_source;           // oracle::PartitionAnswer::upper_source
};

// The exact solver's limits in the audit: 2 `max_nodes` branch-and-bound nodes, then (interior fixed-m budgets)
// 3 `max_nodes` meet-in-the-middle parts; the interval-cover bound gets 200 shifted intervals per node
// (partition_reach.h) and refines until the bracket is 1e-9 bits wide. All work limits count operations, so
// with max_seconds = infinity the report is the same on every machine.
oracle::ExactLimits audit_exact_limits(long max_nodes, double max_seconds);

// Runs greedy and the exact solver (audit_exact_limits) on one instance.
GapRecord measure_gap(const PoolingInstance& inst, long max_nodes, double max_seconds);

// What the stage measures on one real row of n bucket masses (n = 64 in the audit): the merge identity's
// residuals along n - 1 first-pair merges, and greedy against the exact solver (measure_gap, no time limit)
// at m in {n/8, n/4, n/2} with R in {0.5, 0.75, 1} log2 m each, plus the free form at each budget of m = n/8
// where that fixed-m instance is feasible. A pure function of (p, max_nodes): rows may run in any order.
struct RowMeasurement {
  double merge_residual_double = 0.0, merge_residual_extended = 0.0;
  struct Instance {
    Index groups = 0;
    double R = 0.0;
    GapRecord gap;
  };
  std::vector<Instance> fixed;        // m ascending, then R ascending
  std::vector<GapRecord> free_form;   // the feasible budgets of m = n/8, R ascending
};
RowMeasurement measure_row(const std::vector<double>& p, long max_nodes);

// Searches small instances in order of size (n, then largest integer weight, then weight sum, then
// lexicographic), every m, budgets at every attainable entropy and between consecutive ones, and returns the
// first instance satisfying `bad` (so the smallest n, then the simplest p), or nullopt when none exists
// up to `max_n`.
std::optional<PoolingInstance> smallest_counterexample(const std::function<bool(const PoolingInstance&)>& bad,
                                                       int max_n, int max_weight, bool free_form);

nlohmann::json instance_json(const PoolingInstance& inst);

}  // namespace kvaudit::audit
