// Stage "retained-entropy": the seed's coherence claim for EG-ChunkKV vs ChunkKV, measured on the selections
// the real kvpress presses made on the shipped dumps; plus the seeds' benchmark claims this toolkit cannot rerun.
#pragma once

#include "audit/audit_context.h"

namespace kvaudit::audit {

// Normalized Shannon entropy of `scores` (kvpress's formula: rebase negatives, eps = 1e-8, divide by log n,
// clamp to [0, 1]); a single score has entropy 0.
double normalized_entropy(const std::vector<double>& scores);

Section retained_entropy_section(const AuditContext& ctx);

}  // namespace kvaudit::audit
