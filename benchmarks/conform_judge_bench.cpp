// Throughput of the Page-EntroKV conformance judge in-process (issue 17: the judge is never the bottleneck):
// 64 cases, T uniform in [32, 512], G in 1..8, 1-2 KV groups, P = 16, default knobs, tie-heavy rows.
// Canonical answers take the fast path; a wrong answer (group 0's last kept page swapped for the last page it
// drops) takes the oracle's check and the naming of the mistake. Items per second are cases judged.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <vector>

#include "audit/conform/page_family.h"

namespace {
using kvaudit::Index;
using namespace kvaudit::conform;

struct Workload {
  std::vector<PageCase> cases;
  std::vector<PageAnswer> canonical, swapped;  // swapped: only the cases where the swap is a real violation
  std::vector<std::size_t> wrong;
};

const Workload& workload() {
  static const Workload w = [] {
    Workload out;
    std::mt19937 rng(17);
    for (int i = 0; i < 64; ++i) {
      PageCase c;
      c.params.group_size = 1 + static_cast<Index>(rng() % 8);
      c.q_heads = c.params.group_size * (1 + static_cast<Index>(rng() % 2));
      c.tokens = 32 + static_cast<Index>(rng() % 481);
      for (Index h = 0; h < c.q_heads; ++h) {
        std::vector<double> v(static_cast<std::size_t>(c.tokens));
        double total = 0;
        for (auto& x : v) total += x = (rng() % 4 == 0) ? static_cast<double>(rng() % 50) : static_cast<double>(rng() % 3);
        for (auto& x : v) c.values.push_back(static_cast<float>(total > 0 ? x / total : 1.0 / c.tokens));
      }
      c.params.ratio_text = i % 2 ? "0.8" : "0.9";
      PageAnswer a{canonical_pages(c), std::nullopt};
      PageAnswer b = a;
      auto& g0 = b.kept_pages[0];
      Index dropped = (c.tokens + 15) / 16 - 1;
      while (dropped >= 0 && std::find(g0.begin(), g0.end(), dropped) != g0.end()) --dropped;
      if (g0.size() > 1 && dropped >= 1) {
        g0.back() = dropped;
        std::sort(g0.begin(), g0.end());
        if (!judge_pages(c, b).passed()) out.wrong.push_back(out.cases.size());
      }
      out.canonical.push_back(std::move(a));
      out.swapped.push_back(std::move(b));
      out.cases.push_back(std::move(c));
    }
    return out;
  }();
  return w;
}

void BM_JudgeCanonicalAnswers(benchmark::State& st) {
  const Workload& w = workload();
  std::size_t i = 0;
  for (auto _ : st) {
    const bool ok = judge_pages(w.cases[i], w.canonical[i]).passed();
    if (!ok) st.SkipWithError("a canonical answer was judged non-conforming");
    i = (i + 1) % w.cases.size();
  }
  st.SetItemsProcessed(st.iterations());
}
BENCHMARK(BM_JudgeCanonicalAnswers);

void BM_JudgeWrongAnswers(benchmark::State& st) {
  const Workload& w = workload();
  if (w.wrong.empty()) {
    st.SkipWithError("no swapped answer violates: the workload lost its wrong cases");
    return;
  }
  std::size_t k = 0;
  for (auto _ : st) {
    const std::size_t i = w.wrong[k];
    if (judge_pages(w.cases[i], w.swapped[i]).passed()) st.SkipWithError("a wrong answer was judged conforming");
    k = (k + 1) % w.wrong.size();
  }
  st.SetItemsProcessed(st.iterations());
  st.counters["wrong_kinds"] = static_cast<double>(w.wrong.size());
}
BENCHMARK(BM_JudgeWrongAnswers);
}  // namespace

BENCHMARK_MAIN();
