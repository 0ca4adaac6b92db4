// ChunkKV and EG-ChunkKV layer selectors and their multi-layer / batched drivers (see chunk_select.h).
#include "core/select/chunk_select.h"

#include <cmath>
#include <exception>
#include <numeric>
#include <optional>

#include "core/compression_ratio.h"
#include "core/error.h"
#include "core/select/chunk_stats.h"
#include "core/select/entropy_gate.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace kvaudit::select {

using detail::ChunkGeometry;
using detail::RankDesc;

void Workspace::reserve(Index tokens, Index chunk_length, Flavour flavour) {
  const auto T = static_cast<std::size_t>(tokens);
  const auto C = static_cast<std::size_t>(std::min(chunk_length, tokens));
  const std::size_t n_chunks = (T + static_cast<std::size_t>(chunk_length) - 1) / static_cast<std::size_t>(chunk_length);
  auto grow = [](auto& v, std::size_t n) {
    if (v.size() < n) v.resize(n);
  };
  if (flavour == Flavour::Kvpress) {
    grow(xf, T);
    grow(score_f, n_chunks);
    grow(entropy_f, n_chunks);
    grow(median_f, n_chunks);
    grow(lanes, detail::lanes_buffer_size(chunk_length));
    grow(band, n_chunks);
    grow(cut, n_chunks);
    grow(cut_top, n_chunks);
  } else {
    grow(xd, T);
    grow(score_d, n_chunks);
    grow(entropy_d, n_chunks);
    grow(median_d, n_chunks);
    grow(chunk_buf, C);
  }
  grow(keep, T);
  grow(take, n_chunks);
  grow(order, std::max(T, n_chunks));
  grow(idx, std::max(C, T) + 1);
}

void validate_params(const SelectorParams& p) {
  if (!(p.ratio.value >= 0.0 && p.ratio.value < 1.0))
    throw InputError("--compression-ratio", "compression_ratio", "must be in [0, 1), got '" + p.ratio.text + "'");
  if (p.flavour == Flavour::Exact) (void)parse_compression_ratio(p.ratio.text);  // the exact budget re-reads the text
  if (p.chunk_length < 1)
    throw InputError("--chunk-length", "chunk_length", "must be >= 1, got " + std::to_string(p.chunk_length));
  if (p.rescue_size < 1)
    throw InputError("--rescue-size", "rescue_size", "must be >= 1, got " + std::to_string(p.rescue_size));
  if (p.flavour == Flavour::Exact) {
    if (p.entropy_threshold && !std::isfinite(*p.entropy_threshold))
      throw InputError("--entropy-threshold", "entropy_threshold", "must be finite");
    if (!(std::isfinite(p.eps) && p.eps > 0.0)) throw InputError("selector", "eps", "must be finite and > 0");
    return;
  }
  if (p.method != Method::EgChunkKV) return;
  if (!(p.chunk_length > p.rescue_size))
    throw InputError("--chunk-length", "chunk_length",
                     "kvpress asserts chunk_length > low_entropy_chunk_length (--rescue-size) >= 1, got chunk length " +
                         std::to_string(p.chunk_length) + " and rescue size " + std::to_string(p.rescue_size));
  if (p.entropy_threshold)
    throw InputError("--entropy-threshold", "entropy_threshold",
                     "the kvpress flavour always gates at the median entropy; use --flavour exact for a fixed threshold");
  if (p.median != MedianRule::Lower)
    throw InputError("--median", "median", "the kvpress flavour uses torch's lower median; use --flavour exact");
  if (p.eps != 1e-8) throw InputError("selector", "eps", "the kvpress flavour uses EPSILON = 1e-8");
}

std::string budget_rule(const SelectorParams& p) {
  const bool kvpress = p.flavour == Flavour::Kvpress;
  if (p.method == Method::ChunkKV)
    return kvpress ? "kvpress-float-chunks: max(1, int(n_chunks * (1 - rho))) whole chunks; T < C: per-head "
                     "max(1, int(T * (1 - rho))) tokens"
                   : "exact-chunks: max(1, floor((1 - rho) * n_chunks)) whole chunks";
  return kvpress ? "kvpress-float: max(1, int(T * (1 - rho)))" : "exact: max(1, floor((1 - rho) * T))";
}

