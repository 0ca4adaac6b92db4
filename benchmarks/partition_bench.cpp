// Timing of the partition solvers (docs/specification.md section 4): the certified exact solver at n = 256, m = 32 on
// attention-like rows (real dump rows when data/ exists is the audit's job; here a fixed synthetic family),
// the largest n it certifies within 10 s, and the greedy heuristic.
//
// Rows: a softmax over logits = 6 * z_i with z_i ~ N(0, 1) plus an attention sink (+8 at position 0) and a
// recency bump, bucketed to n contiguous buckets; seeds fixed. Budgets R = f log2(m), f in {0.5, 0.75, 1}.
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>

#include "core/pooling/greedy_partition.h"
#include "benchmarks/synthetic_rows.h"
#include "oracle/partition_exact.h"

namespace {
using kvaudit::bench::attention_row;

void BM_ExactFixed(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0)), m = static_cast<int>(st.range(1));
  const double f = st.range(2) / 100.0;
  long certified = 0, runs = 0;
  unsigned seed = 1;
  for (auto _ : st) {
    const auto p = attention_row(4 * n, n, seed++);
    const auto a = kvaudit::oracle::solve_exact({p, f * std::log2(m), m}, {2'000'000'000, 10.0});
    certified += a.certified;
    ++runs;
    benchmark::DoNotOptimize(a.entropy_bits);
  }
  st.counters["certified_frac"] = static_cast<double>(certified) / static_cast<double>(runs);
}
BENCHMARK(BM_ExactFixed)->Args({256, 32, 50})->Args({256, 32, 75})->Args({256, 32, 100})
    ->Args({512, 64, 100})->Args({1024, 128, 100})->Args({2048, 256, 100})
    ->Iterations(3)->Unit(benchmark::kMillisecond);

// Where certification stops for an interior budget: R halfway between the row's smallest and largest
// m-entropy, so the constraint binds. Counters: certified (0/1), search nodes, the optimum's certified
// distance below R ("gap_bits"; when not certified, the width of the proven bracket), log10 of the number of
// m-partitions. The optimum sits where partition entropies are densest, about range / C(n-1, m-1) below R;
// certifying it means excluding every partition between it and R, so nodes grow with the partition count.
void BM_CertifyInterior(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0)), m = static_cast<int>(st.range(1));
  const auto p = attention_row(4 * n, n, 11);
  const auto ext = kvaudit::oracle::entropy_extremes(p, m);
  const double R = 0.5 * (ext.min_bits + ext.max_bits);
  kvaudit::oracle::PartitionAnswer a;
  for (auto _ : st) a = kvaudit::oracle::solve_exact({p, R, m}, {2'000'000'000, 10.0});
  st.counters["certified"] = a.certified;
  st.counters["nodes"] = static_cast<double>(a.nodes);
  st.counters["gap_bits"] = a.certified ? R - a.entropy_bits : a.optimum_upper - a.entropy_bits;
  st.counters["log10_partitions"] = (std::lgamma(n) - std::lgamma(m) - std::lgamma(n - m + 1)) / std::log(10.0);
}
BENCHMARK(BM_CertifyInterior)->Args({16, 4})->Args({24, 6})->Args({32, 8})->Args({40, 8})->Args({48, 8})
    ->Args({56, 8})->Args({64, 8})->Args({96, 8})->Args({128, 8})->Args({192, 8})->Args({256, 8})
    ->Args({64, 16})->Args({96, 16})->Args({256, 32})
    ->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_Greedy(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0)), m = n / 8;
  const auto p = attention_row(4 * n, n, 7);
  for (auto _ : st) benchmark::DoNotOptimize(kvaudit::pooling::greedy_partition(p, m, 0.75 * std::log2(m)));
}
BENCHMARK(BM_Greedy)->Arg(256)->Arg(4096)->Arg(65536)->Unit(benchmark::kMicrosecond);
}  // namespace

BENCHMARK_MAIN();
