// Where conformance cases come from: the property suites' RapidCheck generators, and rows of real dumps.
#pragma once

#include <string>
#include <vector>

#include <rapidcheck.h>

#include "audit/conform/conform_case.h"
#include "core/io/dump.h"

namespace kvaudit::conform {

// The generators of audit/selector_cases.h for `method` / `flavour`, as ConformCases (shrinks included).
rc::Gen<ConformCase> generated_cases(Method method, Flavour flavour);

// One case per (prompt, layer, ratio) of `scores.snapkv` in the dumps, with kvpress's default chunk length
// for the method (EG-ChunkKV 10, ChunkKV 20) and rescue size 4.
std::vector<ConformCase> dump_cases(const std::vector<io::PromptDump>& dumps, Method method, Flavour flavour);

// The compression ratios dump rows are run at.
const std::vector<std::string>& dump_ratios();

// A concrete case (a dump row, a replayed request) made shrinkable: drop a head, keep a prefix of the tokens,
// quantize the values to a few levels, simplify the ratio / chunk length / rescue size. Every candidate keeps
// the parameters valid for the flavour (kvpress asserts chunk_length > rescue_size for EG-ChunkKV).
rc::Shrinkable<ConformCase> shrinkable_concrete(ConformCase c);

}  // namespace kvaudit::conform
