// Runs the audit as units of work (stage x model x prompt), possibly one shard of them, and assembles the report.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "audit/audit_context.h"

namespace kvaudit::audit {

struct AuditOptions {
  std::string data_dir = "data";
  std::uint64_t seed = 1;
  bool quick = false;
  bool exhaustive = false;    // no sampling: every layer, head and page size (AuditContext::exhaustive)
  bool require_data = false;  // a dump directory that fails to load is an InputError, not a "missing" section
  int shard_index = 0;  // this run computes units u with u % shard_count == shard_index
  int shard_count = 1;
  int jobs = 0;         // threads running units at once; 0: every core (the report is the same for any count)
  std::function<void(const std::string&)> progress = [](const std::string&) {};
};

// How often a stage runs: once; once per model (ctx.dumps holding that model's prompts); or once per prompt
// (ctx.dumps holding that prompt alone). Units of work are what make sharding and merging exact.
enum class Scope { Global, PerModel, PerPrompt };

struct StageInfo {
  std::string id;
  std::string title;
  Scope scope = Scope::Global;
  Stage run;
  bool long_running = false;  // its units start before the others: a long row started last would end the run alone
};

// Every stage, in report order.
const std::vector<StageInfo>& audit_stages();

// Runs this shard's units and returns a report whose "units" hold their raw sections.
nlohmann::json run_audit(const AuditOptions& options);

// Combines reports of shards of the same audit (same inputs) into the report an unsharded run gives.
// Throws std::invalid_argument if inputs differ, a unit appears twice, or units are missing.
nlohmann::json merge_reports(const std::vector<nlohmann::json>& shard_reports);

}  // namespace kvaudit::audit
