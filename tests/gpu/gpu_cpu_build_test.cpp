// The CPU (Thrust/OpenMP) build of the batched GPU selectors against the oracles on generated tie-heavy cases.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <stdexcept>

#include "tests/gpu/gpu_agreement.h"
#include "tests/support/kvpress_recorded.h"

namespace kvaudit::gpu::testing {
namespace {

// The CPU build evaluates kvpress's float32 statistics in the oracle's exact operation order, so for the
// kvpress flavour it must return the canonical selection itself, not merely an admissible one.
RC_GTEST_PROP(GpuCpuBuild, EgChunkKvKvpressEqualsOracleCanonical, ()) {
  const ChunkCase c = *chunk_case(Method::EgChunkKV, Flavour::Kvpress);
  RC_CLASSIFY(c.integer_grid, "integer grid");
  RC_CLASSIFY(c.tokens % c.params.chunk_length != 0, "partial chunk");
  check_chunk_case(&cpu::select, c, /*require_canonical=*/true);
}

RC_GTEST_PROP(GpuCpuBuild, ChunkKvKvpressEqualsOracleCanonical, ()) {
  const ChunkCase c = *chunk_case(Method::ChunkKV, Flavour::Kvpress);
  RC_CLASSIFY(c.tokens < c.params.chunk_length, "per-head fallback");
  check_chunk_case(&cpu::select, c, /*require_canonical=*/true);
}

// The exact flavour's oracle works in 50-digit arithmetic; the GPU code keeps float32 statistics, so a
// different selection is accepted only when the oracle finds it admissible (ties within float32 rounding).
RC_GTEST_PROP(GpuCpuBuild, EgChunkKvExactIsAdmissible, ()) {
  const ChunkCase c = *chunk_case(Method::EgChunkKV, Flavour::Exact);
  RC_CLASSIFY(c.params.entropy_threshold.has_value(), "fixed tau");
  RC_CLASSIFY(c.params.median == MedianRule::MeanOfMiddles, "mean of middles");
  check_chunk_case(&cpu::select, c, /*require_canonical=*/false);
}

RC_GTEST_PROP(GpuCpuBuild, ChunkKvExactIsAdmissible, ()) {
  const ChunkCase c = *chunk_case(Method::ChunkKV, Flavour::Exact);
  check_chunk_case(&cpu::select, c, /*require_canonical=*/false);
}

RC_GTEST_PROP(GpuCpuBuild, PageEntroKvEqualsOracleOrIsAdmissible, ()) {
  const PageCase c = *page_case();
  RC_CLASSIFY(c.tokens % c.params.page_size != 0, "partial page");
  check_page_case(&cpu::page_select, c);
}

// Heavy ties: every score equal. The canonical answer is fully determined by the lower-index rule, and the
// walk spends its budget on the lowest-index chunks and tokens.
TEST(GpuCpuBuild, AllEqualScoresKeepLowestIndices) {
  const Index T = 50;
  std::vector<float> v(static_cast<std::size_t>(2 * T), 1.0f);
  SelectorParams p;
  p.ratio = parse_compression_ratio("0.5");
  const auto got = cpu::select(BatchedScores{1, 2, T, v}, p);
  ASSERT_EQ(got.size(), 1u);
  const Selection want = oracle::select(HeadScores{2, T, v}, p);
  EXPECT_EQ(got[0].kept, want.kept);
  ASSERT_EQ(got[0].kept[0].size(), 25u);
  EXPECT_EQ(got[0].kept[0].front(), 0);
}

// A planted spiky important chunk: the walk must rescue only its top r tokens and spend the rest elsewhere.
TEST(GpuCpuBuild, SpikyChunkKeepsOnlyRescueTokens) {
  const Index T = 40;
  std::vector<float> v(static_cast<std::size_t>(T), 1.0f);
  v[3] = 100.0f;  // chunk 0: one huge token -> important and spiky
  for (Index t = 10; t < 20; ++t) v[t] = 2.0f;  // chunk 1: flat, second most important
  SelectorParams p;
  p.ratio = parse_compression_ratio("0.5");
  p.rescue_size = 2;
  const auto got = cpu::select(BatchedScores{1, 1, T, v}, p);
  const Selection want = oracle::select(HeadScores{1, T, v}, p);
  ASSERT_EQ(got[0].kept, want.kept);
  const Positions& k = got[0].kept[0];
  ASSERT_EQ(k.size(), 20u);
  EXPECT_TRUE(std::find(k.begin(), k.end(), 3) != k.end());
  EXPECT_EQ(std::count_if(k.begin(), k.end(), [](Index t) { return t < 10; }), 2);  // r = 2 from chunk 0
}

// The top-up runs only where the chunks' costs sum to less than L: here in segment 0 (chunk 0 is important and
// spiky, so it costs r = 1 and the walk leaves 27 - 21 = 6 tokens to the top-up) and not in segment 1 (flat: no
// chunk is spiky), in one batch.
TEST(GpuCpuBuild, TopUpOnlyWhereTheWalkFallsShort) {
  const Index T = 30;
  std::vector<float> v(static_cast<std::size_t>(2 * T), 1.0f);
  v[3] = 100.0f;  // segment 0, chunk 0: one huge token
  v[15] = 50.0f;  // segment 0, chunk 1: one large token, less spiky than chunk 0
  SelectorParams p;
  p.ratio = parse_compression_ratio("0.1");
  p.rescue_size = 1;
  const auto got = cpu::select(BatchedScores{2, 1, T, v}, p);
  ASSERT_EQ(got.size(), 2u);
  for (Index s = 0; s < 2; ++s) {
    const Selection want = oracle::select(HeadScores{1, T, std::span<const float>(v).subspan(s * T, T)}, p);
    ASSERT_EQ(got[s].kept, want.kept) << "segment " << s;
    EXPECT_EQ(got[s].kept[0].size(), 27u);
  }
  // Segment 0 keeps 1 rescued + 6 topped-up tokens of chunk 0 and both other chunks whole.
  EXPECT_EQ(std::count_if(got[0].kept[0].begin(), got[0].kept[0].end(), [](Index t) { return t < 10; }), 7);
}

// A NaN chunk entropy makes torch.median NaN: no chunk is spiky (tests/support/kvpress_recorded.h).
TEST(GpuCpuBuild, NaNEntropyMakesTheGateNaN) {
  const kvaudit_test_support::NaNEntropyMedianCase c;
  SelectorParams p;
  p.ratio = parse_compression_ratio(c.kRatio);
  p.chunk_length = c.kChunkLength;
  p.rescue_size = c.kRescueSize;
  const auto got = cpu::select(BatchedScores{1, 1, c.kTokens, c.scores}, p);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].kept, (std::vector<Positions>{c.kept}));
  EXPECT_EQ(got[0].kept, oracle::select(HeadScores{1, c.kTokens, c.scores}, p).kept);
}

