// Reference ChunkKV and EG-ChunkKV (SPEC.md sections 1-3): canonical selections and the admissibility
// checker. Naive, one function per definition; includes nothing from core/ but core/types.h and verdict.h.
#pragma once

#include <string>

#include "core/types.h"
#include "core/verdict.h"

namespace kvaudit::oracle {

// ---- Budgets (SPEC section 1) ------------------------------------------------------------------------
// max(1, floor((1 - rho) T)) with rho read exactly from its decimal text (Boost cpp_rational).
Index exact_token_budget(Index tokens, const std::string& rho_text);
// max(1, int(T * (1 - rho))) in IEEE double, as Python evaluates it.
Index kvpress_token_budget(Index tokens, double rho);
// The budget a method keeps under `params` for a context of `tokens` positions, as the flavour defines it.
// For ChunkKV this is the number of kept *chunks*; see chunkkv_kept_tokens for tokens.
Index declared_budget(Index tokens, const SelectorParams& params);

// ---- Canonical selections (ties broken toward the lower index) ------------------------------------------
// Throws std::invalid_argument when kvpress would fail its assertions (kvpress flavour) or the
// parameters make no sense (chunk_length < 1, rescue_size < 1, non-finite scores).
Selection chunkkv_select(const HeadScores& scores, const SelectorParams& params);
Selection eg_chunkkv_select(const HeadScores& scores, const SelectorParams& params);
Selection select(const HeadScores& scores, const SelectorParams& params);  // dispatches on params.method

// ---- Admissibility --------------------------------------------------------------------------------------
// Conforms if some order of tied values (values equal within the rounding error of float32 evaluation
// count as tied) makes the spec produce `claimed`; Violates{rule, message} naming the first rule broken
// (shape, range, unique, order, budget, chunking, walk, rescue, top-up, ...); Inconclusive if the
// tie search exceeded its limit.
Verdict check_admissible(const HeadScores& scores, const SelectorParams& params, const Selection& claimed);

}  // namespace kvaudit::oracle