namespace {

// The one position list of a selection shared by all heads, reusing `out`'s storage when it has one.
Positions& single(Selection& out) {
  out.kept.resize(1);
  return out.kept[0];
}

void keep_all(Index tokens, Selection& out) {
  Positions& all = single(out);
  all.resize(static_cast<std::size_t>(tokens));
  std::iota(all.begin(), all.end(), Index{0});
}

void check_shape(const HeadScores& s) {
  if (s.heads < 1) throw InputError("scores", "heads", "need at least one head");
  if (s.tokens < 1) throw InputError("scores", "tokens", "empty context (T = 0)");
  if (static_cast<Index>(s.values.size()) != s.heads * s.tokens)
    throw InputError("scores", "values", "size does not match heads x tokens");
}

template <class V>
std::span<V> head_sum_checked(const HeadScores& s, std::vector<V>& buf) {
  std::span<V> x{buf.data(), static_cast<std::size_t>(s.tokens)};
  if (!detail::head_sum<V>(s, x)) throw InputError("scores", "values", "a head-summed score is NaN or infinite");
  return x;
}

bool ratio_is_zero(const SelectorParams& p) { return p.ratio.value == 0.0; }  // "0", "0.00": strtod gives 0

// The k positions of [0, T) ranking first by (x desc, index asc), as one sorted Positions.
template <class V>
Positions top_k_positions(const V* x, Index T, Index k, Workspace& ws) {
  unsigned char* keep = ws.keep.data();
  std::fill(keep, keep + T, 0);
  detail::mark_top_k_in_range(x, 0, T, k, keep, ws.idx.data());
  return detail::collect_kept({keep, static_cast<std::size_t>(T)}, ws.idx.data());
}

// ChunkKV with no complete chunk (T < C). kvpress delegates to the inner ScorerPress: per-head top-k of
// the raw scores with n_kept = compute_n_kept(T, rho) = max(1, int(T * (1 - rho))) (kvpress 0.5.5
// utils.py). The exact flavour keeps the head-summed top-L (L the exact budget) shared by all heads, as
// the oracle defines it.
Selection chunkkv_fallback(const HeadScores& s, const SelectorParams& p, Workspace& ws) {
  const Index T = s.tokens;
  Selection out;
  if (p.flavour == Flavour::Kvpress) {
    const Index k = kvpress_float_budget(T, p.ratio.value);
    for (Index h = 0; h < s.heads; ++h) out.kept.push_back(top_k_positions(s.values.data() + h * T, T, k, ws));
  } else {
    out.kept.push_back(top_k_positions(ws.xd.data(), T, exact_budget(T, p.ratio), ws));
  }
  return out;
}

template <class V>
void keep_top_chunks(const detail::ChunkGeometry& g, const V* S, Index m, Workspace& ws, Positions& out) {
  Index* order = ws.order.data();
  detail::chunk_order(S, g.n_chunks, order, ws);
  detail::ChunkBitmap& kept = ws.visited;
  kept.reset(g.n_chunks);
  Index count = 0;
  for (Index c = 0; c < std::min(m, g.n_chunks); ++c) {
    kept.set(order[c]);
    count += g.size(order[c]);
  }
  detail::collect_whole(g, kept, count, out);
}

void chunkkv_layer(const HeadScores& s, const SelectorParams& p, Workspace& ws, Selection& out) {
  const Index T = s.tokens;
  const bool kvpress = p.flavour == Flavour::Kvpress;
  // The head sum also rejects NaN/Inf on the keep-all and fallback paths, as the oracle does.
  if (kvpress) head_sum_checked(s, ws.xf);
  else head_sum_checked(s, ws.xd);
  if (ratio_is_zero(p)) return keep_all(T, out);
  const ChunkGeometry g = detail::geometry(T, p.chunk_length);
  if (g.n_complete == 0) {
    out = chunkkv_fallback(s, p, ws);
    return;
  }
  if (kvpress) {
    const auto nc = static_cast<std::size_t>(g.n_chunks);
    detail::kvpress_chunk_statistics_lanes({ws.xf.data(), static_cast<std::size_t>(T)}, g, {ws.score_f.data(), nc}, {},
                                           ws.lanes);
    return keep_top_chunks(g, ws.score_f.data(), kvpress_float_budget(g.n_chunks, p.ratio.value), ws, single(out));
  }
  detail::exact_chunk_statistics({ws.xd.data(), static_cast<std::size_t>(T)}, g, p.eps, ws.score_d, {}, ws.chunk_buf);
  keep_top_chunks(g, ws.score_d.data(), exact_budget(g.n_chunks, p.ratio), ws, single(out));
}

// EG-ChunkKV's gates, walk and top-up over precomputed statistics (V = float: kvpress, double: exact).
// tau: `tau_settled` when the gate was already settled from fast entropies (entropy_gate.h), else the fixed
// threshold (exact flavour) or the median of H~.
template <class V>
void eg_walk(const V* x, const V* S, const V* Hn, const ChunkGeometry& g, Index L, const SelectorParams& p,
             std::optional<V> tau_settled, std::vector<V>& median_buf, Workspace& ws, Positions& out) {
  const Index T = g.tokens, nc = g.n_chunks, r = p.rescue_size;
  Index* order = ws.order.data();
  detail::chunk_order(S, nc, order, ws);
  const V s_med = detail::median_from_order(S, order, nc, p.median);
  const V tau = tau_settled            ? *tau_settled
                : p.entropy_threshold ? static_cast<V>(*p.entropy_threshold)
                                      : detail::median<V>({Hn, static_cast<std::size_t>(nc)}, p.median, median_buf);

  // The walk only counts what each chunk keeps (take); the positions are ranked when the output is written.
  Index* take = ws.take.data();
  detail::ChunkBitmap& visited = ws.visited;
  visited.reset(nc);
  Index b = L;
  for (Index pos = 0; pos < nc && b > 0; ++pos) {
    const Index i = order[pos];
    // Important and spiky: rescue only. Evaluated without a branch (the entropy side is a coin flip).
    const bool rescue = static_cast<int>(S[i] >= s_med) & static_cast<int>(Hn[i] < tau);
    const Index n_kept = std::min(rescue ? std::min(g.size(i), r) : g.size(i), b);
    take[i] = n_kept;
    visited.set(i);
    b -= n_kept;
  }
  if (b > 0) {
    // Top-up: the b best positions not kept yet; the walk visited every chunk. Within a chunk the top-up's
    // picks rank right after the walk's (both follow x desc, index asc), so the chunk keeps its top
    // take[i] + picks positions: only the counts change.
    unsigned char* keep = ws.keep.data();
    for (Index i = 0; i < nc; ++i) detail::mark_top_k_in_range(x, g.begin(i), g.end(i), take[i], keep, ws.idx.data());
    Index* left = ws.order.data();
    Index n_left = 0;
    for (Index t = 0; t < T; ++t)
      if (!keep[t]) left[n_left++] = t;
    const Index add = std::min(b, n_left);
    if (add < n_left) std::nth_element(left, left + add, left + n_left, RankDesc<V>{x});
    for (Index k = 0; k < add; ++k) ++take[left[k] / g.chunk_length];
    b -= add;
  }
  detail::collect_top_k(g, visited, x, L - b, ws, out);
}

void eg_chunkkv_layer(const HeadScores& s, const SelectorParams& p, Workspace& ws, Selection& out) {
  const Index T = s.tokens;
  const ChunkGeometry g = detail::geometry(T, p.chunk_length);
  const auto nc = static_cast<std::size_t>(g.n_chunks);
  if (p.flavour == Flavour::Kvpress) {
    std::span<float> x = head_sum_checked(s, ws.xf);
    const Index L = kvpress_float_budget(T, p.ratio.value);
    if (ratio_is_zero(p) || L >= T) return keep_all(T, out);
    const std::span<float> entropy{ws.entropy_f.data(), nc};
    std::optional<float> tau;
    if (detail::kvpress_chunk_statistics_lanes(x, g, {ws.score_f.data(), nc}, entropy, ws.lanes)) {
      tau = detail::settle_median_gate(x.data(), g, entropy, detail::fast_entropy_margin(p.chunk_length), ws.median_f,
                                       ws.band);
    } else {  // a chunk's sums overflowed: every H~ exactly, the median by the usual rule below
      detail::kvpress_chunk_statistics(x, g, {ws.score_f.data(), nc}, entropy);
    }
    return eg_walk<float>(x.data(), ws.score_f.data(), entropy.data(), g, L, p, tau, ws.median_f, ws, single(out));
  }
  std::span<double> x = head_sum_checked(s, ws.xd);
  const Index L = exact_budget(T, p.ratio);
  if (L >= T) return keep_all(T, out);
  detail::clamp_nonnegative(x);
  detail::exact_chunk_statistics(x, g, p.eps, {ws.score_d.data(), nc}, {ws.entropy_d.data(), nc}, ws.chunk_buf);
  eg_walk<double>(x.data(), ws.score_d.data(), ws.entropy_d.data(), g, L, p, std::nullopt, ws.median_d, ws,
                  single(out));
}

}  // namespace

