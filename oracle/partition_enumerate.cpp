// Exhaustive enumeration of contiguous m-partitions (see partition_enumerate.h). Deliberately naive: each
// tuple's entropy is summed from scratch.
#include "oracle/partition_enumerate.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "oracle/partition_arith.h"
#include "oracle/partition_incumbent.h"

namespace kvaudit::oracle {

namespace {
double binomial(Index n, Index k) {
  if (k < 0 || k > n) return 0.0;
  double r = 1.0;
  for (Index i = 1; i <= k; ++i) r = r * static_cast<double>(n - k + i) / static_cast<double>(i);
  return std::round(r);
}

void enumerate_fixed(const ExactPrefix& prefix, Index m, Incumbent& inc, std::int64_t& tuples) {
  const Index n = prefix.size();
  std::vector<Index> b(static_cast<std::size_t>(m + 1));
  for (Index k = 0; k < m; ++k) b[k] = k;  // first tuple: cuts 1..m-1
  b[m] = n;
  while (true) {
    ++tuples;
    double h = 0.0;
    for (Index k = 1; k <= m; ++k) h += prefix.h(b[k - 1], b[k]);
    inc.offer(b, h);
    // Next tuple in lexicographic order: bump the rightmost cut that can still move.
    Index k = m - 1;
    while (k >= 1 && b[k] == n - (m - k)) --k;
    if (k < 1) break;
    ++b[k];
    for (Index j = k + 1; j < m; ++j) b[j] = b[j - 1] + 1;
  }
}
}  // namespace

double enumeration_tuple_count(Index n, const std::optional<Index>& groups) {
  if (groups) return binomial(n - 1, *groups - 1);
  return std::ldexp(1.0, static_cast<int>(std::min<Index>(n - 1, 2000)));
}

PartitionAnswer enumerate_partitions(const PartitionProblem& problem, double tuple_limit) {
  const Index n = static_cast<Index>(problem.p.size());
  if (n < 1) throw std::invalid_argument("empty probability vector");
  if (problem.groups && (*problem.groups < 1 || *problem.groups > n))
    throw std::invalid_argument("groups must be in [1, n]");
  const double count = enumeration_tuple_count(n, problem.groups);
  if (count > tuple_limit) {
    std::ostringstream os;
    os << "enumeration would visit " << count << " boundary tuples (n = " << n << "), above the limit of "
       << tuple_limit << "; use the exact solver";
    throw std::length_error(os.str());
  }
  ExactPrefix prefix(problem.p);
  Incumbent inc(prefix, problem.budget_bits);
  PartitionAnswer out;
  out.solver = "enumerate";
  std::int64_t tuples = 0;
  if (problem.groups) {
    enumerate_fixed(prefix, *problem.groups, inc, tuples);
  } else {
    for (Index m = 1; m <= n; ++m) enumerate_fixed(prefix, m, inc, tuples);
  }
  inc.fill(out);
  out.nodes = tuples;
  out.extended_decisions = inc.extended;
  out.complete = true;
  out.certified = true;  // every tuple visited, every decision exact
  out.optimum_upper = out.feasible ? out.entropy_bits : std::numeric_limits<double>::quiet_NaN();
  out.upper_source = "certified";
  return out;
}

}  // namespace kvaudit::oracle