// Rejected inputs are rejected like the oracle rejects them.
TEST(GpuCpuBuild, RejectsWhatTheOracleRejects) {
  std::vector<float> v(20, 1.0f);
  SelectorParams p;
  p.ratio = parse_compression_ratio("0.5");
  p.chunk_length = 4;
  p.rescue_size = 4;  // kvpress asserts chunk_length > low_entropy_chunk_length
  EXPECT_THROW(oracle::select(HeadScores{1, 20, v}, p), std::invalid_argument);
  EXPECT_THROW(cpu::select(BatchedScores{1, 1, 20, v}, p), std::invalid_argument);
  p.rescue_size = 2;
  v[7] = std::numeric_limits<float>::infinity();
  EXPECT_THROW(oracle::select(HeadScores{1, 20, v}, p), std::invalid_argument);
  EXPECT_THROW(cpu::select(BatchedScores{1, 1, 20, v}, p), std::invalid_argument);
  v[7] = 3e38f;
  std::vector<float> two(v);
  two.insert(two.end(), v.begin(), v.end());  // two heads: 3e38 + 3e38 overflows float32
  EXPECT_THROW(oracle::select(HeadScores{2, 20, two}, p), std::invalid_argument);
  EXPECT_THROW(cpu::select(BatchedScores{1, 2, 20, two}, p), std::invalid_argument);
}

}  // namespace
}  // namespace kvaudit::gpu::testing
