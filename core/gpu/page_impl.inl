// Batched Page-EntroKV (docs/specification.md section 5, definitions of oracle/page_entrokv.h) on Thrust's device system:
// sink isolation, Renyi-2 head weights, pooled scores, page scores and the page walk as a prefix sum.
// Included after select_impl.inl by select_cpu.cpp and select_cuda.cu. Arithmetic is double (the oracle's is
// exact rational); the float64 page-score bound (core/paging/page_score_bound.h) bounds the difference.
#pragma once

#include <algorithm>
#include <cstdint>

namespace kvaudit::gpu::detail {

struct PageGeometry {
  int tokens, page, n_pages, n_sink;
  KVAUDIT_HD int size(int i) const {
    const int end = (i + 1) * page < tokens ? (i + 1) * page : tokens;
    return end - i * page;
  }
};

// The non-sink part of row r at flat token index k (used to sum the mass and the squares per row).
struct NonSinkValue {
  const float* p;
  int tokens, n_sink;
  bool squared;
  KVAUDIT_HD double operator()(long long k) const {
    if (static_cast<int>(k % tokens) < n_sink) return 0.0;
    const double v = p[k];
    return squared ? v * v : v;
  }
};

struct RowOfLong {
  int tokens;
  KVAUDIT_HD int operator()(long long k) const { return static_cast<int>(k / tokens); }
};

// w_h within each group: c_h^k / sum c^k, k = 1/tau (c_h = sum p~^2 = sum p^2 / mass^2, 0 without p~; or
// sum p^2 over the raw row when raw_squares is given); 1/G when all c are 0 or for mean pooling.
struct GroupWeight {
  const double* mass;
  const double* squares;
  const double* raw_squares;  // null: entropy on the sink-isolated rows
  int group;
  bool entropy;
  int inverse_temperature;
  KVAUDIT_HD double collision(int r) const {
    if (raw_squares != nullptr) return raw_squares[r];
    return mass[r] != 0.0 ? squares[r] / (mass[r] * mass[r]) : 0.0;
  }
  KVAUDIT_HD double powered(int r) const {
    const double c = collision(r);
    double out = c;
    for (int j = 1; j < inverse_temperature; ++j) out *= c;
    return out;
  }
  KVAUDIT_HD double operator()(int r) const {
    if (!entropy) return 1.0 / group;
    const int first = (r / group) * group;
    double total = 0.0;
    for (int h = first; h < first + group; ++h) total += powered(h);
    return total == 0.0 ? 1.0 / group : powered(r) / total;
  }
};

// s(t) = sum_h w_h d_h(t) over the segment's G rows; d_h = p~_h (0 on sinks, 0 without p~) or raw p_h.
struct PooledScore {
  const float* p;
  const double* mass;
  const double* weight;
  int group, tokens, n_sink;
  bool isolated;
  KVAUDIT_HD double operator()(int k) const {
    const int s = k / tokens, t = k % tokens;
    double acc = 0.0;
    for (int h = 0; h < group; ++h) {
      const int r = s * group + h;
      const double v = p[static_cast<long long>(r) * tokens + t];
      double d = v;
      if (isolated) d = (t < n_sink || mass[r] == 0.0) ? 0.0 : v / mass[r];
      acc += weight[r] * d;
    }
    return acc;
  }
};

// Page id (segment-major) of a flat token index.
struct PageOfToken {
  int tokens, page, n_pages;
  KVAUDIT_HD int operator()(int k) const { return (k / tokens) * n_pages + (k % tokens) / page; }
};

struct MaxOp {
  KVAUDIT_HD double operator()(double a, double b) const { return a < b ? b : a; }
};

KVAUDIT_HD inline std::uint64_t ascending_bits64(double d) {
  if (d == 0.0) d = 0.0;
  std::uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return (u & 0x8000000000000000ull) ? ~u : (u | 0x8000000000000000ull);
}

// Walk-order key of page id k, first pass: reserved pages (0) before scored ones (score desc).
struct PageWalkKey {
  const double* score;
  PageGeometry geo;
  bool reserve_sinks;
  KVAUDIT_HD std::uint64_t operator()(int k) const {
    const int i = k % geo.n_pages;
    if (reserve_sinks && i * geo.page < geo.n_sink) return 0;
    return ~ascending_bits64(score[k]);  // >= 1 for every non-NaN score
  }
};

// Second pass key: the segment of the page at sorted position k (a stable sort then groups segments while
// keeping the first pass's order inside each).
struct SegmentOfId {
  const int* order;
  int per_segment;
  KVAUDIT_HD std::uint64_t operator()(int k) const { return static_cast<std::uint64_t>(order[k] / per_segment); }
};

struct Gather {
  const int* from;
  const int* index;
  KVAUDIT_HD int operator()(int k) const { return from[index[k]]; }
};

// What a page costs the walk: its tokens, or 1 under a page-count budget.
struct PageCost {
  const int* order;
  PageGeometry geo;
  bool unit_pages;
  KVAUDIT_HD int operator()(int k) const { return unit_pages ? 1 : geo.size(order[k] % geo.n_pages); }
};

// Pages fitting in the prefix: P_k + c_k <= L (proofs/10_walk_as_prefix_sum.md, section "Pages").
struct PrefixFits {
  const int* cost;
  const int* prefix;
  int budget;
  KVAUDIT_HD int operator()(int k) const { return prefix[k] + cost[k] <= budget ? cost[k] : 0; }
};

// Marks the kept pages: the fitting prefix, plus under SkipMisfits the one page that can still fit after the
// first misfit (the partial last page, when it comes later and fits in what is left).
struct MarkPages {
  const int* order;
  const int* cost;
  const int* prefix;
  const int* spent;  // per segment: tokens taken by the fitting prefix
  std::uint8_t* page_keep;
  PageGeometry geo;
  int budget;
  bool skip_misfits;
  KVAUDIT_HD void operator()(int k) const {
    const int s = k / geo.n_pages;
    const bool fits = prefix[k] + cost[k] <= budget;
    const bool late = skip_misfits && !fits && spent[s] + cost[k] <= budget;
    page_keep[order[k]] = (fits || late) ? 1 : 0;
  }
};

struct TokenOfKeptPage {
  const std::uint8_t* page_keep;
  PageGeometry geo;
  KVAUDIT_HD std::uint8_t operator()(int k) const {
    const int s = k / geo.tokens, t = k % geo.tokens;
    return page_keep[s * geo.n_pages + t / geo.page];
  }
};

}  // namespace kvaudit::gpu::detail

