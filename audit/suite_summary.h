// Stage "suites": runs the built property suites and proof checks and summarizes their verdicts.
#pragma once

#include "audit/audit_context.h"

namespace kvaudit::audit {

// Looks for test executables next to the running kvaudit binary (build/tests, build/proofs, core/gpu).
Section suite_summary_section(const AuditContext& ctx);

}  // namespace kvaudit::audit
