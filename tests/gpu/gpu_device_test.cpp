// The CUDA build of the batched selectors against the oracles; skipped (never passed) without a device.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "tests/gpu/gpu_agreement.h"

namespace kvaudit::gpu::testing {
namespace {

class GpuDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device: the device build was compiled, not run";
  }
};

// On the device, logf and the summation are not the oracle's bit for bit, so a selection other than the
// canonical one is accepted only when the oracle's admissibility check finds it admissible; on the integer
// grid every statistic except the entropy is exact, and the entropy differs only by rounding.
TEST_F(GpuDevice, EgChunkKvKvpressAgreesWithOracle) {
  EXPECT_TRUE(rc::check("EG-ChunkKV kvpress", [] {
    check_chunk_case(&cuda::select, *chunk_case(Method::EgChunkKV, Flavour::Kvpress), false);
  }));
}

TEST_F(GpuDevice, ChunkKvKvpressAgreesWithOracle) {
  EXPECT_TRUE(rc::check("ChunkKV kvpress", [] {
    check_chunk_case(&cuda::select, *chunk_case(Method::ChunkKV, Flavour::Kvpress), false);
  }));
}

TEST_F(GpuDevice, EgChunkKvExactIsAdmissible) {
  EXPECT_TRUE(rc::check("EG-ChunkKV exact", [] {
    check_chunk_case(&cuda::select, *chunk_case(Method::EgChunkKV, Flavour::Exact), false);
  }));
}

TEST_F(GpuDevice, PageEntroKvAgreesWithOracle) {
  EXPECT_TRUE(rc::check("Page-EntroKV", [] { check_page_case(&cuda::page_select, *page_case()); }));
}

// The CUDA build at benchmark scale: one EG-ChunkKV selection per layer keeps exactly L tokens.
TEST_F(GpuDevice, LargeBatchKeepsExactBudget) {
  const Index layers = 4, heads = 8, T = 32768;
  std::vector<float> v(static_cast<std::size_t>(layers * heads * T));
  std::uint32_t state = 12345;
  for (float& x : v) {
    state = state * 1664525u + 1013904223u;
    x = to_bf16(static_cast<float>(state >> 8) / 16777216.0f);
  }
  SelectorParams p;
  p.ratio = parse_compression_ratio("0.9");
  const auto got = cuda::select(BatchedScores{layers, heads, T, v}, p);
  for (Index l = 0; l < layers; ++l) {
    const HeadScores hs{heads, T, std::span<const float>(v.data() + l * heads * T, static_cast<std::size_t>(heads * T))};
    ASSERT_EQ(static_cast<Index>(got[l].kept[0].size()), oracle::declared_budget(T, p));
    const Selection want = oracle::select(hs, p);
    if (got[l].kept != want.kept) {
      const Verdict verdict = oracle::check_admissible(hs, p, got[l]);
      EXPECT_TRUE(verdict.passed()) << verdict.rule << ": " << verdict.message;
    }
  }
}

}  // namespace
}  // namespace kvaudit::gpu::testing
