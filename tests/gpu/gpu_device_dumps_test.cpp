// The CUDA build of the batched selectors against the oracles on every shipped real dump; skipped (never
// passed) without a device or without dumps.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_dumps_agreement.h"

namespace kvaudit::gpu::testing {
namespace {

class GpuDeviceDumps : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device: the device build was compiled, not run";
    dumps_ = shipped_dumps();
    if (dumps_.empty()) GTEST_SKIP() << "no data/manifest.json: no real dumps shipped";
  }
  std::vector<io::PromptDump> dumps_;
};

TEST_F(GpuDeviceDumps, ChunkSelectorsAdmissibleOnRealScores) {
  const AgreementCounts n = check_chunk_dumps(&cuda::select, /*require_canonical=*/false, dumps_);
  ASSERT_GT(n.canonical + n.admissible, 0) << "dumps present but no score tensor found";
  std::cout << "[ gpu-device ] chunk selections: " << n.canonical << " canonical, " << n.admissible
            << " admissible, not canonical\n";
}

TEST_F(GpuDeviceDumps, PageEntroKvMatchesOracleOnRealAttention) {
  const AgreementCounts n = check_page_dumps(&cuda::page_select, dumps_);
  std::cout << "[ gpu-device ] page selections: " << n.canonical << " canonical, " << n.admissible
            << " admissible within the float64 page-score bound only\n";
  ASSERT_GT(n.canonical + n.admissible, 0);
}

}  // namespace
}  // namespace kvaudit::gpu::testing
