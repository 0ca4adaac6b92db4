// Budget-match audit: do methods "compared at the same budget" keep the same number of positions?
#pragma once

#include "audit/audit_context.h"
#include "core/types.h"

namespace kvaudit::audit {

// The token counts ChunkKV (kvpress 0.5.5) can keep for a context of T tokens at ratio rho and chunk
// length c: n_kept = max(1, int(n_chunks (1 - rho))) whole chunks, so n_kept*c tokens, or
// (n_kept-1)*c + T%c when the trailing partial chunk is among them. With no complete chunk (T < c) it
// falls back to a per-head top-k of max(1, int(T (1 - rho))) tokens.
struct ChunkKVTokenCounts {
  Index kept_chunks = 0;
  Index without_partial = 0;   // partial chunk not kept (or there is none)
  Index with_partial = -1;     // partial chunk kept; -1 when impossible
  bool per_head_fallback = false;
};
// A view of oracle::chunkkv_budget (kvpress flavour) in these terms.
ChunkKVTokenCounts chunkkv_token_counts(Index tokens, const CompressionRatio& rho, Index chunk_length);

// Stage "budget-match": the (T, rho, c) grid of the seeds' settings plus the recorded selections.
Section budget_match_section(const AuditContext& ctx);

}  // namespace kvaudit::audit
