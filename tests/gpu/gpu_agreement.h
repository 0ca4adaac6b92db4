// Shared checks for both builds of the batched selectors (CPU/OpenMP and CUDA): generated tie-heavy cases,
// comparison with the oracles' canonical selections, and the admissibility fallback for near-ties.
#pragma once

#include <rapidcheck.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/compression_ratio.h"
#include "core/paging/page_score_bound.h"
#include "core/gpu/gpu_select.h"
#include "oracle/chunk_selection.h"
#include "oracle/page_entrokv.h"

namespace kvaudit::gpu::testing {

using SelectFn = std::vector<Selection> (*)(const BatchedScores&, const SelectorParams&);
using PageSelectFn = std::vector<PageSelection> (*)(const BatchedScores&, const PageParams&);

// Ratios whose kvpress float budget and exact budget differ for some T (0.7, 0.9, 0.95) and ones that agree.
inline const std::vector<std::string>& ratio_pool() {
  static const std::vector<std::string> pool = {"0.1", "0.25", "0.5", "0.7", "0.75", "0.9", "0.95", "0.3"};
  return pool;
}

// bf16 rounding (round to nearest even on the top 16 bits): real scores are bf16, and it makes ties.
inline float to_bf16(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
  std::memcpy(&v, &u, sizeof v);
  return v;
}

// Scores from small pools (ties, zeros, exact sums on the integer grid) mixed with arbitrary and signed values.
inline rc::Gen<float> score_value(bool allow_negative) {
  using namespace rc;
  const int lo = allow_negative ? -4 : 0;
  return gen::weightedOneOf<float>({
      {5, gen::map(gen::inRange(lo, 5), [](int v) { return static_cast<float>(v); })},
      {2, gen::element(0.0f, 0.25f, 0.5f, 0.125f)},
      {2, gen::map(gen::inRange(allow_negative ? -1000000 : 0, 1000001),
                   [](int v) { return to_bf16(static_cast<float>(v) / 1000000.0f); })},
      {1, gen::map(gen::inRange(allow_negative ? -1000000 : 0, 1000001),
                   [](int v) { return static_cast<float>(v) / 997.0f; })},
  });
}

struct ChunkCase {
  Index segments = 1, heads = 1, tokens = 1;
  std::vector<float> values;
  SelectorParams params;
  bool integer_grid = false;  // every value an integer: float sums are exact, the two builds must agree bit for bit
};

inline rc::Gen<ChunkCase> chunk_case(Method method, Flavour flavour) {
  using namespace rc;
  return gen::exec([method, flavour] {
    ChunkCase c;
    c.segments = *gen::inRange<Index>(1, 4);
    c.heads = *gen::inRange<Index>(1, 4);
    c.tokens = *gen::weightedOneOf<Index>({{1, gen::inRange<Index>(1, 12)}, {4, gen::inRange<Index>(12, 90)}});
    c.params.method = method;
    c.params.flavour = flavour;
    const Index max_chunk = method == Method::EgChunkKV && flavour == Flavour::Kvpress ? 13 : 25;
    c.params.chunk_length = *gen::inRange<Index>(method == Method::EgChunkKV && flavour == Flavour::Kvpress ? 2 : 1, max_chunk);
    c.params.rescue_size = flavour == Flavour::Kvpress && method == Method::EgChunkKV
                               ? *gen::inRange<Index>(1, c.params.chunk_length)
                               : *gen::inRange<Index>(1, 8);
    c.params.ratio = parse_compression_ratio(*gen::elementOf(ratio_pool()));
    if (flavour == Flavour::Exact) {
      c.params.median = *gen::element(MedianRule::Lower, MedianRule::MeanOfMiddles);
      if (*gen::inRange(0, 3) == 0) c.params.entropy_threshold = *gen::element(0.25, 0.5, 0.75, 0.9);
    }
    const bool negative = flavour == Flavour::Kvpress || *gen::inRange(0, 2) == 0;
    const bool grid = *gen::inRange(0, 2) == 0;
    c.integer_grid = grid;
    const std::size_t n = static_cast<std::size_t>(c.segments * c.heads * c.tokens);
    if (grid)
      c.values = *gen::container<std::vector<float>>(
          n, gen::map(gen::inRange(negative ? -3 : 0, 4), [](int v) { return static_cast<float>(v); }));
    else
      c.values = *gen::container<std::vector<float>>(n, score_value(negative));
    return c;
  });
}

inline HeadScores segment_scores(const ChunkCase& c, Index s) {
  const std::size_t per = static_cast<std::size_t>(c.heads * c.tokens);
  return {c.heads, c.tokens, std::span<const float>(c.values.data() + s * per, per)};
}

inline bool strictly_increasing_in_range(const Positions& p, Index tokens) {
  for (std::size_t i = 0; i < p.size(); ++i)
    if (p[i] < 0 || p[i] >= tokens || (i > 0 && p[i] <= p[i - 1])) return false;
  return true;
}

// One case through `select` vs the oracle, segment by segment. `require_canonical`: the build evaluates the
// statistics exactly as the oracle does (CPU build, kvpress flavour, or integer inputs), so the canonical
// selection itself must come out; otherwise a different selection must be admissible (near-ties).
inline void check_chunk_case(SelectFn select, const ChunkCase& c, bool require_canonical) {
  const BatchedScores in{c.segments, c.heads, c.tokens, std::span<const float>(c.values)};
  const std::vector<Selection> got = select(in, c.params);
  RC_ASSERT(static_cast<Index>(got.size()) == c.segments);
  for (Index s = 0; s < c.segments; ++s) {
    const HeadScores hs = segment_scores(c, s);
    for (const Positions& p : got[s].kept) RC_ASSERT(strictly_increasing_in_range(p, c.tokens));
    if (c.params.method == Method::EgChunkKV) {
      RC_ASSERT(got[s].kept.size() == 1u);
      RC_ASSERT(static_cast<Index>(got[s].kept[0].size()) == oracle::declared_budget(c.tokens, c.params));
    }
    const Selection want = oracle::select(hs, c.params);
    if (got[s].kept == want.kept) {
      RC_TAG("canonical");
      continue;
    }
    RC_ASSERT(!require_canonical);
    RC_TAG("admissible, not canonical");
    const Verdict v = oracle::check_admissible(hs, c.params, got[s]);
    if (!v.passed()) RC_FAIL("segment " + std::to_string(s) + ": " + to_string(v.kind) + " " + v.rule + ": " + v.message);
  }
}

// ---- Page-EntroKV ---------------------------------------------------------------------------------------
struct PageCase {
  Index segments = 1, tokens = 1;
  std::vector<float> values;  // segments * group_size * tokens, non-negative
  PageParams params;
};

inline rc::Gen<PageCase> page_case() {
  using namespace rc;
  return gen::exec([] {
    PageCase c;
    c.params.group_size = *gen::inRange<Index>(1, 4);
    c.segments = *gen::inRange<Index>(1, 4);
    c.tokens = *gen::weightedOneOf<Index>({{1, gen::inRange<Index>(1, 10)}, {4, gen::inRange<Index>(10, 100)}});
    c.params.page_size = *gen::inRange<Index>(1, 12);
    c.params.n_sink = *gen::inRange<Index>(0, 6);
    c.params.ratio_text = *gen::elementOf(ratio_pool());
    c.params.pooling = *gen::element(PagePooling::Entropy, PagePooling::Mean);
    c.params.source = *gen::element(PoolSource::SinkIsolated, PoolSource::Raw);
    c.params.page_score = *gen::element(PageScore::Sum, PageScore::Max);
    c.params.sink_pages = *gen::element(SinkPages::Reserved, SinkPages::Scored);
    c.params.greedy = *gen::element(GreedyRule::SkipMisfits, GreedyRule::StopAtFirstMisfit);
    c.params.inverse_temperature = *gen::element<Index>(1, 2, 3);
    c.params.entropy_on = *gen::element(EntropySource::SinkIsolated, EntropySource::Raw);
    c.params.budget_unit = *gen::element(BudgetUnit::Tokens, BudgetUnit::Pages);
    c.params.page_count_rule = *gen::element(PageCountRule::Paper, PageCountRule::EntroPrefill);
    const std::size_t n = static_cast<std::size_t>(c.segments * c.params.group_size * c.tokens);
    c.values = *gen::container<std::vector<float>>(n, score_value(false));
    if (*gen::inRange(0, 8) == 0)  // a head whose non-sink mass is zero: p~ does not exist
      std::fill(c.values.begin(), c.values.begin() + c.tokens, 0.0f);
    return c;
  });
}

inline void check_page_case(PageSelectFn page_select, const PageCase& c) {
  namespace op = oracle::paging;
  const Index G = c.params.group_size;
  const BatchedScores in{c.segments, G, c.tokens, std::span<const float>(c.values)};
  const std::vector<PageSelection> got = page_select(in, c.params);
  RC_ASSERT(static_cast<Index>(got.size()) == c.segments);
  const PageParams& o = c.params;
  const Index budget = op::page_walk_budget(c.tokens, o);
  const std::vector<op::Page> pages = op::page_layout(c.tokens, o.page_size);
  const std::vector<op::Page> costs = op::walk_costs(pages, o.budget_unit);
  op::PageLedger ledger{c.segments, 1, static_cast<Index>(pages.size()),
                        std::vector<std::uint8_t>(static_cast<std::size_t>(c.segments) * pages.size(), 0)};
  std::vector<Positions> token_sets;
  for (Index s = 0; s < c.segments; ++s) {
    std::vector<std::span<const float>> rows;
    for (Index h = 0; h < G; ++h)
      rows.emplace_back(c.values.data() + (s * G + h) * c.tokens, static_cast<std::size_t>(c.tokens));
    const op::GroupResult want = op::page_entrokv_group(rows, o);
    for (Index k : got[s].pages) ledger.kept[static_cast<std::size_t>(s * ledger.pages + k)] = 1;
    token_sets.push_back(got[s].tokens);
    if (got[s].pages == want.kept_pages) {
      RC_ASSERT(got[s].tokens == want.kept_tokens);
      RC_TAG("canonical");
      continue;
    }
    RC_TAG("admissible, not canonical");
    // The algorithm computes in double: ties within the float64 page-score bound may go either way.
    const op::Exact tol(paging::page_score_rel_bound(paging::ScorePrecision::Float64, c.tokens, c.params.group_size, c.params.page_size,
                                                     c.params.inverse_temperature));
    const Verdict v = op::check_pages_admissible(want.page_scores, costs, want.reserved, budget, o.greedy,
                                                 got[s].pages, tol);
    if (!v.passed()) RC_FAIL("segment " + std::to_string(s) + ": " + v.rule + ": " + v.message);
  }
  const Verdict acc = op::check_page_accounting(ledger, token_sets, c.tokens, o.page_size, op::page_token_capacity(c.tokens, o));
  if (!acc.passed()) RC_FAIL("page accounting: " + acc.rule + ": " + acc.message);
}

}  // namespace kvaudit::gpu::testing
