// The needle-study stage: generation-level evidence from the recorded needle-retrieval runs of each model
// (core/io/needle_study.h), judged against the seeds' accuracy claims as small-scale stand-in evidence.
#pragma once

#include "audit/audit_context.h"

namespace kvaudit::audit {

// Per study under ctx.data_dir: retrieval rates with Wilson 95 % intervals per condition and mode; paired
// comparisons on the same haystacks (EG-ChunkKV against ChunkKV per compression ratio, the rescue-size control,
// entropy against mean page pooling) with Newcombe's paired interval and the exact McNemar test; the value tokens
// each chunk press kept, by value length (the mechanism); retrieval against cr charts with interval bars; and
// stand-in claim rows for the RULER-4096 and needle-recall claims. "missing-inputs" when no study is shipped.
Section needle_study_section(const AuditContext& ctx);

}  // namespace kvaudit::audit
