// One error bound per arithmetic precision for Page-EntroKV page scores computed in floating point, derived once
// (proofs/14_page_score_error_bound.md) and used by every judge of a page selection: the optimized selector's own
// tie tolerance, the GPU checks, `kvaudit check-pages`, kvaudit.check_pages, conform and the audit.
#pragma once

#include <string>

#include "core/types.h"

namespace kvaudit::paging {

// The arithmetic an implementation computed its page scores in. Custom: a relative tolerance the user states.
enum class ScorePrecision { Exact, Float64, Float32, Custom };

struct PrecisionModel {
  ScorePrecision kind = ScorePrecision::Float32;  // torch's default dtype: what a Page-EntroKV press computes in
  double custom_rel_tolerance = 0.0;              // kind == Custom, in [0, 1)
};

// gamma_n = n u / (1 - n u) with n = (6k + 1)T + 2G + P + 14 + 2k roundings, k = 1/tau (the head weights are
// c^k / sum c^k; k = 1 gives n = 7T + 2G + P + 16), and u = 2^-53 (Float64) or 2^-24 (Float32); 0 for Exact. From
// float inputs, every page score computed by the chain of the proof (any summation order, p^2/Z^2 or (p/Z)^2, c^k
// by k - 1 products) satisfies |S^ - S| <= gamma S, so two pages whose exact scores a, b have
// |a - b| <= gamma (a + b) may come out in either order. Once n u >= 1/2 the bound is 1: every pair counts as tied.
double page_score_rel_bound(ScorePrecision precision, Index tokens, Index group_size, Index page_size,
                            Index inverse_temperature = 1);

// The tolerance a model stands for on a (T, G, P, 1/tau) problem: the bound of its precision, or its custom number.
double rel_tolerance(const PrecisionModel& model, Index tokens, Index group_size, Index page_size, Index inverse_temperature = 1);

// "exact", "float64", "float32" or a decimal number in [0, 1). Throws InputError(source, "precision", ...).
PrecisionModel parse_precision(const std::string& text, const std::string& source);
std::string to_string(const PrecisionModel& model);

}  // namespace kvaudit::paging
