// The one judge of a claimed ChunkKV / EG-ChunkKV selection: `kvaudit check`, kvaudit.check and `kvaudit conform`
// all call it. The oracle's admissibility (oracle/chunk_selection.h) decides; a violation that a known wrong walk
// explains is named after it (docs/conform.md: float-budget, exact-budget, shared-selection, per-head-selection,
// no-partial-chunk, heads-max, heads-first, median-mean, budget-off-by-one).
#pragma once

#include "core/types.h"
#include "core/verdict.h"
#include "oracle/chunk_selection.h"

namespace kvaudit::audit {

// A shared list and H identical per-head lists describe the same cache: the claim in the form the oracle
// expects (per-head lists exactly where kvpress keeps per-head sets), lists that differ never merged.
Selection normalize_chunk_claim(Selection claim, const HeadScores& scores, const SelectorParams& params);

// Normalizes the claim's form, decides admissibility, names the mistake. Throws std::invalid_argument for
// parameters the oracle rejects. `counts`, when set, records whether the admissibility decision was made in
// double or fell back to 50 digits (oracle::ArithmeticCounts; the what-if checks naming a mistake are not counted).
Verdict check_chunk_claim(const HeadScores& scores, const SelectorParams& params, const Selection& claim,
                          oracle::ArithmeticCounts* counts = nullptr);

}  // namespace kvaudit::audit
