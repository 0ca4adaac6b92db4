// Reference ChunkKV and EG-ChunkKV (docs/specification.md sections 1-3): canonical selections and the admissibility
// checker. Naive, one function per definition; includes nothing from core/ but core/types.h and verdict.h.
// The semantics of both flavours, the tolerance model and every rule id are documented in
// docs/chunk-selection.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/types.h"
#include "core/verdict.h"

namespace kvaudit::oracle {

// ---- Budgets (docs/specification.md section 1) ------------------------------------------------------------------------
// max(1, floor((1 - rho) T)) with rho read exactly from its decimal text (Boost cpp_rational).
// Throws std::invalid_argument unless the text is a plain decimal in [0, 1) and tokens >= 1.
Index exact_token_budget(Index tokens, const std::string& rho_text);
// max(1, int(T * (1 - rho))) in IEEE double, as Python evaluates it (kvpress.utils.compute_n_kept).
Index kvpress_token_budget(Index tokens, double rho);
// The budget a method keeps under `params` for a context of `tokens` positions, as the flavour defines it.
// EG-ChunkKV: kept tokens. ChunkKV: the number of kept *chunks* (see chunkkv_budget for tokens); in the
// no-complete-chunk fallback, the number of tokens kept (per head for the kvpress flavour).
Index declared_budget(Index tokens, const SelectorParams& params);

// ChunkKV's budget in detail. It is a number of chunks, so the kept token count depends on whether the
// trailing partial chunk is among the kept ones: min_tokens / max_tokens bound it over all inputs.
struct ChunkKvBudget {
  Index chunks_total = 0;     // complete chunks + (1 if a partial chunk trails)
  Index chunks_kept = 0;      // rho == 0: chunks_total
  bool fallback = false;      // no complete chunk: kvpress delegates to the inner scorer's top-k
  Index fallback_tokens = 0;  // tokens kept in the fallback (per head for the kvpress flavour)
  Index min_tokens = 0;
  Index max_tokens = 0;
};
ChunkKvBudget chunkkv_budget(Index tokens, const SelectorParams& params);

// One (T, rho) where the exact rule and kvpress's float rule keep different numbers of tokens.
struct BudgetDivergence {
  Index tokens = 0;
  std::string rho_text;
  Index exact = 0;
  Index kvpress = 0;
};
// Every divergence for T in [min_tokens, max_tokens] and each rho text (value = strtod(text)).
std::vector<BudgetDivergence> budget_divergences(Index min_tokens, Index max_tokens,
                                                 const std::vector<std::string>& rho_texts);

// ---- Canonical selections (ties broken toward the lower index) ------------------------------------------
// Throws std::invalid_argument when kvpress would fail its assertions (kvpress flavour) or the
// parameters make no sense (chunk_length < 1, rescue_size < 1, non-finite scores). The kvpress flavour
// also rejects what the released code has no knob for: a fixed entropy_threshold, the mean-of-middles
// median and an eps other than 1e-8.
Selection chunkkv_select(const HeadScores& scores, const SelectorParams& params);
Selection eg_chunkkv_select(const HeadScores& scores, const SelectorParams& params);
Selection select(const HeadScores& scores, const SelectorParams& params);  // dispatches on params.method

// Per-chunk statistics and gates as the canonical EG-ChunkKV selection computed them (float32 for the
// kvpress flavour, exact / 50-digit for the exact flavour), converted to double for display and tests.
struct ChunkStat {
  Index begin = 0;
  Index end = 0;          // [begin, end)
  double score = 0.0;     // S_i
  double entropy = 0.0;   // H~_i
  bool important = false; // S_i >= median(S)
  bool spiky = false;     // H~_i < tau
};
std::vector<ChunkStat> eg_chunk_statistics(const HeadScores& scores, const SelectorParams& params);

// ---- Admissibility --------------------------------------------------------------------------------------
// How far a computed statistic may sit from its exact value and still count as tied.
enum class Rounding {
  // An implementation evaluating head sums, chunk means and entropies in float32 (any summation order)
  // or in anything more precise. The bound is derived in docs/chunk-selection.md ("Tolerance").
  Float32Evaluation,
  // Only exact ties are ties (a 1e-40 slack covers the checker's own 50-digit arithmetic). Use it for
  // implementations that compute exactly, e.g. the canonical exact flavour.
  ExactOnly,
};

// How the checker evaluates its comparisons (proofs/15_filtered_admissibility.md). Both give the same
// verdict, rule and message; Filtered only decides faster.
enum class Arithmetic {
  // In double enclosures of the 50-digit values first; in 50 digits only when some comparison (or a
  // printed digit) cannot be decided in double.
  Filtered,
  // Always in Boost's 50-digit cpp_bin_float: the naive reference the filtered path is tested against.
  Reference50Digit,
};

// How many rule stages the filtered arithmetic decided in double, and how many needed some 50-digit value.
struct ArithmeticCounts {
  Index decided_in_double = 0;
  Index fell_back_to_50_digits = 0;
  // Of fell_back_to_50_digits: EG-ChunkKV stages decided in double except for near-tied token values, which were
  // compared in 50 digits; the others re-ran every rule in 50 digits.
  Index token_values_in_50_digits = 0;
};

struct AdmissibilityOptions {
  Rounding rounding = Rounding::Float32Evaluation;
  // What-if judging, used to name an implementation's mistake (audit/conform's chunk family): is the answer what
  // a known wrong walk keeps? Unset, every knob follows the spec.
  // Judge against this budget instead of the flavour's rule: EG-ChunkKV kept tokens; ChunkKV kept chunks, or
  // kept tokens in the no-complete-chunk fallback.
  std::optional<Index> budget{};
  // ChunkKV's no-complete-chunk fallback: per-head top-k on each head's own scores (true, kvpress) or one
  // head-summed top-L shared by every head (false, exact) instead of the flavour's.
  std::optional<bool> per_head_fallback{};
  // Accept the median rule the kvpress flavour has no switch for (mean of the middles) instead of answering
  // Unsupported.
  bool any_median = false;
  Arithmetic arithmetic = Arithmetic::Filtered;
  // When set, each rule stage run adds one to decided_in_double or fell_back_to_50_digits.
  ArithmeticCounts* counts = nullptr;
};

// Conforms if some order of tied values (values equal within the rounding error of float32 evaluation
// count as tied) makes the spec produce `claimed`; Violates{rule, message} naming the first rule broken:
// shape, range, unique, order, budget, then boundary / whole-chunk / chunk-order (ChunkKV) or
// token-choice / rescue / whole-chunk / chunk-order / top-up (EG-ChunkKV); Unsupported when the
// parameters are ones the flavour rejects. The decision procedure is polynomial (no search), so it
// never needs to give up; see docs/chunk-selection.md for what "some order of tied values" covers.
Verdict check_admissible(const HeadScores& scores, const SelectorParams& params, const Selection& claimed);
Verdict check_admissible(const HeadScores& scores, const SelectorParams& params, const Selection& claimed,
                         const AdmissibilityOptions& options);

// The interval [lo, hi] inside which an implementation may compute the ranking value of each position
// (the head-summed score, clamped at 0 for the exact flavour) under `rounding`. Two positions are
// "strictly ordered" for the checker iff their intervals are disjoint. Exposed for tests and audits.
struct ValueInterval {
  double lo = 0.0;
  double hi = 0.0;
};
std::vector<ValueInterval> token_value_intervals(const HeadScores& scores, const SelectorParams& params,
                                                 Rounding rounding = Rounding::Float32Evaluation);

// ---- Canonical selections, filtered ---------------------------------------------------------------------
// select(scores, params) with the exact flavour's decisions (medians, gates, chunk order, top-k) taken in double
// enclosures of its 50-digit statistics, and in 50 digits only when some decision cannot be taken there
// (proofs/15_filtered_admissibility.md, "Filtered canonical selection"). Same result as select() for every input:
// Reference50Digit is select() itself. The kvpress flavour computes in float32 either way. `counts`, when set,
// gets one decided_in_double or fell_back_to_50_digits per exact-flavour selection.
Selection select(const HeadScores& scores, const SelectorParams& params, Arithmetic arithmetic,
                 ArithmeticCounts* counts = nullptr);

}  // namespace kvaudit::oracle
