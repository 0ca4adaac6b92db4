// The audit report document (schema "kvaudit-report/1", documented in docs/report-schema.md).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvaudit::reports {

inline constexpr const char* kReportSchema = "kvaudit-report/1";

// Throws std::invalid_argument naming the first field that does not match the schema.
void validate_report(const nlohmann::json& report);

// Report-level claims table: every section's "claims" rows, tagged with their section.
nlohmann::json collect_claims(const nlohmann::json& sections);

}  // namespace kvaudit::reports
