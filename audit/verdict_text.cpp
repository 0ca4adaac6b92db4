// Verdict text of the report document (see verdict_text.h).
#include "audit/verdict_text.h"

#include <stdexcept>

namespace kvaudit::audit {

const char* to_string(ClaimVerdict v) {
  switch (v) {
    case ClaimVerdict::Confirmed: return "confirmed";
    case ClaimVerdict::Refuted: return "refuted";
    case ClaimVerdict::Consistent: return "consistent";
    case ClaimVerdict::NotReproduced: return "not-reproduced";
    case ClaimVerdict::ByConstruction: return "by-construction";
    case ClaimVerdict::NotTestable: return "not-testable";
    case ClaimVerdict::Inconclusive: return "inconclusive";
  }
  return "?";
}

VerdictKind parse_verdict_kind(const std::string& text) {
  for (VerdictKind k : {VerdictKind::Conforms, VerdictKind::Violates, VerdictKind::Inconclusive, VerdictKind::NotRun, VerdictKind::Unsupported})
    if (text == to_string(k)) return k;
  throw std::invalid_argument("not a verdict: '" + text + "'");
}

ClaimVerdict parse_claim_verdict(const std::string& text) {
  for (ClaimVerdict v : {ClaimVerdict::Confirmed, ClaimVerdict::Refuted, ClaimVerdict::Consistent, ClaimVerdict::NotReproduced,
                         ClaimVerdict::ByConstruction, ClaimVerdict::NotTestable, ClaimVerdict::Inconclusive})
    if (text == to_string(v)) return v;
  throw std::invalid_argument("not a claim verdict: '" + text + "'");
}

ReportTotals report_totals(const nlohmann::json& sections, const nlohmann::json& claims) {
  ReportTotals t;
  for (const auto& s : sections) {
    if (s.value("status", "failed") != "ran") ++t.open_items;
    for (const auto& f : s.value("findings", nlohmann::json::array())) {
      const VerdictKind k = parse_verdict_kind(f.at("verdict").get<std::string>());
      if (k == VerdictKind::Violates) ++t.violations;
      else if (k != VerdictKind::Conforms) ++t.open_items;
    }
  }
  for (const auto& c : claims) {
    const ClaimVerdict v = parse_claim_verdict(c.at("verdict").get<std::string>());
    if (v == ClaimVerdict::Refuted) ++t.refuted_claims;
    if (v == ClaimVerdict::Inconclusive) ++t.open_items;
  }
  return t;
}

nlohmann::json collect_claims(const nlohmann::json& sections) {
  nlohmann::json claims = nlohmann::json::array();
  for (const auto& s : sections)
    for (auto c : s.value("claims", nlohmann::json::array())) {
      c["section"] = s["section"];
      claims.push_back(c);
    }
  return claims;
}

}  // namespace kvaudit::audit
