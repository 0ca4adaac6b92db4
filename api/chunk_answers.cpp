// ChunkKV / EG-ChunkKV answers (see chunk_answers.h).
#include "api/chunk_answers.h"

#include <set>

#include "audit/budget_match.h"
#include "audit/chunk_check.h"
#include "core/compression_ratio.h"
#include "core/error.h"
#include "core/select/chunk_select.h"
#include "oracle/chunk_selection.h"

namespace kvaudit::api {

namespace {
const char* flavour_name(Flavour f) { return f == Flavour::Kvpress ? "kvpress" : "exact"; }
}  // namespace

SelectorParams selector_params(const SelectOptions& a) {
  const std::optional<Method> method = method_from_name(a.method);
  if (!method) throw InputError("--method", "method", "expected chunkkv or eg-chunkkv, got '" + a.method + "'");
  if (a.flavour != "kvpress" && a.flavour != "exact")
    throw InputError("--flavour", "flavour", "expected kvpress or exact, got '" + a.flavour + "'");
  if (a.median != "lower" && a.median != "mean") throw InputError("--median", "median", "expected lower or mean, got '" + a.median + "'");
  SelectorParams p;
  p.method = *method;
  p.flavour = a.flavour == "exact" ? Flavour::Exact : Flavour::Kvpress;
  p.ratio = parse_compression_ratio(a.ratio, "--compression-ratio");
  p.chunk_length = a.chunk_length ? *a.chunk_length : (p.method == Method::ChunkKV ? 20 : 10);
  p.rescue_size = a.rescue_size;
  p.entropy_threshold = a.entropy_threshold;
  p.median = a.median == "mean" ? MedianRule::MeanOfMiddles : MedianRule::Lower;
  select::validate_params(p);
  return p;
}

nlohmann::json describe_params(const SelectorParams& p, const ScoreFile& f) {
  nlohmann::json j = {{"method", method_name(p.method)},
                      {"flavour", flavour_name(p.flavour)},
                      {"compression_ratio", p.ratio.text},
                      {"tokens", f.tokens},
                      {"heads", f.heads},
                      {"chunk_length", p.chunk_length},
                      {"budget_rule", select::budget_rule(p)},
                      {"precision", f.precision.describe()}};
  if (p.method == Method::EgChunkKV) {
    j["rescue_size"] = p.rescue_size;
    j["median"] = p.median == MedianRule::Lower ? "lower" : "mean";
    j["entropy_threshold"] = p.entropy_threshold ? nlohmann::json(*p.entropy_threshold) : nlohmann::json(nullptr);
  } else {
    const Index n_chunks = (f.tokens + p.chunk_length - 1) / p.chunk_length;
    j["n_chunks"] = n_chunks;
    if (p.ratio.value == 0.0) j["budget_chunks"] = n_chunks;
    else if (f.tokens >= p.chunk_length)
      j["budget_chunks"] = p.flavour == Flavour::Kvpress ? kvpress_float_budget(n_chunks, p.ratio.value) : exact_budget(n_chunks, p.ratio);
  }
  return j;
}

Index declared_token_budget(const SelectorParams& p, Index T) {
  if (p.ratio.value == 0.0) return T;
  const bool kvpress = p.flavour == Flavour::Kvpress;
  if (p.method == Method::ChunkKV && T >= p.chunk_length) return -1;
  return kvpress ? kvpress_float_budget(T, p.ratio.value) : exact_budget(T, p.ratio);
}

nlohmann::json select_answer(const SelectorParams& p, const ScoreFile& f, const Selection& sel) {
  nlohmann::json out = describe_params(p, f);
  const Index declared = declared_token_budget(p, f.tokens);
  out["per_head"] = sel.per_head();
  if (sel.per_head()) {
    // kvpress ChunkKV with T < C: the inner scorer's top-k, a different set per head. "kept" is their union
    // (what any head keeps); "kept_per_head" is the selection itself; "budget" is per head.
    std::set<Index> all;
    for (const Positions& h : sel.kept) all.insert(h.begin(), h.end());
    out["kept"] = Positions(all.begin(), all.end());
    out["kept_per_head"] = sel.kept;
  } else {
    out["kept"] = sel.kept[0];
  }
  out["budget"] = declared >= 0 ? declared : static_cast<Index>(sel.kept[0].size());
  return out;
}

Answer check_answer(const SelectorParams& p, const ScoreFile& f, const Selection& claimed, std::optional<bool> canonical_first,
                    std::optional<Selection>* canonical) {
  oracle::ArithmeticCounts counts;
  const Verdict v = audit::check_chunk_claim(f.view(), p, claimed, {canonical_first, &counts, canonical});
  Answer a;
  a.verdict = v.kind;
  a.body = describe_params(p, f);
  a.body["admissible"] = v.passed();
  a.body["verdict"] = to_string(v.kind);
  a.body["rule"] = v.rule;
  a.body["message"] = v.message;
  // How the admissibility rules were decided (proofs/15_filtered_admissibility.md): in double enclosures, or
  // handed to 50 digits near a tie. Both zero when the claim was the canonical selection or stopped earlier.
  a.body["arithmetic"] = {{"decided_in_double", counts.decided_in_double}, {"fell_back_to_50_digits", counts.fell_back_to_50_digits}};
  const Index declared = declared_token_budget(p, f.tokens);
  if (declared >= 0) a.body["budget"] = declared;
  return a;
}

nlohmann::json budget_answer(long long tokens, const std::string& ratio, long long chunk_length) {
  if (tokens < 1 || tokens > (1LL << 40)) throw InputError("--tokens", "tokens", "must be in [1, 2^40]");
  if (chunk_length < 1) throw InputError("--chunk-length", "chunk_length", "must be >= 1");
  const CompressionRatio rho = parse_compression_ratio(ratio);
  const audit::ChunkKVTokenCounts ck = audit::chunkkv_token_counts(tokens, rho, chunk_length);
  const Index eg = oracle::kvpress_token_budget(tokens, rho.value);
  nlohmann::json chunkkv = {{"kept_chunks", ck.kept_chunks}, {"kept_tokens_without_partial_chunk", ck.without_partial},
                            {"per_head_fallback", ck.per_head_fallback}};
  if (ck.with_partial >= 0) chunkkv["kept_tokens_with_partial_chunk"] = ck.with_partial;
  const bool matched = ck.without_partial == eg || ck.with_partial == eg;
  return {{"tokens", tokens},
          {"compression_ratio", rho.text},
          {"chunk_length", chunk_length},
          {"exact_budget", oracle::exact_token_budget(tokens, rho.text)},
          {"kvpress_float_budget", eg},
          {"eg_chunkkv_kept_tokens", eg},
          {"chunkkv", chunkkv},
          {"budget_matched", matched}};
}

}  // namespace kvaudit::api
