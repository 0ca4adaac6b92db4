// `kvaudit conform` as a library function: drive an implementation through generated and dump cases, judge
// every answer, shrink the first violation, and say what happened as a JSON report plus an exit code.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/types.h"

namespace kvaudit::conform {

struct ConformOptions {
  Method method = Method::EgChunkKV;
  Flavour flavour = Flavour::Kvpress;
  std::string impl;                 // shell command
  int cases = 200;                  // generated cases
  std::uint64_t seed = 1;
  std::string dumps_dir;            // empty: no dump cases
  int timeout_ms = 10000;
  int startup_timeout_ms = 120000;  // first request after each (re)start: interpreters importing torch are slow
  std::vector<std::string> replay;  // request lines to run instead of generated cases (--replay)
  int max_shrink_queries = 4000;
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
