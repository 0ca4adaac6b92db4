// Renderers of a validated report document: Markdown for review threads, self-contained HTML for reading.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace kvaudit::reports {

std::string render_json(const nlohmann::json& report);      // pretty, keys sorted: byte-stable
std::string render_markdown(const nlohmann::json& report);
std::string render_html(const nlohmann::json& report);      // inline CSS and SVG only: opens offline

// One chart ({"title","kind","x_label","y_label","series"}) as an inline <svg> element.
std::string render_svg_chart(const nlohmann::json& chart);

// A JSON scalar as report text: strings bare, numbers with up to 6 significant digits.
std::string cell_text(const nlohmann::json& value);

// The claims table and a section's summary as {"columns": [...], "rows": [[...]]}: both renderings show
// exactly these rows, so Markdown and HTML cannot drift apart.
nlohmann::json claims_table(const nlohmann::json& report);
nlohmann::json summary_table(const nlohmann::json& section);
// The one-screen overview: finding verdicts counted per model (rows) and stage (columns), "all" for what no
// model owns; and the claims scoreboard, one row per claim, one column per model, the verdict in each cell, its
// rows grouped (first column): refuted on anyone's data (universal claims with counterexamples), measured on
// stand-ins, holds by construction, other verdicts on the claim's own object, not testable here.
nlohmann::json verdict_counts_table(const nlohmann::json& report);
nlohmann::json claims_scoreboard(const nlohmann::json& report);
// A counterexample as rows of (field, value): nested objects flattened to dotted names, long arrays
// shortened to their first entries and their length.
nlohmann::json counterexample_table(const nlohmann::json& counterexample);
// Tables longer than this are rendered collapsed.
inline constexpr std::size_t kCollapsedRows = 12;

// Escapes &, <, > and " for HTML text and attribute values (SVG too).
std::string html_escape(const std::string& text);

}  // namespace kvaudit::reports
