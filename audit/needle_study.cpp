// The needle-study stage (needle_study.h). Statistics only: the runs were recorded by
// tools/needle_study/needle_study.py through kvpress's own pipeline, and loaded by core/io/needle_study.
#include "audit/needle_study.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "audit/claims.h"
#include "core/io/needle_study.h"

namespace kvaudit::audit {
namespace {

using nlohmann::json;
using io::NeedleCondition;
using io::NeedleRun;
using io::NeedleStudy;

std::string fmt(double v, int digits = 2) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}
// A p-value: four decimals, or two significant digits below 1e-4 (which four decimals would print as 0.0000).
std::string p_text(double p) {
  if (p >= 1e-4) return fmt(p, 4);
  char b[32];
  std::snprintf(b, sizeof b, "%.1e", p);
  return b;
}
std::string signed_fmt(double v, int digits = 2) { return (v >= 0 ? "+" : "") + fmt(v, digits); }
std::string interval_text(const Interval& i) { return "[" + fmt(i.lower) + ", " + fmt(i.upper) + "]"; }
std::string ratio_text(double cr) {
  char b[16];
  std::snprintf(b, sizeof b, "%g", cr);
  return b;
}

// One study's runs, looked up by (haystack, mode, condition name).
struct Runs {
  const NeedleStudy& study;
  std::map<std::tuple<Index, std::string, std::string>, const NeedleRun*> index;

  explicit Runs(const NeedleStudy& s) : study(s) {
    for (const NeedleRun& r : s.runs) index[{r.haystack, r.mode, r.condition}] = &r;
  }
  const NeedleRun& at(Index h, const std::string& mode, const std::string& condition) const { return *index.at({h, mode, condition}); }
};

struct Rate {
  Index retrieved = 0, n = 0, errors = 0;
  double tf_sum = 0, kept_sum = 0;
  double rate() const { return n ? static_cast<double>(retrieved) / static_cast<double>(n) : 0.0; }
};

Rate rate_of(const Runs& runs, const std::string& mode, const std::string& condition) {
  Rate r;
  for (Index h = 0; h < runs.study.completed_haystacks; ++h) {
    const NeedleRun& run = runs.at(h, mode, condition);
    if (!run.retrieved) {
      ++r.errors;
      continue;
    }
    ++r.n;
    r.retrieved += *run.retrieved ? 1 : 0;
    r.tf_sum += run.tf_mean_logprob;
    double kept = 0;
    for (double x : run.value_kept_per_layer) kept += x;
    r.kept_sum += kept / static_cast<double>(run.value_kept_per_layer.size());
  }
  return r;
}

// Paired outcomes of conditions a and b over the haystacks where neither run raised an error.
struct Paired {
  PairedCounts counts;
  double tf_difference_sum = 0;  // sum of tf_mean_logprob(a) - tf_mean_logprob(b)
};

Paired pair_of(const Runs& runs, const std::string& mode, const std::string& a, const std::string& b) {
  Paired p;
  for (Index h = 0; h < runs.study.completed_haystacks; ++h) {
    const NeedleRun &ra = runs.at(h, mode, a), &rb = runs.at(h, mode, b);
    if (!ra.retrieved || !rb.retrieved) continue;
    const bool x = *ra.retrieved, y = *rb.retrieved;
    (x && y ? p.counts.both : x ? p.counts.only_a : y ? p.counts.only_b : p.counts.neither) += 1;
    p.tf_difference_sum += ra.tf_mean_logprob - rb.tf_mean_logprob;
  }
  return p;
}

// The conditions a comparison needs, found by what they are (method, ratio, rescue size, pooling, preset), not by
// name. An empty preset is kvaudit's default selector.
std::optional<std::string> find_condition(const NeedleStudy& s, const std::string& method, double cr,
                                          std::optional<Index> rescue = std::nullopt, const std::string& pooling = "",
                                          const std::string& preset = "") {
  for (const NeedleCondition& c : s.conditions)
    if (c.method == method && c.compression_ratio == cr && (!rescue || c.rescue_size == rescue) && (pooling.empty() || c.pooling == pooling) &&
        c.preset == preset)
      return c.name;
  return std::nullopt;
}

std::vector<double> ratios_of(const NeedleStudy& s, const std::string& method) {
  std::set<double> crs;
  for (const NeedleCondition& c : s.conditions)
    if (c.method == method) crs.insert(c.compression_ratio);
  return {crs.begin(), crs.end()};
}

struct Comparison {
  std::string label, a, b;
  enum class Claim { None, EgBeatsChunkKV, EntropyAllMeanNone } claim = Claim::None;
  double cr = 0;
  std::string preset{};  // Page-EntroKV: the variant both conditions ran (empty: kvaudit's default)
};

// The Page-EntroKV variants a study may hold: kvaudit's default and the authors' released pooler (docs/page-entrokv.md, 8).
constexpr const char* kPagePresets[] = {"", "released"};

std::string variant_text(const std::string& preset) {
  return preset.empty() ? "kvaudit's default variant" : "the `" + preset + "` preset (the authors' pooler: tau 0.5, raw rows, max page score, "
                                                        "a page count by top-k, sinks compete)";
}

std::vector<Comparison> comparisons_of(const NeedleStudy& s) {
  std::vector<Comparison> out;
  for (double cr : ratios_of(s, "chunkkv")) {
    const auto chunk = find_condition(s, "chunkkv", cr);
    const auto eg4 = find_condition(s, "eg-chunkkv", cr, Index{4});
    const auto eg8 = find_condition(s, "eg-chunkkv", cr, Index{8});
    const std::string at = ", cr " + ratio_text(cr);
    if (chunk && eg4) out.push_back({"EG-ChunkKV r4 - ChunkKV" + at, *eg4, *chunk, Comparison::Claim::EgBeatsChunkKV, cr});
    if (eg4 && eg8) out.push_back({"EG-ChunkKV r8 (control) - r4" + at, *eg8, *eg4, Comparison::Claim::None, cr});
    if (chunk && eg8) out.push_back({"EG-ChunkKV r8 (control) - ChunkKV" + at, *eg8, *chunk, Comparison::Claim::None, cr});
  }
  for (double cr : ratios_of(s, "page-entrokv")) {
    const std::string at = ", cr " + ratio_text(cr);
    for (const std::string preset : kPagePresets) {
      const auto entropy = find_condition(s, "page-entrokv", cr, std::nullopt, "entropy", preset);
      const auto mean = find_condition(s, "page-entrokv", cr, std::nullopt, "mean", preset);
      if (entropy && mean)
        out.push_back({"Page-EntroKV entropy - mean pooling" + (preset.empty() ? "" : ", " + preset + " preset") + at, *entropy, *mean,
                       Comparison::Claim::EntropyAllMeanNone, cr, preset});
    }
    const auto ours = find_condition(s, "page-entrokv", cr, std::nullopt, "entropy");
    const auto released = find_condition(s, "page-entrokv", cr, std::nullopt, "entropy", "released");
    if (ours && released)
      out.push_back({"Page-EntroKV released preset - kvaudit default" + at, *released, *ours, Comparison::Claim::None, cr});
  }
  return out;
}

// The model folder's manifest.json, when the study sits in one: the GGUF the shipped dumps came from.
std::optional<std::string> manifest_gguf_sha256(const NeedleStudy& s) {
  const auto manifest = std::filesystem::path(s.folder).parent_path() / "manifest.json";
  std::ifstream in(manifest);
  if (!in) return std::nullopt;
  const json m = json::parse(in, nullptr, false);
  if (m.is_discarded() || !m.contains("model") || !m["model"].contains("gguf_sha256") || !m["model"]["gguf_sha256"].is_string())
    return std::nullopt;
  return m["model"]["gguf_sha256"].get<std::string>();
}

std::string short_model(const std::string& id) { return id.substr(id.find('/') == std::string::npos ? 0 : id.find('/') + 1); }

}  // namespace

