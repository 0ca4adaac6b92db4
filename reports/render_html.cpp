// report.html: one self-contained page (inline CSS, inline SVG, no scripts, no external references).
#include <sstream>

#include "reports/render.h"

namespace kvaudit::reports {
namespace {

std::string esc(const std::string& s) { return html_escape(s); }

void table(std::ostringstream& h, const nlohmann::json& columns, const nlohmann::json& rows) {
  h << "<table><thead><tr>";
  for (const auto& c : columns) h << "<th>" << esc(cell_text(c)) << "</th>";
  h << "</tr></thead><tbody>";
  for (const auto& r : rows) {
    h << "<tr>";
    for (const auto& c : r) {
      std::string t = cell_text(c);
      std::string cls = (t == "refuted" || t == "violates" || t == "failed") ? " class=\"bad\""
                        : (t == "confirmed" || t == "by-construction" || t == "conforms" || t == "ran") ? " class=\"good\"" : "";
      h << "<td" << cls << ">" << esc(t) << "</td>";
    }
    h << "</tr>";
  }
  h << "</tbody></table>";
}

// A table, inside a collapsed <details> when it is long.
void titled_table(std::ostringstream& h, const nlohmann::json& t) {
  const std::size_t n = t["rows"].size();
  if (n > kCollapsedRows) {
    h << "<details><summary><b>" << esc(t["title"].get<std::string>()) << "</b> (" << n << " rows)</summary>";
    table(h, t["columns"], t["rows"]);
    h << "</details>";
  } else {
    h << "<h3>" << esc(t["title"].get<std::string>()) << "</h3>";
    table(h, t["columns"], t["rows"]);
  }
}

const char* kStyle =
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222;line-height:1.4}"
    "table{border-collapse:collapse;margin:.5em 0 1.2em;font-size:13px}"
    "td,th{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top;overflow-wrap:anywhere;min-width:4.5em;max-width:420px}"
    "th{background:#f0f0f0}.bad{color:#a00;font-weight:bold}.good{color:#060}"
    "code,pre{background:#f6f6f6;font-size:12px}pre{padding:6px;overflow-x:auto;white-space:pre-wrap}"
    "section{border-top:2px solid #ddd;margin-top:1.5em}.status{font-weight:bold}"
    "details{margin:.4em 0}summary{cursor:pointer}#overview{background:#fafafa;border:1px solid #ddd;padding:0 1em}";

}  // namespace

std::string render_html(const nlohmann::json& r) {
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>kvaudit audit report</title><style>"
    << kStyle << "</style></head><body>\n";
  h << "<h1>kvaudit audit report</h1><p>Overall verdict: <span class=\"status\">" << esc(r["verdict"].get<std::string>())
    << "</span>. Schema <code>" << esc(r["schema"].get<std::string>()) << "</code>; generated "
    << esc(r["volatile"].value("timestamp", "?")) << " (volatile field).</p>\n";
  // One screen first: what was audited, verdict counts per model and stage, the claims scoreboard.
  h << "<div id=\"overview\"><h2>Overview</h2><p>Models and prompts: ";
  std::string last_model;
  for (const auto& p : r["inputs"].value("prompts", nlohmann::json::array())) {
    const std::string m = p.value("model", "");
    h << (m != last_model ? (last_model.empty() ? "" : "; ") + std::string("<b>") + esc(m) + "</b> " : ", ") << esc(p.value("name", ""))
      << " (T=" << p.value("tokens", 0) << ")";
    last_model = m;
  }
  h << ".</p><h3>Findings per model and stage</h3>";
  const nlohmann::json counts = verdict_counts_table(r);
  table(h, counts["columns"], counts["rows"]);
  h << "<h3>Claims scoreboard</h3>";
  const nlohmann::json board = claims_scoreboard(r);
  table(h, board["columns"], board["rows"]);
  h << "</div>\n<details><summary>Inputs (JSON)</summary><pre>" << esc(r["inputs"].dump(1)) << "</pre></details>\n";
  h << "<h2>Contents</h2><ul><li><a href=\"#claims\">Claims, measured</a></li>";
  for (const auto& s : r["sections"])
    h << "<li><a href=\"#" << esc(s["section"].get<std::string>()) << "\">" << esc(s["title"].get<std::string>()) << "</a> — "
      << esc(s["status"].get<std::string>()) << "</li>";
  h << "</ul>\n<h2 id=\"claims\">Claims, measured</h2>";
  const nlohmann::json claims = claims_table(r);
  titled_table(h, {{"title", "Every claim with its measured value, per model"}, {"columns", claims["columns"]}, {"rows", claims["rows"]}});

  for (const auto& s : r["sections"]) {
    h << "<section id=\"" << esc(s["section"].get<std::string>()) << "\"><h2>" << esc(s["title"].get<std::string>())
      << "</h2><p>Status: <span class=\"status\">" << esc(s["status"].get<std::string>()) << "</span>";
    if (s.contains("status_reason")) h << " — " << esc(s["status_reason"].get<std::string>());
    h << "</p>";
    if (s.contains("summary") && !s["summary"].empty()) {
      const nlohmann::json summary = summary_table(s);
      titled_table(h, {{"title", "Summary figures"}, {"columns", summary["columns"]}, {"rows", summary["rows"]}});
    }
    for (const auto& c : s.value("charts", nlohmann::json::array())) h << "<figure>" << render_svg_chart(c) << "</figure>";
    for (const auto& t : s.value("tables", nlohmann::json::array())) titled_table(h, t);
    const auto findings = s.value("findings", nlohmann::json::array());
    if (!findings.empty()) {
      h << "<details" << (findings.size() > kCollapsedRows ? "" : " open") << "><summary><b>Findings</b> (" << findings.size()
        << ")</summary><ul>";
      for (const auto& f : findings) {
        std::string v = f["verdict"].get<std::string>();
        h << "<li><span class=\"" << (v == "violates" ? "bad" : v == "conforms" ? "good" : "") << "\">" << esc(v) << "</span> <b>"
          << esc(f["id"].get<std::string>()) << "</b>";
        if (f.contains("rule") && !f["rule"].get<std::string>().empty()) h << " [" << esc(f["rule"].get<std::string>()) << "]";
        h << ": " << esc(f["message"].get<std::string>());
        if (f.contains("reproduce")) h << "<pre>" << esc(f["reproduce"].get<std::string>()) << "</pre>";
        if (f.contains("counterexample") && !f["counterexample"].empty()) {
          const nlohmann::json ce = counterexample_table(f["counterexample"]);
          h << "<details><summary>counterexample</summary>";
          table(h, ce["columns"], ce["rows"]);
          h << "</details>";
        }
        h << "</li>";
      }
      h << "</ul></details>";
    }
    h << "</section>\n";
  }
  h << "</body></html>\n";
  return h.str();
}

}  // namespace kvaudit::reports
