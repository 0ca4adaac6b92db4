// Hand-checked cases for the optimized ChunkKV / EG-ChunkKV selectors (core/select), both flavours.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/error.h"
#include "core/select/chunk_select.h"
#include "core/select/chunk_stats.h"
#include "tests/support/kvpress_recorded.h"

namespace kvaudit {
namespace {

struct Layer {
  Index heads, tokens;
  std::vector<float> values;
  HeadScores view() const { return {heads, tokens, {values.data(), values.size()}}; }
};

SelectorParams params(Method m, Flavour f, const char* rho, Index chunk, Index rescue = 4) {
  SelectorParams p;
  p.method = m;
  p.flavour = f;
  p.ratio = {rho, std::strtod(rho, nullptr)};
  p.chunk_length = chunk;
  p.rescue_size = rescue;
  return p;
}

Positions one(const Selection& s) {
  EXPECT_EQ(s.kept.size(), 1u);
  return s.kept.at(0);
}

// Four chunks of C = 4 (r = 2), one head:
//   chunk 0 [8,0,0,0]  S = 2, H~ = 0      (spiky)
//   chunk 1 [1,1,1,1]  S = 1, H~ = 1
//   chunk 2 [2,2,2,2]  S = 2, H~ = 1
//   chunk 3 [0,0,3,1]  S = 1, H~ = h(3/4, 1/4) / log 4 = 0.4056
// median(S) (lower of 1,1,2,2) = 1: all important. median(H~) (lower of 0,.41,1,1) = 0.4056: only chunk 0
// is spiky (chunk 3 equals tau, and the gate is strict). Walk order: 0, 2, 1, 3 (S desc, ties by index).
const Layer kFourChunks{1, 16, {8, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0, 3, 1}};

TEST(CoreSelect, EgChunkKvWalkRescuesSpikyChunkThenKeepsWholeChunks) {
  // rho 0.5: L = 8. chunk 0 -> its top 2 {0, 1} (8, then the first of the tied zeros); chunk 2 whole
  // {8..11}; chunk 1 gets the last 2 slots, tied ones -> lowest indices {4, 5}.
  for (Flavour f : {Flavour::Kvpress, Flavour::Exact}) {
    Selection s = select::select_layer(kFourChunks.view(), params(Method::EgChunkKV, f, "0.5", 4, 2));
    EXPECT_EQ(one(s), (Positions{0, 1, 4, 5, 8, 9, 10, 11}));
  }
}

TEST(CoreSelect, EgChunkKvTopUpAfterFixedThresholdRescues) {
  // Exact flavour, r = 1, tau = 0.5 (chunks 0 and 3 spiky), rho 0.25: L = 12.
  // chunk 0 -> {0} (b 11); chunk 2 whole (b 7); chunk 1 whole (b 3); chunk 3 important & spiky -> {14}
  // (b 2); top-up: leftovers 1,2,3,12,13 (0) and 15 (1) -> 15, then the lowest-index zero 1.
  SelectorParams p = params(Method::EgChunkKV, Flavour::Exact, "0.25", 4, 1);
  p.entropy_threshold = 0.5;
  EXPECT_EQ(one(select::select_layer(kFourChunks.view(), p)), (Positions{0, 1, 4, 5, 6, 7, 8, 9, 10, 11, 14, 15}));
  // Median gate instead (tau = 0.4056: chunk 3 not spiky): chunk 3 gets the last 3 slots, its top 3 of
  // [0,0,3,1]: 14, 15, then the lower-index zero 12.
  p.entropy_threshold.reset();
  EXPECT_EQ(one(select::select_layer(kFourChunks.view(), p)), (Positions{0, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 15}));
}

TEST(CoreSelect, EgChunkKvOverflowingChunkMakesTheEntropyMedianNaN) {
  // A NaN chunk entropy makes torch.median NaN: no chunk is spiky (tests/support/kvpress_recorded.h).
  const kvaudit_test_support::NaNEntropyMedianCase c;
  const Layer overflow{1, c.kTokens, c.scores};
  Selection s = select::select_layer(
      overflow.view(), params(Method::EgChunkKV, Flavour::Kvpress, c.kRatio, c.kChunkLength, c.kRescueSize));
  EXPECT_EQ(one(s), c.kept);
}

TEST(CoreSelect, EgChunkKvFlavoursDifferOnNegativeScores) {
  // Two chunks of 4. kvpress ranks raw scores; exact clamps at 0 first.
  //   chunk 0 [-4,-4,-4, 1]  raw S = -2.75; clamped [0,0,0,1] S = 0.25
  //   chunk 1 [ 0.5, 0.5, 0.5, 0.5]  S = 0.5 both
  // rho 0.5 (L = 4), r = 1. median(S) = lower of 2 = chunk 0's S, so both chunks are important.
  // kvpress: chunk 0 rebased to [0,0,0,5] -> H~ 0; chunk 1 H~ 1; tau = 0 -> nothing spiky (strict <):
  //   chunk 1 whole -> {4,5,6,7}.
  // exact: the same gates (H~ 0 and 1), the same walk -> {4,5,6,7}. Raising the budget separates them:
  // rho 0.25 (L = 6): chunk 1 whole, then chunk 0 gets 2 slots: kvpress top-2 of raw [-4,-4,-4,1] = {3, 0};
  // exact top-2 of clamped [0,0,0,1] = {3, 0} too. Ties are what differ: flip the sign pattern.
  Layer l{1, 8, {-4, -4, -4, 1, 0.5f, 0.5f, 0.5f, 0.5f}};
  for (Flavour f : {Flavour::Kvpress, Flavour::Exact}) {
    EXPECT_EQ(one(select::select_layer(l.view(), params(Method::EgChunkKV, f, "0.5", 4, 1))), (Positions{4, 5, 6, 7}));
    EXPECT_EQ(one(select::select_layer(l.view(), params(Method::EgChunkKV, f, "0.25", 4, 1))), (Positions{0, 3, 4, 5, 6, 7}));
  }
  // [-1,-3,-2,-4 | 0.5 x4], L = 6: chunk 0 gets 2 slots. kvpress: raw top-2 = -1 (0), -2 (2) -> {0, 2};
  // exact: clamped all zero -> lowest indices {0, 1}.
  Layer m{1, 8, {-1, -3, -2, -4, 0.5f, 0.5f, 0.5f, 0.5f}};
  EXPECT_EQ(one(select::select_layer(m.view(), params(Method::EgChunkKV, Flavour::Kvpress, "0.25", 4, 1))),
            (Positions{0, 2, 4, 5, 6, 7}));
  EXPECT_EQ(one(select::select_layer(m.view(), params(Method::EgChunkKV, Flavour::Exact, "0.25", 4, 1))),
            (Positions{0, 1, 4, 5, 6, 7}));
}

TEST(CoreSelect, ChunkKvKeepsTopChunksWholeIncludingTheTail) {
  // T = 10, C = 4: chunks [0..3] S 1, [4..7] S 0, tail [8, 9] S 5.
  Layer l{1, 10, {1, 1, 1, 1, 0, 0, 0, 0, 5, 5}};
  for (Flavour f : {Flavour::Kvpress, Flavour::Exact}) {
    EXPECT_EQ(one(select::select_layer(l.view(), params(Method::ChunkKV, f, "0.5", 4))), (Positions{8, 9}));  // 1 chunk
    EXPECT_EQ(one(select::select_layer(l.view(), params(Method::ChunkKV, f, "0.3", 4))),
              (Positions{0, 1, 2, 3, 8, 9}));  // int(3 * 0.7) = 2 = floor(2.1)
  }
}

TEST(CoreSelect, ChunkKvFloatAndExactChunkBudgetsDiverge) {
  // 20 chunks of 1 token, rho 0.9: kvpress int(20 * (1 - 0.9)) = int(1.9999999999999996) = 1 chunk;
  // exact floor(20 / 10) = 2 chunks. Scores rise with the index, so the last chunks win.
  Layer l{1, 20, {}};
  for (int i = 0; i < 20; ++i) l.values.push_back(static_cast<float>(i));
  EXPECT_EQ(one(select::select_layer(l.view(), params(Method::ChunkKV, Flavour::Kvpress, "0.9", 1))), (Positions{19}));
  EXPECT_EQ(one(select::select_layer(l.view(), params(Method::ChunkKV, Flavour::Exact, "0.9", 1))), (Positions{18, 19}));
}

TEST(CoreSelect, ChunkKvFallbackIsPerHeadInKvpressAndSharedInExact) {
  // T = 5 < C = 20: no complete chunk. kvpress: each head's own top max(1, int(5 * 0.4)) = 2.
  Layer l{2, 5, {5, 4, 3, 2, 1, /* head 1 */ 1, 2, 3, 4, 5}};
  Selection k = select::select_layer(l.view(), params(Method::ChunkKV, Flavour::Kvpress, "0.6", 20));
  ASSERT_TRUE(k.per_head());
  EXPECT_EQ(k.kept[0], (Positions{0, 1}));
  EXPECT_EQ(k.kept[1], (Positions{3, 4}));
  // exact: head sums all 6 (tied) -> the exact budget floor(0.4 * 5) = 2 lowest indices, shared.
  EXPECT_EQ(one(select::select_layer(l.view(), params(Method::ChunkKV, Flavour::Exact, "0.6", 20))), (Positions{0, 1}));
}

TEST(CoreSelect, ZeroRatioKeepsEverything) {
  for (Method m : {Method::ChunkKV, Method::EgChunkKV})
    for (Flavour f : {Flavour::Kvpress, Flavour::Exact})
      EXPECT_EQ(one(select::select_layer(kFourChunks.view(), params(m, f, "0.000", 4, 2))).size(), 16u);
}

TEST(CoreSelect, AllTiedScoresKeepTheLowestIndices) {
  // Every statistic ties: chunk order is by index, nothing is spiky (H~ = 1 = tau), so EG keeps the first
  // L positions; ChunkKV keeps the first chunks.
  Layer l{2, 12, std::vector<float>(24, 0.25f)};
  EXPECT_EQ(one(select::select_layer(l.view(), params(Method::EgChunkKV, Flavour::Kvpress, "0.5", 5, 2))),
            (Positions{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(one(select::select_layer(l.view(), params(Method::ChunkKV, Flavour::Kvpress, "0.5", 4))),
            (Positions{0, 1, 2, 3}));  // 3 chunks -> int(1.5) = 1
}

TEST(CoreSelect, RejectsInvalidParametersNamingTheFlag) {
  auto message = [](const SelectorParams& p) {
    try {
      select::validate_params(p);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(params(Method::EgChunkKV, Flavour::Kvpress, "0.5", 0)).find("--chunk-length"), std::string::npos);
  EXPECT_NE(message(params(Method::EgChunkKV, Flavour::Exact, "0.5", 4, 0)).find("--rescue-size"), std::string::npos);
  // kvpress asserts chunk_length > low_entropy_chunk_length.
  EXPECT_NE(message(params(Method::EgChunkKV, Flavour::Kvpress, "0.5", 4, 4)).find("kvpress asserts"), std::string::npos);
  EXPECT_EQ(message(params(Method::EgChunkKV, Flavour::Exact, "0.5", 4, 4)), "no error");
  SelectorParams t = params(Method::EgChunkKV, Flavour::Kvpress, "0.5", 10);
  t.entropy_threshold = 0.3;
  EXPECT_NE(message(t).find("--entropy-threshold"), std::string::npos);
  SelectorParams m = params(Method::EgChunkKV, Flavour::Kvpress, "0.5", 10);
  m.median = MedianRule::MeanOfMiddles;
  EXPECT_NE(message(m).find("--median"), std::string::npos);
}

TEST(CoreSelect, RejectsNonFiniteScoresAndOverflowingHeadSums) {
  Layer nan{1, 4, {1, std::numeric_limits<float>::quiet_NaN(), 1, 1}};
  EXPECT_THROW(select::select_layer(nan.view(), params(Method::EgChunkKV, Flavour::Kvpress, "0.5", 2, 1)), InputError);
  Layer big{2, 2, {3e38f, 1, 3e38f, 1}};  // float32 head sum overflows
  EXPECT_THROW(select::select_layer(big.view(), params(Method::ChunkKV, Flavour::Kvpress, "0.5", 1)), InputError);
  Layer empty{1, 0, {}};
  EXPECT_THROW(select::select_layer(empty.view(), params(Method::ChunkKV, Flavour::Kvpress, "0.5", 1)), InputError);
}

// head_sum reads up to eight head rows in one loop; every head count must still add h = 0, 1, ..., H-1 in turn.
// Magnitudes from 2^-30 to 2^30 with both signs make float32 sums depend on the order.
template <class V>
void expect_head_sums_in_order() {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> exponent(-30, 30);
  std::uniform_real_distribution<float> mantissa(-2.0f, 2.0f);
  for (Index H : {1, 2, 7, 8, 9, 15, 16, 17, 20}) {
    const Index T = 1037;  // two full blocks of 512 and a partial one
    Layer layer{H, T, std::vector<float>(static_cast<std::size_t>(H * T))};
    for (float& v : layer.values) v = std::ldexp(mantissa(rng), exponent(rng));
    std::vector<V> got(static_cast<std::size_t>(T));
    ASSERT_TRUE(select::detail::head_sum<V>(layer.view(), got));
    Index differs_from_reversed = 0;
    for (Index t = 0; t < T; ++t) {
      V in_order = 0, reversed = 0;
      for (Index h = 0; h < H; ++h) in_order += static_cast<V>(layer.values[static_cast<std::size_t>(h * T + t)]);
      for (Index h = H - 1; h >= 0; --h) reversed += static_cast<V>(layer.values[static_cast<std::size_t>(h * T + t)]);
      ASSERT_EQ(got[static_cast<std::size_t>(t)], in_order) << "H = " << H << ", t = " << t;
      differs_from_reversed += in_order != reversed;
    }
    if (H >= 3) {
      EXPECT_GT(differs_from_reversed, 0) << "H = " << H << ": the data cannot tell the orders apart";
    }
  }
}

TEST(CoreSelect, HeadSumAddsTheHeadsInOrderForEveryHeadCount) {
  expect_head_sums_in_order<float>();
  expect_head_sums_in_order<double>();
}

TEST(CoreSelect, BatchFirstElementSharesElementZerosSelection) {
  ScoreTensor a{1, 1, 16, kFourChunks.values};
  ScoreTensor b{1, 1, 16, std::vector<float>(16, 0.0f)};
  b.values[15] = 100.0f;
  std::vector<ScoreTensor> batch{a, b};
  SelectorParams p = params(Method::EgChunkKV, Flavour::Kvpress, "0.5", 4, 2);
  auto shared = select::select_batch(batch, p, select::BatchRule::FirstElement);
  auto each = select::select_batch(batch, p, select::BatchRule::PerElement);
  EXPECT_EQ(shared[1][0].kept, shared[0][0].kept);
  EXPECT_EQ(each[0][0].kept, shared[0][0].kept);
  EXPECT_NE(each[1][0].kept, each[0][0].kept);  // element 1's own scores pick position 15
  EXPECT_TRUE(std::binary_search(each[1][0].kept[0].begin(), each[1][0].kept[0].end(), Index{15}));
}

TEST(CoreSelect, BatchFallbackIsPerElementEvenUnderFirstElement) {
  // kvpress runs the inner press's own compress (per batch element) when ChunkKV has no complete chunk.
  ScoreTensor a{1, 1, 3, {3, 2, 1}}, b{1, 1, 3, {1, 2, 3}};
  std::vector<ScoreTensor> batch{a, b};
  auto out = select::select_batch(batch, params(Method::ChunkKV, Flavour::Kvpress, "0.5", 20), select::BatchRule::FirstElement);
  EXPECT_EQ(out[0][0].kept[0], (Positions{0}));
  EXPECT_EQ(out[1][0].kept[0], (Positions{2}));
}

}  // namespace
}  // namespace kvaudit
