// kvaudit conform's own case generator, mixed with the property suites' generators: it weights the corners
// a conformance run must reach within a few hundred cases (float vs exact budgets, partial chunks, even
// chunk counts, negative and tied scores, chunks that do not fit the remaining budget).
#pragma once

#include <rapidcheck.h>

#include "audit/conform/conform_case.h"

namespace kvaudit::conform {

// Cases valid for `method` / `flavour` (kvpress EG-ChunkKV: chunk_length > rescue_size >= 1; a fixed
// entropy threshold only in the exact flavour). Shrinks toward one head, short contexts, zero scores,
// small chunks and the first ratio of the pool.
rc::Gen<ConformCase> corner_cases(Method method, Flavour flavour);

}  // namespace kvaudit::conform
