// Plain value types shared by every stage. With core/exact (arithmetic), the only part of core/ that oracle/
// may include.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kvaudit {

using Index = std::int64_t;
// Kept token positions: strictly increasing, each in [0, T).
using Positions = std::vector<Index>;

// Dense row-major (layers, heads, tokens) float32 tensor held in memory.
struct ScoreTensor {
  Index layers = 0;
  Index heads = 0;
  Index tokens = 0;
  std::vector<float> values;

  std::span<const float> row(Index layer, Index head) const {
    return {values.data() + (layer * heads + head) * tokens, static_cast<std::size_t>(tokens)};
  }
  std::span<float> row(Index layer, Index head) {
    return {values.data() + (layer * heads + head) * tokens, static_cast<std::size_t>(tokens)};
  }
};

// One layer's scores for one batch element: (heads, tokens) row-major, borrowed from a ScoreTensor or a vector.
struct HeadScores {
  Index heads = 0;
  Index tokens = 0;
  std::span<const float> values;

  float at(Index head, Index token) const { return values[static_cast<std::size_t>(head * tokens + token)]; }
};

// What a selector keeps for one layer. One entry when the selection is shared by every head (the normal
// case); one entry per head when the released code keeps a different set per head (kvpress ChunkKV's
// fallback to its inner scorer's per-head top-k when the context holds no complete chunk).
struct Selection {
  std::vector<Positions> kept;
  bool per_head() const { return kept.size() > 1; }
};

enum class Method { ChunkKV, EgChunkKV };
// The one spelling of each method on every front end (CLI flag, Python argument, conform's wire, reports).
inline const char* method_name(Method m) { return m == Method::ChunkKV ? "chunkkv" : "eg-chunkkv"; }
inline std::optional<Method> method_from_name(std::string_view text) {
  if (text == "chunkkv") return Method::ChunkKV;
  if (text == "eg-chunkkv") return Method::EgChunkKV;
  return std::nullopt;
}

// kvpress: the code released on PyPI, quirks included. exact: the seeds' description with the exact budget.
enum class Flavour { Kvpress, Exact };

// torch.median returns the lower middle value for an even count; mean-of-middles is the textbook rule.
enum class MedianRule { Lower, MeanOfMiddles };

// A compression ratio rho (fraction removed) as the decimal text the user wrote and as the double Python
// would parse from it. Oracles re-read `text` exactly; float rules use `value`.
struct CompressionRatio {
  std::string text;
  double value = 0.0;
};

// Every knob of ChunkKV / EG-ChunkKV. Defaults follow kvpress (chunk 10 for EG-ChunkKV, 20 for ChunkKV).
struct SelectorParams {
  Method method = Method::EgChunkKV;
  Flavour flavour = Flavour::Kvpress;
  CompressionRatio ratio;
  Index chunk_length = 10;
  Index rescue_size = 4;                     // kvpress: low_entropy_chunk_length
  std::optional<double> entropy_threshold;   // tau; nullopt = median of the chunk entropies
  MedianRule median = MedianRule::Lower;
  double eps = 1e-8;
};

// Every choice of the Page-EntroKV formalization (docs/page-entrokv.md), declared once: the oracle, the
// optimized selector, the GPU algorithm and every front end take this struct.
enum class PagePooling {
  Entropy,  // w_h proportional to exp(-H2(p~_h)) = sum_t p~_h(t)^2 (the collision probability)
  Mean,     // w_h = 1/G (what SnapKV-style scorers do): the baseline
};
// What is pooled: s_g(t) = sum_h w_h d_h(t) with d_h = p~_h (sink-isolated, renormalized; default) or the raw
// p_h. Raw pooling lets the sinks' mass (often > 50 %) ride along into page 0, and mixes weights computed on
// p~ with scores computed on p, so the default pools p~ and handles the sinks by SinkPages.
enum class PoolSource { SinkIsolated, Raw };
enum class PageScore { Sum, Max };  // sum or max of the pooled token scores over a page's positions
enum class SinkPages {
  Reserved,  // pages holding a sink position are kept before any scored page, while they fit
  Scored,    // they compete like any page (with PoolSource::SinkIsolated the sink positions then score 0)
};
// What the collision probabilities c_h behind the entropy weights are computed on: p~_h (the paper and the
// released PageEntro-KV code) or the raw p_h, c_h = sum_t p_h(t)^2 (Entro-Prefill's GroupPooler).
enum class EntropySource { SinkIsolated, Raw };
// The budget's unit: tokens, spent by the walk below (kvaudit's default), or a count K of pages, the top K pages
// by score (the authors' code: torch.topk over page scores; the partial last page costs one page like any other).
enum class BudgetUnit { Tokens, Pages };
// The compression ratio -> page count rule of BudgetUnit::Pages, rho read exactly from its decimal text:
// Paper: K = floor((1 - rho) T / P) (the paper's K_l = floor(B_l / (H_KV P)) with B_l = H_KV (1 - rho) T; K may be 0);
// EntroPrefill: K = max(1, floor((1 - rho) ceil(T / P))) (Entro-Prefill's run_niah.py, for one group).
enum class PageCountRule { Paper, EntroPrefill };
// The greedy walk over pages in (score desc, page index asc) order.
enum class GreedyRule {
  SkipMisfits,        // a page that does not fit is skipped and the walk goes on
  StopAtFirstMisfit,  // the kept pages are a prefix of the order
};

struct PageParams {
  Index group_size = 3;            // G: query heads per KV head; head h belongs to group h / G (HF repeat_kv)
  Index page_size = 16;            // P
  std::string ratio_text = "0.8";  // rho as the user wrote it; the budget max(1, floor((1 - rho) T)) is exact
  Index n_sink = 4;
  PagePooling pooling = PagePooling::Entropy;
  PoolSource source = PoolSource::SinkIsolated;
  PageScore page_score = PageScore::Sum;
  SinkPages sink_pages = SinkPages::Reserved;
  GreedyRule greedy = GreedyRule::SkipMisfits;
  // 1/tau of the head-weight temperature: entropy weights w_h proportional to exp(-H2_h / tau) = c_h^(1/tau).
  // 1 (tau = 1) is kvaudit's default and Entro-Prefill's; 2 (tau = 0.5) the paper's and PageEntro-KV's.
  Index inverse_temperature = 1;
  EntropySource entropy_on = EntropySource::SinkIsolated;
  BudgetUnit budget_unit = BudgetUnit::Tokens;
  PageCountRule page_count_rule = PageCountRule::Paper;  // read only when budget_unit == Pages
};

}  // namespace kvaudit
