// Optimized ChunkKV / EG-ChunkKV over all layers (32 x 8 kv heads x T) against reading the tensor once.
//
// BM_ReadOnce sums every value of the same tensor with the same threads, in the fastest reading measured (a
// layer's head rows side by side): the floor any selector that must look at every score pays. BM_ReadOnceFlat
// (the old floor) and BM_HeadSum (the selectors' first pass) show where that floor comes from. The figure of
// merit is time(EG-ChunkKV) / time(ReadOnce) at the same T (issue 30: <= 2 for EG-ChunkKV at cr 0.9 and 0.5,
// T = 128k; docs/chunk-selection.md has the measured ratios). All times are wall-clock (UseRealTime) because
// the work runs on OpenMP threads.
//
// BM_Pass* time the passes after the head sum on one layer's head sums (layer 0 of the same tensor), one
// thread, the data in cache: no DRAM stream, so they are steadier than the whole-tensor runs on a VM whose
// speed drifts, and their time/token is what each pass adds per token on top of the read.
#include <benchmark/benchmark.h>

#include <cmath>
#include <map>
#include <memory>
#include <random>

#include "core/select/chunk_select.h"
#include "core/select/chunk_stats.h"
#include "core/select/entropy_gate.h"

namespace {

constexpr kvaudit::Index kLayers = 32, kHeads = 8;

// Attention-like scores: positive, heavy-tailed (exp of a normal), a few spikes. Fixed seed.
const kvaudit::ScoreTensor& scores_for(kvaudit::Index tokens) {
  static std::map<kvaudit::Index, std::unique_ptr<kvaudit::ScoreTensor>> cache;
  auto& slot = cache[tokens];
  if (!slot) {
    auto t = std::make_unique<kvaudit::ScoreTensor>();
    t->layers = kLayers;
    t->heads = kHeads;
    t->tokens = tokens;
    t->values.resize(static_cast<std::size_t>(kLayers * kHeads * tokens));
    std::mt19937_64 rng(20250607 + static_cast<std::uint64_t>(tokens));
    std::normal_distribution<float> normal(0.0f, 1.5f);
    std::uniform_real_distribution<float> uni(0.0f, 1.0f);
    for (float& v : t->values) v = std::exp(normal(rng)) * 1e-4f * (uni(rng) < 0.01f ? 50.0f : 1.0f);
    slot = std::move(t);
  }
  return *slot;
}

void set_counters(benchmark::State& state, kvaudit::Index tokens) {
  const double calls = static_cast<double>(state.iterations());
  state.SetBytesProcessed(state.iterations() * kLayers * kHeads * tokens * static_cast<std::int64_t>(sizeof(float)));
  state.counters["tokens/s"] = benchmark::Counter(calls * static_cast<double>(tokens), benchmark::Counter::kIsRate);
  state.counters["layer_tokens/s"] =
      benchmark::Counter(calls * static_cast<double>(tokens * kLayers), benchmark::Counter::kIsRate);
}

// Calls per_layer(l) for every layer on the OpenMP threads (the selectors' schedule), once per iteration; the sum
// of what it returns is kept alive.
template <class PerLayer>
void over_layers(benchmark::State& state, const PerLayer& per_layer) {
  for (auto _ : state) {
    double total = 0.0;
#pragma omp parallel for schedule(dynamic, 1) reduction(+ : total)
    for (kvaudit::Index l = 0; l < kLayers; ++l) total += per_layer(l);
    benchmark::DoNotOptimize(total);
  }
  set_counters(state, state.range(0));
}

const float* layer_values(const kvaudit::ScoreTensor& s, kvaudit::Index l) {
  return s.values.data() + static_cast<std::size_t>(l * kHeads * s.tokens);
}

// One stream per layer: the layer's values in memory order, one vector accumulator.
void BM_ReadOnceFlat(benchmark::State& state) {
  const kvaudit::ScoreTensor& s = scores_for(state.range(0));
  const auto n = static_cast<std::size_t>(kHeads * s.tokens);
  over_layers(state, [&](kvaudit::Index l) {
    const float* v = layer_values(s, l);
    float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
    for (std::size_t i = 0; i < n; ++i) acc += v[i];
    return acc;
  });
}

// The floor: a layer's eight head rows read side by side (eight streams, four accumulators). On a Sapphire
// Rapids VM this is 1.5x faster than the flat loop above, which was the floor until 2026-12-05
// (docs/chunk-selection.md); the selectors' head sum reads the rows the same way.
void BM_ReadOnce(benchmark::State& state) {
  const kvaudit::ScoreTensor& s = scores_for(state.range(0));
  static_assert(kHeads == 8);
  const auto row = static_cast<std::size_t>(s.tokens);
  over_layers(state, [&](kvaudit::Index l) {
    const float* r = layer_values(s, l);
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
#pragma omp simd reduction(+ : a0, a1, a2, a3)
    for (std::size_t t = 0; t < row; ++t) {
      a0 += r[t] + r[row + t];
      a1 += r[2 * row + t] + r[3 * row + t];
      a2 += r[4 * row + t] + r[5 * row + t];
      a3 += r[6 * row + t] + r[7 * row + t];
    }
    return (a0 + a1) + (a2 + a3);
  });
}

// The selectors' first pass alone: every layer's float32 head sum, into one buffer per thread.
void BM_HeadSum(benchmark::State& state) {
  const kvaudit::ScoreTensor& s = scores_for(state.range(0));
  const auto n = static_cast<std::size_t>(kHeads * s.tokens);
  over_layers(state, [&](kvaudit::Index l) {
    thread_local std::vector<float> x;
    x.resize(static_cast<std::size_t>(s.tokens));
    const kvaudit::HeadScores layer{kHeads, s.tokens, {layer_values(s, l), n}};
    return kvaudit::select::detail::head_sum<float>(layer, x) ? x[0] : -1.0f;
  });
}

// kvpress's default chunk lengths: EG-ChunkKV 10, ChunkKV 20.
constexpr kvaudit::Index kEgChunkLength = 10, kChunkKVChunkLength = 20;

kvaudit::SelectorParams params_for(kvaudit::Method method, const char* ratio) {
  kvaudit::SelectorParams p;
  p.method = method;
  p.flavour = kvaudit::Flavour::Kvpress;
  p.ratio = {ratio, std::strtod(ratio, nullptr)};
  p.chunk_length = method == kvaudit::Method::ChunkKV ? kChunkKVChunkLength : kEgChunkLength;
  return p;
}

// `reuse`: the selection goes into one output reused across calls (select_layers(..., out)), what a caller
// selecting repeatedly pays without the allocation and page faults of 32 fresh position vectors per call.
void run_selector(benchmark::State& state, kvaudit::Method method, const char* ratio, bool reuse = false) {
  const kvaudit::Index T = state.range(0);
  const kvaudit::ScoreTensor& s = scores_for(T);
  const kvaudit::SelectorParams p = params_for(method, ratio);
  std::vector<kvaudit::Selection> sel;
  for (auto _ : state) {
    if (reuse) kvaudit::select::select_layers(s, p, sel);
    else sel = kvaudit::select::select_layers(s, p);
    benchmark::DoNotOptimize(sel.data());
  }
  state.counters["kept_per_layer"] = static_cast<double>(sel[0].kept[0].size());
  set_counters(state, T);
}

void BM_EgChunkKV_r09(benchmark::State& s) { run_selector(s, kvaudit::Method::EgChunkKV, "0.9"); }
void BM_EgChunkKV_r09_reuse(benchmark::State& s) { run_selector(s, kvaudit::Method::EgChunkKV, "0.9", true); }
void BM_EgChunkKV_r05_reuse(benchmark::State& s) { run_selector(s, kvaudit::Method::EgChunkKV, "0.5", true); }
void BM_EgChunkKV_r05(benchmark::State& s) { run_selector(s, kvaudit::Method::EgChunkKV, "0.5"); }
void BM_ChunkKV_r09(benchmark::State& s) { run_selector(s, kvaudit::Method::ChunkKV, "0.9"); }
void BM_ChunkKV_r05(benchmark::State& s) { run_selector(s, kvaudit::Method::ChunkKV, "0.5"); }

// Layer 0's float32 head sums and what the passes need around them, prepared once per T.
struct HotLayer {
  std::vector<float> x;
  kvaudit::select::detail::ChunkGeometry g;
  kvaudit::select::Workspace ws;
  std::span<float> score() { return {ws.score_f.data(), static_cast<std::size_t>(g.n_chunks)}; }
  std::span<float> entropy() { return {ws.entropy_f.data(), static_cast<std::size_t>(g.n_chunks)}; }
};

HotLayer& hot_layer(kvaudit::Index tokens) {
  static std::map<kvaudit::Index, std::unique_ptr<HotLayer>> cache;
  auto& slot = cache[tokens];
  if (!slot) {
    const kvaudit::ScoreTensor& s = scores_for(tokens);
    slot = std::make_unique<HotLayer>();
    slot->x.resize(static_cast<std::size_t>(tokens));
    const kvaudit::HeadScores layer{kHeads, tokens, {layer_values(s, 0), static_cast<std::size_t>(kHeads * tokens)}};
    kvaudit::select::detail::head_sum<float>(layer, slot->x);
    slot->g = kvaudit::select::detail::geometry(tokens, kEgChunkLength);
    slot->ws.reserve(tokens, kEgChunkLength, kvaudit::Flavour::Kvpress);
  }
  return *slot;
}

void set_pass_counters(benchmark::State& state) {
  state.counters["time/token"] = benchmark::Counter(static_cast<double>(state.range(0)),
                                                    benchmark::Counter::kIsIterationInvariantRate |
                                                        benchmark::Counter::kInvert);
}

// Chunk means and fast entropies in SIMD lanes (block_statistics), C = 10.
void BM_PassStatistics(benchmark::State& state) {
  HotLayer& h = hot_layer(state.range(0));
  for (auto _ : state)
    benchmark::DoNotOptimize(
        kvaudit::select::detail::kvpress_chunk_statistics_lanes(h.x, h.g, h.score(), h.entropy(), h.ws.lanes));
  set_pass_counters(state);
}

// The chunk order (radix sort of the means).
void BM_PassChunkOrder(benchmark::State& state) {
  HotLayer& h = hot_layer(state.range(0));
  kvaudit::select::detail::kvpress_chunk_statistics_lanes(h.x, h.g, h.score(), h.entropy(), h.ws.lanes);
  for (auto _ : state) {
    kvaudit::select::detail::chunk_order(h.ws.score_f.data(), h.g.n_chunks, h.ws.order.data(), h.ws);
    benchmark::ClobberMemory();
  }
  set_pass_counters(state);
}

// The entropy median settled exactly from the fast entropies (median, band, exact recomputation).
void BM_PassMedianGate(benchmark::State& state) {
  HotLayer& h = hot_layer(state.range(0));
  kvaudit::select::detail::kvpress_chunk_statistics_lanes(h.x, h.g, h.score(), h.entropy(), h.ws.lanes);
  const double margin = kvaudit::select::detail::fast_entropy_margin(kEgChunkLength);
  for (auto _ : state)
    benchmark::DoNotOptimize(kvaudit::select::detail::settle_median_gate(h.x.data(), h.g, h.entropy(), margin,
                                                                         h.ws.median_f, h.ws.band));
  set_pass_counters(state);
}

// The layer given as a single head, the head sums themselves: what BM_PassesEgChunkKV_* pay for their head sum
// (a copy and the finiteness check), to subtract from them.
kvaudit::HeadScores as_one_head(HotLayer& h) { return {1, h.g.tokens, h.x}; }
void BM_PassOneHeadSum(benchmark::State& state) {
  HotLayer& h = hot_layer(state.range(0));
  const kvaudit::HeadScores one = as_one_head(h);
  for (auto _ : state) benchmark::DoNotOptimize(kvaudit::select::detail::head_sum<float>(one, h.ws.xf));
  set_pass_counters(state);
}

// Every pass of EG-ChunkKV on that one-head layer.
void eg_after_head_sum(benchmark::State& state, const char* ratio) {
  HotLayer& h = hot_layer(state.range(0));
  const kvaudit::HeadScores one = as_one_head(h);
  const kvaudit::SelectorParams p = params_for(kvaudit::Method::EgChunkKV, ratio);
  kvaudit::Selection out;
  for (auto _ : state) {
    kvaudit::select::select_layer(one, p, h.ws, out);
    benchmark::DoNotOptimize(out.kept.data());
  }
  set_pass_counters(state);
}
void BM_PassesEgChunkKV_r09(benchmark::State& s) { eg_after_head_sum(s, "0.9"); }
void BM_PassesEgChunkKV_r05(benchmark::State& s) { eg_after_head_sum(s, "0.5"); }

#define KVAUDIT_SIZES ->Arg(4096)->Arg(32768)->Arg(131072)->UseRealTime()->Unit(benchmark::kMillisecond)
// Tensors are generated once per T and kept (164 MiB in all).
BENCHMARK(BM_ReadOnce) KVAUDIT_SIZES;
BENCHMARK(BM_ReadOnceFlat) KVAUDIT_SIZES;
BENCHMARK(BM_HeadSum) KVAUDIT_SIZES;
BENCHMARK(BM_EgChunkKV_r09) KVAUDIT_SIZES;
BENCHMARK(BM_EgChunkKV_r05) KVAUDIT_SIZES;
BENCHMARK(BM_ChunkKV_r09) KVAUDIT_SIZES;
BENCHMARK(BM_ChunkKV_r05) KVAUDIT_SIZES;
BENCHMARK(BM_EgChunkKV_r09_reuse) KVAUDIT_SIZES;
BENCHMARK(BM_EgChunkKV_r05_reuse) KVAUDIT_SIZES;
// One layer in cache, one thread: CPU time is wall time.
#define KVAUDIT_PASS ->Arg(131072)->Unit(benchmark::kMicrosecond)
BENCHMARK(BM_PassStatistics) KVAUDIT_PASS;
BENCHMARK(BM_PassChunkOrder) KVAUDIT_PASS;
BENCHMARK(BM_PassMedianGate) KVAUDIT_PASS;
BENCHMARK(BM_PassOneHeadSum) KVAUDIT_PASS;
BENCHMARK(BM_PassesEgChunkKV_r09) KVAUDIT_PASS;
BENCHMARK(BM_PassesEgChunkKV_r05) KVAUDIT_PASS;

}  // namespace

BENCHMARK_MAIN();
