// What every audit stage receives, and the shape of the findings it returns (rendered by reports/).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/io/dump.h"

namespace kvaudit::audit {

struct AuditContext {
  std::string data_dir = "data";
  std::uint64_t seed = 1;
  bool quick = false;                          // smaller grids, for tests
  bool exhaustive = false;                     // verify everything the dumps hold, no sampling (docs/audit.md)
  const std::vector<io::PromptDump>* dumps = nullptr;  // loaded once by the caller; may be empty
  std::function<void(const std::string&)> progress = [](const std::string&) {};
};

// A stage returns one JSON section:
// {
//   "section": "pooling",                      // stable id
//   "title": "Entropy-budgeted contiguous pooling",
//   "status": "ran" | "missing-inputs" | "failed",   // never silently absent
//   "status_reason": "...",                    // when not "ran"
//   "summary": { ... figures ... },
//   "tables": [ {"title": "...", "columns": ["..."], "rows": [[...], ...]} ],
//   "charts": [ {"title": "...", "kind": "histogram"|"line"|"bar", "x_label": "...", "y_label": "...",
//                "series": [ {"name": "...", "points": [[x, y], ...]} ]} ],
//   "findings": [ {"id": "...", "rule": "...", "verdict": "violates"|"conforms"|"inconclusive"|"not-run",
//                  "message": "...", "reproduce": "kvaudit ... (exact command)", "counterexample": {...}} ],
//   "claims": [ to_json(ClaimRow) (audit/claims.h): {"claim", "source", "measured", "why", "kind", "protocol",
//                "stand_in"?, "evidence", "observations", "source_observations"?, "interval"?, "proof"?,
//                "verdict": judge_claim(row)} ]
// }
using Section = nlohmann::json;
using Stage = std::function<Section(const AuditContext&)>;

// A section with its id and title and every list of the shape above, still empty.
inline Section empty_section(const std::string& id, const std::string& title) {
  using nlohmann::json;
  return {{"section", id}, {"title", title}, {"summary", json::object()}, {"tables", json::array()},
          {"charts", json::array()}, {"findings", json::array()}, {"claims", json::array()}};
}

// `sec`, marked as not run for want of its inputs: `why` says what is missing (and what records it).
inline Section missing_inputs(Section sec, const std::string& why) {
  sec["status"] = "missing-inputs";
  sec["status_reason"] = why;
  return sec;
}

}  // namespace kvaudit::audit
