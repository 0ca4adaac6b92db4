// Loader of needle-study folders (needle_study.h): every field typed and checked, every failure one line naming the
// file, the line and the field with the value found.
#include "core/io/needle_study.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/io/json_fields.h"

namespace kvaudit::io {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kSchema = "kvaudit-needle-study/1";

NeedleRun parse_run(const JsonFields& f, const NeedleStudy& study) {
  if (f.text("schema") != kSchema) f.bad("schema", std::string("must be \"") + kSchema + "\"");
  NeedleRun r{.haystack = f.count("haystack"), .mode = f.text("mode"), .condition = f.text("condition"),
              .value_kind = f.text("value_kind"), .value_tokens = f.count("value_tokens")};
  if (std::find(study.modes.begin(), study.modes.end(), r.mode) == study.modes.end())
    f.bad("mode", "must be one of study.json's modes");
  if (std::none_of(study.conditions.begin(), study.conditions.end(), [&](const NeedleCondition& c) { return c.name == r.condition; }))
    f.bad("condition", "must be one of study.json's conditions");
  if (r.haystack >= study.completed_haystacks)
    f.bad("haystack", "must be a completed haystack (study.json: completed_haystacks " +
                          std::to_string(study.completed_haystacks) + ")");
  const json& error = f.get("error");
  const json& retrieved = f.get("retrieved");
  if (error.is_null()) {
    if (!retrieved.is_boolean()) f.bad("retrieved", "must be true or false when error is null");
    r.retrieved = retrieved.get<bool>();
    r.tf_mean_logprob = f.number("tf_mean_logprob");
    const json& kept = f.get("value_kept_per_layer");
    if (!kept.is_array() || kept.empty()) f.bad("value_kept_per_layer", "must be a non-empty array");
    for (const json& x : kept) {
      if (!x.is_number() || x.get<double>() < 0 || x.get<double>() > 1) f.bad("value_kept_per_layer", "must hold fractions in [0, 1]");
      r.value_kept_per_layer.push_back(x.get<double>());
    }
  } else {
    if (!error.is_string() || error.get<std::string>().empty()) f.bad("error", "must be null or a non-empty string");
    if (!retrieved.is_null()) f.bad("retrieved", "must be null when the run raised an error");
    r.error = error.get<std::string>();
  }
  return r;
}

}  // namespace

NeedleStudy load_needle_study(const std::string& folder) {
  NeedleStudy s{.folder = folder};
  const std::string study_path = (fs::path(folder) / "study.json").string();
  const json study = read_json_file(study_path);
  const JsonFields top{study_path, "", study};
  if (top.text("schema") != kSchema) top.bad("schema", std::string("must be \"") + kSchema + "\"");
  if (top.text("status") != "complete") top.bad("status", "must be \"complete\" (the run did not finish)");
  const JsonFields model{study_path, "model.", top.get("model")};
  s.model_id = model.text("id");
  s.gguf_sha256 = model.text("gguf_sha256");
  s.protocol = top.text("protocol");
  s.planned_haystacks = top.count("planned_haystacks");
  s.completed_haystacks = top.count("completed_haystacks");
  if (s.completed_haystacks < 1 || s.completed_haystacks > s.planned_haystacks)
    top.bad("completed_haystacks", "must be between 1 and planned_haystacks");
  if (study.contains("stopped") && study["stopped"].is_string()) s.stopped = study["stopped"].get<std::string>();
  if (s.completed_haystacks < s.planned_haystacks && s.stopped.empty())
    top.bad("stopped", "must say why fewer haystacks than planned ran");
  const json& modes = top.get("modes");
  if (!modes.is_array() || modes.empty()) top.bad("modes", "must be a non-empty array");
  for (const json& m : modes) {
    if (!m.is_string()) top.bad("modes", "must hold strings");
    s.modes.push_back(m.get<std::string>());
  }
  if (s.modes != std::vector<std::string>{"question-agnostic", "question-aware"})
    top.bad("modes", "must be [\"question-agnostic\", \"question-aware\"]");
  const json& conditions = top.get("conditions");
  if (!conditions.is_object() || conditions.empty()) top.bad("conditions", "must be a non-empty object");
  for (const auto& [name, c] : conditions.items()) {
    const JsonFields f{study_path, "conditions." + name + ".", c};
    s.conditions.push_back({.name = name, .method = f.text("method"), .compression_ratio = f.number("compression_ratio"),
                            .rescue_size = f.optional_count("rescue_size"),
                            .pooling = c.contains("pooling") ? f.text("pooling") : std::string(),
                            .preset = c.contains("preset") ? f.text("preset") : std::string()});
  }

  const std::string records_path = (fs::path(folder) / "records.jsonl").string();
  std::ifstream in(records_path);
  if (!in) throw InputError(records_path, "file", "cannot open");
  std::map<std::tuple<Index, std::string, std::string>, Index> seen;  // run -> its line
  std::string line;
  for (Index number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    const std::string source = records_path + ":" + std::to_string(number);
    json j;
    try {
      j = json::parse(line);
    } catch (const json::parse_error& e) {
      throw InputError(source, "json", e.what());
    }
    NeedleRun r = parse_run(JsonFields{source, "", j}, s);
    auto [it, fresh] = seen.emplace(std::make_tuple(r.haystack, r.mode, r.condition), number);
    if (!fresh)
      throw InputError(source, "haystack/mode/condition",
                       "run (" + std::to_string(r.haystack) + ", " + r.mode + ", " + r.condition + ") recorded twice (first at line " +
                           std::to_string(it->second) + ")");
    s.runs.push_back(std::move(r));
  }
  for (Index h = 0; h < s.completed_haystacks; ++h)
    for (const std::string& m : s.modes)
      for (const NeedleCondition& c : s.conditions)
        if (!seen.count({h, m, c.name}))
          throw InputError(records_path, "haystack/mode/condition",
                           "run (" + std::to_string(h) + ", " + m + ", " + c.name + ") missing: study.json says " +
                               std::to_string(s.completed_haystacks) + " haystacks completed");
  return s;
}

std::vector<std::string> find_needle_studies(const std::string& data_dir) {
  std::vector<std::string> found;
  std::error_code ec;
  if (fs::exists(fs::path(data_dir) / "needle_study" / "study.json", ec)) found.push_back((fs::path(data_dir) / "needle_study").string());
  for (const auto& entry : fs::directory_iterator(data_dir, ec)) {
    const fs::path study = entry.path() / "needle_study";
    if (entry.is_directory() && fs::exists(study / "study.json", ec)) found.push_back(study.string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace kvaudit::io
