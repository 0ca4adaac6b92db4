// Tables that report.md and report.html render identically.
#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
#include <vector>

#include "reports/render.h"

namespace kvaudit::reports {

namespace {

// "n = 80 (source: 2240)": the n behind the measured value beside the source's, where it states one.
std::string observations_text(const nlohmann::json& c) {
  if (!c.contains("observations")) return "-";
  std::string text = "n = " + cell_text(c["observations"]);
  if (c.contains("source_observations")) text += " (source: " + cell_text(c["source_observations"]) + ")";
  return text;
}

// What the verdict rests on besides the count: the interval with its method, or the proof.
std::string basis_text(const nlohmann::json& c) {
  std::string text;
  if (c.contains("interval"))
    text = "[" + cell_text(c["interval"]["lower"]) + ", " + cell_text(c["interval"]["upper"]) + "] " + c["interval"].value("method", "");
  if (c.contains("proof")) text += (text.empty() ? "" : "; ") + std::string("proof: ") + c["proof"].get<std::string>();
  return text.empty() ? "-" : text;
}

}  // namespace

nlohmann::json claims_table(const nlohmann::json& report) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& c : report["claims"]) {
    const std::string protocol = c.value("protocol", "-");
    rows.push_back({c.value("source", ""), c.value("claim", ""), c.value("model", "all"), c.value("prompt", "all"), c.value("kind", "-"),
                    protocol == "stand-in" ? "stand-in: " + c.value("stand_in", "") : protocol, observations_text(c), basis_text(c),
                    cell_text(c["measured"]), c.value("verdict", ""), c.value("why", "")});
  }
  return {{"columns", {"source", "claim", "model", "prompt", "kind", "protocol", "n", "interval / proof", "measured", "verdict", "why"}},
          {"rows", rows}};
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

namespace {

// The scoreboard's groups, in the order it shows them. A claim belongs to the first group any of its rows fits.
constexpr const char* kScoreGroups[] = {
    "refuted on anyone's data",  // universal claims with a counterexample: no other model or data set can save them
    "measured on stand-ins",     // another model, metric or protocol: consistent or not reproduced, never settled
    "holds by construction",     // true by the method's definition, with the proof named
    "other verdicts on the claim's own object",
    "not testable here"};

std::size_t score_group(const nlohmann::json& c) {
  if (c.value("kind", "") == "universal" && c.value("verdict", "") == "refuted") return 0;
  if (c.value("protocol", "") == "stand-in") return 1;
  if (c.value("kind", "") == "by-construction") return 2;
  if (c.value("kind", "") == "not-testable" || c.value("verdict", "") == "not-testable") return 4;
  return 3;
}

}  // namespace

nlohmann::json claims_scoreboard(const nlohmann::json& report) {
  const std::vector<std::string> models = model_order(report);
  nlohmann::json columns = {"group", "source", "claim"};
  for (const auto& m : models) columns.push_back(m);
  std::vector<std::string> order;  // claims in first-seen order
  struct Cells {
    std::string source;
    std::size_t group = std::size(kScoreGroups);
    std::map<std::string, std::string> by_model;  // model -> verdict
  };
  std::map<std::string, Cells> cells;
  for (const auto& c : report["claims"]) {
    const std::string claim = c.value("claim", "");
    if (!cells.count(claim)) order.push_back(claim);
    Cells& k = cells[claim];
    k.source = c.value("source", "");
    k.group = std::min(k.group, score_group(c));
    std::string& cell = k.by_model[c.value("model", "all")];
    const std::string verdict = c.value("verdict", "");
    if (cell.empty()) cell = verdict;
    else if (cell.find(verdict) == std::string::npos) cell += " / " + verdict;  // several prompts disagree
  }
  // Grouped, and in first-seen order inside a group.
  std::stable_sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) { return cells[a].group < cells[b].group; });
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& claim : order) {
    const Cells& k = cells[claim];
    nlohmann::json row = {kScoreGroups[k.group], k.source, claim};
    for (const auto& m : models) row.push_back(k.by_model.count(m) ? k.by_model.at(m) : "-");
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
