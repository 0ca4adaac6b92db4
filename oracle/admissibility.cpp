// The admissibility checker's staged checks (shape -> range -> unique -> order -> budget -> rules) and
// ChunkKV's rules (boundary, whole-chunk, chunk-order, per-head / shared fallback top-k).
#include <algorithm>
#include <limits>
#include <optional>
#include <sstream>

#include "oracle/admissibility_internal.h"

namespace kvaudit::oracle {
namespace detail {

std::string show(const Real& v) {
  std::ostringstream out;
  out.precision(9);
  out << static_cast<double>(v);
  return out.str();
}

// Printing to 9 digits is monotone and the 50-digit value's double lies between the ends, so ends that
// print alike print what the 50-digit path prints.
std::string show(const DoubleEnclosure& v) {
  std::string lo = show(Real(v.lo())), hi = show(Real(v.hi()));
  if (lo != hi) throw UndecidedInDouble();
  return lo;
}

}  // namespace detail

namespace {

using detail::DoubleEnclosure;
using detail::IntervalOf;
using detail::Real;

std::string chunk_name(Index i, const detail::Chunk& c) {
  return "chunk " + std::to_string(i) + " [" + std::to_string(c.begin) + ", " + std::to_string(c.end) + ")";
}

std::optional<Verdict> check_positions(const Positions& kept, Index tokens, const std::string& where) {
  for (Index p : kept)
    if (p < 0 || p >= tokens)
      return Verdict::violates("range", where + "position " + std::to_string(p) + " is outside [0, " + std::to_string(tokens) + ")");
  Positions copy = kept;
  std::sort(copy.begin(), copy.end());
  auto dup = std::adjacent_find(copy.begin(), copy.end());
  if (dup != copy.end()) return Verdict::violates("unique", where + "position " + std::to_string(*dup) + " is listed twice");
  for (std::size_t i = 1; i < kept.size(); ++i)
    if (kept[i] < kept[i - 1])
      return Verdict::violates("order", where + "positions are not increasing: " + std::to_string(kept[i - 1]) + " before " +
                                            std::to_string(kept[i]));
  return std::nullopt;
}

std::vector<Index> complement(const Positions& kept, Index tokens) {
  std::vector<bool> mark(static_cast<std::size_t>(tokens), false);
  for (Index p : kept) mark[static_cast<std::size_t>(p)] = true;
  std::vector<Index> out;
  for (Index j = 0; j < tokens; ++j)
    if (!mark[static_cast<std::size_t>(j)]) out.push_back(j);
  return out;
}

template <class V>
Verdict top_k_verdict(const std::vector<IntervalOf<V>>& values, const Positions& kept, Index tokens, const std::string& what) {
  auto w = detail::top_k_violation(values, kept, complement(kept, tokens));
  if (!w) return Verdict::conforms();
  return Verdict::violates("token-choice", what + ": kept position " + std::to_string(w->kept) + " (score " +
                                               detail::show_interval(values[static_cast<std::size_t>(w->kept)]) +
                                               ") ranks below dropped position " + std::to_string(w->dropped) + " (score " +
                                               detail::show_interval(values[static_cast<std::size_t>(w->dropped)]) + ")");
}

// A partly kept chunk: "boundary" when the kept runs line up with a chunk grid shifted by o != 0 (an
// off-by-offset chunking, e.g. the partial chunk put first), "whole-chunk" otherwise.
Verdict partial_chunk_verdict(const std::vector<bool>& keep, Index tokens, Index c, Index chunk_index,
                              const detail::Chunk& chunk, Index kept_count) {
  std::vector<std::pair<Index, Index>> runs;
  for (Index j = 0; j < tokens; ++j) {
    if (!keep[static_cast<std::size_t>(j)]) continue;
    if (runs.empty() || runs.back().second != j) runs.push_back({j, j + 1});
    else runs.back().second = j + 1;
  }
  Index offset = -1;
  bool aligned = true;
  for (auto [a, b] : runs) {
    for (Index edge : {a, b}) {
      if (edge == 0 || edge == tokens) continue;
      if (offset < 0) offset = edge % c;
      if (edge % c != offset) aligned = false;
    }
  }
  std::string what = chunk_name(chunk_index, chunk) + " is partly kept (" + std::to_string(kept_count) + " of " +
                     std::to_string(chunk.size()) + " positions)";
  if (aligned && offset > 0)
    return Verdict::violates("boundary", what + "; the kept runs follow a chunk grid shifted by " + std::to_string(offset));
  return Verdict::violates("whole-chunk", what + "; ChunkKV keeps chunks whole");
}

template <class V>
Verdict chunkkv_rules(const HeadScores& scores, const SelectorParams& params, const Selection& claimed,
                      const ChunkKvBudget& budget, Rounding rounding, bool per_head) {
  if (detail::ratio_is_zero(params)) return Verdict::conforms();  // budget stage already demanded all T positions
  if (budget.fallback) {
    if (per_head) {  // kvpress: per head, on that head's own (exact float32) scores
      for (Index h = 0; h < scores.heads; ++h) {
        std::vector<IntervalOf<V>> row;
        for (Index t = 0; t < scores.tokens; ++t) row.push_back({V(static_cast<double>(scores.at(h, t))), V(static_cast<double>(scores.at(h, t)))});
        Verdict v = top_k_verdict(row, claimed.kept[static_cast<std::size_t>(h)], scores.tokens,
                                  "head " + std::to_string(h) + " (fallback top-k, no complete chunk)");
        if (!v.passed()) return v;
      }
      return Verdict::conforms();
    }
    auto bounds = detail::selector_bounds<V>(scores, params, rounding, /*clamp=*/false, /*with_entropy=*/false);
    return top_k_verdict(bounds.x, claimed.kept[0], scores.tokens, "fallback top-L of head-summed scores");
  }
  auto bounds = detail::selector_bounds<V>(scores, params, rounding, /*clamp=*/false, /*with_entropy=*/false);
  std::vector<bool> keep(static_cast<std::size_t>(scores.tokens), false);
  for (Index p : claimed.kept[0]) keep[static_cast<std::size_t>(p)] = true;
  std::vector<Index> kept_chunks, dropped_chunks;
  for (std::size_t i = 0; i < bounds.chunks.size(); ++i) {
    const auto& c = bounds.chunks[i];
    Index k = 0;
    for (Index j = c.begin; j < c.end; ++j) k += keep[static_cast<std::size_t>(j)] ? 1 : 0;
    if (k > 0 && k < c.size())
      return partial_chunk_verdict(keep, scores.tokens, params.chunk_length, static_cast<Index>(i), c, k);
    (k > 0 ? kept_chunks : dropped_chunks).push_back(static_cast<Index>(i));
  }
  auto w = detail::top_k_violation(bounds.score, kept_chunks, dropped_chunks);
  if (!w) return Verdict::conforms();
  return Verdict::violates("chunk-order", "dropped " + chunk_name(w->dropped, bounds.chunks[static_cast<std::size_t>(w->dropped)]) +
                                              " (mean " + detail::show_interval(bounds.score[static_cast<std::size_t>(w->dropped)]) +
                                              ") outranks kept " + chunk_name(w->kept, bounds.chunks[static_cast<std::size_t>(w->kept)]) +
                                              " (mean " + detail::show_interval(bounds.score[static_cast<std::size_t>(w->kept)]) + ")");
}

// The float32 tolerance model (admissibility_bounds.h) bounds the rounding of finite evaluations. Where some order of
// evaluation may reach float32's largest value, an implementation's head sums, chunk means or entropies may be inf
// or NaN, which the model does not cover. For the kvpress flavour that is the released code's own behaviour, so the
// judgement is inconclusive, never a violation the model cannot back (nor a pass). The exact flavour's statistics are
// exact: an implementation whose float32 sums overflow has not computed them, and is judged by them.
// Every partial sum of a chunk's head sums is at most A_i = the sum of the chunk's masses sum_h |s_hj|, and of
// EG-ChunkKV's rebased sum at most A_i + n_i max_j mass_j (rebasing adds at most the largest magnitude to each value);
// each is widened by 2 gamma(H + n_i + 6) for the roundings on the way. Found by chunk_oracle_fuzz: the procedure
// rejected kvpress's own ChunkKV selection where two chunk sums overflowed to inf and tied (docs/hardening.md).
std::optional<Verdict> float32_overflow(const HeadScores& scores, const SelectorParams& params, bool rebased) {
  constexpr double kUnit = 0x1p-24;
  const std::vector<double> mass = detail::abs_head_sums(scores);
  for (const detail::Chunk& c : detail::chunk_layout(scores.tokens, params.chunk_length)) {
    double total = 0, largest = 0;
    for (Index j = c.begin; j < c.end; ++j) {
      total += mass[static_cast<std::size_t>(j)];
      largest = std::max(largest, mass[static_cast<std::size_t>(j)]);
    }
    const double ku = static_cast<double>(scores.heads + c.size() + 6) * kUnit;
    const double widen = ku < 0.5 ? 1.0 + 2.0 * ku / (1.0 - ku) + 1e-12 : 3.0;
    const double reach = (rebased ? total + static_cast<double>(c.size()) * largest : total) * widen;
    if (reach >= std::numeric_limits<float>::max())
      return Verdict{VerdictKind::Inconclusive, "float32-overflow",
                     "the float32 evaluation may overflow: chunk " + std::to_string(c.begin / params.chunk_length) + " [" +
                         std::to_string(c.begin) + ", " + std::to_string(c.end) + ") sums magnitudes up to " +
                         detail::show(detail::Real(reach)) +
                         " (float32 max 3.40282347e+38), and the float32 tolerance model covers finite evaluations only"};
  }
  return std::nullopt;
}

// The rules, filtered: decided in double enclosures when every comparison they make can be (or, for EG-ChunkKV, every
// one but near-tied token values, which `token_values` compares in 50 digits), else in 50 digits (the naive
// reference, which Arithmetic::Reference50Digit always uses).
template <class Rules>
Verdict rule_stage(const AdmissibilityOptions& options, Rules rules, const detail::FiftyDigitTokenValues* token_values = nullptr) {
  if (options.arithmetic == Arithmetic::Filtered) {
    try {
      Verdict v = rules.template operator()<DoubleEnclosure>();
      if (options.counts) {
        const bool some_token_values = token_values != nullptr && token_values->used();
        ++(some_token_values ? options.counts->fell_back_to_50_digits : options.counts->decided_in_double);
        if (some_token_values) ++options.counts->token_values_in_50_digits;
      }
      return v;
    } catch (const detail::UndecidedInDouble&) {
      if (options.counts) ++options.counts->fell_back_to_50_digits;
    }
  }
  return rules.template operator()<Real>();
}

}  // namespace

std::vector<ValueInterval> token_value_intervals(const HeadScores& scores, const SelectorParams& params, Rounding rounding) {
  detail::validate(scores, params);
  bool clamp = params.method == Method::EgChunkKV && params.flavour == Flavour::Exact;
  auto bounds = detail::selector_bounds<Real>(scores, params, rounding, clamp, /*with_entropy=*/false);
  std::vector<ValueInterval> out;
  for (const auto& v : bounds.x) out.push_back({static_cast<double>(v.lo), static_cast<double>(v.hi)});
  return out;
}

Verdict check_admissible(const HeadScores& scores, const SelectorParams& params, const Selection& claimed) {
  return check_admissible(scores, params, claimed, AdmissibilityOptions{});
}

Verdict check_admissible(const HeadScores& scores, const SelectorParams& params, const Selection& claimed,
                         const AdmissibilityOptions& options) {
  SelectorParams knobs = params;
  if (options.any_median) knobs.median = MedianRule::Lower;  // what invalid_reason would refuse for kvpress
  std::string invalid = detail::invalid_reason(scores, knobs);
  if (!invalid.empty()) return Verdict::unsupported("parameters or scores rejected: " + invalid);
  bool chunkkv = params.method == Method::ChunkKV;
  ChunkKvBudget budget;
  if (chunkkv) {
    budget = chunkkv_budget(scores.tokens, params);
    if (options.budget && !detail::ratio_is_zero(params)) {  // the what-if budget, with chunkkv_budget's token bounds
      const Index c = params.chunk_length, remaining = scores.tokens % c;
      if (budget.fallback) {
        budget.fallback_tokens = std::clamp<Index>(*options.budget, 1, scores.tokens);
        budget.min_tokens = budget.max_tokens = budget.fallback_tokens;
      } else {
        budget.chunks_kept = std::clamp<Index>(*options.budget, 1, budget.chunks_total);
        if (remaining == 0 || budget.chunks_kept == budget.chunks_total) {
          budget.min_tokens = budget.max_tokens = std::min(budget.chunks_kept * c, scores.tokens);
        } else {
          budget.max_tokens = budget.chunks_kept * c;
          budget.min_tokens = (budget.chunks_kept - 1) * c + remaining;
        }
      }
    }
  }
  const bool beyond_float32 = params.flavour == Flavour::Kvpress && options.rounding == Rounding::Float32Evaluation;
  const bool per_head_fallback = options.per_head_fallback.value_or(params.flavour == Flavour::Kvpress);
  bool per_head = chunkkv && budget.fallback && per_head_fallback;

  // shape
  std::size_t expected = per_head ? static_cast<std::size_t>(scores.heads) : 1;
  if (claimed.kept.size() != expected)
    return Verdict::violates("shape", "expected " + std::to_string(expected) + (per_head ? " per-head lists" : " shared list") +
                                          ", got " + std::to_string(claimed.kept.size()));
  // range, unique, order
  for (std::size_t h = 0; h < claimed.kept.size(); ++h) {
    std::string where = per_head ? "head " + std::to_string(h) + ": " : "";
    if (auto v = check_positions(claimed.kept[h], scores.tokens, where)) return *v;
  }
  // budget
  if (chunkkv) {
    for (std::size_t h = 0; h < claimed.kept.size(); ++h) {
      auto n = static_cast<Index>(claimed.kept[h].size());
      if (n != budget.min_tokens && n != budget.max_tokens)
        return Verdict::violates("budget", std::string(per_head ? "head " + std::to_string(h) + ": " : "") + "kept " +
                                               std::to_string(n) + " positions; ChunkKV keeps " +
                                               (budget.min_tokens == budget.max_tokens
                                                    ? std::to_string(budget.max_tokens)
                                                    : std::to_string(budget.min_tokens) + " (partial chunk kept) or " +
                                                          std::to_string(budget.max_tokens)));
    }
    if (beyond_float32 && !detail::ratio_is_zero(params) && !(budget.fallback && per_head))
      if (auto v = float32_overflow(scores, params, /*rebased=*/false)) return *v;
    return rule_stage(options, [&]<class V>() { return chunkkv_rules<V>(scores, params, claimed, budget, options.rounding, per_head); });
  }
  Index budget_tokens = std::min(options.budget.value_or(detail::eg_token_budget(scores.tokens, params)), scores.tokens);
  auto n = static_cast<Index>(claimed.kept[0].size());
  if (n != budget_tokens)
    return Verdict::violates("budget", "kept " + std::to_string(n) + " positions, budget is " + std::to_string(budget_tokens));
  if (budget_tokens == scores.tokens) return Verdict::conforms();
  if (beyond_float32)
    if (auto v = float32_overflow(scores, params, /*rebased=*/true)) return *v;
  std::vector<bool> keep(static_cast<std::size_t>(scores.tokens), false);
  for (Index p : claimed.kept[0]) keep[static_cast<std::size_t>(p)] = true;
  const bool clamp = params.flavour == Flavour::Exact;
  detail::FiftyDigitTokenValues token_values(scores, params, options.rounding, clamp);
  return rule_stage(
      options,
      [&]<class V>() {
        auto bounds = detail::selector_bounds<V>(scores, params, options.rounding, clamp, /*with_entropy=*/true);
        return detail::eg_rule_check<V>(bounds, params, budget_tokens, keep, &token_values);
      },
      &token_values);
}

}  // namespace kvaudit::oracle