void select_layer(const HeadScores& scores, const SelectorParams& params, Workspace& ws, Selection& out) {
  check_shape(scores);
  ws.reserve(scores.tokens, params.chunk_length, params.flavour);
  if (params.method == Method::ChunkKV) chunkkv_layer(scores, params, ws, out);
  else eg_chunkkv_layer(scores, params, ws, out);
}

Selection select_layer(const HeadScores& scores, const SelectorParams& params, Workspace& ws) {
  Selection out;
  select_layer(scores, params, ws, out);
  return out;
}

Selection select_layer(const HeadScores& scores, const SelectorParams& params) {
  validate_params(params);
  Workspace ws;
  return select_layer(scores, params, ws);
}

namespace {

HeadScores layer_view(const ScoreTensor& t, Index layer) {
  const auto n = static_cast<std::size_t>(t.heads * t.tokens);
  return HeadScores{t.heads, t.tokens, {t.values.data() + static_cast<std::size_t>(layer) * n, n}};
}

void check_tensor(const ScoreTensor& t) {
  if (t.layers < 1 || t.heads < 1 || t.tokens < 1)
    throw InputError("scores", "shape", "need layers, heads and tokens >= 1");
  if (static_cast<Index>(t.values.size()) != t.layers * t.heads * t.tokens)
    throw InputError("scores", "values", "size does not match layers x heads x tokens");
}

// Runs job(k, ws) for k in [0, n) in parallel with one Workspace per thread; rethrows the first exception.
// Below `kMinParallelValues` scores in all, starting a thread team costs more than the work.
constexpr Index kMinParallelValues = Index{1} << 16;
template <class Job>
void parallel_jobs(Index n, Index total_values, const Job& job) {
  std::exception_ptr error;
#pragma omp parallel if (n > 1 && total_values >= kMinParallelValues)
  {
    // One Workspace per OS thread, kept across calls (OpenMP reuses its threads): buffers of the largest T
    // seen stay mapped, so repeated selections neither allocate nor page-fault.
    thread_local Workspace ws;
#pragma omp for schedule(dynamic, 1)
    for (Index k = 0; k < n; ++k) {
      try {
        job(k, ws);
      } catch (...) {
#pragma omp critical(kvaudit_select_error)
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace

void select_layers(const ScoreTensor& scores, const SelectorParams& params, std::vector<Selection>& out) {
  validate_params(params);
  check_tensor(scores);
  out.resize(static_cast<std::size_t>(scores.layers));
  parallel_jobs(scores.layers, static_cast<Index>(scores.values.size()), [&](Index l, Workspace& ws) {
    select_layer(layer_view(scores, l), params, ws, out[static_cast<std::size_t>(l)]);
  });
}

std::vector<Selection> select_layers(const ScoreTensor& scores, const SelectorParams& params) {
  std::vector<Selection> out;
  select_layers(scores, params, out);
  return out;
}

std::vector<std::vector<Selection>> select_batch(std::span<const ScoreTensor> elements, const SelectorParams& params,
                                                 BatchRule rule) {
  validate_params(params);
  if (elements.empty()) return {};
  const ScoreTensor& first = elements[0];
  for (const ScoreTensor& e : elements) {
    check_tensor(e);
    if (e.layers != first.layers || e.heads != first.heads || e.tokens != first.tokens)
      throw InputError("scores", "shape", "batch elements differ in shape");
  }
  // kvpress's ChunkKV fallback (no complete chunk) is the inner press's own compress: per element.
  const bool per_element_fallback = params.method == Method::ChunkKV && params.flavour == Flavour::Kvpress &&
                                    !ratio_is_zero(params) && first.tokens < params.chunk_length;
  const bool each = rule == BatchRule::PerElement || per_element_fallback;
  const Index B = each ? static_cast<Index>(elements.size()) : 1;
  const Index L = first.layers;
  std::vector<std::vector<Selection>> out(elements.size(), std::vector<Selection>(static_cast<std::size_t>(L)));
  parallel_jobs(B * L, B * static_cast<Index>(first.values.size()), [&](Index k, Workspace& ws) {
    const auto b = static_cast<std::size_t>(k / L), l = static_cast<std::size_t>(k % L);
    out[b][l] = select_layer(layer_view(elements[b], static_cast<Index>(l)), params, ws);
  });
  if (!each)
    for (std::size_t b = 1; b < elements.size(); ++b) out[b] = out[0];
  return out;
}

}  // namespace kvaudit::select
