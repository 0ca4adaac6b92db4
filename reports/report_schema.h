// The audit report document (schema "kvaudit-report/2", documented in docs/audit.md).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "audit/verdict_text.h"

namespace kvaudit::reports {

using audit::kReportSchema;

// Throws std::invalid_argument naming the first field that does not match the schema.
void validate_report(const nlohmann::json& report);

}  // namespace kvaudit::reports
