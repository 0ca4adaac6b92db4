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

// Page-EntroKV (SPEC.md section 5) parameters: the same names, meanings and defaults as
// oracle/page_params.h (core/ may not include oracle/, so the plain struct is repeated here).
enum class PagePooling { Entropy, Mean };           // w_h proportional to sum_t p~_h(t)^2, or 1/G
enum class PoolSource { SinkIsolated, Raw };        // pool p~_h (default) or the raw p_h
enum class PageScore { Sum, Max };
enum class SinkPages { Reserved, Scored };          // pages holding a sink kept first, or scored like any page
enum class GreedyRule { SkipMisfits, StopAtFirstMisfit };

struct PageParams {
  Index group_size = 3;            // G; the segment's rows are the G query heads of one KV group
  Index page_size = 16;
  std::string ratio_text = "0.8";  // budget max(1, floor((1 - rho) T)), rho read exactly from the text
  Index n_sink = 4;
  PagePooling pooling = PagePooling::Entropy;
  PoolSource source = PoolSource::SinkIsolated;
  PageScore page_score = PageScore::Sum;
  SinkPages sink_pages = SinkPages::Reserved;
  GreedyRule greedy = GreedyRule::SkipMisfits;
};

// Relative tolerance under which two page scores computed here in double may be tied in exact arithmetic
// (the oracle's rationals): every quantity is a sum of at most T + P + G + 8 non-negative double terms and
// products, so the relative error of a page score is below (T + P + G + 8) * 2^-53; twice that makes the
// tie test symmetric. Valid for non-negative attention (cancellation voids it).
inline double page_score_rel_tol(Index tokens, const PageParams& params) {
  return 2.0 * static_cast<double>(tokens + params.page_size + params.group_size + 8) * 0x1p-53;
}

// Page-EntroKV input: per query head attention (segments = layers * kv_groups, heads_per_segment = G query
// heads of the group, tokens = T): a (layers, q_heads, T) ScoreTensor such as attention.window_mean is
// {layers * q_heads / G, G, T} without copying.
struct PageSelection {
  std::vector<Index> pages;   // kept page indices, increasing
  Positions tokens;           // their token positions, increasing; size <= budget
  std::vector<double> page_scores;  // every page's score (for the admissibility check on near-ties)
};

// Wall time of `repeats` selections on data already resident in device memory (upload and download
// excluded), divided by `repeats`; what the benchmark reports.
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
  /* Bytes/s of one pass that reads `bytes` of device memory once (the roofline the selectors face). */   \
  double read_once_bandwidth(Index bytes, int repeats);                                                    \
  /* Devices this backend can run on: 0 means a device test must skip. CPU build: always 1. */           \
  int device_count();                                                                                      \
  const char* backend_name();                                                                              \
  }

KVAUDIT_GPU_DECLARE_BACKEND(cpu)
KVAUDIT_GPU_DECLARE_BACKEND(cuda)

#undef KVAUDIT_GPU_DECLARE_BACKEND

}  // namespace kvaudit::gpu
