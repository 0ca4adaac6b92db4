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
                        : (t == "confirmed" || t == "conforms" || t == "ran") ? " class=\"good\"" : "";
      h << "<td" << cls << ">" << esc(t) << "</td>";
    }
    h << "</tr>";
  }
  h << "</tbody></table>";
}

const char* kStyle =
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222;line-height:1.4}"
    "table{border-collapse:collapse;margin:.5em 0 1.2em;font-size:13px}"
    "td,th{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top;overflow-wrap:anywhere;min-width:4.5em;max-width:420px}"
    "th{background:#f0f0f0}.bad{color:#a00;font-weight:bold}.good{color:#060}"
    "code,pre{background:#f6f6f6;font-size:12px}pre{padding:6px;overflow-x:auto;white-space:pre-wrap}"
    "section{border-top:2px solid #ddd;margin-top:1.5em}.status{font-weight:bold}";

}  // namespace

std::string render_html(const nlohmann::json& r) {
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>kvaudit audit report</title><style>"
    << kStyle << "</style></head><body>\n";
  h << "<h1>kvaudit audit report</h1><p>Overall verdict: <span class=\"status\">" << esc(r["verdict"].get<std::string>())
    << "</span>. Schema <code>" << esc(r["schema"].get<std::string>()) << "</code>; generated "
    << esc(r["volatile"].value("timestamp", "?")) << " (volatile field).</p>\n";
  h << "<p>Inputs: <code>" << esc(r["inputs"].dump()) << "</code></p>\n";
  h << "<h2>Contents</h2><ul><li><a href=\"#claims\">Claims</a></li>";
  for (const auto& s : r["sections"])
    h << "<li><a href=\"#" << esc(s["section"].get<std::string>()) << "\">" << esc(s["title"].get<std::string>()) << "</a> — "
      << esc(s["status"].get<std::string>()) << "</li>";
  h << "</ul>\n<h2 id=\"claims\">Claims</h2>";
  const nlohmann::json claims = claims_table(r);
  table(h, claims["columns"], claims["rows"]);

  for (const auto& s : r["sections"]) {
    h << "<section id=\"" << esc(s["section"].get<std::string>()) << "\"><h2>" << esc(s["title"].get<std::string>())
      << "</h2><p>Status: <span class=\"status\">" << esc(s["status"].get<std::string>()) << "</span>";
    if (s.contains("status_reason")) h << " — " << esc(s["status_reason"].get<std::string>());
    h << "</p>";
    if (s.contains("summary") && !s["summary"].empty()) {
      const nlohmann::json summary = summary_table(s);
      table(h, summary["columns"], summary["rows"]);
    }
    for (const auto& c : s.value("charts", nlohmann::json::array())) h << "<figure>" << render_svg_chart(c) << "</figure>";
    for (const auto& t : s.value("tables", nlohmann::json::array())) {
      h << "<h3>" << esc(t["title"].get<std::string>()) << "</h3>";
      table(h, t["columns"], t["rows"]);
    }
    const auto findings = s.value("findings", nlohmann::json::array());
    if (!findings.empty()) {
      h << "<h3>Findings</h3><ul>";
      for (const auto& f : findings) {
        std::string v = f["verdict"].get<std::string>();
        h << "<li><span class=\"" << (v == "violates" ? "bad" : v == "conforms" ? "good" : "") << "\">" << esc(v) << "</span> <b>"
          << esc(f["id"].get<std::string>()) << "</b>";
        if (f.contains("rule") && !f["rule"].get<std::string>().empty()) h << " [" << esc(f["rule"].get<std::string>()) << "]";
        h << ": " << esc(f["message"].get<std::string>());
        if (f.contains("reproduce")) h << "<pre>" << esc(f["reproduce"].get<std::string>()) << "</pre>";
        if (f.contains("counterexample")) h << "<details><summary>counterexample</summary><pre>" << esc(f["counterexample"].dump()) << "</pre></details>";
        h << "</li>";
      }
      h << "</ul>";
    }
    h << "</section>\n";
  }
  h << "</body></html>\n";
  return h.str();
}

}  // namespace kvaudit::reports
