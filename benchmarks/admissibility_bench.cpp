// The admissibility checker's full procedure (oracle::check_admissible on a claim, no canonical shortcut), filtered
// arithmetic against the 50-digit reference (proofs/15_filtered_admissibility.md):
//   - python/bench/check_throughput.py's case: 3 heads x T, float32 values from a pool of 8 (tie-heavy), kvpress
//     flavour, rho 0.9, the selector's own selection as the claim;
//   - one real row: the 16,618-token Qwen2.5-Coder-0.5B needle prompt, layer 12, head-summed over its kv heads,
//     scores.snapkv, the canonical selection as the claim (SKIPPED when data/ is absent).
// Counters: fell_back (fraction of calls whose rule stage went to 50 digits).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <random>

#include "core/io/dump.h"
#include "oracle/chunk_selection.h"

namespace {

using kvaudit::HeadScores;
using kvaudit::Index;
using kvaudit::Method;
using kvaudit::Selection;
using kvaudit::SelectorParams;
namespace oracle = kvaudit::oracle;

struct Case {
  std::vector<float> storage;
  HeadScores scores;
  SelectorParams params;
  Selection claim;
};

SelectorParams params_for(Method m, const char* ratio) {
  SelectorParams p;
  p.method = m;
  p.flavour = kvaudit::Flavour::Kvpress;
  p.ratio = {ratio, std::strtod(ratio, nullptr)};
  p.chunk_length = m == Method::ChunkKV ? 20 : 10;
  p.rescue_size = 4;
  return p;
}

// check_throughput.py's shape and value pool (its own numpy draw differs; the tie structure is the same).
const Case& pool_case(Method m, Index tokens) {
  static std::map<std::pair<int, Index>, std::unique_ptr<Case>> cache;
  auto& slot = cache[{static_cast<int>(m), tokens}];
  if (!slot) {
    slot = std::make_unique<Case>();
    std::mt19937_64 rng(20261202);
    std::normal_distribution<float> normal;
    std::vector<float> pool(8);
    for (float& v : pool) v = normal(rng) * normal(rng);
    for (float& v : pool) v = v * v;
    std::uniform_int_distribution<int> pick(0, 7);
    slot->storage.resize(static_cast<std::size_t>(3 * tokens));
    for (float& v : slot->storage) v = pool[static_cast<std::size_t>(pick(rng))];
    slot->scores = HeadScores{3, tokens, slot->storage};
    slot->params = params_for(m, "0.9");
    slot->claim = oracle::select(slot->scores, slot->params);
  }
  return *slot;
}

const Case* real_row_case(Method m) {
  static std::map<int, std::unique_ptr<Case>> cache;
  auto& slot = cache[static_cast<int>(m)];
  if (!slot) {
    const char* root = std::getenv("KVAUDIT_ROOT");
    const auto dir = std::filesystem::path(root ? root : ".") / "data" / "qwen2.5-coder-0.5b-instruct";
    if (!std::filesystem::exists(dir / "manifest.json")) return nullptr;
    for (const auto& d : kvaudit::io::load_dumps(dir.string())) {
      if (d.tokens < 16000) continue;
      const auto& t = d.tensor("scores.snapkv");
      const Index layer = d.layers / 2;
      const auto offset = static_cast<std::size_t>(layer * d.kv_heads * d.tokens);
      slot = std::make_unique<Case>();
      slot->storage.assign(t.values.begin() + static_cast<std::ptrdiff_t>(offset),
                           t.values.begin() + static_cast<std::ptrdiff_t>(offset + static_cast<std::size_t>(d.kv_heads * d.tokens)));
      slot->scores = HeadScores{d.kv_heads, d.tokens, slot->storage};
      slot->params = params_for(m, "0.9");
      slot->claim = oracle::select(slot->scores, slot->params);
      break;
    }
  }
  return slot.get();
}

void run(benchmark::State& state, const Case& c, oracle::Arithmetic arithmetic) {
  oracle::ArithmeticCounts counts;
  oracle::AdmissibilityOptions options;
  options.arithmetic = arithmetic;
  options.counts = &counts;
  for (auto _ : state) {
    kvaudit::Verdict v = oracle::check_admissible(c.scores, c.params, c.claim, options);
    if (!v.passed()) {
      state.SkipWithError(("the canonical claim does not conform: " + v.message).c_str());
      return;
    }
    benchmark::DoNotOptimize(v);
  }
  const double n = static_cast<double>(counts.decided_in_double + counts.fell_back_to_50_digits);
  state.counters["fell_back"] = n > 0 ? static_cast<double>(counts.fell_back_to_50_digits) / n : 0.0;
  state.counters["calls/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_PoolCase(benchmark::State& state) {
  const auto m = state.range(0) == 0 ? Method::EgChunkKV : Method::ChunkKV;
  run(state, pool_case(m, state.range(1)), state.range(2) == 0 ? oracle::Arithmetic::Filtered : oracle::Arithmetic::Reference50Digit);
}
// method (0 EG-ChunkKV, 1 ChunkKV), T, arithmetic (0 filtered, 1 50-digit reference)
BENCHMARK(BM_PoolCase)->ArgNames({"chunkkv", "T", "reference"})->ArgsProduct({{0, 1}, {128, 512}, {0, 1}});

void BM_RealRow16k(benchmark::State& state) {
  const Case* c = real_row_case(state.range(0) == 0 ? Method::EgChunkKV : Method::ChunkKV);
  if (c == nullptr) {
    state.SkipWithError("SKIPPED: data/qwen2.5-coder-0.5b-instruct is absent");
    return;
  }
  run(state, *c, state.range(1) == 0 ? oracle::Arithmetic::Filtered : oracle::Arithmetic::Reference50Digit);
}
BENCHMARK(BM_RealRow16k)->ArgNames({"chunkkv", "reference"})->ArgsProduct({{0, 1}, {0, 1}})->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
