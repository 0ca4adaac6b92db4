// Timing of the partition solvers (SPEC section 4): the certified exact solver at n = 256, m = 32 on
// attention-like rows (real dump rows when data/ exists is the audit's job; here a fixed synthetic family),
// the largest n it certifies within 10 s, and the greedy heuristic.
//
// Rows: a softmax over logits = 6 * z_i with z_i ~ N(0, 1) plus an attention sink (+8 at position 0) and a
// recency bump, bucketed to n contiguous buckets; seeds fixed. Budgets R = f log2(m), f in {0.5, 0.75, 1}.
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>

#include "core/pooling/greedy_partition.h"
#include "oracle/partition_exact.h"

namespace {
std::vector<double> attention_row(int tokens, int buckets, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  std::vector<double> logit(static_cast<std::size_t>(tokens));
  for (int i = 0; i < tokens; ++i) logit[i] = 1.5 * z(rng) + (i == 0 ? 8.0 : 0.0) + (i > tokens - 16 ? 3.0 : 0.0);
  double top = *std::max_element(logit.begin(), logit.end()), s = 0.0;
  for (double& x : logit) s += (x = std::exp(x - top));
  std::vector<double> p(static_cast<std::size_t>(buckets), 0.0);
  for (int i = 0; i < tokens; ++i) p[static_cast<std::size_t>(static_cast<long>(i) * buckets / tokens)] += logit[i] / s;
  return p;
}

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

void BM_Greedy(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0)), m = n / 8;
  const auto p = attention_row(4 * n, n, 7);
  for (auto _ : st) benchmark::DoNotOptimize(kvaudit::pooling::greedy_partition(p, m, 0.75 * std::log2(m)));
}
BENCHMARK(BM_Greedy)->Arg(256)->Arg(4096)->Arg(65536)->Unit(benchmark::kMicrosecond);
}  // namespace

BENCHMARK_MAIN();
