// Verdicts of findings and claims as the report document spells them: the one place their text is written and
// read back (the report's totals, shard merging and the writers go through these functions, never literals).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/verdict.h"

namespace kvaudit::audit {

// The report document's schema id (docs/audit.md).
inline constexpr const char* kReportSchema = "kvaudit-report/2";

// What a claim row concludes from its evidence (audit/claims.h judge_claim decides which, by the claim's kind).
// consistent: the evidence agrees with the claim but cannot settle it (a stand-in, a straddling interval, a
// sample); not-reproduced: a stand-in or a sample did not show it, which does not refute it; by-construction: true
// by the method's definition, with a named proof and a check that could have failed.
enum class ClaimVerdict { Confirmed, Refuted, Consistent, NotReproduced, ByConstruction, NotTestable, Inconclusive };

const char* to_string(ClaimVerdict v);

// Inverse of to_string(VerdictKind) / to_string(ClaimVerdict); std::invalid_argument on any other text.
VerdictKind parse_verdict_kind(const std::string& text);
ClaimVerdict parse_claim_verdict(const std::string& text);

// The report's totals, computed from kinds: a finding counts as a violation only when it violates and as open
// when it is anything but conforms or violates (inconclusive, not-run, unsupported); a claim is refuted, open
// (inconclusive) or neither; a section that did not run is open. Nothing but a pass leaves a report at
// "conforms".
struct ReportTotals {
  int violations = 0, refuted_claims = 0, open_items = 0;
  VerdictKind verdict() const {
    return violations || refuted_claims ? VerdictKind::Violates : open_items ? VerdictKind::Inconclusive : VerdictKind::Conforms;
  }
};
ReportTotals report_totals(const nlohmann::json& sections, const nlohmann::json& claims);

// Report-level claims table: every section's "claims" rows, tagged with their section.
nlohmann::json collect_claims(const nlohmann::json& sections);

}  // namespace kvaudit::audit