Section needle_study_section(const AuditContext& ctx) {
  Section sec = empty_section("needle-study", "Needle retrieval through kvpress's pipeline (small scale, stand-in models and protocol)");
  const std::vector<std::string> folders = io::find_needle_studies(ctx.data_dir);
  if (folders.empty()) {
    return missing_inputs(std::move(sec), "no needle_study/study.json under " + ctx.data_dir + " (tools/needle_study/run_study.sh records them)");
  }
  json rate_rows = json::array(), pair_rows = json::array(), kept_rows = json::array();
  for (const std::string& folder : folders) {
    ctx.progress("needle-study: " + folder);
    const NeedleStudy study = io::load_needle_study(folder);
    const Runs runs(study);
    const std::string model = short_model(study.model_id);
    const Index n = study.completed_haystacks;
    sec["summary"][model + " haystacks"] = std::to_string(n) + " of " + std::to_string(study.planned_haystacks) + " planned (" +
                                           std::to_string(study.runs.size()) + " runs)" + (study.stopped.empty() ? "" : ": " + study.stopped);
    if (const auto sha = manifest_gguf_sha256(study); sha && *sha != study.gguf_sha256)
      sec["findings"].push_back({{"id", "needle-provenance-" + model}, {"rule", "needle-provenance"}, {"verdict", "violates"},
                                 {"model", model},
                                 {"message", folder + "/study.json: model.gguf_sha256 " + study.gguf_sha256 +
                                                 " is not the GGUF of this folder's dumps (manifest.json: " + *sha + ")"},
                                 {"reproduce", "kvaudit audit --data " + ctx.data_dir}});

    // 1. Retrieval per condition and mode.
    std::map<std::string, std::map<std::string, Rate>> rates;  // mode -> condition -> rate
    for (const NeedleCondition& c : study.conditions) {
      json row = {model, c.name};
      for (const std::string& mode : study.modes) {
        const Rate r = rates[mode][c.name] = rate_of(runs, mode, c.name);
        row.push_back(std::to_string(r.retrieved) + "/" + std::to_string(r.n) + (r.errors ? " (" + std::to_string(r.errors) + " errors)" : ""));
        row.push_back(r.n ? fmt(r.rate()) + " " + interval_text(wilson_interval(r.retrieved, r.n)) : "-");
        row.push_back(r.n ? fmt(r.tf_sum / static_cast<double>(r.n)) : "-");
        row.push_back(r.n ? fmt(r.kept_sum / static_cast<double>(r.n)) : "-");
      }
      rate_rows.push_back(row);
    }

    // 2. Retrieval against cr, per mode: one series per method, Wilson interval bars.
    for (const std::string& mode : study.modes) {
      json series = json::array();
      auto add = [&](const std::string& name, const std::string& method, std::optional<Index> rescue, const std::string& pooling,
                     const std::string& preset = "") {
        json points = json::array();
        for (double cr : ratios_of(study, method))
          if (const auto c = find_condition(study, method, cr, rescue, pooling, preset); c && rates[mode][*c].n) {
            const Rate& r = rates[mode][*c];
            const Interval ci = wilson_interval(r.retrieved, r.n);
            points.push_back({cr, r.rate(), ci.lower, ci.upper});
          }
        if (!points.empty()) series.push_back({{"name", name}, {"points", points}});
      };
      add("SnapKV", "snapkv", std::nullopt, "");
      add("ChunkKV c10", "chunkkv", std::nullopt, "");
      add("EG-ChunkKV r4", "eg-chunkkv", Index{4}, "");
      add("EG-ChunkKV r8", "eg-chunkkv", Index{8}, "");
      add("Page-EntroKV entropy", "page-entrokv", std::nullopt, "entropy");
      add("Page-EntroKV mean", "page-entrokv", std::nullopt, "mean");
      add("Page-EntroKV entropy, released preset", "page-entrokv", std::nullopt, "entropy", "released");
      add("Page-EntroKV mean, released preset", "page-entrokv", std::nullopt, "mean", "released");
      sec["charts"].push_back({{"title", model + ", " + mode + ": needle retrieved (n = " + std::to_string(n) + ", Wilson 95 %)"},
                               {"kind", "line"}, {"x_label", "compression ratio"}, {"y_label", "retrieval rate"}, {"series", series}});
    }

    // 3. Paired comparisons on the same haystacks, and the claims they speak to.
    for (const Comparison& cmp : comparisons_of(study))
      for (const std::string& mode : study.modes) {
        const Paired p = pair_of(runs, mode, cmp.a, cmp.b);
        const PairedCounts& c = p.counts;
        if (c.n() == 0) continue;
        const double ra = static_cast<double>(c.both + c.only_a) / static_cast<double>(c.n());
        const double rb = static_cast<double>(c.both + c.only_b) / static_cast<double>(c.n());
        const Interval ci = paired_difference_interval(c);
        const double p_value = exact_mcnemar_p(c);
        const std::string discordant = std::to_string(c.only_a) + " / " + std::to_string(c.only_b);
        pair_rows.push_back({model, cmp.label, mode, c.n(), fmt(ra), fmt(rb), signed_fmt(ra - rb) + " " + interval_text(ci), discordant,
                             p_text(p_value), signed_fmt(p.tf_difference_sum / static_cast<double>(c.n()), 3)});
        const std::string measured = std::to_string(c.both + c.only_a) + "/" + std::to_string(c.n()) + " vs " +
                                     std::to_string(c.both + c.only_b) + "/" + std::to_string(c.n()) + " retrieved (" + mode +
                                     "), paired difference " + signed_fmt(ra - rb) + ", discordant " + discordant +
                                     ", exact McNemar p = " + p_text(p_value);
        const std::string protocol = "single-needle retrieval through kvpress 0.5.5's pipeline (" + mode + ", our seeded needle protocol, " +
                                     "contexts of about 4k tokens, " + std::to_string(n) + " haystacks) on " + model;
        // Both claims are comparisons of two presses on the same haystacks: a stand-in row on the paired interval.
        auto paired_row = [&](const std::string& claim, const std::string& source, const std::string& what, const std::string& why,
                              const std::string& stands_for, Evidence evidence) {
          sec["claims"].push_back(to_json(ClaimRow{.claim = claim, .source = source, .measured = what + ": " + measured, .why = why,
                                                   .kind = ClaimKind::Comparative, .protocol = Protocol::StandIn,
                                                   .stand_in = protocol + " for " + stands_for, .evidence = evidence,
                                                   .observations = c.n(), .interval = ci}));
        };
        if (cmp.claim == Comparison::Claim::EgBeatsChunkKV)
          paired_row("EG-ChunkKV beats ChunkKV on RULER-4096 at cr " + ratio_text(cmp.cr) + " (13-subtask mean, seed 000's table)",
                     "seed 000", "EG-ChunkKV c10 r4 vs ChunkKV c10",
                     "a comparative claim: EG-ChunkKV's accuracy above ChunkKV's; the paired difference's interval is judged against 0. "
                     "Small scale: read the interval, not the point estimate",
                     "RULER-4096's 13 subtasks on Llama-3.1-8B-Instruct", interval_evidence(ci, 0.0, Side::Above));
        if (cmp.claim == Comparison::Claim::EntropyAllMeanNone)
          paired_row("At 20% retention, needle recall is 100% with entropy pooling vs 0% with mean pooling (generation level)", "seed 004",
                     "Page-EntroKV (P = 16, 4 sinks) entropy vs mean pooling, " + variant_text(cmp.preset),
                     "100 % vs 0 % is a paired difference of exactly 1 (every haystack retrieved with entropy pooling, none with mean): "
                     "a point claim, judged by whether the paired interval contains 1",
                     "the preprint's unpublished needle protocol on Qwen2.5-1.5B-Instruct, kvaudit's PageEntroKVPress for its press",
                     interval_evidence(ci, 1.0, Side::At));
      }

    // 4. The mechanism: the share of the value's tokens each chunk press kept, by the value's length in tokens.
    std::vector<std::string> chunk_conditions;
    for (double cr : ratios_of(study, "chunkkv"))
      for (const auto& c : {find_condition(study, "chunkkv", cr), find_condition(study, "eg-chunkkv", cr, Index{4}),
                            find_condition(study, "eg-chunkkv", cr, Index{8})})
        if (c) chunk_conditions.push_back(*c);
    std::map<std::pair<Index, std::string>, std::set<Index>> haystacks_by_value;  // (tokens, kind) -> haystacks
    for (const NeedleRun& r : study.runs) haystacks_by_value[{r.value_tokens, r.value_kind}].insert(r.haystack);
    for (const std::string& mode : study.modes)
      for (const auto& [value, haystacks] : haystacks_by_value)
        for (const std::string& cond : chunk_conditions) {
          double mean = 0;
          Index layers = 0, whole = 0, counted = 0;
          for (Index h : haystacks) {
            const NeedleRun& r = runs.at(h, mode, cond);
            if (!r.retrieved) continue;
            ++counted;
            double sum = 0;
            for (double x : r.value_kept_per_layer) sum += x, whole += x == 1.0 ? 1 : 0;
            mean += sum / static_cast<double>(r.value_kept_per_layer.size());
            layers += static_cast<Index>(r.value_kept_per_layer.size());
          }
          if (counted == 0) continue;
          kept_rows.push_back({model, mode, value.second + " (" + std::to_string(value.first) + " tokens)", counted, cond,
                               fmt(mean / static_cast<double>(counted)), fmt(static_cast<double>(whole) / static_cast<double>(layers))});
        }
  }
  sec["tables"].push_back({{"title", "Needle retrieved per condition: retrieved/n, rate [Wilson 95 %], mean teacher-forced log-probability "
                                     "of the value, mean fraction of the value's tokens kept (per mode: question-agnostic, then question-aware)"},
                           {"columns", {"model", "condition", "agnostic retrieved", "agnostic rate", "agnostic tf log-p", "agnostic value kept",
                                        "aware retrieved", "aware rate", "aware tf log-p", "aware value kept"}},
                           {"rows", rate_rows}});
  sec["tables"].push_back({{"title", "Paired comparisons on the same haystacks: a - b with Newcombe's 95 % interval, discordant pairs "
                                     "(only a / only b), exact McNemar p, mean teacher-forced log-probability difference"},
                           {"columns", {"model", "comparison (a - b)", "mode", "n", "rate a", "rate b", "a - b [95 %]", "only a / only b",
                                        "McNemar p", "tf log-p a - b"}},
                           {"rows", pair_rows}});
  sec["tables"].push_back({{"title", "Mechanism: the value's tokens each chunk press kept, by value length (mean fraction over layers "
                                     "and runs; share of layers keeping all of it)"},
                           {"columns", {"model", "mode", "value", "runs", "condition", "mean fraction kept", "layers keeping all"}},
                           {"rows", kept_rows}});
  sec["status"] = "ran";
  return sec;
}

}  // namespace kvaudit::audit
