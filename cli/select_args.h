// Options and input shared by `kvaudit select` and `kvaudit check`: selector flags, the NPY score file.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/float32_input.h"
#include "core/compression_ratio.h"
#include "core/error.h"
#include "core/io/npy.h"
#include "core/select/chunk_select.h"
#include "core/types.h"

namespace kvaudit::cli {

struct SelectArgs {
  std::string method;
  std::string scores;
  std::string ratio;
  std::optional<long long> chunk_length;  // default by method: 10 (eg-chunkkv), 20 (chunkkv)
  long long rescue_size = 4;
  std::optional<double> entropy_threshold;
  std::string flavour = "kvpress";
  std::string median = "lower";
};

inline void add_select_options(CLI::App* cmd, SelectArgs& a) {
  cmd->add_option("--method", a.method, "chunkkv or eg-chunkkv")->required()->check(CLI::IsMember({"chunkkv", "eg-chunkkv"}));
  cmd->add_option("--scores", a.scores, "NPY file of shape (T,) or (heads, T), float16/32/64")->required();
  cmd->add_option("--compression-ratio", a.ratio, "rho, the fraction removed, as a plain decimal in [0, 1)")->required();
  cmd->add_option("--chunk-length", a.chunk_length, "chunk length C (default 10 for eg-chunkkv, 20 for chunkkv)");
  cmd->add_option("--rescue-size", a.rescue_size, "tokens kept from an important spiky chunk (kvpress: low_entropy_chunk_length)")
      ->capture_default_str();
  cmd->add_option("--entropy-threshold", a.entropy_threshold, "fixed entropy gate tau (exact flavour only; default: median)");
  cmd->add_option("--flavour", a.flavour, "kvpress (released code) or exact (seeds' description, exact budget)")
      ->check(CLI::IsMember({"kvpress", "exact"}))
      ->capture_default_str();
  cmd->add_option("--median", a.median, "lower (torch) or mean (of the two middles; exact flavour only)")
      ->check(CLI::IsMember({"lower", "mean"}))
      ->capture_default_str();
}

// Parses and validates every selector flag (InputError naming the flag on bad input).
inline SelectorParams to_params(const SelectArgs& a) {
  SelectorParams p;
  p.method = a.method == "chunkkv" ? Method::ChunkKV : Method::EgChunkKV;
  p.flavour = a.flavour == "exact" ? Flavour::Exact : Flavour::Kvpress;
  p.ratio = parse_compression_ratio(a.ratio, "--compression-ratio");
  p.chunk_length = a.chunk_length ? *a.chunk_length : (p.method == Method::ChunkKV ? 20 : 10);
  p.rescue_size = a.rescue_size;
  p.entropy_threshold = a.entropy_threshold;
  p.median = a.median == "mean" ? MedianRule::MeanOfMiddles : MedianRule::Lower;
  select::validate_params(p);
  return p;
}

// A (heads, T) float score matrix read from NPY: (T,) is one head.
struct ScoreFile {
  Index heads = 0, tokens = 0;
  std::vector<float> values;
  Float32Input precision;
  HeadScores view() const { return HeadScores{heads, tokens, {values.data(), values.size()}}; }
};

// heads and T of a (T,) or (heads, T) score array, validated (shared with the Python front end).
inline ScoreFile score_file_shape(const std::vector<Index>& shape, const std::string& path) {
  ScoreFile f;
  if (shape.size() == 1) {
    f.heads = 1;
    f.tokens = shape[0];
  } else if (shape.size() == 2) {
    f.heads = shape[0];
    f.tokens = shape[1];
  } else {
    throw InputError(path, "shape", "expected (T,) or (heads, T), got rank " + std::to_string(shape.size()));
  }
  if (f.heads < 1 || f.tokens < 1) throw InputError(path, "shape", "empty score array (heads and T must be >= 1)");
  return f;
}

inline ScoreFile read_score_file(const std::string& path) {
  io::NpyArray a = io::read_npy(path);
  if (a.dtype.size() < 2 || a.dtype[1] != 'f')
    throw InputError(path, "dtype", "expected float16, float32 or float64 scores, got '" + a.dtype + "'");
  ScoreFile f = score_file_shape(a.shape, path);
  f.values = narrow_for_float32(a, path, f.precision);
  return f;
}

inline const char* method_name(Method m) { return m == Method::ChunkKV ? "chunkkv" : "eg-chunkkv"; }
inline const char* flavour_name(Flavour f) { return f == Flavour::Kvpress ? "kvpress" : "exact"; }

// What a selector keeps under `p` for T tokens: tokens (EG-ChunkKV) or whole chunks (ChunkKV).
inline nlohmann::json describe_params(const SelectorParams& p, const ScoreFile& f) {
  nlohmann::json j = {{"method", method_name(p.method)},
                      {"flavour", flavour_name(p.flavour)},
                      {"compression_ratio", p.ratio.text},
                      {"tokens", f.tokens},
                      {"heads", f.heads},
                      {"chunk_length", p.chunk_length},
                      {"budget_rule", select::budget_rule(p)},
                      {"precision", f.precision.describe()}};
  if (p.method == Method::EgChunkKV) {
    j["rescue_size"] = p.rescue_size;
    j["median"] = p.median == MedianRule::Lower ? "lower" : "mean";
    j["entropy_threshold"] = p.entropy_threshold ? nlohmann::json(*p.entropy_threshold) : nlohmann::json(nullptr);
  } else {
    const Index n_chunks = (f.tokens + p.chunk_length - 1) / p.chunk_length;
    j["n_chunks"] = n_chunks;
    if (p.ratio.value == 0.0) j["budget_chunks"] = n_chunks;
    else if (f.tokens >= p.chunk_length)
      j["budget_chunks"] = p.flavour == Flavour::Kvpress ? kvpress_float_budget(n_chunks, p.ratio.value)
                                                          : exact_budget(n_chunks, p.ratio);
  }
  return j;
}

// The token budget the flavour declares for one head (EG-ChunkKV, ChunkKV's fallback), or -1 for
// ChunkKV's chunk rule, whose token count depends on whether the partial chunk is kept.
inline Index declared_token_budget(const SelectorParams& p, Index T) {
  if (p.ratio.value == 0.0) return T;
  const bool kvpress = p.flavour == Flavour::Kvpress;
  if (p.method == Method::ChunkKV && T >= p.chunk_length) return -1;
  return kvpress ? kvpress_float_budget(T, p.ratio.value) : exact_budget(T, p.ratio);
}

// `kvaudit select`'s output for a selection (shared with the Python front end).
inline nlohmann::json describe_selection(const SelectorParams& p, const ScoreFile& f, const Selection& sel) {
  nlohmann::json out = describe_params(p, f);
  const Index declared = declared_token_budget(p, f.tokens);
  out["per_head"] = sel.per_head();
  if (sel.per_head()) {
    // kvpress ChunkKV with T < C: the inner scorer's top-k, a different set per head. "kept" is their
    // union (what any head keeps); "kept_per_head" is the selection itself; "budget" is per head.
    std::set<Index> all;
    for (const Positions& h : sel.kept) all.insert(h.begin(), h.end());
    out["kept"] = Positions(all.begin(), all.end());
    out["kept_per_head"] = sel.kept;
  } else {
    out["kept"] = sel.kept[0];
  }
  out["budget"] = declared >= 0 ? declared : static_cast<Index>(sel.kept[0].size());
  return out;
}

}  // namespace kvaudit::cli
