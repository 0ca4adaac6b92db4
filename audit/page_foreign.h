// Recorded foreign Page-EntroKV selections: the pages the authors' own pooler (PageEntro-KV page_entrokv/core.py at
// a pinned commit) kept on every layer of the shipped dumps, recorded by tools/foreign_selections into
// <dump dir>/pageentro_released_pages.json (docs/page-entrokv.md section 9), judged by the one page checker
// (audit/page_check.h) under the preset the record names. Their code is not in the repository; only its outputs.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "audit/audit_context.h"
#include "audit/page_check.h"
#include "core/io/dump.h"
#include "core/paging/page_score_bound.h"

namespace kvaudit::audit {

inline constexpr const char* kForeignPagesFile = "pageentro_released_pages.json";
inline constexpr const char* kForeignPagesSchema = "kvaudit-foreign-pages/1";

// Where the recorded pages came from: repository, file and commit of the code that chose them, the file's sha256,
// and how it was called.
struct ForeignPagesProvenance {
  std::string repository, path, commit, sha256, class_name;
  std::string preset;            // the kvaudit preset whose definition the code claims to implement
  std::string page_count_rule;   // how the caller turned rho into num_retained_blocks
  std::string input, command, model;
  nlohmann::json packages;       // name -> version
};

struct ForeignPagesSelection {
  std::string ratio;                                  // rho as decimal text
  Index num_retained_blocks = 0;                      // the page count the caller passed
  std::vector<std::vector<std::vector<Index>>> kept;  // [layer][KV group] -> kept pages, increasing
};

struct ForeignPagesPrompt {
  std::string name, dump_sha256;
  Index tokens = 0, layers = 0, q_heads = 0, kv_heads = 0;
  std::vector<ForeignPagesSelection> selections;
};

struct ForeignPagesRecord {
  std::string file;
  ForeignPagesProvenance provenance;
  Index page_size = 0, sinks = 0;
  std::vector<ForeignPagesPrompt> prompts;
};

// Reads and validates a record: schema, provenance (40-hex commit, 64-hex sha256, a known preset), and per prompt
// and ratio one list of page lists per layer. Throws InputError(file, field, offending value) on anything else.
ForeignPagesRecord read_foreign_pages(const std::string& file);

// One recorded (prompt, ratio, layer) and the checker's verdict on it.
struct ForeignPageCase {
  std::string prompt, ratio;
  Index layer = 0, tokens = 0, kv_groups = 0, group_size = 0;
  Index recorded_page_count = 0;  // num_retained_blocks as recorded
  Index checker_budget = 0;       // the page count the preset's rule gives (PageCheck::budget)
  bool canonical = false;         // every group equals the oracle's canonical pages
  Verdict verdict;                // check_page_claim's, or "recorded-page-count" when the caller's count differs
};

// Every recorded selection against `dumps` (one model's prompts): each prompt must be in `dumps` with the same sha256
// (from the dump's manifest), T, layers and heads, else InputError. The params are the record's preset with
// G = q_heads / kv_heads, P, sinks and rho from the record. Every layer, or only layers {0, L/2, L-1} when `quick`.
std::vector<ForeignPageCase> judge_foreign_pages(const ForeignPagesRecord& record, const std::vector<io::PromptDump>& dumps,
                                                 const paging::PrecisionModel& precision, bool quick = false);

// The command that re-judges one case from the shipped data.
std::string foreign_page_case_reproduce_command(const ForeignPagesRecord& record, const ForeignPageCase& c);

// Audit stage "page-foreign" (per model): reads <dir>/pageentro_released_pages.json of the model's dump directory,
// judges every selection at float32 (their pooler computes in torch's default dtype), a finding per non-conforming
// case and one claim row (universal, own protocol: their released code on every recorded case; --quick: layers 0,
// L/2, L-1, a sample). "missing-inputs" when the model has no record.
Section page_foreign_section(const AuditContext& ctx);

}  // namespace kvaudit::audit

namespace kvaudit::audit {

// A point where the authors' paper (bruce12-glitch/PageEntro-KV paper/main.tex @1a4fcf1c) and their released code
// (PageEntro-KV core.py, or the Entro-Prefill package) read Page-EntroKV differently: both readings, each with its
// citation (docs/page-entrokv.md section 9). `knob`/`code_value`: the one page option that turns the `paper` preset
// into the code's reading, when one does (the audit then measures how often the two readings keep different pages);
// empty when no knob expresses it.
struct PaperCodeDisagreement {
  std::string id, point, codebase, paper, code;
  std::string knob, code_value;
};
const std::vector<PaperCodeDisagreement>& paper_code_disagreements();

// Audit stage "page-paper-code" (global): one finding per disagreement (rule "paper-vs-code", verdict violates: the
// texts disagree), with both readings; where a knob expresses the code's reading, the count of (prompt, layer, KV
// group) cases at rho 0.8 where the `paper` preset and the code's reading keep different pages (layers 0, L/2,
// L-1 of every prompt; --quick: L/2). PageEntro-KV's tie order is measured on its recorded selections
// (page_foreign.h): how many are admissible yet not the paper's lowest-index choice.
Section page_paper_code_section(const AuditContext& ctx);

}  // namespace kvaudit::audit
