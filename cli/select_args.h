// Flags and input shared by `kvaudit select` and `kvaudit check`: the selector's options (api/chunk_answers.h), the
// NPY score file.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "api/chunk_answers.h"
#include "api/input_checks.h"
#include "core/error.h"
#include "core/io/npy.h"

namespace kvaudit::cli {

struct SelectArgs {
  std::string scores;
  api::SelectOptions options;
};

inline void add_select_options(CLI::App* cmd, SelectArgs& args) {
  api::SelectOptions& a = args.options;
  cmd->add_option("--method", a.method, "chunkkv or eg-chunkkv")->required()->check(CLI::IsMember({"chunkkv", "eg-chunkkv"}));
  cmd->add_option("--scores", args.scores, "NPY file of shape (T,) or (heads, T), float16/32/64")->required();
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

inline api::ScoreFile read_score_file(const std::string& path) {
  io::NpyArray a = io::read_npy(path);
  if (a.dtype.size() < 2 || a.dtype[1] != 'f')
    throw InputError(path, "dtype", "expected float16, float32 or float64 scores, got '" + a.dtype + "'");
  api::ScoreFile f = api::score_file_shape(a.shape, path);
  f.values = api::narrow_for_float32(a, path, f.precision);
  return f;
}

}  // namespace kvaudit::cli
