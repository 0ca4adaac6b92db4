// Tables that report.md and report.html render identically.
#include <algorithm>
#include <functional>
#include <map>
#include <vector>

#include "reports/render.h"

namespace kvaudit::reports {

nlohmann::json claims_table(const nlohmann::json& report) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& c : report["claims"])
    rows.push_back({c.value("source", ""), c.value("claim", ""), c.value("model", "all"), c.value("prompt", "all"),
                    cell_text(c["measured"]), c.value("verdict", ""), c.value("why", "")});
  return {{"columns", {"source", "claim", "model", "prompt", "measured", "verdict", "why"}}, {"rows", rows}};
}

nlohmann::json summary_table(const nlohmann::json& section) {
  nlohmann::json rows = nlohmann::json::array();
  const nlohmann::json summary = section.value("summary", nlohmann::json::object());
  for (const auto& [k, v] : summary.items())
    rows.push_back({k, v.is_structured() ? v.dump() : cell_text(v)});
  return {{"columns", {"figure", "value"}}, {"rows", rows}};
}

namespace {

// Models in the order the report's inputs list them, then "all" (global stages and claims).
std::vector<std::string> model_order(const nlohmann::json& report) {
  std::vector<std::string> models;
  for (const auto& p : report["inputs"].value("prompts", nlohmann::json::array())) {
    const std::string m = p.value("model", "");
    if (!m.empty() && std::find(models.begin(), models.end(), m) == models.end()) models.push_back(m);
  }
  models.push_back("all");
  return models;
}

}  // namespace

nlohmann::json verdict_counts_table(const nlohmann::json& report) {
  nlohmann::json columns = {"model"}, rows = nlohmann::json::array();
  for (const auto& s : report["sections"]) columns.push_back(s["section"]);
  for (const std::string& model : model_order(report)) {
    nlohmann::json row = {model};
    bool any = false;
    for (const auto& s : report["sections"]) {
      std::map<std::string, int> n;  // verdict -> count, in a stable order
      for (const auto& f : s.value("findings", nlohmann::json::array()))
        if (f.value("model", "all") == model) ++n[f["verdict"].get<std::string>()];
      std::string cell;
      for (const auto& [verdict, count] : n) cell += (cell.empty() ? "" : ", ") + std::to_string(count) + " " + verdict;
      any = any || !cell.empty();
      row.push_back(cell.empty() ? "-" : cell);
    }
    if (any) rows.push_back(row);
  }
  return {{"columns", columns}, {"rows", rows}};
}

nlohmann::json claims_scoreboard(const nlohmann::json& report) {
  const std::vector<std::string> models = model_order(report);
  nlohmann::json columns = {"source", "claim"};
  for (const auto& m : models) columns.push_back(m);
  std::vector<std::string> order;                                     // claims in first-seen order
  std::map<std::string, std::pair<std::string, std::map<std::string, std::string>>> cells;  // claim -> (source, model -> verdict)
  for (const auto& c : report["claims"]) {
    const std::string claim = c.value("claim", "");
    if (!cells.count(claim)) order.push_back(claim);
    auto& [source, by_model] = cells[claim];
    source = c.value("source", "");
    std::string& cell = by_model[c.value("model", "all")];
    const std::string verdict = c.value("verdict", "");
    if (cell.empty()) cell = verdict;
    else if (cell.find(verdict) == std::string::npos) cell += " / " + verdict;  // several prompts disagree
  }
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& claim : order) {
    const auto& [source, by_model] = cells[claim];
    nlohmann::json row = {source, claim};
    for (const auto& m : models) row.push_back(by_model.count(m) ? by_model.at(m) : "-");
    rows.push_back(row);
  }
  return {{"columns", columns}, {"rows", rows}};
}

nlohmann::json counterexample_table(const nlohmann::json& counterexample) {
  constexpr std::size_t kShown = 16;
  nlohmann::json rows = nlohmann::json::array();
  std::function<void(const std::string&, const nlohmann::json&)> add = [&](const std::string& name, const nlohmann::json& v) {
    if (v.is_object() && !v.empty()) {
      for (const auto& [k, x] : v.items()) add(name.empty() ? k : name + "." + k, x);
    } else if (v.is_array() && v.size() > kShown) {
      std::string shown;
      for (std::size_t i = 0; i < kShown; ++i) shown += (i ? ", " : "") + cell_text(v[i]);
      rows.push_back({name, "[" + shown + ", ...] (" + std::to_string(v.size()) + " entries)"});
    } else {
      rows.push_back({name.empty() ? "value" : name, v.is_array() ? v.dump() : cell_text(v)});
    }
  };
  add("", counterexample);
  return {{"columns", {"field", "value"}}, {"rows", rows}};
}

}  // namespace kvaudit::reports
