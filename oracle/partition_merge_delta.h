// Merge-delta Delta(a, b) = h(a) + h(b) - h(a + b) >= 0 (h(x) = -x log2 x) and the entropy bookkeeping of a
// sequence of adjacent merges, in 332-bit precision (docs/specification.md section 4).
#pragma once

#include <vector>

#include "core/types.h"

namespace kvaudit::oracle {

// Delta(a, b) in 332 bits, rounded to double. Throws std::invalid_argument for negative or non-finite input.
double merge_delta(double a, double b);

// One step of a merge sequence: merge current blocks `left` and `left + 1` (0-based, in the current list).
struct MergeStep {
  Index left = 0;
};

// Per step: H before, Delta of the merged pair, H after, and the identity residual
// |H_before - Delta - H_after| computed in double (what a double implementation sees) and in 332 bits.
struct MergeRecord {
  double entropy_before = 0.0, delta = 0.0, entropy_after = 0.0;
  double residual_double = 0.0;    // from double arithmetic (h in double, blocks summed in double)
  double residual_extended = 0.0;  // from 332-bit arithmetic on exact block masses
};

// The most a 332-bit residual may be where the identity is exact (proof 01): 332-bit h values carry a relative
// error near 2^-332, so a residual summed over at most a few thousand masses of at most 1 stays far below 2^-300;
// one above it means the identity failed, not rounding. Proof 01's check and the audit's merge-identity row use it.
inline constexpr double kMergeResidualBound = 0x1p-300;

struct MergeBookkeeping {
  std::vector<MergeRecord> steps;
  double max_residual_double = 0.0, max_residual_extended = 0.0;
  bool all_deltas_nonnegative = true;  // decided in 332 bits
  std::vector<Index> final_cuts;       // cuts of the final partition
};

// Applies `steps` to the singleton partition of p. Throws std::invalid_argument for an out-of-range step.
MergeBookkeeping merge_bookkeeping(const std::vector<double>& p, const std::vector<MergeStep>& steps);

}  // namespace kvaudit::oracle
