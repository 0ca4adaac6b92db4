// The CPU build of the batched GPU selectors against the oracles on every shipped real dump (data/, every model).
#include <gtest/gtest.h>

#include "tests/gpu/gpu_dumps_agreement.h"

namespace kvaudit::gpu::testing {
namespace {

// kvpress flavour: the CPU build evaluates the oracle's float32 statistics in the same order, so every layer
// must give the canonical selection exactly.
TEST(GpuCpuDumps, ChunkSelectorsEqualOracleOnRealScores) {
  const auto dumps = shipped_dumps();
  if (dumps.empty()) GTEST_SKIP() << "no data/manifest.json: no real dumps shipped";
  const AgreementCounts n = check_chunk_dumps(&cpu::select, /*require_canonical=*/true, dumps);
  ASSERT_GT(n.canonical, 0) << "dumps present but no score tensor found";
  std::cout << "[ gpu-cpu ] " << n.canonical << " (prompt, scorer, ratio, method, layer) selections equal\n";
}

TEST(GpuCpuDumps, PageEntroKvMatchesOracleOnRealAttention) {
  const auto dumps = shipped_dumps();
  if (dumps.empty()) GTEST_SKIP() << "no data/manifest.json: no real dumps shipped";
  const AgreementCounts n = check_page_dumps(&cpu::page_select, dumps);
  std::cout << "[ gpu-cpu ] page selections: " << n.canonical << " canonical, " << n.admissible
            << " admissible within the float64 page-score bound only\n";
  ASSERT_GT(n.canonical + n.admissible, 0);
}

}  // namespace
}  // namespace kvaudit::gpu::testing
