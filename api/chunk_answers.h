// ChunkKV / EG-ChunkKV questions, front-end neutral: `kvaudit select | check | budget` and kvaudit.select,
// kvaudit.check, kvaudit.budget are translators around these functions.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "api/answer.h"
#include "api/input_checks.h"
#include "core/types.h"

namespace kvaudit::api {

// The selector's knobs as a front end receives them (text, before validation).
struct SelectOptions {
  std::string method;                     // chunkkv | eg-chunkkv
  std::string ratio;                      // rho as decimal text
  std::optional<long long> chunk_length;  // default by method: 10 (eg-chunkkv), 20 (chunkkv)
  long long rescue_size = 4;
  std::optional<double> entropy_threshold;
  std::string flavour = "kvpress";        // kvpress | exact
  std::string median = "lower";           // lower | mean
};

// Parses and validates every knob; InputError names the flag ("--compression-ratio", ...).
SelectorParams selector_params(const SelectOptions& options);

// The parameters as every answer echoes them, and the budget the flavour declares for T tokens.
nlohmann::json describe_params(const SelectorParams& p, const ScoreFile& f);
// Tokens per head (EG-ChunkKV, ChunkKV's fallback), or -1 for ChunkKV's chunk rule, whose token count depends on
// whether the partial chunk is kept.
Index declared_token_budget(const SelectorParams& p, Index tokens);

// `select`: what the optimized selector keeps.
nlohmann::json select_answer(const SelectorParams& p, const ScoreFile& f, const Selection& sel);

// `check`: is `claimed` admissible? The one chunk checker (audit/chunk_check.h), mistakes named; canonical_first and
// `canonical` as audit::ChunkClaimOptions has them (default: the canonical selection first for the kvpress flavour).
Answer check_answer(const SelectorParams& p, const ScoreFile& f, const Selection& claimed, std::optional<bool> canonical_first,
                    std::optional<Selection>* canonical = nullptr);

// `budget`: every budget rule for one (T, rho, c): exact, kvpress's float rule, ChunkKV's possible token counts.
nlohmann::json budget_answer(long long tokens, const std::string& ratio, long long chunk_length);

}  // namespace kvaudit::api
