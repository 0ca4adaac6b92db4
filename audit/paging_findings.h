// Page-EntroKV audit stage (docs/specification.md section 5) and the checkers it shares with the tests and the CLI:
// optimized selector vs oracle, exact page accounting, union overhead, needle retention, sink masquerade.
#pragma once

#include "audit/audit_context.h"
#include "audit/page_check.h"
#include "core/paging/page_selector.h"
#include "core/verdict.h"

namespace kvaudit::audit {

// kvaudit's masquerade count (docs/page-entrokv.md section 6), secondary to the paper's metric
// (oracle/sink_masquerade.h), which the claim row uses: in a (layer, group), the head the entropy weighting ranks first (largest
// collision probability, lowest index on ties) is a *sink head*, one with at least kSinkHeadMass of its
// raw mass on the first n_sink positions. Counted with weights computed on the raw p_h ("without sink
// isolation") and on p~_h ("with").
inline constexpr double kSinkHeadMass = 0.5;
struct MasqueradeCount {
  Index groups = 0;
  Index sink_heads = 0;            // heads with sink mass >= kSinkHeadMass
  Index top_is_sink_raw = 0;       // masquerades without isolation
  Index top_is_sink_isolated = 0;  // with isolation
  double sink_weight_raw = 0.0;    // total entropy weight given to sink heads, summed over groups
  double sink_weight_isolated = 0.0;
};
MasqueradeCount count_masquerades(const ScoreTensor& attn, Index group_size, Index n_sink);

// The stage: real dumps (attention.window_mean) from ctx.dumps; "missing-inputs" when there are none.
Section paging_section(const AuditContext& ctx);

}  // namespace kvaudit::audit