namespace kvaudit::gpu::KVAUDIT_GPU_NS {
namespace {

struct PageWorkspace {
  dvec<float> attn;
  dvec<double> mass, squares, raw_squares, weight, pooled, page_score;
  dvec<std::uint64_t> keys;
  dvec<int> order, order_tmp, cost, prefix, fit_cost, spent;
  dvec<std::uint8_t> page_keep, keep;
  dvec<int> kept_pages, kept_tokens, page_counts, token_counts;
};

struct PagePlan {
  int segments = 0, group = 0;
  detail::PageGeometry geo{};
  int budget = 0;
  PageParams params;
};

PagePlan make_page_plan(const BatchedScores& in, const PageParams& p) {
  if (in.segments < 1 || in.heads_per_segment < 1 || in.tokens < 1)
    throw std::invalid_argument("page selector: empty input");
  if (in.heads_per_segment != p.group_size)
    throw std::invalid_argument("page selector: heads_per_segment must equal group_size");
  if (static_cast<Index>(in.values.size()) != in.segments * in.heads_per_segment * in.tokens)
    throw std::invalid_argument("page selector: values size does not match segments * heads * tokens");
  if (p.page_size < 1) throw std::invalid_argument("page size must be >= 1");
  if (p.n_sink < 0) throw std::invalid_argument("n_sink must be >= 0");
  checked_int(in.segments * in.heads_per_segment * in.tokens, "element count");
  PagePlan plan;
  plan.segments = static_cast<int>(in.segments);
  plan.group = static_cast<int>(in.heads_per_segment);
  const int T = static_cast<int>(in.tokens);
  const int P = checked_int(std::min<Index>(p.page_size, in.tokens), "page size");
  plan.geo = {T, P, (T + P - 1) / P, checked_int(std::min<Index>(p.n_sink, in.tokens), "n_sink")};
  const CompressionRatio rho = parse_compression_ratio(p.ratio_text, "ratio_text");
  if (p.inverse_temperature < 1) throw std::invalid_argument("page selector: 1/tau must be >= 1");
  // The walk's budget: tokens, or the page count K of the rule (core/types.h PageCountRule).
  const Index n_pages = (in.tokens + p.page_size - 1) / p.page_size;
  const Index budget = p.budget_unit == BudgetUnit::Tokens          ? exact_budget(in.tokens, rho)
                       : p.page_count_rule == PageCountRule::Paper ? exact_floor_kept(in.tokens, rho) / p.page_size
                                                                    : std::max<Index>(1, exact_floor_kept(n_pages, rho));
  plan.budget = checked_int(budget, "budget");
  plan.params = p;
  return plan;
}

// Fills ws.page_keep (segments * pages) and ws.keep (segments * T) from ws.attn, on the device.
void run_page_selection(const PagePlan& plan, PageWorkspace& ws) {
  using namespace detail;
  const PageGeometry geo = plan.geo;
  const int S = plan.segments, G = plan.group, T = geo.tokens, rows = S * G;
  const int n = S * T, NP = S * geo.n_pages;
  const long long cells = static_cast<long long>(rows) * T;
  using LongIt = thrust::counting_iterator<long long>;
  auto row_of = thrust::make_transform_iterator(LongIt(0), RowOfLong{T});
  ws.mass.resize(rows);
  ws.squares.resize(rows);
  thrust::reduce_by_key(exec(), row_of, row_of + cells,
                        thrust::make_transform_iterator(LongIt(0), NonSinkValue{raw(ws.attn), T, geo.n_sink, false}),
                        thrust::make_discard_iterator(), ws.mass.begin());
  thrust::reduce_by_key(exec(), row_of, row_of + cells,
                        thrust::make_transform_iterator(LongIt(0), NonSinkValue{raw(ws.attn), T, geo.n_sink, true}),
                        thrust::make_discard_iterator(), ws.squares.begin());
  const bool raw_entropy = plan.params.entropy_on == EntropySource::Raw;
  if (raw_entropy) {
    ws.raw_squares.resize(rows);
    thrust::reduce_by_key(exec(), row_of, row_of + cells,
                          thrust::make_transform_iterator(LongIt(0), NonSinkValue{raw(ws.attn), T, 0, true}),
                          thrust::make_discard_iterator(), ws.raw_squares.begin());
  }
  ws.weight.resize(rows);
  thrust::transform(exec(), CountIt(0), CountIt(rows), ws.weight.begin(),
                    GroupWeight{raw(ws.mass), raw(ws.squares), raw_entropy ? raw(ws.raw_squares) : nullptr, G,
                                plan.params.pooling == PagePooling::Entropy, static_cast<int>(plan.params.inverse_temperature)});
  ws.pooled.resize(n);
  thrust::transform(exec(), CountIt(0), CountIt(n), ws.pooled.begin(),
                    PooledScore{raw(ws.attn), raw(ws.mass), raw(ws.weight), G, T, geo.n_sink,
                                plan.params.source == PoolSource::SinkIsolated});
  ws.page_score.resize(NP);
  auto page_of = thrust::make_transform_iterator(CountIt(0), PageOfToken{T, geo.page, geo.n_pages});
  if (plan.params.page_score == PageScore::Sum)
    thrust::reduce_by_key(exec(), page_of, page_of + n, ws.pooled.begin(), thrust::make_discard_iterator(),
                          ws.page_score.begin());
  else
    thrust::reduce_by_key(exec(), page_of, page_of + n, ws.pooled.begin(), thrust::make_discard_iterator(),
                          ws.page_score.begin(), thrust::equal_to<int>(), MaxOp{});
  // Walk order (reserved by index, then score desc, index asc) per segment: two stable sorts on 64-bit keys.
  ws.keys.resize(NP);
  ws.order.resize(NP);
  ws.order_tmp.resize(NP);
  thrust::transform(exec(), CountIt(0), CountIt(NP), ws.keys.begin(),
                    PageWalkKey{raw(ws.page_score), geo, plan.params.sink_pages == SinkPages::Reserved});
  thrust::sequence(exec(), ws.order_tmp.begin(), ws.order_tmp.end());
  thrust::stable_sort_by_key(exec(), ws.keys.begin(), ws.keys.end(), ws.order_tmp.begin());
  thrust::transform(exec(), CountIt(0), CountIt(NP), ws.keys.begin(), SegmentOfId{raw(ws.order_tmp), geo.n_pages});
  thrust::sequence(exec(), ws.order.begin(), ws.order.end());
  thrust::stable_sort_by_key(exec(), ws.keys.begin(), ws.keys.end(), ws.order.begin());
  thrust::transform(exec(), CountIt(0), CountIt(NP), ws.order.begin(), Gather{raw(ws.order_tmp), raw(ws.order)});
  // The walk as a prefix sum over the sorted pages.
  ws.cost.resize(NP);
  ws.prefix.resize(NP);
  ws.fit_cost.resize(NP);
  ws.spent.resize(S);
  thrust::transform(exec(), CountIt(0), CountIt(NP), ws.cost.begin(),
                    PageCost{raw(ws.order), geo, plan.params.budget_unit == BudgetUnit::Pages});
  auto seg_of_page = thrust::make_transform_iterator(CountIt(0), SegmentOf{geo.n_pages});
  thrust::exclusive_scan_by_key(exec(), seg_of_page, seg_of_page + NP, ws.cost.begin(), ws.prefix.begin());
  thrust::transform(exec(), CountIt(0), CountIt(NP), ws.fit_cost.begin(),
                    PrefixFits{raw(ws.cost), raw(ws.prefix), plan.budget});
  thrust::reduce_by_key(exec(), seg_of_page, seg_of_page + NP, ws.fit_cost.begin(), thrust::make_discard_iterator(),
                        ws.spent.begin());
  ws.page_keep.resize(NP);
  thrust::for_each(exec(), CountIt(0), CountIt(NP),
                   MarkPages{raw(ws.order), raw(ws.cost), raw(ws.prefix), raw(ws.spent), raw(ws.page_keep), geo,
                             plan.budget, plan.params.greedy == GreedyRule::SkipMisfits});
  ws.keep.resize(n);
  thrust::transform(exec(), CountIt(0), CountIt(n), ws.keep.begin(), TokenOfKeptPage{raw(ws.page_keep), geo});
}

// Compacts flags into ids and per-row counts (device side).
void compact_flags(const dvec<std::uint8_t>& flags, int rows, int per_row, dvec<int>& ids, dvec<int>& counts) {
  const int n = rows * per_row;
  ids.resize(n);
  auto end = thrust::copy_if(exec(), CountIt(0), CountIt(n), flags.begin(), ids.begin(), detail::NonZero{});
  ids.resize(static_cast<std::size_t>(end - ids.begin()));
  counts.resize(rows);
  auto seg = thrust::make_transform_iterator(CountIt(0), detail::SegmentOf{per_row});
  thrust::reduce_by_key(exec(), seg, seg + n, thrust::make_transform_iterator(flags.begin(), detail::NonZero{}),
                        thrust::make_discard_iterator(), counts.begin());
}

void upload_pages_checked(const BatchedScores& in, PageWorkspace& ws) {
  ws.attn.assign(in.values.begin(), in.values.end());
  const int bad = thrust::transform_reduce(exec(), ws.attn.begin(), ws.attn.end(), detail::IsFinite{}, 0, thrust::plus<int>());
  if (bad != 0) throw std::invalid_argument("page selector: non-finite attention");
}

}  // namespace

std::vector<PageSelection> page_select(const BatchedScores& attention, const PageParams& params) {
  const PagePlan plan = make_page_plan(attention, params);
  PageWorkspace ws;
  upload_pages_checked(attention, ws);
  run_page_selection(plan, ws);
  const int S = plan.segments, NPs = plan.geo.n_pages, T = plan.geo.tokens;
  compact_flags(ws.page_keep, S, NPs, ws.kept_pages, ws.page_counts);
  compact_flags(ws.keep, S, T, ws.kept_tokens, ws.token_counts);
  thrust::host_vector<int> pages = ws.kept_pages, pcount = ws.page_counts;
  thrust::host_vector<int> toks = ws.kept_tokens, tcount = ws.token_counts;
  thrust::host_vector<double> scores = ws.page_score;
  std::vector<PageSelection> out(S);
  std::size_t pa = 0, ta = 0;
  for (int s = 0; s < S; ++s) {
    for (int j = 0; j < pcount[s]; ++j) out[s].pages.push_back(pages[pa++] - static_cast<Index>(s) * NPs);
    for (int j = 0; j < tcount[s]; ++j) out[s].tokens.push_back(toks[ta++] - static_cast<Index>(s) * T);
    out[s].page_scores.assign(scores.begin() + static_cast<std::ptrdiff_t>(s) * NPs,
                              scores.begin() + static_cast<std::ptrdiff_t>(s + 1) * NPs);
  }
  if (pa != pages.size() || ta != toks.size()) throw std::logic_error("page selector: counts do not add up");
  return out;
}

ResidentTiming time_page_select(const BatchedScores& attention, const PageParams& params, int repeats) {
  const PagePlan plan = make_page_plan(attention, params);
  PageWorkspace ws;
  upload_pages_checked(attention, ws);
  const double median = median_synchronized_seconds(repeats, [&] {
    run_page_selection(plan, ws);
    compact_flags(ws.keep, plan.segments, plan.geo.tokens, ws.kept_tokens, ws.token_counts);
  });
  return {median, static_cast<Index>(ws.kept_tokens.size())};
}

}  // namespace kvaudit::gpu::KVAUDIT_GPU_NS
