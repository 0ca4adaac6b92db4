// How far the graph oracle (oracle/partition_rcsp.h) reaches: one instance per process, so the peak resident
// memory printed is that instance's. scripts/rcsp-reach.sh walks n upward until the 10 s / 4 GiB limits stop it.
//
// Usage: partition_rcsp_reach N M|free R ROW   (ROW: arbitrary | ties | attention; R a number or "inf")
// Rows: arbitrary = integer weights 1 + (i * 2654435761 mod 1000003), nearly all partition entropies distinct
// (the worst case: nothing dominates); ties = weights (5 i + 3) mod 7 mod 4, zeros and equal masses; attention =
// The synthetic attention row of benchmarks/synthetic_rows.h (sink, recency bump), 4 N tokens into N buckets, seed 1.
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "benchmarks/synthetic_rows.h"
#include "oracle/partition_rcsp.h"

namespace {
using kvaudit::bench::attention_row;

std::vector<double> weights_row(int n, bool ties) {
  std::vector<double> w;
  double s = 0.0;
  for (int i = 0; i < n; ++i) {
    const double x = ties ? static_cast<double>((i * 5 + 3) % 7 % 4) : 1.0 + static_cast<double>((i * 2654435761u) % 1000003);
    w.push_back(x);
    s += x;
  }
  for (double& x : w) x /= s;
  return w;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s N M|free R|inf arbitrary|ties|attention\n", argv[0]);
    return 2;
  }
  const int n = std::atoi(argv[1]);
  const std::string ms = argv[2], rs = argv[3], row = argv[4];
  kvaudit::oracle::PartitionProblem prob;
  prob.p = row == "attention" ? attention_row(4 * n, n, 1) : weights_row(n, row == "ties");
  prob.budget_bits = rs == "inf" ? std::numeric_limits<double>::infinity() : std::atof(rs.c_str());
  if (ms != "free") prob.groups = std::atoi(ms.c_str());
  kvaudit::oracle::RcspStats st;
  const auto a = kvaudit::oracle::solve_rcsp(prob, {}, &st);  // the default limits: 10 s, 6M labels
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("n=%d m=%s R=%s row=%s certified=%d feasible=%d H=%.17g seconds=%.3f labels=%lld sink=%lld "
              "dominated=%lld exact=%lld peak_rss_mib=%.0f%s%s\n",
              n, ms.c_str(), rs.c_str(), row.c_str(), a.certified, a.feasible, a.entropy_bits, st.seconds,
              static_cast<long long>(st.labels), static_cast<long long>(st.sink_labels),
              static_cast<long long>(st.dominated), static_cast<long long>(st.exact_decisions),
              static_cast<double>(ru.ru_maxrss) / 1024.0, a.note.empty() ? "" : " note=", a.note.c_str());
  return a.certified ? 0 : 1;
}
