// Structural validation of a report: what a consumer of report.json may rely on.
#include "reports/report_schema.h"

#include <set>
#include <stdexcept>

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
      require(p.is_array() && p.size() == 2 && p[0].is_number() && p[1].is_number(), where, "point must be [x, y] numbers");
  }
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
  auto is_claim_verdict = [](const nlohmann::json& v) {
    try {
      return v.is_string() && (audit::parse_claim_verdict(v.get<std::string>()), true);
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
    for (const auto& c : s.value("claims", nlohmann::json::array()))
      require(c.contains("claim") && c.contains("source") && c.contains("measured") && c.contains("verdict") &&
                  is_claim_verdict(c["verdict"]),
              where + ".claims", "claim needs claim, source, measured, verdict confirmed|refuted|not-testable|inconclusive");
  }
  require(r.contains("claims") && r["claims"].is_array(), "claims", "missing");
}

}  // namespace kvaudit::reports
