// The page-score error bound per precision (proofs/14_page_score_error_bound.md).
#include "core/paging/page_score_bound.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "core/error.h"

namespace kvaudit::paging {

double page_score_rel_bound(ScorePrecision precision, Index tokens, Index group_size, Index page_size, Index inverse_temperature) {
  if (inverse_temperature < 1) throw std::logic_error("page_score_rel_bound: 1/tau must be >= 1");
  double u = 0.0;
  switch (precision) {
    case ScorePrecision::Exact: return 0.0;
    case ScorePrecision::Float64: u = std::ldexp(1.0, -53); break;
    case ScorePrecision::Float32: u = std::ldexp(1.0, -24); break;
    case ScorePrecision::Custom: throw std::logic_error("page_score_rel_bound: a custom tolerance has no derived bound");
  }
  const double k = static_cast<double>(inverse_temperature);
  const double n = (6.0 * k + 1.0) * static_cast<double>(tokens) + 2.0 * static_cast<double>(group_size) +
                   static_cast<double>(page_size) + 14.0 + 2.0 * k;
  const double nu = n * u;
  return nu < 0.5 ? nu / (1.0 - nu) : 1.0;
}

double rel_tolerance(const PrecisionModel& model, Index tokens, Index group_size, Index page_size, Index inverse_temperature) {
  if (model.kind == ScorePrecision::Custom) return model.custom_rel_tolerance;
  return page_score_rel_bound(model.kind, tokens, group_size, page_size, inverse_temperature);
}

PrecisionModel parse_precision(const std::string& text, const std::string& source) {
  if (text == "exact") return {ScorePrecision::Exact, 0.0};
  if (text == "float64") return {ScorePrecision::Float64, 0.0};
  if (text == "float32") return {ScorePrecision::Float32, 0.0};
  char* end = nullptr;
  const double v = text.empty() ? NAN : std::strtod(text.c_str(), &end);
  if (end == nullptr || *end != '\0' || !(v >= 0.0 && v < 1.0))
    throw InputError(source, "precision", "expected exact, float64, float32 or a number in [0, 1), got '" + text + "'");
  return {ScorePrecision::Custom, v};
}

std::string to_string(const PrecisionModel& model) {
  switch (model.kind) {
    case ScorePrecision::Exact: return "exact";
    case ScorePrecision::Float64: return "float64";
    case ScorePrecision::Float32: return "float32";
    case ScorePrecision::Custom: break;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", model.custom_rel_tolerance);
  return buf;
}

}  // namespace kvaudit::paging
