// Optimized CPU ChunkKV / EG-ChunkKV selectors (docs/specification.md sections 1-3): one layer, all layers, a batch.
//
// Algorithm (per layer, batch element 0, T tokens, chunk length C, budget L):
//   1. x_j = sum over heads of s_{h,j}, heads added in order 0..H-1: in float32 for the kvpress flavour
//      (what torch's `scores.sum(dim=1)` does), in double for the exact flavour (which then clamps at 0
//      for EG-ChunkKV).
//   2. Chunks [iC, min(iC+C, T)). kvpress flavour: chunk mean S_i in float32 exactly as kvpress sums it
//      (eight chunks at a time in SIMD lanes, each lane summing its chunk in index order: bit-identical).
//      H~_i comes from a fast lane computation (reciprocal, polynomial log) within a proven margin of the
//      glibc-logf value; the chunks whose fast H~ lies within twice that margin of the median are
//      recomputed exactly, which settles every gate `H~_i < median` as the oracle decides it
//      (entropy_gate.h, proofs/11_fast_entropy_margin.md). Exact flavour: in double over each chunk's
//      sorted values, so two chunks holding the same multiset get bit-identical S and H~ (ties exact in
//      real arithmetic stay exact; index-order accumulation would split them by rounding).
//   3. Chunk order (S desc, index asc): a stable LSD radix sort of (order-preserving key, chunk) items for
//      float32 scores (O(n_chunks)), a comparison sort for double. The median of S is read off that order.
//      ChunkKV keeps the first m = budget-rule(n_chunks) chunks whole.
//      EG-ChunkKV: the walk follows the order and only counts what each chunk keeps; the top-up (when the
//      walk leaves budget) is one nth_element over the leftover positions and adds to those counts.
//   4. The output is written in increasing order from the per-chunk counts: whole chunks as runs, a chunk
//      kept in part as its top positions, ranked there in SIMD lanes (C <= 16) or by nth_element.
// Ties are broken toward the lower index everywhere (chunk order, within-chunk top-k, top-up), which is
// the oracle's canonical order. Cost O(H*T + n_chunks) per layer for the kvpress flavour (O(T log C + n_chunks log n_chunks) exact); no allocation
// per chunk (a Workspace holds every buffer, sized once per thread).
#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/types.h"

namespace kvaudit::select {

namespace detail {
// One bit per chunk, set in any order and read back in increasing order.
class ChunkBitmap {
 public:
  void reset(Index n) { words_.assign(static_cast<std::size_t>((n + 63) / 64), 0); }
  void set(Index i) { words_[static_cast<std::size_t>(i >> 6)] |= std::uint64_t{1} << (i & 63); }
  bool test(Index i) const { return (words_[static_cast<std::size_t>(i >> 6)] >> (i & 63)) & 1; }
  template <class F>
  void for_each(const F& f) const {  // f(i) for every set bit, increasing
    for (std::size_t w = 0; w < words_.size(); ++w)
      for (std::uint64_t bits = words_[w]; bits != 0; bits &= bits - 1)
        f(static_cast<Index>(w * 64 + static_cast<std::size_t>(std::countr_zero(bits))));
  }
  std::span<const std::uint64_t> words() const { return words_; }  // bit i & 63 of word i >> 6 is chunk i

 private:
  std::vector<std::uint64_t> words_;
};
}  // namespace detail

// Reusable buffers for one thread. Grows to the largest T seen and then never allocates again (the
// returned Positions are the only per-call allocations). select_layers/select_batch keep one per OS thread
// across calls.
class Workspace {
 public:
  void reserve(Index tokens, Index chunk_length, Flavour flavour);

  std::vector<float> xf;                               // head sums, kvpress flavour (float32)
  std::vector<double> xd;                              // head sums, exact flavour
  std::vector<float> score_f, entropy_f, median_f;     // per chunk, kvpress flavour
  std::vector<double> score_d, entropy_d, median_d;    // per chunk, exact flavour
  std::vector<double> chunk_buf;                       // one chunk's sorted values (exact flavour), C
  std::vector<unsigned char> keep;                     // mark array, T
  std::vector<Index> take;                             // positions each chunk keeps (EG walk), n_chunks
  std::vector<Index> order;                            // chunk order, then leftover positions
  std::vector<Index> idx;                              // positions for a top-k / kept scratch, T + 1
  std::vector<std::uint64_t> items, items_tmp;         // radix-sort (key, chunk) items, n_chunks
  std::vector<float> lanes;                            // chunks in SIMD lanes, C * 8 (kvpress flavour)
  std::vector<Index> band;                             // chunks near the entropy median, n_chunks
  std::vector<Index> cut;                              // chunks kept in part, n_chunks (kvpress flavour)
  std::vector<std::uint32_t> cut_top;                  // their kept positions as bits, n_chunks
  detail::ChunkBitmap visited;                         // chunks that keep something
};

// Throws InputError naming the CLI flag when the parameters are invalid for the flavour (the same rules as
// the oracle's validation): rho outside [0, 1), C < 1, r < 1; exact: a non-finite threshold, eps <= 0;
// kvpress EG-ChunkKV: kvpress asserts C > r >= 1 and has no knob for a fixed threshold, the
// mean-of-middles median or an eps other than 1e-8.
void validate_params(const SelectorParams& params);

// Number of positions a layer keeps, as the flavour's budget rule defines it (for ChunkKV the whole kept
// chunks, counted in tokens; in the per-head fallback the per-head count).
std::string budget_rule(const SelectorParams& params);

// One layer. Throws InputError if a head sum is not finite (NaN/Inf in the input, or float32 overflow).
Selection select_layer(const HeadScores& scores, const SelectorParams& params, Workspace& ws);
Selection select_layer(const HeadScores& scores, const SelectorParams& params);
// The same, written into `out` and reusing its position storage (a caller selecting repeatedly then
// neither allocates nor page-faults for the output).
void select_layer(const HeadScores& scores, const SelectorParams& params, Workspace& ws, Selection& out);

// Every layer of a (layers, heads, T) tensor holding one batch element; layers run in parallel (OpenMP),
// one Workspace per thread. Result[l] is layer l's selection.
std::vector<Selection> select_layers(const ScoreTensor& scores, const SelectorParams& params);
// The same into `out` (resized to the layer count), reusing the storage of the selections already there.
void select_layers(const ScoreTensor& scores, const SelectorParams& params, std::vector<Selection>& out);

// Several batch elements (all the same shape). kvpress computes the selection from batch element 0 and
// applies it to every element (BatchRule::FirstElement) -- except ChunkKV's fallback to the inner
// scorer's per-head top-k, which kvpress evaluates per element, so that case is computed per element
// there too. BatchRule::PerElement selects each element from its own scores.
// Result[b][l] is element b's selection for layer l.
enum class BatchRule { FirstElement, PerElement };
std::vector<std::vector<Selection>> select_batch(std::span<const ScoreTensor> elements, const SelectorParams& params,
                                                 BatchRule rule);

}  // namespace kvaudit::select
