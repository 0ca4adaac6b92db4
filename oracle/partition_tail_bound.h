// The seed's tail-bound diagnostic (docs/specification.md section 4): the efficient approximation's objective error is claimed
// to be at most h(p_down[floor(2^R) + 1]), p_down[j] the j-th largest entry. The seed calls h "binary
// entropy" while its other formulas use h(x) = -x log2 x, so both readings are implemented.
#pragma once

#include <string>
#include <vector>

#include "core/types.h"

namespace kvaudit::oracle {

enum class TailReading { PlainH, BinaryEntropy };  // -x log2 x | -x log2 x - (1-x) log2(1-x)

const char* to_string(TailReading r);

// floor(2^R) + 1 (1-based rank into p sorted descending); exp2 is exact at integer R.
Index tail_rank(double R);

// h(p_down[tail_rank(R)]) under `reading`; 0 when the rank exceeds n (no tail: the claim says error 0).
double tail_bound(const std::vector<double>& p, double R, TailReading reading);

// Two rounded-to-double values from 332-bit evaluations differ from the exact ones by <= 1 ulp each, so a
// gap-vs-bound comparison is decided only beyond 8 ulp of the larger magnitude involved.
double tail_comparison_tolerance(double magnitude);

enum class TailOutcome { Held, Violated, Inconclusive, GreedyFailed };
const char* to_string(TailOutcome o);

// Judges the claim for one instance: the exact optimum lies in [exact_lower, exact_upper] (equal when the
// exact solver certified it), greedy reached `greedy_bits` (when greedy_feasible). gap = exact - greedy.
// `greedy_certified_optimal`: greedy's partition was shown (in 332 bits) to tie the certified optimum, gap 0.
// Held needs gap_high <= bound - tol, Violated gap_low > bound + tol; in between is Inconclusive.
TailOutcome judge_tail(double bound, double exact_lower, double exact_upper, bool greedy_feasible, double greedy_bits,
                       bool greedy_certified_optimal);

}  // namespace kvaudit::oracle
