// Batched ChunkKV / EG-ChunkKV / Page-EntroKV selectors written once with Thrust and built twice: for CUDA
// (namespace kvaudit::gpu::cuda, library kvaudit_gpu_cuda) and for the CPU through Thrust's OpenMP device
// system (namespace kvaudit::gpu::cpu, library kvaudit_gpu_algo_cpu) so CI checks the same algorithm code
// against the oracles without a GPU. This header is Thrust-free; never link both libraries into one program
// (Thrust is configured per translation unit, so mixing device systems in one binary would break the ODR).
#pragma once

#include <string>
#include <vector>

#include "core/types.h"

namespace kvaudit::gpu {

// A stack of independent selection problems sharing one token count: `segments` slabs of
// `heads_per_segment` rows of `tokens` scores, row-major. ChunkKV/EG-ChunkKV sum a slab's rows (the KV heads
// of one layer, as kvpress does for batch element 0); a ScoreTensor (layers, kv_heads, T) is therefore
// segments = layers, heads_per_segment = kv_heads, or segments = layers * kv_heads, heads_per_segment = 1
// for one selection per head.
struct BatchedScores {
  Index segments = 0;
  Index heads_per_segment = 0;
  Index tokens = 0;
  std::span<const float> values;  // segments * heads_per_segment * tokens

  static BatchedScores per_layer(const ScoreTensor& t) {
    return {t.layers, t.heads, t.tokens, std::span<const float>(t.values)};
  }
};

// Page-EntroKV parameters: kvaudit::PageParams (core/types.h), shared with the oracle and the CPU selector.

// Page-EntroKV input: per query head attention (segments = layers * kv_groups, heads_per_segment = G query
// heads of the group, tokens = T): a (layers, q_heads, T) ScoreTensor such as attention.window_mean is
// {layers * q_heads / G, G, T} without copying.
struct PageSelection {
  std::vector<Index> pages;   // kept page indices, increasing
  Positions tokens;           // their token positions, increasing; size <= budget
  std::vector<double> page_scores;  // every page's score (for the admissibility check on near-ties)
};

// Median wall time of `repeats` selections (after one warm-up, each ended by a device synchronization) on
// data already resident in device memory, upload and download excluded; what the benchmark reports.
struct ResidentTiming {
  double seconds_per_selection = 0.0;
  Index kept_total = 0;  // positions kept over all segments by the last run (guards against dead code)
};

#define KVAUDIT_GPU_DECLARE_BACKEND(ns)                                                                     \
  namespace ns {                                                                                           \
  /* One Selection per segment, equal to oracle::select's canonical selection (ties toward lower index).  \
     Throws std::invalid_argument on the inputs the oracle rejects. */                                     \
  std::vector<Selection> select(const BatchedScores& scores, const SelectorParams& params);               \
  std::vector<PageSelection> page_select(const BatchedScores& attention, const PageParams& params);       \
  ResidentTiming time_select(const BatchedScores& scores, const SelectorParams& params, int repeats);     \
  ResidentTiming time_page_select(const BatchedScores& attention, const PageParams& params, int repeats); \
  /* Bytes/s of one pass that reads `bytes` of device memory once (the roofline the selectors face), from \
     the median of `repeats` synchronized passes. */   \
  double read_once_bandwidth(Index bytes, int repeats);                                                    \
  /* Devices this backend can run on: 0 means a device test must skip. CPU build: always 1. */           \
  int device_count();                                                                                      \
  const char* backend_name();                                                                              \
  }

KVAUDIT_GPU_DECLARE_BACKEND(cpu)
KVAUDIT_GPU_DECLARE_BACKEND(cuda)

#undef KVAUDIT_GPU_DECLARE_BACKEND

}  // namespace kvaudit::gpu
