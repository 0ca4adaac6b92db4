// Optimized Page-EntroKV selector (SPEC.md section 5): batched over (layers, KV groups), every head of a group
// reduced in one pass, pages picked with a partial sort, OpenMP over layers. Double precision; checked
// against oracle/page_entrokv.h up to ties within page_score_rel_tolerance.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/types.h"

namespace kvaudit::paging {

// The same knobs as oracle::paging::PageParams (kept apart so that core never includes the reference).
enum class Pooling { Entropy, Mean };
enum class PoolSource { SinkIsolated, Raw };
enum class PageScore { Sum, Max };
enum class SinkPages { Reserved, Scored };
enum class GreedyRule { SkipMisfits, StopAtFirstMisfit };

struct PageParams {
  Index group_size = 3;
  Index page_size = 16;
  CompressionRatio ratio{"0.8", 0.8};  // the budget is exact_budget(T, ratio) (SPEC section 1)
  Index n_sink = 4;
  Pooling pooling = Pooling::Entropy;
  PoolSource source = PoolSource::SinkIsolated;
  PageScore page_score = PageScore::Sum;
  SinkPages sink_pages = SinkPages::Reserved;
  GreedyRule greedy = GreedyRule::SkipMisfits;
};

struct PageSelection {
  Index layers = 0, groups = 0, group_size = 0, pages = 0, tokens = 0, page_size = 0, budget = 0;
  std::vector<std::uint8_t> ledger;   // (layers, groups, pages): 1 = the page frame is kept
  std::vector<Index> retained;        // (layers, groups): tokens in the kept pages
  std::vector<double> weights;        // (layers, q_heads): w_h within its group
  std::vector<double> collision;      // (layers, q_heads): sum_t p~_h(t)^2 (0 when p~_h does not exist)
  std::vector<double> page_scores;    // (layers, groups, pages)

  bool kept(Index l, Index g, Index p) const { return ledger[static_cast<std::size_t>((l * groups + g) * pages + p)] != 0; }
  std::vector<Index> kept_pages(Index l, Index g) const;
  Positions kept_tokens(Index l, Index g) const;
  Index kept_total() const;
};

// attn: (layers, q_heads, T), rows non-negative. Throws InputError("page-select", ...) when q_heads is not a
// multiple of group_size, P < 1 or n_sink < 0.
PageSelection select_pages(const ScoreTensor& attn, const PageParams& params);

// A first-order bound gamma on the relative error of every page score computed above: |S^ - S| <= gamma S.
// The chain: Z_h and sum p^2 (T - 1 additions each; p^2 of a float is exact in double), c_h = q/Z^2
// (3 ops), w_h = c_h / sum c (G ops), w_h / Z_h (1), s(t) = sum_h (G + 1), a page sum (P - 1): every term
// is non-negative, so relative errors add: n = 7T + 2G + P + 16 roundings of u = 2^-53, gamma = nu/(1-nu).
// Two pages whose exact scores a, b satisfy |a - b| <= gamma (a + b) may come out in either order.
double page_score_rel_tolerance(Index tokens, Index group_size, Index page_size);

}  // namespace kvaudit::paging
