// Shared input handling of `kvaudit page-select`, `check-pages` and `union-overhead`: one layer's (q_heads, T)
// attention from an NPY file or from a real dump, validated as per-head distributions (api/input_checks.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <string>

#include <CLI/CLI.hpp>

#include "api/input_checks.h"
#include "core/error.h"
#include "core/io/dump.h"
#include "core/io/npy.h"
#include "core/paging/page_options.h"
#include "core/types.h"

namespace kvaudit::cli {

struct AttnSource {
  std::string attn;               // NPY (q_heads, T)
  std::string data, prompt;       // or a dump: --data DIR --prompt NAME --layer L
  long long layer = -1;
};

// The Page-EntroKV flags of page-select and check-pages (parsed by paging::parse_page_options).
inline void add_page_options(CLI::App* cmd, paging::PageOptions& o) {
  cmd->add_option("--group-size", o.group_size, "G: query heads per KV head")->required();
  cmd->add_option("--page-size", o.page_size, "P: tokens per page")->capture_default_str();
  cmd->add_option("--compression-ratio", o.ratio, "rho, the fraction removed, as a decimal")->required();
  cmd->add_option("--sinks", o.sinks, "n_sink: leading positions isolated from the entropy weights")->capture_default_str();
  cmd->add_option("--preset", o.preset, "kvaudit (default) | released | paper | entro-prefill: every choice below at once; a flag given overrides it");
  cmd->add_option("--pooling", o.pooling, "entropy | mean (default: the preset's)");
  cmd->add_option("--temperature", o.temperature, "tau of the head weights w ~ exp(-H2/tau) = c^(1/tau); 1/tau an integer (1, 0.5, ...)");
  cmd->add_option("--entropy-on", o.entropy_on, "what H2 is computed on: sink-isolated | raw");
  cmd->add_option("--page-score", o.page_score, "sum | max");
  cmd->add_option("--source", o.source, "what is pooled: sink-isolated | raw");
  cmd->add_option("--sink-pages", o.sink_pages, "reserved | scored");
  cmd->add_option("--budget-unit", o.budget_unit, "tokens (walked) | pages (a page count, top-k)");
  cmd->add_option("--page-count-rule", o.page_count_rule, "with --budget-unit pages: paper floor((1-rho)T/P) | entro-prefill max(1, floor((1-rho)ceil(T/P)))");
  cmd->add_option("--greedy", o.greedy, "skip-misfits | stop-at-first-misfit");
}

inline void add_attn_options(CLI::App* cmd, AttnSource& s) {
  cmd->add_option("--attn", s.attn, "NPY file, (q_heads, T): one distribution over positions per query head");
  cmd->add_option("--data", s.data, "dump directory (instead of --attn): use attention.window_mean of --prompt at --layer");
  cmd->add_option("--prompt", s.prompt, "prompt name in the dump manifest");
  cmd->add_option("--layer", s.layer, "layer of the dump");
}

// (1, q_heads, T) as a ScoreTensor, validated; throws InputError naming the file and the field. `precision`
// records the stored dtype and how many values float32 rounded.
inline ScoreTensor load_attention(const AttnSource& s, api::Float32Input& precision) {
  ScoreTensor out;
  std::string source;
  if (!s.attn.empty()) {
    if (!s.data.empty()) throw InputError("--attn", "attn", "give either --attn or --data, not both");
    source = s.attn;
    io::NpyArray a = io::read_npy(s.attn);
    if (a.shape.size() != 2 || a.values.empty()) throw InputError(s.attn, "shape", "expected a floating (q_heads, T) array");
    out = {1, a.shape[0], a.shape[1], api::narrow_for_float32(a, s.attn, precision)};
  } else if (!s.data.empty()) {
    if (s.prompt.empty() || s.layer < 0) throw InputError("--data", "prompt", "--data needs --prompt and --layer");
    const auto dumps = io::load_dumps(s.data);
    const auto it = std::find_if(dumps.begin(), dumps.end(), [&](const io::PromptDump& d) { return d.name == s.prompt; });
    if (it == dumps.end()) throw InputError(s.data, "prompt", "no prompt named '" + s.prompt + "'");
    source = it->file;
    const ScoreTensor all = it->scores("attention.window_mean");
    if (s.layer >= all.layers) throw InputError(it->file, "layer", "layer " + std::to_string(s.layer) + " >= " + std::to_string(all.layers));
    precision = {"dump", 0};  // dumps store f16, bf16 or f32: float32 holds them exactly
    out = {1, all.heads, all.tokens, {}};
    out.values.assign(all.values.begin() + s.layer * all.heads * all.tokens, all.values.begin() + (s.layer + 1) * all.heads * all.tokens);
  } else {
    throw InputError("--attn", "attn", "an input is required (--attn FILE or --data DIR --prompt NAME --layer L)");
  }
  api::require_distribution_rows(out, source);
  return out;
}

}  // namespace kvaudit::cli
