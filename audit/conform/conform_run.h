// `kvaudit conform` as a library function: drive an implementation through generated and dump cases, judge
// every answer, shrink the first violation, and say what happened as a JSON report plus an exit code.
// The CLI and any other front end (a Python binding) call run_conform; the judging lives in the families.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/paging/page_options.h"
#include "core/paging/page_score_bound.h"
#include "core/types.h"

namespace kvaudit::conform {

// Every method conform drives. ChunkKV / EG-ChunkKV: token selection (protocol.h); Page-EntroKV: page
// selection per KV group (page_family.h); Partition: entropy-budgeted contiguous partitions (partition_family.h).
enum class ConformMethod { ChunkKV, EgChunkKV, PageEntroKV, Partition };

// "chunkkv" / "eg-chunkkv" / "page-entrokv" / "partition"; parse throws InputError naming `source`.
const char* conform_method_name(ConformMethod m);
ConformMethod parse_conform_method(const std::string& text, const std::string& source);

// What a partition implementation claims about its answers (--claim).
enum class PartitionClaim {
  Heuristic,  // valid, within the budget, infeasibility only when certified; the gap to the optimum is reported
  Exact,      // additionally every answer reaches the certified optimum
};

struct ConformOptions {
  ConformMethod method = ConformMethod::EgChunkKV;
  Flavour flavour = Flavour::Kvpress;  // chunk methods only: the oracle answers are judged against
  std::string impl;                 // shell command
  int cases = 200;                  // generated cases
  std::uint64_t seed = 1;
  std::string dumps_dir;            // empty: no dump cases
  int timeout_ms = 10000;
  int startup_timeout_ms = 120000;  // first request after each (re)start: interpreters importing torch are slow
  std::vector<std::string> replay;  // request lines to run instead of generated cases (--replay)
  // Chunk methods: replayed scores that are not float32 values are refused (--replay-strict) instead of rounded to
  // the nearest float32. (Page-EntroKV replays are strict either way for now: its checker is being rewritten.)
  bool replay_strict = false;
  int max_shrink_queries = 4000;
  // Upper bound on generated sizes (T for chunk and page cases, n for partitions), 0 = the generators' own
  // range. Dump rows longer than this are cut to a prefix (attention rows renormalized). Shrinking only ever
  // makes cases smaller, so no query exceeds it.
  Index max_size = 0;
  PartitionClaim claim = PartitionClaim::Heuristic;
  // page-entrokv: the arithmetic the implementation computes page scores in (its tie tolerance).
  paging::PrecisionModel precision;
  // page-entrokv: a preset and / or fixed knobs (--preset, --page-knob) applied to every generated and dump case
  // over the drawn settings; none: generated cases draw each knob, dump cases use the defaults.
  std::optional<paging::PageOptions> page_choices;
  std::function<void(const std::string&)> progress = [](const std::string&) {};
};

// Exit codes. Only kConforms is a pass, and only when at least one case was judged and every judged case
// conforms: inconclusive or invalid cases make the verdict "inconclusive" with exit 1, never 0.
constexpr int kConforms = 0;
constexpr int kNonConforming = 1;
constexpr int kProtocolError = 2;

struct ConformResult {
  nlohmann::json report;  // see docs/conform.md for the fields
  int exit_code = kProtocolError;
};

// Throws InputError on bad options or unreadable dumps (exit 2 by the CLI's usual path).
ConformResult run_conform(const ConformOptions& options);

}  // namespace kvaudit::conform
