// The paper's masquerade metric (oracle/sink_masquerade.h) on a hand-built census whose answer is worked out below
// as fractions, and its typing threshold and argument checks.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "oracle/sink_masquerade.h"

using kvaudit::Index;
using kvaudit::ScoreTensor;
namespace op = kvaudit::oracle::paging;

namespace {

// One layer, 6 query heads, T = 8, sinks = the first 4 positions, G = 3 (two KV groups). Every value is a binary
// fraction, so the rows are exact distributions.
//   group 0: A = sink head   [3/4, 0, 0, 0, 1/16 x 4]   raw mass on sinks 3/4;   c_raw = 9/16 + 4/256 = 37/64, c~ = 1/4
//            B = contextual  [0 x 4, 1/2, 1/4, 1/4, 0]  c_raw = c~ = 1/4 + 1/16 + 1/16 = 3/8
//            C = contextual  [0 x 4, 1/4 x 4]           c_raw = c~ = 1/4
//   group 1: three contextual heads, each [0 x 4, 1/4 x 4]: equal weights 1/3 either way.
// tau = 0.5, so w ∝ c^2.
//   raw:      group 0 weights (37/64)^2 : (3/8)^2 : (1/4)^2 = 1369 : 576 : 256 over 2201
//   isolated: group 0 weights (1/4)^2 : (3/8)^2 : (1/4)^2 = 4 : 9 : 4 over 17
// Population (1 sink head, 5 contextual heads):
//   raw:      sink mean 1369/2201, contextual mean (832/2201 + 1) / 5 = 3033/11005 -> ratio 6845/3033
//   isolated: sink mean 4/17, contextual mean (13/17 + 1) / 5 = 6/17                 -> ratio 2/3
// Group 0 alone (the only group with both types): raw 1369 / (832/2) = 1369/416, isolated 4 / (13/2) = 8/13.
ScoreTensor census_case() {
  const float q = 1.0f / 16, f = 0.25f;
  return ScoreTensor{1, 6, 8,
                     {0.75f, 0, 0, 0, q, q, q, q,         //
                      0, 0, 0, 0, 0.5f, 0.25f, 0.25f, 0,  //
                      0, 0, 0, 0, f, f, f, f,             //
                      0, 0, 0, 0, f, f, f, f,             //
                      0, 0, 0, 0, f, f, f, f,             //
                      0, 0, 0, 0, f, f, f, f}};
}

}  // namespace

TEST(SinkMasquerade, HandBuiltCensusAtTauHalf) {
  const op::MasqueradeCensus m = op::masquerade_census(census_case(), 3, 4, 2, 0.5);
  EXPECT_EQ(m.groups, 2);
  EXPECT_EQ(m.sink_heads, 1);
  EXPECT_EQ(m.contextual_heads, 5);
  EXPECT_DOUBLE_EQ(m.sink_weight_raw, 1369.0 / 2201);
  EXPECT_DOUBLE_EQ(m.sink_weight_isolated, 4.0 / 17);
  EXPECT_DOUBLE_EQ(m.ratio_raw(), 6845.0 / 3033);
  EXPECT_DOUBLE_EQ(m.ratio_isolated(), 2.0 / 3);
  ASSERT_EQ(m.group_ratio_raw.size(), 1u);
  ASSERT_EQ(m.group_ratio_isolated.size(), 1u);
  EXPECT_DOUBLE_EQ(m.group_ratio_raw[0], 1369.0 / 416);
  EXPECT_DOUBLE_EQ(m.group_ratio_isolated[0], 8.0 / 13);
  EXPECT_EQ(m.groups_no_ratio, 0);
}

TEST(SinkMasquerade, TemperatureOneWeighsByC) {
  // tau = 1: w ∝ c. Group 0 raw 37/64 : 3/8 : 1/4 = 37 : 24 : 16 over 77; isolated 1/4 : 3/8 : 1/4 = 2 : 3 : 2 over 7.
  const op::MasqueradeCensus m = op::masquerade_census(census_case(), 3, 4, 1, 0.5);
  ASSERT_EQ(m.group_ratio_raw.size(), 1u);
  EXPECT_DOUBLE_EQ(m.group_ratio_raw[0], 37.0 / 20);
  EXPECT_DOUBLE_EQ(m.group_ratio_isolated[0], 2.0 / 2.5);
}

TEST(SinkMasquerade, ThresholdIsAtLeast) {
  // Head A holds 3/4 on the sinks: a sink head up to a threshold of 3/4 inclusive, contextual above it.
  EXPECT_EQ(op::masquerade_census(census_case(), 3, 4, 2, 0.75).sink_heads, 1);
  const op::MasqueradeCensus none = op::masquerade_census(census_case(), 3, 4, 2, 0.8);
  EXPECT_EQ(none.sink_heads, 0);
  EXPECT_TRUE(none.group_ratio_raw.empty());
  EXPECT_TRUE(std::isnan(none.ratio_raw()));
}

TEST(SinkMasquerade, MergeSumsPopulations) {
  op::MasqueradeCensus m = op::masquerade_census(census_case(), 3, 4, 2, 0.5);
  m.merge(op::masquerade_census(census_case(), 3, 4, 2, 0.5));
  EXPECT_EQ(m.groups, 4);
  EXPECT_EQ(m.sink_heads, 2);
  EXPECT_EQ(m.group_ratio_raw.size(), 2u);
  EXPECT_DOUBLE_EQ(m.ratio_raw(), 6845.0 / 3033);  // the same census twice: the same population ratio
}

TEST(SinkMasquerade, RejectsBadArguments) {
  EXPECT_THROW(op::masquerade_census(census_case(), 4, 4, 2, 0.5), std::invalid_argument);
  EXPECT_THROW(op::masquerade_census(census_case(), 3, 4, 0, 0.5), std::invalid_argument);
  EXPECT_THROW(op::masquerade_census(census_case(), 3, 4, 2, 0.0), std::invalid_argument);
}
