// Optimized Page-EntroKV: one pass per head for (Z, sum p^2), one pass per group for the pooled page scores,
// nth_element for the top pages, OpenMP over layers.
#include "core/paging/page_selector.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/compression_ratio.h"
#include "core/error.h"

namespace kvaudit::paging {

std::vector<Index> PageSelection::kept_pages(Index l, Index g) const {
  std::vector<Index> out;
  for (Index p = 0; p < pages; ++p)
    if (kept(l, g, p)) out.push_back(p);
  return out;
}

Positions PageSelection::kept_tokens(Index l, Index g) const {
  Positions out;
  for (Index p : kept_pages(l, g))
    for (Index t = p * page_size; t < std::min((p + 1) * page_size, tokens); ++t) out.push_back(t);
  return out;
}

Index PageSelection::kept_total() const {
  return static_cast<Index>(std::count(ledger.begin(), ledger.end(), std::uint8_t{1}));
}

namespace {

// Pages of one (layer, group) chosen by the walk of docs/specification.md section 5: reserved pages first (index order), then
// the top of (score desc, index asc). Only the first m + 1 scored pages, m = floor(room / P), can be reached
// before full pages stop fitting, plus the short last page under SkipMisfits; so a partial sort suffices.
// In BudgetUnit::Pages every page costs 1 and the budget is K: the walk keeps the first K pages of the order.
void walk(const double* scores, Index n_pages, Index tokens, Index P_tokens, Index n_reserved, Index budget, BudgetUnit unit,
          GreedyRule rule, std::vector<Index>& scratch, std::uint8_t* kept, Index& retained) {
  const bool pages_unit = unit == BudgetUnit::Pages;
  const Index P = pages_unit ? 1 : P_tokens;  // the cost of a full page
  auto size = [&](Index k) { return pages_unit ? Index{1} : std::min((k + 1) * P_tokens, tokens) - k * P_tokens; };
  retained = 0;
  bool stopped = false;
  auto visit = [&](Index k) {
    if (stopped) return;
    if (retained + size(k) <= budget) {
      kept[k] = 1;
      retained += size(k);
    } else if (rule == GreedyRule::StopAtFirstMisfit) {
      stopped = true;
    }
  };
  for (Index k = 0; k < n_reserved; ++k) visit(k);
  scratch.resize(static_cast<std::size_t>(n_pages - n_reserved));
  std::iota(scratch.begin(), scratch.end(), n_reserved);
  auto before = [&](Index a, Index b) { return scores[a] != scores[b] ? scores[a] > scores[b] : a < b; };
  const Index room = budget - retained;
  const Index reach = std::min<Index>(static_cast<Index>(scratch.size()), room / P + 1);
  if (reach < static_cast<Index>(scratch.size()))
    std::nth_element(scratch.begin(), scratch.begin() + reach, scratch.end(), before);
  std::sort(scratch.begin(), scratch.begin() + reach, before);
  for (Index i = 0; i < reach; ++i) visit(scratch[static_cast<std::size_t>(i)]);
  const Index last = n_pages - 1;
  const bool short_tail = size(last) < P && last >= n_reserved;
  if (rule == GreedyRule::SkipMisfits && short_tail && !kept[last]) visit(last);
  if (pages_unit) {  // `retained` counts tokens in either unit
    retained = 0;
    for (Index k = 0; k < n_pages; ++k)
      if (kept[k]) retained += std::min((k + 1) * P_tokens, tokens) - k * P_tokens;
  }
}

}  // namespace

PageSelection select_pages(const ScoreTensor& attn, const PageParams& params) {
  const Index G = params.group_size, P = params.page_size, T = attn.tokens;
  if (G < 1 || attn.heads % G != 0)
    throw InputError("page-select", "group_size", "q_heads " + std::to_string(attn.heads) + " is not a multiple of " + std::to_string(G));
  if (P < 1) throw InputError("page-select", "page_size", "must be >= 1");
  if (params.n_sink < 0) throw InputError("page-select", "sinks", "must be >= 0");
  if (T < 1) throw InputError("page-select", "tokens", "need at least one position");
  PageSelection out;
  out.layers = attn.layers;
  out.groups = attn.heads / G;
  out.group_size = G;
  out.tokens = T;
  out.page_size = P;
  out.pages = (T + P - 1) / P;
  out.budget = walk_budget(T, params);
  out.budget_unit = params.budget_unit;
  out.ledger.assign(static_cast<std::size_t>(out.layers * out.groups * out.pages), 0);
  out.retained.assign(static_cast<std::size_t>(out.layers * out.groups), 0);
  out.weights.assign(static_cast<std::size_t>(out.layers * attn.heads), 0.0);
  out.collision.assign(out.weights.size(), 0.0);
  out.page_scores.assign(out.ledger.size(), 0.0);
  const Index sink = std::min(params.n_sink, T);
  const Index n_reserved = params.sink_pages == SinkPages::Reserved ? std::min(out.pages, (sink + P - 1) / P) : 0;

#pragma omp parallel for schedule(dynamic)
  for (Index l = 0; l < attn.layers; ++l) {
    std::vector<double> scale(static_cast<std::size_t>(G)), powered(static_cast<std::size_t>(G));
    std::vector<const float*> rows(static_cast<std::size_t>(G));
    std::vector<Index> scratch;
    for (Index g = 0; g < out.groups; ++g) {
      // One pass per head: non-sink mass Z_h and sum of squares; then c_h = sum p^2 / Z^2.
      double c_total = 0.0;
      for (Index i = 0; i < G; ++i) {
        const Index h = g * G + i;
        rows[i] = attn.row(l, h).data();
        double z = 0.0, q = 0.0;
        for (Index t = sink; t < T; ++t) {
          const double v = rows[i][t];
          z += v;
          q += v * v;
        }
        double c = z > 0.0 ? q / (z * z) : 0.0;
        if (params.entropy_on == EntropySource::Raw) {  // c_h = sum_t p_h(t)^2 over the raw row
          for (Index t = 0; t < sink; ++t) q += static_cast<double>(rows[i][t]) * rows[i][t];
          c = q;
        }
        out.collision[static_cast<std::size_t>(l * attn.heads + h)] = c;
        double power = c;  // c_h^(1/tau) by 1/tau - 1 products
        for (Index j = 1; j < params.inverse_temperature; ++j) power *= c;
        powered[i] = power;
        c_total += power;
        scale[i] = z;  // Z_h for now
      }
      for (Index i = 0; i < G; ++i) {
        const Index h = g * G + i;
        const double z = scale[i];
        double w = 1.0 / static_cast<double>(G);
        if (params.pooling == PagePooling::Entropy && c_total > 0.0) w = powered[i] / c_total;
        out.weights[static_cast<std::size_t>(l * attn.heads + h)] = w;
        // d_h = p_h / Z_h on non-sink positions (0 if Z_h = 0) or the raw p_h.
        scale[i] = params.source == PoolSource::Raw ? w : (z > 0.0 ? w / z : 0.0);
      }
      // One pass over the group: pooled token score, folded straight into its page.
      double* ps = &out.page_scores[static_cast<std::size_t>((l * out.groups + g) * out.pages)];
      const Index first = params.source == PoolSource::Raw ? 0 : sink;
      for (Index t = 0; t < T; ++t) {
        double s = 0.0;
        if (t >= first)
          for (Index i = 0; i < G; ++i) s += scale[i] * static_cast<double>(rows[i][t]);
        double& page = ps[t / P];
        if (params.page_score == PageScore::Sum) page = (t % P == 0) ? s : page + s;
        else page = (t % P == 0) ? s : std::max(page, s);
      }
      std::uint8_t* kept = &out.ledger[static_cast<std::size_t>((l * out.groups + g) * out.pages)];
      walk(ps, out.pages, T, P, n_reserved, out.budget, params.budget_unit, params.greedy, scratch, kept,
           out.retained[static_cast<std::size_t>(l * out.groups + g)]);
    }
  }
  return out;
}

Index walk_budget(Index tokens, const PageParams& params) {
  const CompressionRatio rho = parse_compression_ratio(params.ratio_text, "ratio_text");
  if (params.budget_unit == BudgetUnit::Tokens) return exact_budget(tokens, rho);
  const Index P = params.page_size;
  if (params.page_count_rule == PageCountRule::Paper) return exact_floor_kept(tokens, rho) / P;  // floor(floor(x) / P) = floor(x / P)
  return std::max<Index>(1, exact_floor_kept((tokens + P - 1) / P, rho));
}

}  // namespace kvaudit::paging
