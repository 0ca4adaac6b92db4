// report.md: sections in order, each with status, summary, tables, findings (with reproduce commands).
#include <sstream>

#include "reports/render.h"

namespace kvaudit::reports {
namespace {

std::string md_escape(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

void table(std::ostringstream& md, const nlohmann::json& columns, const nlohmann::json& rows) {
  md << "|";
  for (const auto& c : columns) md << " " << md_escape(cell_text(c)) << " |";
  md << "\n|";
  for (std::size_t i = 0; i < columns.size(); ++i) md << "---|";
  md << "\n";
  for (const auto& r : rows) {
    md << "|";
    for (const auto& c : r) md << " " << md_escape(cell_text(c)) << " |";
    md << "\n";
  }
  md << "\n";
}

}  // namespace

std::string render_markdown(const nlohmann::json& r) {
  std::ostringstream md;
  md << "# kvaudit audit report\n\n";
  md << "Overall verdict: **" << r["verdict"].get<std::string>() << "**. Schema `" << r["schema"].get<std::string>()
     << "`; generated " << r["volatile"].value("timestamp", "?") << " (volatile field).\n\n";
  md << "Inputs: `" << r["inputs"].dump() << "`\n\n";

  md << "## Overview\n\n**Findings per model and stage**\n\n";
  const nlohmann::json counts = verdict_counts_table(r);
  table(md, counts["columns"], counts["rows"]);
  md << "**Claims scoreboard**\n\n";
  const nlohmann::json board = claims_scoreboard(r);
  table(md, board["columns"], board["rows"]);

  md << "## Claims, measured\n\n";
  const nlohmann::json claims = claims_table(r);
  table(md, claims["columns"], claims["rows"]);

  for (const auto& s : r["sections"]) {
    md << "## " << s["title"].get<std::string>() << " (`" << s["section"].get<std::string>() << "`)\n\n";
    md << "Status: **" << s["status"].get<std::string>() << "**";
    if (s.contains("status_reason")) md << " — " << md_escape(s["status_reason"].get<std::string>());
    md << "\n\n";
    if (s.contains("summary") && !s["summary"].empty()) {
      const nlohmann::json summary = summary_table(s);
      table(md, summary["columns"], summary["rows"]);
    }
    for (const auto& t : s.value("tables", nlohmann::json::array())) {
      md << "**" << md_escape(t["title"].get<std::string>()) << "**\n\n";
      table(md, t["columns"], t["rows"]);
    }
    for (const auto& c : s.value("charts", nlohmann::json::array()))
      md << "_Chart: " << md_escape(c["title"].get<std::string>()) << " (see report.html)._\n\n";
    const auto findings = s.value("findings", nlohmann::json::array());
    if (!findings.empty()) {
      md << "**Findings**\n\n";
      for (const auto& f : findings) {
        md << "- `" << f["verdict"].get<std::string>() << "` **" << md_escape(f["id"].get<std::string>()) << "**";
        if (f.contains("rule") && !f["rule"].get<std::string>().empty()) md << " [" << f["rule"].get<std::string>() << "]";
        md << ": " << md_escape(f["message"].get<std::string>()) << "\n";
        if (f.contains("reproduce")) md << "  - reproduce: `" << f["reproduce"].get<std::string>() << "`\n";
        if (f.contains("counterexample")) md << "  - counterexample: `" << f["counterexample"].dump() << "`\n";
      }
      md << "\n";
    }
  }
  return md.str();
}

}  // namespace kvaudit::reports
