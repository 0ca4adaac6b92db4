// Selections recorded from the released kvpress 0.5.5 presses (run through tools/adapters/kvpress_adapter.py), for the
// tests of every implementation that must reproduce them: the oracle, core/select and the GPU selector's CPU build.
#pragma once

#include <vector>

#include "core/types.h"

namespace kvaudit_test_support {

// EntropyGatedChunkKVPress, one head, chunk_length 4, low_entropy_chunk_length 1, compression_ratio 0.5. Chunk 2's
// rebased values overflow (3e38 + 3e38 = inf), so its float32 entropy is NaN; torch.median of the entropies is then
// NaN and no chunk is spiky: chunk 1 (mean 1.875, entropy 0.79) is kept whole and chunk 0 gives its top 2. A median
// that sorted past the NaN (0.996) would rescue chunk 1 instead and keep [0, 1, 2, 3, 4, 9] (docs/hardening.md, bug 8).
struct NaNEntropyMedianCase {
  static constexpr const char* kRatio = "0.5";
  static constexpr kvaudit::Index kChunkLength = 4, kRescueSize = 1, kTokens = 12;
  const std::vector<float> scores = {1, 1.1f, 0.9f, 1.2f, 4, 2, 1, 0.5f, -3e38f, 3e38f, 0, 0};
  const kvaudit::Positions kept = {1, 3, 4, 5, 6, 7};
};

// ChunkKVPress, one head, chunk_length 2, compression_ratio 0.6 (int(3 * 0.4) = 1 chunk kept). The float32 sums of
// chunks 0 and 1 both overflow to inf and tie, and kvpress keeps chunk 0; exactly, chunk 1's mean (3e38) is above
// chunk 0's (2e38). The float32 tolerance model cannot judge such an evaluation (docs/hardening.md, "Fuzzing").
struct OverflowingChunkMeansCase {
  static constexpr const char* kRatio = "0.6";
  static constexpr kvaudit::Index kChunkLength = 2;
  const std::vector<float> scores = {2e38f, 2e38f, 3e38f, 3e38f, 1, 1};
  const kvaudit::Positions kept = {0, 1};
};

}  // namespace kvaudit_test_support
