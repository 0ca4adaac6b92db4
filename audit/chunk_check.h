// The one judge of a claimed ChunkKV / EG-ChunkKV selection: `kvaudit check`, kvaudit.check and `kvaudit conform`
// all call it. The oracle's admissibility (oracle/chunk_selection.h) decides; a violation that a known wrong walk
// explains is named after it (docs/conform.md: float-budget, exact-budget, shared-selection, per-head-selection,
// no-partial-chunk, heads-max, heads-first, median-mean, budget-off-by-one).
#pragma once

#include <optional>

#include "core/types.h"
#include "core/verdict.h"
#include "oracle/chunk_selection.h"

namespace kvaudit::audit {

// A shared list and H identical per-head lists describe the same cache: the claim in the form the oracle
// expects (per-head lists exactly where kvpress keeps per-head sets), lists that differ never merged.
Selection normalize_chunk_claim(Selection claim, const HeadScores& scores, const SelectorParams& params);

struct ChunkClaimOptions {
  // A claim equal to the oracle's canonical selection conforms (sound: the canonical selection is a spec output).
  // First: test that before the admissibility procedure (default: for the kvpress flavour, whose canonical selection
  // costs microseconds). Otherwise it is tested only where the procedure is inconclusive (a float32 evaluation that
  // may overflow), so the verdict is the same either way.
  std::optional<bool> canonical_first;
  // Records whether the admissibility decision was made in double or fell back to 50 digits (the what-if checks
  // naming a mistake are not counted; nothing when the claim was the canonical selection).
  oracle::ArithmeticCounts* counts = nullptr;
  // Receives the canonical selection when it was computed.
  std::optional<Selection>* canonical = nullptr;
  // Set to whether the claim (in the oracle's form) was found equal to the canonical selection; false when that was
  // not computed.
  bool* equals_canonical = nullptr;
};

// Normalizes the claim's form, decides admissibility, names the mistake. Throws std::invalid_argument for
// parameters the oracle rejects.
Verdict check_chunk_claim(const HeadScores& scores, const SelectorParams& params, const Selection& claim,
                          const ChunkClaimOptions& options = {});

}  // namespace kvaudit::audit
