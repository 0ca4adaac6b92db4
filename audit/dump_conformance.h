// Real-dump conformance: is each selection the released kvpress presses actually made (kept.* tensors,
// recorded by tools/export) admissible for the oracle, given the exact scores the press ranked
// (scores.snapkv)? Pits kvpress 0.5.5 against oracle::check_admissible (kvpress flavour).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "audit/audit_context.h"
#include "core/types.h"
#include "core/verdict.h"

namespace kvaudit::audit {

// The press configurations the exporter records, by their dump names: chunkkv_c<C> (ChunkKVPress,
// chunk_length C) and eg_chunkkv_c<C>_r<R> (EntropyGatedChunkKVPress, chunk_length C,
// low_entropy_chunk_length R). All use kvpress's SnapKVPress as inner scorer.
struct DumpPressConfig {
  std::string name;
  Method method = Method::ChunkKV;
  Index chunk_length = 0;
  Index rescue_size = 4;
};
std::optional<DumpPressConfig> parse_dump_press(const std::string& name);

// One recorded selection and the oracle's verdict on it.
struct DumpConformanceCase {
  std::string prompt;  // PromptDump::key(): model/prompt
  std::string press;
  std::string ratio;  // decimal text, as in the tensor name
  Index layer = 0;
  Index tokens = 0;
  Index kept = 0;     // positions the press kept at this layer
  Verdict verdict;    // NotRun with rule "oracle-error" if the oracle threw
  std::string scores;  // the scores.* tensor the press ranked
  bool canonical = false;  // equal to the oracle's canonical selection (else judged by check_admissible)
};

// The oracle's parameters for a recorded press at a ratio (kvpress flavour, lower median).
SelectorParams dump_case_params(const DumpPressConfig& press, const std::string& ratio);

// Checks one recorded selection: prompt `dump`, tensor kept.<press>.cr<ratio>, row `layer`.
// Throws InputError if the tensor or layer does not exist.
DumpConformanceCase check_dump_case(const io::PromptDump& dump, const std::string& press, const std::string& ratio,
                                    Index layer);

// Every kept.* tensor of every dump, every layer (only layers {0, L/2, L-1} when `quick`).
std::vector<DumpConformanceCase> check_dump_conformance(const std::vector<io::PromptDump>& dumps, bool quick = false);

// The command that re-runs exactly one case from the shipped data (see tests/unit/real_dump_conformance_test.cpp).
std::string dump_case_reproduce_command(const DumpConformanceCase& c);

// Audit stage "dump-conformance": counts per press and ratio (conforming / violating / inconclusive /
// not run), each non-conforming case as a finding with its exact inputs and reproduce command.
Section dump_conformance_section(const AuditContext& ctx);

}  // namespace kvaudit::audit
