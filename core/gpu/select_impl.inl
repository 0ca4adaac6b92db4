// The batched selector pipelines on Thrust's device system; included once by select_cpu.cpp (OpenMP) and
// once by select_cuda.cu (CUDA), each defining KVAUDIT_GPU_NS to its backend namespace.
#pragma once

#ifndef KVAUDIT_GPU_NS
#error "define KVAUDIT_GPU_NS (cpu or cuda) before including select_impl.inl"
#endif
// KVAUDIT_GPU_EXEC(): the execution policy every algorithm call takes (the backend file defines it). On CUDA
// it skips the stream synchronization Thrust's default policy makes after each call and takes temporary
// storage from a cache instead of cudaMalloc/cudaFree per call; calls on one stream stay ordered.
#ifndef KVAUDIT_GPU_EXEC
#error "define KVAUDIT_GPU_EXEC() before including select_impl.inl"
#endif

#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/fill.h>
#include <thrust/for_each.h>
#include <thrust/functional.h>
#include <thrust/host_vector.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/discard_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <stdexcept>
#include <string>

#include "core/compression_ratio.h"
#include "core/gpu/gpu_select.h"
#include "core/gpu/select_functors.inl"

namespace kvaudit::gpu::KVAUDIT_GPU_NS {
namespace {

using detail::Chunking;
template <class T>
using dvec = thrust::device_vector<T>;
using CountIt = thrust::counting_iterator<int>;

// The execution policy every algorithm call below takes (KVAUDIT_GPU_EXEC, above).
inline auto exec() { return KVAUDIT_GPU_EXEC(); }

template <class T>
T* raw(dvec<T>& v) {
  return thrust::raw_pointer_cast(v.data());
}
template <class T>
const T* raw(const dvec<T>& v) {
  return thrust::raw_pointer_cast(v.data());
}

// Scratch reused across runs so that a timed loop allocates nothing of its own.
struct Workspace {
  dvec<float> scores;          // uploaded input
  dvec<float> x;               // per-token head sums (S * T)
  dvec<float> mean, entropy;   // per chunk (S * nC)
  dvec<float> median, gate;    // per segment
  dvec<int> order, order2;     // sorted chunk ids
  dvec<int> token_order;       // sorted token ids (S * T)
  dvec<std::uint64_t> keys;
  dvec<int> cost, prefix, take, remaining, leftover, leftover_rank;
  dvec<std::uint8_t> keep;     // per token (S * T)
  dvec<int> kept_positions;    // compacted global token ids
  dvec<int> counts;            // kept per segment
};

// order[k] for k in [0, n): per segment of `per_segment` elements, ids sorted by (value desc|asc, id asc).
void segmented_order(const dvec<float>& values, int per_segment, bool descending, dvec<int>& order,
                     dvec<std::uint64_t>& keys) {
  const int n = static_cast<int>(values.size());
  keys.resize(n);
  order.resize(n);
  thrust::transform(exec(), CountIt(0), CountIt(n), keys.begin(), detail::SegmentKey{raw(values), per_segment, descending});
  thrust::sequence(exec(), order.begin(), order.end());
  thrust::stable_sort_by_key(exec(), keys.begin(), keys.end(), order.begin());
}

struct Plan {
  int segments = 0, rows = 0, tokens = 0;
  Method method = Method::EgChunkKV;
  Flavour flavour = Flavour::Kvpress;
  Chunking geo{};
  int budget = 0;          // EG: tokens L; ChunkKV: chunks kept
  int rescue = 0;
  bool keep_all = false;
  bool per_head_fallback = false;  // kvpress ChunkKV with no complete chunk
  int fallback_k = 0;
  bool shared_top_k = false;  // exact ChunkKV with no complete chunk
  bool fixed_tau = false;
  float tau = 0.0f;
  bool mean_of_middles = false;
  float eps = 1e-8f;
};

int checked_int(Index v, const char* what) {
  if (v < 0 || v > INT_MAX) throw std::invalid_argument(std::string("gpu selector: ") + what + " out of int range");
  return static_cast<int>(v);
}

Plan make_plan(const BatchedScores& in, const SelectorParams& p) {
  if (in.segments < 1 || in.heads_per_segment < 1 || in.tokens < 1)
    throw std::invalid_argument("gpu selector: empty input");
  if (static_cast<Index>(in.values.size()) != in.segments * in.heads_per_segment * in.tokens)
    throw std::invalid_argument("gpu selector: values size does not match segments * heads * tokens");
  checked_int(in.segments * in.heads_per_segment * in.tokens, "element count");
  if (p.chunk_length < 1) throw std::invalid_argument("chunk_length must be >= 1");
  // The oracle's rejections (oracle/chunk_internal.cpp invalid_reason), in the same order.
  if (p.rescue_size < 1) throw std::invalid_argument("rescue_size must be >= 1");
  if (!(p.ratio.value >= 0.0 && p.ratio.value < 1.0)) throw std::invalid_argument("compression ratio must be in [0, 1)");
  if (p.flavour == Flavour::Exact) {
    if (p.entropy_threshold && !std::isfinite(*p.entropy_threshold))
      throw std::invalid_argument("entropy threshold must be finite");
    if (!(p.eps > 0.0) || !std::isfinite(p.eps)) throw std::invalid_argument("eps must be finite and > 0");
  } else if (p.method == Method::EgChunkKV) {
    if (!(p.chunk_length > p.rescue_size))
      throw std::invalid_argument("kvpress asserts chunk_length > low_entropy_chunk_length >= 1");
    if (p.entropy_threshold) throw std::invalid_argument("kvpress flavour has no fixed entropy threshold");
    if (p.median != MedianRule::Lower) throw std::invalid_argument("kvpress flavour always uses torch's lower median");
    if (p.eps != 1e-8) throw std::invalid_argument("kvpress flavour uses EPSILON = 1e-8");
  }
  Plan plan;
  plan.segments = static_cast<int>(in.segments);
  plan.rows = static_cast<int>(in.heads_per_segment);
  plan.tokens = static_cast<int>(in.tokens);
  plan.method = p.method;
  plan.flavour = p.flavour;
  const int T = plan.tokens;
  const int c = checked_int(std::min<Index>(p.chunk_length, in.tokens), "chunk_length");
  plan.geo = Chunking{T, checked_int(p.chunk_length, "chunk_length"), (T + c - 1) / c};
  plan.rescue = checked_int(p.rescue_size, "rescue_size");
  const bool kvpress = p.flavour == Flavour::Kvpress;
  // ratio.value is 0.0 exactly when the decimal text is zero, for both flavours.
  if (p.ratio.value == 0.0) {
    plan.keep_all = true;  // both presses return the cache untouched
    return plan;
  }
  if (p.method == Method::ChunkKV) {
    const Index complete = in.tokens / p.chunk_length;
    if (complete == 0 && kvpress) {
      // ChunkKVPress delegates to its ScorerPress: per-head topk of compute_n_kept(T, rho) (with max(1, .)).
      plan.per_head_fallback = true;
      plan.fallback_k = checked_int(kvpress_float_budget(in.tokens, p.ratio.value), "fallback budget");
      return plan;
    }
    if (complete == 0) {
      // Exact flavour: the head-summed top-L shared by all heads. The context is one partial chunk, so this
      // is the walk's "top tokens of a chunk" with take = L.
      plan.shared_top_k = true;
      plan.budget = checked_int(exact_budget(in.tokens, p.ratio), "token budget");
      return plan;
    }
    const Index n_chunks = plan.geo.n_chunks;
    plan.budget = checked_int(kvpress ? kvpress_float_budget(n_chunks, p.ratio.value)
                                      : exact_budget(n_chunks, p.ratio), "chunk budget");
    return plan;
  }
  plan.budget = checked_int(kvpress ? kvpress_float_budget(in.tokens, p.ratio.value)
                                    : exact_budget(in.tokens, p.ratio), "token budget");
  if (plan.budget >= T) plan.keep_all = true;
  if (!kvpress && p.entropy_threshold) {
    plan.fixed_tau = true;
    plan.tau = static_cast<float>(*p.entropy_threshold);
  }
  plan.mean_of_middles = p.median == MedianRule::MeanOfMiddles;
  plan.eps = static_cast<float>(p.eps);
  return plan;
}

// Fills ws.keep (S * T flags) from ws.scores, entirely on the device.
void run_chunk_selection(const Plan& plan, Workspace& ws) {
  const int S = plan.segments, T = plan.tokens, n = S * T;
  ws.keep.resize(n);
  if (plan.keep_all) {
    thrust::fill(exec(), ws.keep.begin(), ws.keep.end(), std::uint8_t{1});
    return;
  }
  if (plan.per_head_fallback) {
    // One selection per row: sort rows by (score desc, index asc) and keep the first k of each.
    const int rows = S * plan.rows;
    ws.keep.resize(static_cast<std::size_t>(rows) * T);
    segmented_order(ws.scores, T, true, ws.token_order, ws.keys);
    thrust::for_each(exec(), CountIt(0), CountIt(rows * T),
                     detail::RankBelow{raw(ws.token_order), raw(ws.keep), T, plan.fallback_k});
    return;
  }
  const Chunking geo = plan.geo;
  const int C = S * geo.n_chunks;
  ws.x.resize(n);
  thrust::transform(exec(), CountIt(0), CountIt(n), ws.x.begin(),
                    detail::HeadSum{raw(ws.scores), plan.rows, T,
                                    plan.method == Method::EgChunkKV && plan.flavour == Flavour::Exact});
  ws.mean.resize(C);
  thrust::transform(exec(), CountIt(0), CountIt(C), ws.mean.begin(), detail::ChunkMean{raw(ws.x), geo});
  segmented_order(ws.mean, geo.n_chunks, true, ws.order, ws.keys);
  ws.take.resize(C);

  if (plan.shared_top_k) {
    thrust::fill(exec(), ws.take.begin(), ws.take.end(), plan.budget);
    thrust::transform(exec(), CountIt(0), CountIt(n), ws.keep.begin(), detail::WalkKeep{raw(ws.x), raw(ws.take), geo});
    return;
  }
  if (plan.method == Method::ChunkKV) {
    thrust::for_each(exec(), CountIt(0), CountIt(C), detail::ChunkRankTake{raw(ws.order), raw(ws.take), geo, plan.budget});
    thrust::transform(exec(), CountIt(0), CountIt(n), ws.keep.begin(), detail::WalkKeep{raw(ws.x), raw(ws.take), geo});
    return;
  }

  // EG-ChunkKV. Gates: important = mean >= median(mean), spiky = entropy < tau (median(entropy) by default).
  ws.entropy.resize(C);
  thrust::transform(exec(), CountIt(0), CountIt(C), ws.entropy.begin(), detail::ChunkEntropy{raw(ws.x), geo, plan.eps});
  const int nc = geo.n_chunks;
  // Ascending ranks of the middle values; the lower median is rank (nc - 1) / 2 (torch.median).
  const int lo = (nc - 1) / 2, hi = plan.mean_of_middles && nc % 2 == 0 ? nc / 2 : lo;
  ws.median.resize(S);
  // ws.order is descending: ascending rank a sits at descending position nc - 1 - a.
  thrust::transform(exec(), CountIt(0), CountIt(S), ws.median.begin(),
                    detail::AtRank{raw(ws.mean), raw(ws.order), nc, nc - 1 - lo, nc - 1 - hi});
  ws.gate.resize(S);
  if (plan.fixed_tau) {
    thrust::fill(exec(), ws.gate.begin(), ws.gate.end(), plan.tau);
  } else {
    segmented_order(ws.entropy, nc, false, ws.order2, ws.keys);
    thrust::transform(exec(), CountIt(0), CountIt(S), ws.gate.begin(),
                      detail::AtRank{raw(ws.entropy), raw(ws.order2), nc, lo, hi});
  }
  // The walk as a prefix sum (proofs/10_walk_as_prefix_sum.md).
  ws.cost.resize(C);
  ws.prefix.resize(C);
  thrust::transform(exec(), CountIt(0), CountIt(C), ws.cost.begin(),
                    detail::WalkCost{raw(ws.order), raw(ws.mean), raw(ws.entropy), raw(ws.median), raw(ws.gate),
                                     geo, plan.rescue});
  auto chunk_segment = thrust::make_transform_iterator(CountIt(0), detail::SegmentOf{nc});
  thrust::exclusive_scan_by_key(exec(), chunk_segment, chunk_segment + C, ws.cost.begin(), ws.prefix.begin());
  thrust::for_each(exec(), CountIt(0), CountIt(C),
                   detail::ScatterTake{raw(ws.order), raw(ws.cost), raw(ws.prefix), raw(ws.take), plan.budget});
  ws.remaining.resize(S);
  thrust::transform(exec(), CountIt(0), CountIt(S), ws.remaining.begin(),
                    detail::Remaining{raw(ws.cost), raw(ws.prefix), nc, plan.budget});
  thrust::transform(exec(), CountIt(0), CountIt(n), ws.keep.begin(), detail::WalkKeep{raw(ws.x), raw(ws.take), geo});

  // Top-up: the `remaining` best leftover tokens per segment, in (x desc, index asc) order. Only when the
  // chunks' costs sum to less than L in some segment (low compression with spiky chunks); skipping the
  // sort of every token otherwise saves about 40 % of a selection (ncu, docs/gpu-results.md) for one read
  // of S integers.
  const int most_remaining =
      thrust::reduce(exec(), ws.remaining.begin(), ws.remaining.end(), 0, thrust::maximum<int>());
  if (most_remaining == 0) return;
  segmented_order(ws.x, T, true, ws.token_order, ws.keys);
  ws.leftover.resize(n);
  ws.leftover_rank.resize(n);
  thrust::transform(exec(), CountIt(0), CountIt(n), ws.leftover.begin(), detail::NotKeptAt{raw(ws.keep), raw(ws.token_order)});
  auto token_segment = thrust::make_transform_iterator(CountIt(0), detail::SegmentOf{T});
  thrust::exclusive_scan_by_key(exec(), token_segment, token_segment + n, ws.leftover.begin(), ws.leftover_rank.begin());
  thrust::for_each(exec(), CountIt(0), CountIt(n),
                   detail::TopUp{raw(ws.token_order), raw(ws.leftover), raw(ws.leftover_rank), raw(ws.remaining),
                                 raw(ws.keep), T});
}

// Flags -> per-row counts and the compacted global ids (still on the device).
void compact(Workspace& ws, int rows, int tokens) {
  const int n = rows * tokens;
  ws.kept_positions.resize(n);
  auto end = thrust::copy_if(exec(), CountIt(0), CountIt(n), ws.keep.begin(), ws.kept_positions.begin(),
                             detail::NonZero{});
  ws.kept_positions.resize(static_cast<std::size_t>(end - ws.kept_positions.begin()));
  ws.counts.resize(rows);
  auto seg = thrust::make_transform_iterator(CountIt(0), detail::SegmentOf{tokens});
  auto as_int = thrust::make_transform_iterator(ws.keep.begin(), detail::NonZero{});
  thrust::reduce_by_key(exec(), seg, seg + n, as_int, thrust::make_discard_iterator(), ws.counts.begin());
}

void upload_checked(const BatchedScores& in, Workspace& ws) {
  ws.scores.assign(in.values.begin(), in.values.end());
  const int bad = thrust::transform_reduce(exec(), ws.scores.begin(), ws.scores.end(), detail::IsFinite{}, 0,
                                           thrust::plus<int>());
  if (bad != 0) throw std::invalid_argument("gpu selector: non-finite scores");
  // A float32 head sum can overflow although every score is finite; the oracle rejects that input too.
  const int n = static_cast<int>(in.segments * in.tokens);
  auto sums = thrust::make_transform_iterator(
      CountIt(0), detail::HeadSum{raw(ws.scores), static_cast<int>(in.heads_per_segment), static_cast<int>(in.tokens), false});
  const int overflow = thrust::transform_reduce(exec(), sums, sums + n, detail::IsFinite{}, 0, thrust::plus<int>());
  if (overflow != 0) throw std::invalid_argument("gpu selector: a head sum overflows float32");
}

}  // namespace

std::vector<Selection> select(const BatchedScores& scores, const SelectorParams& params) {
  const Plan plan = make_plan(scores, params);
  Workspace ws;
  upload_checked(scores, ws);
  run_chunk_selection(plan, ws);
  const int rows = plan.per_head_fallback ? plan.segments * plan.rows : plan.segments;
  compact(ws, rows, plan.tokens);
  thrust::host_vector<int> counts = ws.counts;
  thrust::host_vector<int> ids = ws.kept_positions;
  std::vector<Selection> out(plan.segments);
  std::size_t at = 0;
  for (int r = 0; r < rows; ++r) {
    Positions kept;
    kept.reserve(counts[r]);
    for (int j = 0; j < counts[r]; ++j, ++at) kept.push_back(ids[at] - static_cast<Index>(r) * plan.tokens);
    const int s = plan.per_head_fallback ? r / plan.rows : r;
    out[s].kept.push_back(std::move(kept));
  }
  if (at != ids.size()) throw std::logic_error("gpu selector: counts do not add up to the kept positions");
  return out;
}

// One warm-up run (first-touch allocations, CUDA module load), then `repeats` runs each ended by a device
// synchronization; the median of their wall times, so one stray slow run does not move the figure.
template <class Run>
double median_synchronized_seconds(int repeats, Run&& run) {
  if (repeats < 1) throw std::invalid_argument("timing needs at least one repeat");
  run();
  KVAUDIT_GPU_SYNC();
  std::vector<double> seconds;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    KVAUDIT_GPU_SYNC();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(seconds.begin(), seconds.begin() + repeats / 2, seconds.end());
  return seconds[static_cast<std::size_t>(repeats / 2)];
}

ResidentTiming time_select(const BatchedScores& scores, const SelectorParams& params, int repeats) {
  const Plan plan = make_plan(scores, params);
  Workspace ws;
  upload_checked(scores, ws);
  const int rows = plan.per_head_fallback ? plan.segments * plan.rows : plan.segments;
  const double median = median_synchronized_seconds(repeats, [&] {
    run_chunk_selection(plan, ws);
    compact(ws, rows, plan.tokens);
  });
  return {median, static_cast<Index>(ws.kept_positions.size())};
}

double read_once_bandwidth(Index bytes, int repeats) {
  const Index n = bytes / static_cast<Index>(sizeof(float));
  dvec<float> buf(static_cast<std::size_t>(n), 1.0f);
  float sink = 0.0f;
  const double median = median_synchronized_seconds(repeats, [&] { sink += thrust::reduce(exec(), buf.begin(), buf.end(), 0.0f); });
  if (!(sink > 0.0f)) throw std::logic_error("read_once_bandwidth: reduction lost");
  return static_cast<double>(n * sizeof(float)) / median;
}

}  // namespace kvaudit::gpu::KVAUDIT_GPU_NS
