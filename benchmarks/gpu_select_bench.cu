// Batched EG-ChunkKV / ChunkKV / Page-EntroKV selection throughput, against a read-once pass over the same
// bytes on the same device (medians of synchronized repeats). The CUDA build also times kvaudit's optimized
// CPU selectors (core/select, core/paging; OpenMP over layers) on the same inputs on the host's cores, for a
// side-by-side ratio. Prints one JSON object. Built for CUDA (this file) and for the CPU build
// (benchmarks/gpu_select_bench_cpu.cpp includes it with KVAUDIT_BENCH_BACKEND=cpu).
// Usage: gpu_select_bench [--tokens 32768,131072] [--layers 32] [--kv-heads 8] [--group 4] [--repeats 5]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <numeric>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/compression_ratio.h"
#include "core/gpu/gpu_select.h"
#include "core/paging/page_selector.h"
#include "core/select/chunk_select.h"

#ifndef KVAUDIT_BENCH_BACKEND
#define KVAUDIT_BENCH_BACKEND cuda
#endif
#define KVAUDIT_BENCH_STRINGIFY_(x) #x
#define KVAUDIT_BENCH_STRINGIFY(x) KVAUDIT_BENCH_STRINGIFY_(x)

namespace backend = kvaudit::gpu::KVAUDIT_BENCH_BACKEND;
using kvaudit::Index;

namespace {

std::vector<Index> parse_list(const std::string& s) {
  std::vector<Index> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::stoll(item));
  return out;
}

// Deterministic bf16-like attention-shaped scores (a few heavy hitters over a flat floor).
std::vector<float> make_scores(std::size_t n, std::uint32_t seed) {
  std::vector<float> v(n);
  std::uint32_t state = seed;
  for (float& x : v) {
    state = state * 1664525u + 1013904223u;
    const float u = static_cast<float>(state >> 8) / 16777216.0f;
    x = u < 0.01f ? 50.0f * u : 0.001f * u;
  }
  return v;
}

// Median wall time of `repeats` calls after one warm-up call.
template <class Run>
double host_median_seconds(int repeats, Run&& run) {
  run();
  std::vector<double> seconds;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(seconds.begin(), seconds.begin() + repeats / 2, seconds.end());
  return seconds[static_cast<std::size_t>(repeats / 2)];
}

// The production CPU selector on the same scores, beside the batched one (CUDA build only: the CPU build of
// the batched code already runs on these cores).
constexpr bool kCompareHostSelectors = std::string_view(KVAUDIT_BENCH_STRINGIFY(KVAUDIT_BENCH_BACKEND)) == "cuda";

}  // namespace

int main(int argc, char** argv) {
  std::vector<Index> tokens = {32768, 131072};
  Index layers = 32, kv_heads = 8, group = 4;
  int repeats = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--tokens") tokens = parse_list(v);
    else if (a == "--layers") layers = std::stoll(v);
    else if (a == "--kv-heads") kv_heads = std::stoll(v);
    else if (a == "--group") group = std::stoll(v);
    else if (a == "--repeats") repeats = std::stoi(v);
    else {
      std::cerr << "gpu_select_bench: unknown flag " << a << "\n";
      return 2;
    }
  }
  nlohmann::json out;
  out["backend"] = backend::backend_name();
  out["devices"] = backend::device_count();
  if (backend::device_count() == 0) {
    out["status"] = "skipped: no device";
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  out["layers"] = layers;
  out["kv_heads"] = kv_heads;
  out["group"] = group;
  out["repeats"] = repeats;
  for (Index T : tokens) {
    nlohmann::json row;
    row["tokens"] = T;
    // EG-ChunkKV / ChunkKV: (layers, kv_heads, T) scores, one selection per layer (kvpress semantics).
    const std::vector<float> scores = make_scores(static_cast<std::size_t>(layers * kv_heads * T), 7u);
    const kvaudit::gpu::BatchedScores in{layers, kv_heads, T, scores};
    const double score_bytes = static_cast<double>(scores.size() * sizeof(float));
    const double bw = backend::read_once_bandwidth(static_cast<Index>(score_bytes), repeats);
    row["read_once_bytes_per_s"] = bw;
    for (auto method : {kvaudit::Method::EgChunkKV, kvaudit::Method::ChunkKV}) {
      kvaudit::SelectorParams p;
      p.method = method;
      p.chunk_length = method == kvaudit::Method::EgChunkKV ? 10 : 20;
      p.ratio = kvaudit::parse_compression_ratio("0.9");
      const auto t = backend::time_select(in, p, repeats);
      nlohmann::json m;
      m["seconds_all_layers"] = t.seconds_per_selection;
      m["seconds_per_layer"] = t.seconds_per_selection / static_cast<double>(layers);
      m["input_bytes_per_s"] = score_bytes / t.seconds_per_selection;
      m["fraction_of_read_once"] = score_bytes / t.seconds_per_selection / bw;
      m["kept_total"] = t.kept_total;
      if (kCompareHostSelectors) {
        const kvaudit::ScoreTensor host{layers, kv_heads, T, scores};
        std::vector<kvaudit::Selection> sel;
        const double cpu = host_median_seconds(repeats, [&] { kvaudit::select::select_layers(host, p, sel); });
        m["cpu_selector_seconds_all_layers"] = cpu;
        m["cpu_over_device"] = cpu / t.seconds_per_selection;
      }
      row[method == kvaudit::Method::EgChunkKV ? "eg_chunkkv" : "chunkkv"] = m;
    }
    // Page-EntroKV: (layers, kv_heads * G, T) attention, one selection per (layer, group).
    const std::vector<float> attn = make_scores(static_cast<std::size_t>(layers * kv_heads * group * T), 11u);
    const kvaudit::gpu::BatchedScores pin{layers * kv_heads, group, T, attn};
    kvaudit::PageParams pp;
    pp.group_size = group;
    pp.ratio_text = "0.9";
    const double attn_bytes = static_cast<double>(attn.size() * sizeof(float));
    const auto t = backend::time_page_select(pin, pp, repeats);
    nlohmann::json m;
    m["seconds_all_layers"] = t.seconds_per_selection;
    m["seconds_per_layer"] = t.seconds_per_selection / static_cast<double>(layers);
    m["input_bytes_per_s"] = attn_bytes / t.seconds_per_selection;
    m["fraction_of_read_once"] = attn_bytes / t.seconds_per_selection / bw;
    m["kept_total"] = t.kept_total;
    if (kCompareHostSelectors) {
      const kvaudit::ScoreTensor host{layers, kv_heads * group, T, attn};
      Index kept = 0;  // tokens, as the batched selector counts them
      const double cpu = host_median_seconds(repeats, [&] {
        const kvaudit::paging::PageSelection sel = kvaudit::paging::select_pages(host, pp);
        kept = std::accumulate(sel.retained.begin(), sel.retained.end(), Index{0});
      });
      m["cpu_selector_seconds_all_layers"] = cpu;
      m["cpu_over_device"] = cpu / t.seconds_per_selection;
      m["cpu_selector_kept_total"] = kept;
    }
    row["page_entrokv"] = m;
    out["runs"].push_back(row);
  }
  std::cout << out.dump(2) << "\n";
  return 0;
}
