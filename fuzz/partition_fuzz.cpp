// Differential libFuzzer harness: the greedy entropy-budgeted partition (core/pooling) against the certified
// exact solver (oracle/partition_exact.h) at small n. The greedy may miss a feasible partition (it is a
// heuristic, and the audit measures that gap) but must never: disagree on validity, return malformed cuts,
// call a partition feasible that is above R (decided exactly), claim feasibility when the certified solver
// proved none exists, beat the certified optimum, or (free form) stop at an infeasible partition while a
// feasible one exists, unless its final H lies within the rounding bound of R. Each prints the case and traps.
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/pooling/greedy_partition.h"
#include "fuzz/fuzz_support.h"
#include "oracle/partition_arith.h"
#include "oracle/partition_exact.h"

using namespace kvaudit;
using kvaudit::fuzz::report_and_trap;
using Decision = oracle::ExactPrefix::Decision;

namespace {

std::string describe(const std::vector<double>& p, std::optional<Index> m, double R) {
  std::ostringstream o;
  o.precision(17);
  o << "n=" << p.size() << " m=" << (m ? std::to_string(*m) : "free") << " R=" << R << "\np:";
  for (double x : p) o << ' ' << x;
  return o.str();
}

std::string cuts_text(const std::vector<Index>& c) {
  std::string s = "[";
  for (Index x : c) s += std::to_string(x) + " ";
  return s + "]";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const Index n = in.ConsumeIntegralInRange<Index>(0, 10);
  std::optional<Index> m;
  if (in.ConsumeBool()) m = in.ConsumeIntegralInRange<Index>(0, n + 1);
  // Integer weights give exact ties and zero masses; normalizing in double leaves a sum within a few ulp of 1,
  // which both solvers receive identically.
  std::vector<double> p(static_cast<std::size_t>(n));
  double total = 0.0;
  for (double& x : p) total += (x = static_cast<double>(in.ConsumeIntegralInRange(0, in.ConsumeBool() ? 3 : 255)));
  if (total > 0.0)
    for (double& x : p) x /= total;
  else if (n > 0 && in.ConsumeBool())
    p[0] = -0.0 - 1e-300 * static_cast<double>(in.ConsumeIntegralInRange(0, 1));  // -0 is valid, a negative is not
  const double R = in.ConsumeFloatingPointInRange<double>(0.0, std::log2(static_cast<double>(std::max<Index>(n, 1))) + 0.5);

  pooling::GreedyResult greedy;
  oracle::PartitionAnswer exact;
  std::string greedy_error, exact_error;
  try {
    greedy = pooling::greedy_partition(p, m, R);
  } catch (const std::invalid_argument& e) {
    greedy_error = e.what();
  }
  try {
    exact = oracle::solve_exact(oracle::PartitionProblem{p, R, m});
  } catch (const std::invalid_argument& e) {
    exact_error = e.what();
  }
  if (greedy_error.empty() != exact_error.empty())
    report_and_trap("partition: validity disagreement", describe(p, m, R) + "\ngreedy: " + greedy_error + "\nexact: " + exact_error);
  if (!greedy_error.empty()) return 0;

  for (std::size_t i = 0; i < greedy.cuts.size(); ++i) {
    if (greedy.cuts[i] < 1 || greedy.cuts[i] > n - 1 || (i > 0 && greedy.cuts[i] <= greedy.cuts[i - 1]))
      report_and_trap("partition: greedy cuts malformed", describe(p, m, R) + "\ncuts " + cuts_text(greedy.cuts));
  }
  if (m && static_cast<Index>(greedy.cuts.size()) != *m - 1)
    report_and_trap("partition: greedy returned the wrong number of groups", describe(p, m, R) + "\ncuts " + cuts_text(greedy.cuts));

  oracle::ExactPrefix prefix(p);
  const auto mine = oracle::full_bounds(greedy.cuts, n);
  // greedy.feasible is proven (H + bound <= R), so it must hold exactly, near the budget or not.
  if (greedy.feasible && prefix.compare_with(mine, R) == Decision::Greater)
    report_and_trap("partition: greedy calls a partition above R feasible", describe(p, m, R) + "\ncuts " + cuts_text(greedy.cuts));
  if (!exact.complete || !exact.certified) return 0;  // nothing proven to compare against (limits hit)
  if (!m && exact.feasible && !greedy.feasible && !greedy.near_budget)
    report_and_trap("partition: free-form greedy ends infeasible although a feasible partition exists",
                    describe(p, m, R) + "\ncuts " + cuts_text(greedy.cuts));
  if (!exact.feasible && greedy.feasible)
    report_and_trap("partition: greedy feasible where the certified solver proved no partition is",
                    describe(p, m, R) + "\ncuts " + cuts_text(greedy.cuts));
  if (exact.feasible && greedy.feasible &&
      prefix.compare(mine, oracle::full_bounds(exact.cuts, n)) == Decision::Greater)
    report_and_trap("partition: greedy beats the certified optimum",
                    describe(p, m, R) + "\ngreedy " + cuts_text(greedy.cuts) + "\nexact " + cuts_text(exact.cuts));
  return 0;
}
