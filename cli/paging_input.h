// Shared input handling of `kvaudit page-select` and `kvaudit union-overhead`: one layer's (q_heads, T)
// attention from an NPY file or from a real dump, validated as per-head distributions.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>

#include <CLI/CLI.hpp>

#include "core/error.h"
#include "core/io/dump.h"
#include "core/io/npy.h"
#include "cli/float32_input.h"
#include "core/types.h"

namespace kvaudit::cli {

struct AttnSource {
  std::string attn;               // NPY (q_heads, T)
  std::string data, prompt;       // or a dump: --data DIR --prompt NAME --layer L
  long long layer = -1;
};

inline void add_attn_options(CLI::App* cmd, AttnSource& s) {
  cmd->add_option("--attn", s.attn, "NPY file, (q_heads, T): one distribution over positions per query head");
  cmd->add_option("--data", s.data, "dump directory (instead of --attn): use attention.window_mean of --prompt at --layer");
  cmd->add_option("--prompt", s.prompt, "prompt name in the dump manifest");
  cmd->add_option("--layer", s.layer, "layer of the dump");
}

// A row is a distribution if it is non-negative and sums to 1 within kRowSumTolerance(T): a float32 softmax row
// sums to 1 within T 2^-24 (accumulation) and the window mean adds one more rounding per query, so
// 2 T 2^-24 covers float32 dumps with a factor-2 margin; the 1e-3 floor admits float16 storage (2^-11 per value).
inline double row_sum_tolerance(Index tokens) { return 1e-3 + 2.0 * static_cast<double>(tokens) * std::ldexp(1.0, -24); }

// Every head row of a (1, q_heads, T) tensor is a distribution: finite, non-negative, summing to 1 within
// row_sum_tolerance(T). Throws InputError naming `source`; shared by the CLI and the Python front end.
inline void require_distribution_rows(const ScoreTensor& out, const std::string& source) {
  if (out.heads < 1 || out.tokens < 1) throw InputError(source, "shape", "q_heads and T must be >= 1");
  io::require_finite(out.values, source, "values");
  const double tol = row_sum_tolerance(out.tokens);
  for (Index h = 0; h < out.heads; ++h) {
    double sum = 0;
    for (float v : out.row(0, h)) {
      if (v < 0) throw InputError(source, "values", "row " + std::to_string(h) + " has a negative entry");
      sum += v;
    }
    if (std::abs(sum - 1.0) > tol)
      throw InputError(source, "values", "row " + std::to_string(h) + " sums to " + std::to_string(sum) + ", not a distribution");
  }
}

// (1, q_heads, T) as a ScoreTensor, validated; throws InputError naming the file and the field. `precision`
// records the stored dtype and how many values float32 rounded.
inline ScoreTensor load_attention(const AttnSource& s, Float32Input& precision) {
  ScoreTensor out;
  std::string source;
  if (!s.attn.empty()) {
    if (!s.data.empty()) throw InputError("--attn", "attn", "give either --attn or --data, not both");
    source = s.attn;
    io::NpyArray a = io::read_npy(s.attn);
    if (a.shape.size() != 2 || a.values.empty()) throw InputError(s.attn, "shape", "expected a floating (q_heads, T) array");
    out = {1, a.shape[0], a.shape[1], narrow_for_float32(a, s.attn, precision)};
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
  require_distribution_rows(out, source);
  return out;
}

}  // namespace kvaudit::cli
