// Seed 002's own sizes on real rows (issue 16): a context of n = 2048 positions, m in {256, 512, 1024} groups,
// R in {0.5, 0.75, 1} log2 m. Per instance: greedy's entropy, the exact solver's proven bracket
// [lower, upper] (stopping once it is 1e-6 bits wide, or at the time limit), its width, and the times.
//
// Usage: partition_seed_sizes_bench [benchmark flags] DUMP.safetensors... (or KVAUDIT_SEED_DUMPS, a
// colon-separated list). Rows: `attention.last_query` (layers, q_heads, T) with T >= 2048, layers
// {0, L/3, 2L/3, L-1}, query head 0 (KVAUDIT_SEED_HEADS=h1,h2,... to choose others); each row is normalized and
// summed into 2048 contiguous equal-width buckets (token i to bucket floor(i * 2048 / T), as the audit buckets
// to 64: the whole context's mass is kept, and a row with T = 2048 is used as it is). A file with T < 2048 is
// reported and skipped. Time limit per instance: KVAUDIT_SEED_SECONDS (default 10).
// One benchmark per instance (Iterations(1)); its wall time is the exact solve's. Not part of CI.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "core/io/safetensors.h"
#include "core/pooling/bucket_masses.h"
#include "core/pooling/greedy_partition.h"
#include "oracle/partition_arith.h"
#include "oracle/partition_exact.h"

namespace {
using kvaudit::Index;

constexpr Index kContext = 2048;
constexpr double kTargetBits = 1e-6;

struct Row {
  std::string name;
  std::vector<double> p;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, sep);)
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<Row> load_rows(const std::vector<std::string>& paths) {
  std::vector<Index> heads{0};
  if (const char* h = std::getenv("KVAUDIT_SEED_HEADS")) {
    heads.clear();
    for (const auto& x : split(h, ',')) heads.push_back(std::stol(x));
  }
  std::vector<Row> rows;
  for (const auto& path : paths) {
    const auto file = kvaudit::io::SafetensorsFile::open(path);
    const auto t = file.read("attention.last_query");
    if (t.shape.size() != 3) throw std::runtime_error(path + ": attention.last_query is not (layers, heads, T)");
    const Index L = t.shape[0], H = t.shape[1], T = t.shape[2];
    if (T < kContext) {
      std::fprintf(stderr, "%s: T = %lld < %lld, skipped\n", path.c_str(), static_cast<long long>(T),
                   static_cast<long long>(kContext));
      continue;
    }
    const std::string stem = std::filesystem::path(path).stem().string();
    for (Index l : {Index{0}, L / 3, 2 * L / 3, L - 1})
      for (Index h : heads) {
        if (h >= H) continue;
        const std::span<const float> row(t.values.data() + (l * H + h) * T, static_cast<std::size_t>(T));
        rows.push_back({stem + "/L" + std::to_string(l) + "h" + std::to_string(h), kvaudit::pooling::bucket_masses(row, kContext)});
      }
  }
  return rows;
}

void BM_SeedSizes(benchmark::State& st, const Row* row, Index m, double frac, double seconds) {
  const double R = frac * std::log2(static_cast<double>(m));
  const auto& p = row->p;
  const kvaudit::oracle::ExactPrefix prefix(p);
  const auto g0 = std::chrono::steady_clock::now();
  const auto g = kvaudit::pooling::greedy_partition(p, m, R);
  const double greedy_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - g0).count();
  const auto gb = kvaudit::oracle::full_bounds(g.cuts, static_cast<Index>(p.size()));
  using D = kvaudit::oracle::ExactPrefix::Decision;
  const bool greedy_feasible = prefix.compare_with(gb, R) != D::Greater;
  kvaudit::oracle::PartitionAnswer a;
  for (auto _ : st) {
    kvaudit::oracle::ExactLimits limits{2'000'000'000, seconds};
    limits.stop_at_bracket_bits = kTargetBits;
    limits.branch_first_nodes = 20'000;  // a bracket is the goal; the branch and bound only seeds the incumbent
    limits.reach.max_work = 8'000'000'000;  // one interval-cover round at m = 512 needs ~1e9: the clock decides
    a = kvaudit::oracle::solve_exact({p, R, m}, limits);
  }
  st.counters["R"] = R;
  st.counters["greedy_bits"] = greedy_feasible ? prefix.entropy_extended(gb) : std::nan("");
  st.counters["greedy_ms"] = greedy_ms;
  st.counters["feasible"] = a.feasible;
  st.counters["lower_bits"] = a.feasible ? a.entropy_bits : std::nan("");
  st.counters["upper_bits"] = a.feasible ? a.optimum_upper : std::nan("");
  st.counters["width_bits"] = a.feasible ? a.bracket_width() : std::nan("");
  st.counters["certified"] = a.certified;
  st.counters["reach_bound"] = a.upper_source == "reach";
  st.counters["reach_rounds"] = a.reach_rounds;
  st.counters["reach_work"] = static_cast<double>(a.reach_work);
  st.SetLabel(a.upper_source);
  if (std::getenv("KVAUDIT_BENCH_VERBOSE"))  // for diagnosis
    std::fprintf(stderr, "%s m=%lld R=%.4f: %s, nodes %lld\n", row->name.c_str(), static_cast<long long>(m), R,
                 a.strategy.c_str(), static_cast<long long>(a.nodes));
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  std::vector<std::string> paths(argv + 1, argv + argc);  // what the benchmark library left: the dumps
  if (paths.empty())
    if (const char* env = std::getenv("KVAUDIT_SEED_DUMPS")) paths = split(env, ':');
  if (paths.empty()) {
    std::fprintf(stderr, "usage: %s [benchmark flags] DUMP.safetensors... (or KVAUDIT_SEED_DUMPS=a:b)\n", argv[0]);
    return 2;
  }
  const double seconds = std::getenv("KVAUDIT_SEED_SECONDS") ? std::atof(std::getenv("KVAUDIT_SEED_SECONDS")) : 10.0;
  static const std::vector<Row> rows = load_rows(paths);
  if (rows.empty()) {
    std::fprintf(stderr, "no row with T >= %lld in the given dumps\n", static_cast<long long>(kContext));
    return 2;
  }
  for (const Row& r : rows)
    for (Index m : {Index{256}, Index{512}, Index{1024}})
      for (double f : {0.5, 0.75, 1.0}) {
        const std::string name = "BM_SeedSizes/" + r.name + "/m" + std::to_string(m) + "/R" + std::to_string(static_cast<int>(f * 100));
        benchmark::RegisterBenchmark(name.c_str(), BM_SeedSizes, &r, m, f, seconds)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();
      }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
