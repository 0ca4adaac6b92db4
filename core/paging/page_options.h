// Page-EntroKV options as every front end receives them (flags, Python keywords, conform's JSON fields), parsed
// into PageParams in one place, with the presets that select each published variant.
#pragma once

#include <string>
#include <vector>

#include "core/types.h"

namespace kvaudit::paging {

// The choice knobs as text. An empty knob takes the preset's choice; an empty preset is "kvaudit" (the defaults
// of docs/page-entrokv.md section 1).
struct PageOptions {
  long long group_size = 0, page_size = 16, sinks = 4;
  std::string ratio;  // rho as decimal text
  std::string pooling, page_score, source, sink_pages, greedy;
  std::string preset, temperature, entropy_on, budget_unit, page_count_rule;
};

// The presets, by name: "kvaudit" (the defaults), "released" (PageEntro-KV page_entrokv/core.py), "paper" (the
// paper's main.tex: the same knobs as "released"), "entro-prefill" (Entro-Prefill's GroupPooler and run_niah
// budget). docs/page-entrokv.md section 8 gives each one's knobs and what no knob expresses.
const std::vector<std::string>& page_preset_names();

// Validates and parses every option. InputError(where, field, problem): `where` is `source` when given (a conform
// request), else the option's flag ("--group-size").
PageParams parse_page_options(const PageOptions& options, const std::string& source = "");

// The choice knobs of `options` (preset, then every non-empty knob) over `base`; G, P, sinks and rho are `base`'s.
// What conform's --preset / --page-knob apply to generated and dump cases.
PageParams apply_page_choices(const PageOptions& options, PageParams base, const std::string& source = "");

// tau as decimal text ("1", "0.5", "0.25") -> 1/tau, which must be an integer in [1, 64] (the exact oracle raises
// c_h to it). Throws InputError(source, "temperature", ...).
Index parse_inverse_temperature(const std::string& tau_text, const std::string& source);
// 1/k as the shortest decimal text when it terminates ("0.5"), else "1/k" (never produced by parsing).
std::string temperature_text(Index inverse_temperature);

}  // namespace kvaudit::paging
