// Tail-bound diagnostic under both readings of h (see partition_tail_bound.h).
#include "oracle/partition_tail_bound.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace kvaudit::oracle {

const char* to_string(TailReading r) { return r == TailReading::PlainH ? "h(x)=-x log2 x" : "binary entropy h2(x)"; }

const char* to_string(TailOutcome o) {
  switch (o) {
    case TailOutcome::Held: return "held";
    case TailOutcome::Violated: return "violated";
    case TailOutcome::Inconclusive: return "inconclusive";
    case TailOutcome::GreedyFailed: return "greedy-failed";
  }
  return "?";
}

Index tail_rank(double R) { return static_cast<Index>(std::floor(std::exp2(R))) + 1; }

double tail_bound(const std::vector<double>& p, double R, TailReading reading) {
  const Index rank = tail_rank(R);
  if (rank > static_cast<Index>(p.size())) return 0.0;
  std::vector<double> s = p;
  std::nth_element(s.begin(), s.begin() + (rank - 1), s.end(), std::greater<double>());
  const double x = s[rank - 1];
  auto h = [](double v) { return v > 0.0 ? -v * std::log2(v) : 0.0; };
  return reading == TailReading::PlainH ? h(x) : h(x) + h(1.0 - x);
}

double tail_comparison_tolerance(double magnitude) { return 8.0 * std::ldexp(1.0, -52) * std::max(1.0, magnitude); }

TailOutcome judge_tail(double bound, double exact_lower, double exact_upper, bool greedy_feasible, double greedy_bits,
                       bool greedy_certified_optimal) {
  if (!greedy_feasible) return TailOutcome::GreedyFailed;
  if (greedy_certified_optimal) return bound >= 0.0 ? TailOutcome::Held : TailOutcome::Violated;
  const double tol = tail_comparison_tolerance(std::max(std::fabs(exact_upper), std::fabs(greedy_bits)));
  const double gap_high = exact_upper - greedy_bits, gap_low = exact_lower - greedy_bits;
  if (gap_high <= bound - tol) return TailOutcome::Held;
  if (gap_low > bound + tol) return TailOutcome::Violated;
  return TailOutcome::Inconclusive;
}

}  // namespace kvaudit::oracle
