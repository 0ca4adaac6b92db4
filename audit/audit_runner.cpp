// Unit enumeration, shard selection, and assembly of unit sections into report sections.
#include "audit/audit_runner.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <stdexcept>

#include <omp.h>

#include "audit/verdict_text.h"
#include "core/error.h"

namespace kvaudit::audit {
namespace {

using nlohmann::json;

struct Unit {
  const StageInfo* stage;
  std::string model;   // empty for global stages
  std::string prompt;  // empty unless per prompt
};

std::vector<Unit> enumerate_units(const std::vector<io::PromptDump>& dumps) {
  std::vector<Unit> units;
  for (const auto& stage : audit_stages()) {
    if (stage.scope == Scope::Global || dumps.empty()) {
      units.push_back({&stage, "", ""});
    } else {
      for (const auto& d : dumps) {
        if (stage.scope == Scope::PerPrompt) units.push_back({&stage, d.model, d.name});
        else if (units.empty() || units.back().stage != &stage || units.back().model != d.model) units.push_back({&stage, d.model, ""});
      }
    }
  }
  return units;
}

bool in_unit(const Unit& u, const io::PromptDump& d) {
  return u.stage->scope == Scope::Global || (d.model == u.model && (u.stage->scope == Scope::PerModel || d.name == u.prompt));
}

std::string unit_key(const std::string& stage, const std::string& model, const std::string& prompt) {
  return model.empty() ? stage : stage + "@" + model + (prompt.empty() ? "" : "/" + prompt);
}

json missing_section(const StageInfo& stage, const std::string& why) {
  return {{"section", stage.id}, {"title", stage.title}, {"status", "missing-inputs"}, {"status_reason", why}};
}

// The element of `list` titled `title`, appended as `fresh` first when there is none.
json& titled(json& list, const json& title, const json& fresh) {
  for (auto& existing : list)
    if (existing["title"] == title) return existing;
  list.push_back(fresh);
  return list.back();
}

// Tags every row/series/finding/claim of a unit's section with its model and prompt, then appends it to `into`.
void absorb(json& into, const json& part, const std::string& model, const std::string& prompt) {
  const std::string where = model.empty() ? "" : prompt.empty() ? model : model + "/" + prompt;
  auto tagged = [&](const std::string& s) { return where.empty() ? s : where + ": " + s; };
  if (part.contains("summary")) {
    if (where.empty()) into["summary"] = part["summary"];
    else into["summary"][where] = part["summary"];
  }
  for (const auto& t : part.value("tables", json::array())) {
    json fresh = {{"title", t["title"]}, {"columns", json::array()}, {"rows", json::array()}};
    if (!model.empty()) fresh["columns"].push_back("model");
    if (!prompt.empty()) fresh["columns"].push_back("prompt");
    for (const auto& c : t["columns"]) fresh["columns"].push_back(c);
    json& target = titled(into["tables"], t["title"], fresh);
    for (const auto& row : t["rows"]) {
      json r = json::array();
      if (!model.empty()) r.push_back(model);
      if (!prompt.empty()) r.push_back(prompt);
      for (const auto& c : row) r.push_back(c);
      target["rows"].push_back(r);
    }
  }
  for (const auto& c : part.value("charts", json::array())) {
    json fresh = c;
    fresh["series"] = json::array();
    json& target = titled(into["charts"], c["title"], fresh);
    for (auto s : c["series"]) {
      s["name"] = tagged(s["name"].get<std::string>());
      target["series"].push_back(s);
    }
  }
  for (auto f : part.value("findings", json::array())) {
    if (!model.empty()) f["model"] = model;
    if (!prompt.empty()) f["prompt"] = prompt;
    f["id"] = tagged(f["id"].get<std::string>());
    into["findings"].push_back(f);
  }
  for (auto c : part.value("claims", json::array())) {
    if (!model.empty()) c["model"] = model;
    if (!prompt.empty()) c["prompt"] = prompt;
    into["claims"].push_back(c);
  }
}

json assemble(const json& units, const json& inputs) {
  json sections = json::array();
  for (const auto& stage : audit_stages()) {
    json section = empty_section(stage.id, stage.title);
    section["status"] = "ran";
    std::vector<std::string> reasons;
    for (const auto& u : units) {
      if (u["stage"] != stage.id) continue;
      const json& part = u["section"];
      const std::string model = u["model"], prompt = u["prompt"];
      std::string status = part.value("status", "failed");
      if (status != "ran") {
        // The worst status wins: failed > missing-inputs > not-run > ran.
        static const std::map<std::string, int> rank = {{"ran", 0}, {"not-run", 1}, {"missing-inputs", 2}, {"failed", 3}};
        if (rank.at(status) > rank.at(section["status"].get<std::string>())) section["status"] = status;
        reasons.push_back((model.empty() ? "" : model + (prompt.empty() ? "" : "/" + prompt) + ": ") +
                          part.value("status_reason", "no reason given"));
      }
      absorb(section, part, model, prompt);
    }
    if (!reasons.empty()) {
      std::string joined;
      for (const auto& r : reasons) joined += (joined.empty() ? "" : "; ") + r;
      section["status_reason"] = joined;
    }
    sections.push_back(section);
  }
  json report = {{"schema", kReportSchema}, {"inputs", inputs}, {"sections", sections}, {"units", units}};
  report["claims"] = collect_claims(sections);
  const ReportTotals totals = report_totals(sections, report["claims"]);
  report["verdict"] = to_string(totals.verdict());
  report["totals"] = {{"violations", totals.violations}, {"refuted_claims", totals.refuted_claims}, {"open_items", totals.open_items}};
  return report;
}

std::string utc_now() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace

json run_audit(const AuditOptions& options) {
  if (options.shard_count < 1 || options.shard_index < 0 || options.shard_index >= options.shard_count)
    throw InputError("--shard", "shard", "must be i/N with 0 <= i < N");
  std::vector<io::PromptDump> dumps;
  std::string data_problem;
  try {
    dumps = io::load_all_dumps(options.data_dir);
  } catch (const InputError& e) {
    if (options.require_data) throw;
    data_problem = e.what();
  }
  json prompts = json::array();
  for (const auto& d : dumps) prompts.push_back({{"model", d.model}, {"name", d.name}, {"tokens", d.tokens}, {"file", d.file}});
  json inputs = {{"data_dir", options.data_dir}, {"seed", options.seed}, {"quick", options.quick},
                 {"exhaustive", options.exhaustive}, {"prompts", prompts}};
  if (!data_problem.empty()) inputs["data_problem"] = data_problem;

  std::vector<Unit> units = enumerate_units(dumps);
  std::vector<std::size_t> mine;  // this shard's units, in unit order
  for (std::size_t u = 0; u < units.size(); ++u)
    if (static_cast<int>(u % static_cast<std::size_t>(options.shard_count)) == options.shard_index) mine.push_back(u);
  std::vector<std::size_t> launch(mine.size());  // positions in `mine`, long-running stages' units first
  std::iota(launch.begin(), launch.end(), std::size_t{0});
  std::stable_partition(launch.begin(), launch.end(), [&](std::size_t i) { return units[mine[i]].stage->long_running; });
  // Units are independent (sharding already relies on it): they run on `jobs` threads, each writing its own slot,
  // and are assembled in unit order, so the report is the same for every thread count. Progress lines are
  // whole lines under a lock.
  std::mutex progress_lock;
  const std::function<void(const std::string&)> progress = [&](const std::string& line) {
    std::lock_guard<std::mutex> hold(progress_lock);
    options.progress(line);
  };
  std::vector<json> sections(mine.size());
  std::vector<double> seconds(mine.size(), 0.0);
  const int jobs = options.jobs > 0 ? options.jobs : omp_get_num_procs();
#pragma omp parallel for schedule(dynamic, 1) num_threads(jobs)
  for (std::size_t n = 0; n < launch.size(); ++n) {
    const std::size_t i = launch[n], u = mine[i];
    const Unit& unit = units[u];
    std::vector<io::PromptDump> slice;
    for (const auto& d : dumps)
      if (in_unit(unit, d)) slice.push_back(d);
    progress("audit: " + unit_key(unit.stage->id, unit.model, unit.prompt) + " (" + std::to_string(u + 1) + "/" +
             std::to_string(units.size()) + ")");
    AuditContext ctx{options.data_dir, options.seed, options.quick, options.exhaustive, &slice, progress};
    const auto started = std::chrono::steady_clock::now();
    if (unit.stage->scope != Scope::Global && dumps.empty()) {
      sections[i] = missing_section(*unit.stage, "no real dumps loaded: " + (data_problem.empty() ? "manifest lists none" : data_problem));
    } else {
      try {
        sections[i] = unit.stage->run(ctx);
      } catch (const std::exception& e) {
        sections[i] = {{"section", unit.stage->id}, {"title", unit.stage->title}, {"status", "failed"}, {"status_reason", e.what()}};
      }
    }
    seconds[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }
  json done = json::array();
  json unit_seconds = json::object();  // wall time per unit: volatile, never part of the compared report
  for (std::size_t i = 0; i < mine.size(); ++i) {
    const Unit& unit = units[mine[i]];
    unit_seconds[unit_key(unit.stage->id, unit.model, unit.prompt)] = seconds[i];
    done.push_back({{"stage", unit.stage->id}, {"model", unit.model}, {"prompt", unit.prompt}, {"index", mine[i]}, {"section", sections[i]}});
  }
  json report = assemble(done, inputs);
  report["coverage"] = {{"units_total", units.size()}, {"units_present", done.size()}};
  report["volatile"] = {{"timestamp", utc_now()}, {"shard", std::to_string(options.shard_index) + "/" + std::to_string(options.shard_count)},
                       {"jobs", jobs}, {"unit_seconds", unit_seconds}};
  return report;
}

json merge_reports(const std::vector<json>& shard_reports) {
  if (shard_reports.empty()) throw std::invalid_argument("merge: no reports given");
  const json& inputs = shard_reports.front().at("inputs");
  std::map<std::size_t, json> by_index;
  std::size_t total = shard_reports.front().at("coverage").at("units_total");
  for (const auto& r : shard_reports) {
    if (r.at("schema") != kReportSchema) throw std::invalid_argument("merge: a report has another schema");
    if (r.at("inputs") != inputs) throw std::invalid_argument("merge: reports come from audits with different inputs");
    if (r.at("coverage").at("units_total") != total) throw std::invalid_argument("merge: reports disagree on the unit count");
    for (const auto& u : r.at("units")) {
      std::size_t index = u.at("index");
      if (by_index.count(index)) throw std::invalid_argument("merge: unit " + std::to_string(index) + " appears twice");
      by_index[index] = u;
    }
  }
  json units = json::array();
  for (auto& [i, u] : by_index) units.push_back(u);
  json report = assemble(units, inputs);
  report["coverage"] = {{"units_total", total}, {"units_present", units.size()}};
  report["volatile"] = {{"timestamp", shard_reports.front().at("volatile").value("timestamp", "")}, {"shard", "merged"}};
  if (units.size() != total)
    throw std::invalid_argument("merge: " + std::to_string(total - units.size()) + " of " + std::to_string(total) + " units missing");
  return report;
}

}  // namespace kvaudit::audit
