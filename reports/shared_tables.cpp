// Tables that report.md and report.html render identically.
#include "reports/render.h"

namespace kvaudit::reports {

nlohmann::json claims_table(const nlohmann::json& report) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& c : report["claims"])
    rows.push_back({c.value("source", ""), c.value("claim", ""), c.value("prompt", "all"), cell_text(c["measured"]),
                    c.value("verdict", ""), c.value("why", "")});
  return {{"columns", {"source", "claim", "prompt", "measured", "verdict", "why"}}, {"rows", rows}};
}

nlohmann::json summary_table(const nlohmann::json& section) {
  nlohmann::json rows = nlohmann::json::array();
  const nlohmann::json summary = section.value("summary", nlohmann::json::object());
  for (const auto& [k, v] : summary.items())
    rows.push_back({k, v.is_structured() ? v.dump() : cell_text(v)});
  return {{"columns", {"figure", "value"}}, {"rows", rows}};
}

}  // namespace kvaudit::reports
