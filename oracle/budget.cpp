// Budgets (docs/specification.md section 1): the exact rational rule, kvpress's float rule, ChunkKV's chunk budget, divergences.
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "oracle/chunk_internal.h"
#include "oracle/chunk_selection.h"

namespace kvaudit::oracle {

namespace detail {

Rational parse_rho(const std::string& text) {
  // Plain decimals only: digits with at most one '.', at least one digit. "0.9" is exactly 9/10.
  BigInt numerator = 0, denominator = 1;
  bool point = false, digits = false;
  for (char c : text) {
    if (c == '.' && !point) {
      point = true;
    } else if (c >= '0' && c <= '9') {
      digits = true;
      numerator = numerator * 10 + (c - '0');
      if (point) denominator *= 10;
    } else {
      throw std::invalid_argument("compression ratio is not a plain decimal: '" + text + "'");
    }
  }
  if (!digits) throw std::invalid_argument("compression ratio is not a plain decimal: '" + text + "'");
  Rational rho(numerator, denominator);
  if (rho >= 1) throw std::invalid_argument("compression ratio must be in [0, 1): '" + text + "'");
  return rho;
}

}  // namespace detail

Index exact_token_budget(Index tokens, const std::string& rho_text) {
  if (tokens < 1) throw std::invalid_argument("token count must be >= 1");
  detail::Rational kept = (detail::Rational(1) - detail::parse_rho(rho_text)) * tokens;
  // floor of a non-negative rational is the integer quotient of numerator by denominator.
  detail::BigInt floor_kept = boost::multiprecision::numerator(kept) / boost::multiprecision::denominator(kept);
  Index budget = floor_kept.convert_to<Index>();
  return budget < 1 ? 1 : budget;
}

Index kvpress_token_budget(Index tokens, double rho) {
  double kept = static_cast<double>(tokens) * (1.0 - rho);  // Python: kv_len * (1 - compression_ratio)
  auto n = static_cast<Index>(kept);                        // int() truncates toward zero
  return n < 1 ? 1 : n;
}

ChunkKvBudget chunkkv_budget(Index tokens, const SelectorParams& params) {
  if (tokens < 1) throw std::invalid_argument("token count must be >= 1");
  if (params.chunk_length < 1) throw std::invalid_argument("chunk_length must be >= 1");
  ChunkKvBudget b;
  Index c = params.chunk_length;
  Index complete = tokens / c, remaining = tokens % c;
  b.chunks_total = complete + (remaining > 0 ? 1 : 0);
  bool kvpress = params.flavour == Flavour::Kvpress;
  if (detail::ratio_is_zero(params)) {  // checked before anything else in ChunkKVPress.compress
    b.chunks_kept = b.chunks_total;
    b.min_tokens = b.max_tokens = tokens;
    return b;
  }
  if (complete == 0) {  // delegated to the inner ScorerPress: compute_n_kept(kv_len, ratio) per head
    b.fallback = true;
    b.fallback_tokens = kvpress ? kvpress_token_budget(tokens, params.ratio.value) : exact_token_budget(tokens, params.ratio.text);
    b.min_tokens = b.max_tokens = b.fallback_tokens;
    return b;
  }
  // n_chunks_kept = max(1, int(n_chunks * (1 - ratio))): the token rule applied to the chunk count.
  b.chunks_kept = kvpress ? kvpress_token_budget(b.chunks_total, params.ratio.value)
                          : exact_token_budget(b.chunks_total, params.ratio.text);
  if (remaining == 0 || b.chunks_kept == b.chunks_total) {
    b.min_tokens = b.max_tokens = std::min(b.chunks_kept * c, tokens);
  } else {
    b.max_tokens = b.chunks_kept * c;                   // only complete chunks
    b.min_tokens = (b.chunks_kept - 1) * c + remaining;  // the partial chunk is among the kept ones
  }
  return b;
}

Index declared_budget(Index tokens, const SelectorParams& params) {
  if (params.method == Method::EgChunkKV) return detail::eg_token_budget(tokens, params);
  ChunkKvBudget b = chunkkv_budget(tokens, params);
  return b.fallback ? b.fallback_tokens : b.chunks_kept;
}

std::vector<BudgetDivergence> budget_divergences(Index min_tokens, Index max_tokens,
                                                 const std::vector<std::string>& rho_texts) {
  std::vector<BudgetDivergence> out;
  for (const std::string& text : rho_texts) {
    (void)detail::parse_rho(text);  // reject bad text before using strtod's lenient parse
    double value = std::strtod(text.c_str(), nullptr);
    for (Index t = std::max<Index>(min_tokens, 1); t <= max_tokens; ++t) {
      Index exact = exact_token_budget(t, text), kvpress = kvpress_token_budget(t, value);
      if (exact != kvpress) out.push_back({t, text, exact, kvpress});
    }
  }
  return out;
}

}  // namespace kvaudit::oracle
