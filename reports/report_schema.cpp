// Structural validation of a report: what a consumer of report.json may rely on.
#include "reports/report_schema.h"

#include <set>
#include <stdexcept>

#include "audit/claims.h"

namespace kvaudit::reports {
namespace {

void require(bool ok, const std::string& where, const std::string& what) {
  if (!ok) throw std::invalid_argument("report: " + where + ": " + what);
}

void validate_table(const nlohmann::json& t, const std::string& where) {
  require(t.is_object() && t.contains("title") && t["title"].is_string(), where, "table needs a string title");
  require(t.contains("columns") && t["columns"].is_array(), where, "table needs columns");
  require(t.contains("rows") && t["rows"].is_array(), where, "table needs rows");
  for (const auto& row : t["rows"])
    require(row.is_array() && row.size() == t["columns"].size(), where, "row width differs from columns");
}

void validate_chart(const nlohmann::json& c, const std::string& where) {
  static const std::set<std::string> kinds = {"histogram", "line", "bar"};
  require(c.is_object() && c.contains("title") && c.contains("kind") && c["kind"].is_string() &&
              kinds.count(c["kind"].get<std::string>()),
          where, "chart needs a title and kind histogram|line|bar");
  require(c.contains("series") && c["series"].is_array(), where, "chart needs series");
  for (const auto& s : c["series"]) {
    require(s.contains("name") && s.contains("points") && s["points"].is_array(), where, "series needs name and points");
    for (const auto& p : s["points"])
      require(p.is_array() && (p.size() == 2 || (p.size() == 4 && p[2].is_number() && p[3].is_number() && p[2] <= p[1] && p[1] <= p[3])) &&
                  p[0].is_number() && p[1].is_number(),
              where, "point must be [x, y] or [x, y, low, high] numbers with low <= y <= high");
  }
}

// A claim row carries its kind, protocol, evidence and n, an interval where its kind needs one, a proof where it
// is by construction, and the verdict the one judge gives that evidence: a verdict written by hand (or by an
// older writer) that the evidence cannot carry is rejected here.
void validate_claim(const nlohmann::json& c, const std::string& where) {
  require(c.is_object() && c.contains("claim") && c.contains("source") && c.contains("measured") && c.contains("verdict") &&
              c["verdict"].is_string(),
          where, "claim needs claim, source, measured, verdict");
  audit::ClaimVerdict verdict{};
  audit::ClaimRow row;
  try {
    verdict = audit::parse_claim_verdict(c["verdict"].get<std::string>());
    row = audit::claim_row_from_json(c);
  } catch (const std::exception& e) {
    throw std::invalid_argument("report: " + where + ": claim '" + c.value("claim", "") +
                                "' needs kind, protocol, evidence, observations and a known verdict (" + e.what() + ")");
  }
  const bool needs_interval = (row.kind == audit::ClaimKind::Comparative || row.kind == audit::ClaimKind::Statistical) &&
                              verdict != audit::ClaimVerdict::NotTestable;
  require(!needs_interval || c.contains("interval"), where, "a " + std::string(audit::to_string(row.kind)) + " claim needs an interval: " + row.claim);
  require(verdict != audit::ClaimVerdict::ByConstruction || !row.proof.empty(), where, "a by-construction claim names its proof: " + row.claim);
  require(row.protocol != audit::Protocol::StandIn || !row.stand_in.empty(), where, "a stand-in says what stands in for what: " + row.claim);
  require(verdict == audit::judge_claim(row), where,
          "claim '" + row.claim + "' says " + audit::to_string(verdict) + ", its evidence carries " + audit::to_string(audit::judge_claim(row)));
}

}  // namespace

void validate_report(const nlohmann::json& r) {
  require(r.is_object(), "$", "not an object");
  require(r.value("schema", "") == kReportSchema, "schema", std::string("must be ") + kReportSchema);
  require(r.contains("volatile") && r["volatile"].is_object(), "volatile", "missing (holds the timestamp)");
  require(r.contains("inputs") && r["inputs"].is_object(), "inputs", "missing");
  require(r.contains("verdict") && r["verdict"].is_string(), "verdict", "missing");
  require(r.contains("sections") && r["sections"].is_array(), "sections", "missing");
  static const std::set<std::string> statuses = {"ran", "missing-inputs", "failed", "not-run"};
  auto is_verdict = [](const nlohmann::json& v) {
    try {
      return v.is_string() && (audit::parse_verdict_kind(v.get<std::string>()), true);
    } catch (const std::invalid_argument&) {
      return false;
    }
  };
  for (const auto& s : r["sections"]) {
    std::string id = s.value("section", "");
    std::string where = "sections[" + id + "]";
    require(!id.empty() && s.contains("title") && s["title"].is_string(), where, "needs section id and title");
    require(s.contains("status") && s["status"].is_string() && statuses.count(s["status"].get<std::string>()), where,
            "status must be ran|missing-inputs|failed|not-run");
    if (s["status"] != "ran") require(s.contains("status_reason") && s["status_reason"].is_string(), where, "a section that did not run says why");
    for (const auto& t : s.value("tables", nlohmann::json::array())) validate_table(t, where + ".tables");
    for (const auto& c : s.value("charts", nlohmann::json::array())) validate_chart(c, where + ".charts");
    for (const auto& f : s.value("findings", nlohmann::json::array())) {
      require(f.contains("id") && f.contains("verdict") && is_verdict(f["verdict"]) && f.contains("message"),
              where + ".findings", "finding needs id, verdict, message");
      if (audit::parse_verdict_kind(f["verdict"]) == VerdictKind::Violates) require(f.contains("reproduce") && f["reproduce"].is_string(), where + ".findings", "a violation needs a reproduce command");
    }
    for (const auto& c : s.value("claims", nlohmann::json::array())) validate_claim(c, where + ".claims");
  }
  require(r.contains("claims") && r["claims"].is_array(), "claims", "missing");
  for (const auto& c : r["claims"]) validate_claim(c, "claims");
}

}  // namespace kvaudit::reports
