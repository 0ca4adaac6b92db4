// `kvaudit partition` / kvaudit.partition: the input checks and the JSON answer, in one place for every front end.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/io/npy.h"
#include "core/pooling/greedy_partition.h"
#include "core/types.h"
#include "oracle/partition_arith.h"
#include "oracle/partition_enumerate.h"
#include "oracle/partition_exact.h"

namespace kvaudit::api {

// The values are solved exactly as stored (f2, f4 or f8: read_npy never rounds). A vector meant to sum to 1
// but stored in float32 sums to 1 only within n 2^-24; we accept |sum - 1| <= 1e-4 (n up to ~1600 at that
// rate; attention rows exported in bf16 are renormalized by the caller). The check sums in double: it gates
// input, it decides nothing the answer depends on.
constexpr double kPartitionSumTolerance = 1e-4;

// `src` names the input in errors (the .npy path, or "probs" in Python).
inline void check_partition_input(const std::vector<std::int64_t>& shape, const std::vector<double>& p,
                                  const std::string& src, double budget, std::optional<long long> groups) {
  if (shape.size() != 1) throw InputError(src, "shape", "expected a 1-D probability vector");
  if (p.empty()) throw InputError(src, "values", "expected floating values, at least one");
  io::require_finite(std::span<const double>(p), src, "values");
  double sum = 0.0;
  for (double x : p) {
    if (x < 0) throw InputError(src, "values", "probabilities must be >= 0");
    sum += x;
  }
  if (std::fabs(sum - 1.0) > kPartitionSumTolerance)
    throw InputError(src, "values", "probabilities sum to " + std::to_string(sum) + ", not 1 within 1e-4");
  if (!std::isfinite(budget) || budget < 0) throw InputError("--entropy-budget", "R", "must be finite and >= 0");
  const auto n = static_cast<long long>(p.size());
  if (groups && (*groups < 1 || *groups > n)) throw InputError("--groups", "M", "must be in [1, " + std::to_string(n) + "]");
}

// The exact search's default node limit (CLI `--node-limit`, Python): high enough that the time limit is what stops.
constexpr std::int64_t kDefaultPartitionNodeLimit = 4'000'000'000;

inline oracle::ExactLimits partition_limits(std::int64_t node_limit, double time_limit) {
  oracle::ExactLimits l{node_limit, time_limit};
  l.branch_first_nodes = std::min<std::int64_t>(l.branch_first_nodes, node_limit);
  return l;
}

// The greedy's answer: its feasibility is decided exactly, its optimality is not claimed.
inline nlohmann::json describe_greedy_partition(const std::vector<double>& p, double budget, std::optional<Index> m) {
  const auto g = pooling::greedy_partition(p, m, budget);
  const oracle::ExactPrefix prefix(p);
  const auto b = oracle::full_bounds(g.cuts, static_cast<Index>(p.size()));
  using D = oracle::ExactPrefix::Decision;
  return {{"solver", "greedy"}, {"boundaries", g.cuts}, {"groups", g.cuts.size() + 1},
          {"entropy_bits", prefix.entropy_extended(b)}, {"feasible", prefix.compare_with(b, budget) != D::Greater},
          {"optimal", nullptr}, {"lookahead_steps", g.lookahead_steps}};
}

// `enumerate` or `exact` (the certified solver). Heavy: callers that hold a lock release it around this.
inline oracle::PartitionAnswer solve_partition(const std::vector<double>& p, double budget, std::optional<Index> m,
                                               const std::string& solver, const oracle::ExactLimits& limits) {
  const oracle::PartitionProblem prob{p, budget, m};
  try {
    return solver == "enumerate" ? oracle::enumerate_partitions(prob) : oracle::solve_exact(prob, limits);
  } catch (const std::length_error& e) {
    throw InputError("--solver", "enumerate", e.what());
  }
}

inline nlohmann::json describe_partition_answer(const oracle::PartitionAnswer& a) {
  using nlohmann::json;
  json out = {{"solver", a.solver}, {"boundaries", a.cuts}, {"groups", a.feasible ? a.cuts.size() + 1 : 0},
              {"entropy_bits", a.feasible ? json(a.entropy_bits) : json(nullptr)},
              {"feasible", a.feasible}, {"certified", a.certified}, {"complete", a.complete},
              {"optimum_upper_bound", std::isfinite(a.optimum_upper) ? json(a.optimum_upper) : json(nullptr)},
              // The proven bracket [entropy_bits, optimum_upper_bound]: 0 when certified, null when infeasible.
              {"bracket_width_bits", a.feasible ? json(a.bracket_width()) : json(nullptr)},
              {"upper_bound_source", a.upper_source},
              {"nodes", a.nodes}, {"exact_decisions", a.extended_decisions}};
  if (!a.note.empty()) out["note"] = a.note;
  return out;
}

// The fields every answer ends with: the input as it was solved.
inline void describe_partition_input(nlohmann::json& out, std::size_t n, const std::string& dtype, double budget,
                                     bool fixed_m) {
  out["n"] = n;
  out["input_dtype"] = dtype;  // solved as stored, never narrowed
  out["entropy_budget"] = budget;
  out["form"] = fixed_m ? "fixed-m" : "free";
}

// The whole question: input checks, then the solver (greedy, enumerate or the certified exact one), then the
// answer with its input fields. `source` names the input in error messages (a file, or Python's argument name).
inline nlohmann::json partition_answer(const std::vector<std::int64_t>& shape, const std::vector<double>& p,
                                       const std::string& dtype, const std::string& source, double budget,
                                       std::optional<long long> groups, const std::string& solver,
                                       const oracle::ExactLimits& limits) {
  if (solver != "exact" && solver != "enumerate" && solver != "greedy")
    throw InputError("--solver", "solver", "expected exact, enumerate or greedy, got '" + solver + "'");
  check_partition_input(shape, p, source, budget, groups);
  const std::optional<Index> m = groups ? std::optional<Index>(*groups) : std::nullopt;
  nlohmann::json out = solver == "greedy" ? describe_greedy_partition(p, budget, m)
                                          : describe_partition_answer(solve_partition(p, budget, m, solver, limits));
  describe_partition_input(out, p.size(), dtype, budget, m.has_value());
  return out;
}

}  // namespace kvaudit::api
