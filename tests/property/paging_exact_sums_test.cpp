// The oracle's rows over one denominator (oracle::paging::ScaledRow) hold the rationals that term-by-term rational
// arithmetic gives: sink-isolated and raw rows, collision probabilities, pooled scores, page sums and maxima, on float
// rows with ties, zeros, subnormals and values near FLT_MAX, and on rationals with unrelated denominators.
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

// A row as the oracle holds it: rationals of unrelated denominators, or a sink-isolated float row.
op::ScaledRow gen_source(Index T) {
  if (*rc::gen::arbitrary<bool>()) return op::ScaledRow(*rc::gen::container<std::vector<Exact>>(static_cast<std::size_t>(T), gen_rational()));
  const auto row = *rc::gen::container<std::vector<float>>(static_cast<std::size_t>(T), gen_score());
  const Index sinks = *rc::gen::inRange<Index>(0, 5);
  const auto isolated = op::sink_isolate(row, sinks);
  return isolated ? *isolated : op::ScaledRow(std::vector<Exact>(static_cast<std::size_t>(T), Exact(0)));
}

}  // namespace

RC_GTEST_PROP(PagingExactSums, ScaledRowsHoldTheRationals, ()) {
  const Index T = *rc::gen::inRange<Index>(1, 200);
  const auto values = *rc::gen::container<std::vector<Exact>>(static_cast<std::size_t>(T), gen_rational());
  RC_ASSERT(op::ScaledRow(values).values() == values);
  // p~(t) = p(t) / sum_{u >= sinks} p(u), term by term in rationals.
  const auto row = *rc::gen::container<std::vector<float>>(static_cast<std::size_t>(T), gen_score());
  const Index sinks = *rc::gen::inRange<Index>(0, 5);
  Exact mass = 0;
  for (Index t = sinks; t < T; ++t) mass += Exact(static_cast<double>(row[t]));
  const auto isolated = op::sink_isolate(row, sinks);
  RC_ASSERT(isolated.has_value() == (mass != 0));
  if (!isolated) return;
  for (Index t = 0; t < T; ++t) RC_ASSERT((*isolated)[t] == (t < sinks ? Exact(0) : Exact(static_cast<double>(row[t])) / mass));
  const auto raw = op::exact_row(row);
  for (Index t = 0; t < T; ++t) RC_ASSERT(raw[t] == Exact(static_cast<double>(row[t])));
}

RC_GTEST_PROP(PagingExactSums, CollisionProbabilityIsTheSumOfSquares, ()) {
  const op::ScaledRow q = gen_source(*rc::gen::inRange<Index>(1, 200));
  Exact squares = 0;
  for (const Exact& v : q.values()) squares += v * v;
  RC_ASSERT(op::collision_probability(q) == squares);
}

RC_GTEST_PROP(PagingExactSums, PooledAndPageScoresAreTheTermByTermSums, ()) {
  const Index G = *rc::gen::inRange<Index>(1, 8), T = *rc::gen::inRange<Index>(1, 120);
  std::vector<op::ScaledRow> sources;
  for (Index h = 0; h < G; ++h) sources.push_back(gen_source(T));
  const auto weights = *rc::gen::container<std::vector<Exact>>(static_cast<std::size_t>(G), gen_rational());
  const op::ScaledRow pooled = op::pooled_scores(sources, weights);
  RC_ASSERT(pooled.size() == static_cast<std::size_t>(T));
  std::vector<Exact> naive(static_cast<std::size_t>(T), Exact(0));
  for (Index t = 0; t < T; ++t) {
    for (Index h = 0; h < G; ++h) naive[t] += weights[h] * sources[h][t];
    RC_ASSERT(pooled[t] == naive[t]);
  }
  const auto pages = op::page_layout(T, *rc::gen::inRange<Index>(1, 17));
  const auto sums = op::page_scores(pooled, pages, kvaudit::PageScore::Sum);
  const auto maxima = op::page_scores(pooled, pages, kvaudit::PageScore::Max);
  for (std::size_t k = 0; k < pages.size(); ++k) {
    Exact sum = 0, max = naive[pages[k].begin];
    for (Index t = pages[k].begin; t < pages[k].end; ++t) sum += naive[t], max = std::max(max, naive[t]);
    RC_ASSERT(sums[k] == sum);
    RC_ASSERT(maxima[k] == max);
  }
}
