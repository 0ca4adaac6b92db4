// Plain value types shared by every stage. With core/exact (arithmetic), the only part of core/ that oracle/
// may include.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
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

}  // namespace kvaudit
