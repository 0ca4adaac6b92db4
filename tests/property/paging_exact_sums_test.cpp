// The oracle's sums over one denominator (oracle/page_entrokv.cpp) give the rationals that term-by-term rational
// arithmetic gives: sums, collision probabilities, pooled scores and page sums, on sink-isolated float rows (ties, zeros,
// subnormals, values near FLT_MAX) and on rationals with unrelated denominators.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cfloat>
#include <cmath>

#include "oracle/page_entrokv.h"

namespace op = kvaudit::oracle::paging;
using kvaudit::Index;
using op::Exact;

namespace {

rc::Gen<float> gen_score() {
  return rc::gen::weightedOneOf<float>(
      {{3, rc::gen::element(0.0f, 0.25f, 0.5f, 1.0f)},
       {3, rc::gen::map(rc::gen::inRange(0, 1 << 20), [](int v) { return v / 1048576.0f; })},
       {1, rc::gen::map(rc::gen::inRange(-149, 128), [](int e) { return std::ldexp(1.0f, e); })},
       {1, rc::gen::element(FLT_MAX, FLT_TRUE_MIN, 3.0e38f, 1e-40f)}});
}

// Rationals whose denominators share nothing in general: a / b with b up to 10^6.
rc::Gen<Exact> gen_rational() {
  return rc::gen::map(rc::gen::pair(rc::gen::inRange(0, 1 << 30), rc::gen::inRange(1, 1'000'000)),
                      [](std::pair<int, int> f) { return Exact(f.first, f.second); });
}

std::vector<Exact> gen_source(Index T) {
  if (*rc::gen::arbitrary<bool>()) return *rc::gen::container<std::vector<Exact>>(static_cast<std::size_t>(T), gen_rational());
  const auto row = *rc::gen::container<std::vector<float>>(static_cast<std::size_t>(T), gen_score());
  const Index sinks = *rc::gen::inRange<Index>(0, 5);
  const auto isolated = op::sink_isolate(row, sinks);
  return isolated ? *isolated : std::vector<Exact>(static_cast<std::size_t>(T), Exact(0));
}

}  // namespace

RC_GTEST_PROP(PagingExactSums, SumAndCollisionProbabilityAreTheTermByTermSums, ()) {
  const auto q = gen_source(*rc::gen::inRange<Index>(1, 200));
  Exact sum = 0, squares = 0;
  for (const Exact& v : q) sum += v, squares += v * v;
  RC_ASSERT(op::exact_sum(q) == sum);
  RC_ASSERT(op::collision_probability(q) == squares);
}

RC_GTEST_PROP(PagingExactSums, PooledAndPageScoresAreTheTermByTermSums, ()) {
  const Index G = *rc::gen::inRange<Index>(1, 8), T = *rc::gen::inRange<Index>(1, 120);
  std::vector<std::vector<Exact>> sources;
  for (Index h = 0; h < G; ++h) sources.push_back(gen_source(T));
  const auto weights = *rc::gen::container<std::vector<Exact>>(static_cast<std::size_t>(G), gen_rational());
  const std::vector<Exact> pooled = op::pooled_scores(sources, weights);
  RC_ASSERT(pooled.size() == static_cast<std::size_t>(T));
  for (Index t = 0; t < T; ++t) {
    Exact naive = 0;
    for (Index h = 0; h < G; ++h) naive += weights[h] * sources[h][t];
    RC_ASSERT(pooled[t] == naive);
  }
  const auto pages = op::page_layout(T, *rc::gen::inRange<Index>(1, 17));
  const auto sums = op::page_scores(pooled, pages, kvaudit::PageScore::Sum);
  for (std::size_t k = 0; k < pages.size(); ++k) {
    Exact naive = 0;
    for (Index t = pages[k].begin; t < pages[k].end; ++t) naive += pooled[t];
    RC_ASSERT(sums[k] == naive);
  }
}
