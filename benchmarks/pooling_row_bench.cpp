// The pooling audit stage's per-row work (audit::measure_row: merge identity, greedy against the exact solver at
// 9 fixed-m instances and the free form, the audit's node limits) on the rows a full audit takes: layers 0, L/2
// and L-1, head 0, of both attention tensors of every prompt in data/ (or $KVAUDIT_ROOT/data), 64 buckets.
// KVAUDIT_BENCH_MIN_TOKENS=N keeps prompts of at least N tokens (2049: the long, peaked ones);
// KVAUDIT_BENCH_ROW=text keeps the rows whose label ("model/prompt tensor layer L") contains it;
// KVAUDIT_BENCH_VERBOSE=1 prints one line per row; KVAUDIT_BENCH_DIGEST=1 also every measured figure of it, at full
// precision, so that two builds (before and after a solver change) can be diffed row by row. Counters: rows, median / 90th-percentile / worst seconds per
// row, total seconds. Not part of CI (it needs the real dumps and minutes of CPU).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "audit/pooling_findings.h"
#include "core/io/dump.h"
#include "core/pooling/bucket_masses.h"

namespace {
using kvaudit::Index;

struct Row {
  std::string label;
  std::vector<double> p;
};

std::vector<Row> audit_rows() {
  const char* root = std::getenv("KVAUDIT_ROOT");
  const char* min_tokens = std::getenv("KVAUDIT_BENCH_MIN_TOKENS");
  const Index floor_tokens = min_tokens ? std::atol(min_tokens) : 0;
  const char* only = std::getenv("KVAUDIT_BENCH_ROW");
  std::vector<Row> rows;
  for (const auto& d : kvaudit::io::load_all_dumps(std::string(root ? root : ".") + "/data")) {
    if (d.tokens < floor_tokens) continue;
    for (const char* name : {"attention.last_query", "attention.window_mean"}) {
      const auto& t = d.tensor(name);
      const Index L = t.shape[0], H = t.shape[1], T = t.shape[2];
      for (Index l : {Index{0}, L / 2, L - 1}) {
        const std::span<const float> row(t.values.data() + (l * H) * T, static_cast<std::size_t>(T));
        const std::string label = d.model + "/" + d.name + " " + name + " layer " + std::to_string(l);
        if (only && label.find(only) == std::string::npos) continue;
        rows.push_back({label, kvaudit::pooling::bucket_masses(row, 64)});
      }
    }
  }
  return rows;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

void BM_AuditRows(benchmark::State& st) {
  static const std::vector<Row> rows = audit_rows();
  std::vector<double> secs;
  for (auto _ : st) {
    for (const Row& r : rows) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto m = kvaudit::audit::measure_row(r.p, 100'000);  // the full audit's node limit
      secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      benchmark::DoNotOptimize(m);
      if (std::getenv("KVAUDIT_BENCH_VERBOSE")) std::fprintf(stderr, "%8.3f s  %s\n", secs.back(), r.label.c_str());
      if (std::getenv("KVAUDIT_BENCH_DIGEST")) {
        auto print = [&](const char* form, Index m, double R, const kvaudit::audit::GapRecord& g) {
          std::printf("%s %s m=%lld R=%.17g feasible=%d certified=%d complete=%d greedy_feasible=%d near=%d greedy_opt=%d "
                      "exact=%.17g upper=%.17g greedy=%.17g gap=[%.17g, %.17g] bracket=%.17g source=%s\n",
                      r.label.c_str(), form, static_cast<long long>(m), R, g.exact_feasible, g.exact_certified, g.exact_complete,
                      g.greedy_feasible, g.greedy_near_budget, g.greedy_certified_optimal, g.exact_bits, g.exact_upper,
                      g.greedy_bits, g.gap_low, g.gap_high, g.bracket_bits, g.upper_source.c_str());
        };
        std::printf("%s merge residuals %.17g %.17g\n", r.label.c_str(), m.merge_residual_double, m.merge_residual_extended);
        for (const auto& in : m.fixed) print("fixed", in.groups, in.R, in.gap);
        for (const auto& g : m.free_form) print("free", 0, 0.0, g);
      }
    }
  }
  double total = 0.0;
  for (double s : secs) total += s;
  st.counters["rows"] = static_cast<double>(rows.size());
  st.counters["median_s"] = quantile(secs, 0.5);
  st.counters["p90_s"] = quantile(secs, 0.9);
  st.counters["max_s"] = quantile(secs, 1.0);
  st.counters["total_s"] = total;
}
BENCHMARK(BM_AuditRows)->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace

BENCHMARK_MAIN();
