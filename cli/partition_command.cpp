// `kvaudit partition`: the entropy-budgeted contiguous partition of a 1-D probability vector (SPEC section 4)
// by the certified exact solver, exhaustive enumeration or the greedy heuristic, printed as one JSON object.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <optional>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "cli/command_registry.h"
#include "core/error.h"
#include "core/io/npy.h"
#include "core/pooling/greedy_partition.h"
#include "oracle/partition_arith.h"
#include "oracle/partition_enumerate.h"
#include "oracle/partition_exact.h"

namespace {
// The values are solved exactly as stored (f2, f4 or f8: read_npy never rounds). A vector meant to sum to 1
// but stored in float32 sums to 1 only within n 2^-24; we accept |sum - 1| <= 1e-4 (n up to ~1600 at that
// rate; attention rows exported in bf16 are renormalized by the caller). The check sums in double: it gates
// input, it decides nothing the answer depends on.
constexpr double kSumTolerance = 1e-4;

struct Options {
  std::string probs;
  double budget = std::nan("");
  std::optional<long> groups;
  std::string solver = "exact";
  double time_limit = 10.0;
  long node_limit = 4'000'000'000;
};

void run(const Options& o) {
  using kvaudit::InputError;
  const auto arr = kvaudit::io::read_npy(o.probs);
  if (arr.shape.size() != 1) throw InputError(o.probs, "shape", "expected a 1-D probability vector");
  if (arr.values.empty()) throw InputError(o.probs, "values", "expected floating values, at least one");
  kvaudit::io::require_finite(std::span<const double>(arr.values), o.probs, "values");
  const std::vector<double>& p = arr.values;
  double sum = 0.0;
  for (double x : p) {
    if (x < 0) throw InputError(o.probs, "values", "probabilities must be >= 0");
    sum += x;
  }
  if (std::fabs(sum - 1.0) > kSumTolerance)
    throw InputError(o.probs, "values", "probabilities sum to " + std::to_string(sum) + ", not 1 within 1e-4");
  if (!std::isfinite(o.budget) || o.budget < 0) throw InputError("--entropy-budget", "R", "must be finite and >= 0");
  const long n = static_cast<long>(p.size());
  if (o.groups && (*o.groups < 1 || *o.groups > n))
    throw InputError("--groups", "M", "must be in [1, " + std::to_string(n) + "]");
  const std::optional<kvaudit::Index> m = o.groups ? std::optional<kvaudit::Index>(*o.groups) : std::nullopt;
  nlohmann::json out;
  if (o.solver == "greedy") {
    const auto g = kvaudit::pooling::greedy_partition(p, m, o.budget);
    const kvaudit::oracle::ExactPrefix prefix(p);
    const auto b = kvaudit::oracle::full_bounds(g.cuts, n);
    using D = kvaudit::oracle::ExactPrefix::Decision;
    // Feasibility of the returned partition, decided exactly; its optimality is not claimed.
    out = {{"solver", "greedy"}, {"boundaries", g.cuts}, {"groups", g.cuts.size() + 1},
           {"entropy_bits", prefix.entropy_extended(b)}, {"feasible", prefix.compare_with(b, o.budget) != D::Greater},
           {"optimal", nullptr}, {"lookahead_steps", g.lookahead_steps}};
  } else {
    const kvaudit::oracle::PartitionProblem prob{p, o.budget, m};
    kvaudit::oracle::PartitionAnswer a;
    try {
      a = o.solver == "enumerate" ? kvaudit::oracle::enumerate_partitions(prob)
                                  : kvaudit::oracle::solve_exact(prob, [&] {
                                      kvaudit::oracle::ExactLimits l{o.node_limit, o.time_limit};
                                      l.branch_first_nodes = std::min<std::int64_t>(l.branch_first_nodes, o.node_limit);
                                      return l;
                                    }());
    } catch (const std::length_error& e) {
      throw InputError("--solver", "enumerate", e.what());
    }
    out = {{"solver", a.solver}, {"boundaries", a.cuts}, {"groups", a.feasible ? a.cuts.size() + 1 : 0},
           {"entropy_bits", a.feasible ? nlohmann::json(a.entropy_bits) : nlohmann::json(nullptr)},
           {"feasible", a.feasible}, {"certified", a.certified}, {"complete", a.complete},
           {"optimum_upper_bound", std::isfinite(a.optimum_upper) ? nlohmann::json(a.optimum_upper) : nlohmann::json(nullptr)},
           // The proven bracket [entropy_bits, optimum_upper_bound]: 0 when certified, null when infeasible.
           {"bracket_width_bits", a.feasible ? nlohmann::json(a.bracket_width()) : nlohmann::json(nullptr)},
           {"upper_bound_source", a.upper_source},
           {"nodes", a.nodes}, {"exact_decisions", a.extended_decisions}};
    if (!a.note.empty()) out["note"] = a.note;
  }
  out["n"] = n;
  out["input_dtype"] = arr.dtype;  // solved as stored, never narrowed
  out["entropy_budget"] = o.budget;
  out["form"] = m ? "fixed-m" : "free";
  std::cout << out.dump() << "\n";
  kvaudit::cli::exit_code() = 0;
}

const bool registered = kvaudit::cli::register_command([](CLI::App& root) {
  auto opts = std::make_shared<Options>();
  auto* cmd = root.add_subcommand("partition", "Entropy-budgeted contiguous partition of a probability vector");
  cmd->add_option("--probs", opts->probs, "1-D .npy probability vector")->required();
  cmd->add_option("--entropy-budget", opts->budget, "R in bits: maximize H(q) subject to H(q) <= R")->required();
  cmd->add_option("--groups", opts->groups, "number of groups m (absent: free form, any number)");
  cmd->add_option("--solver", opts->solver, "exact | enumerate | greedy")
      ->check(CLI::IsMember({"exact", "enumerate", "greedy"}));
  cmd->add_option("--time-limit", opts->time_limit, "seconds for the exact search before it reports a bracket");
  cmd->add_option("--node-limit", opts->node_limit, "search nodes for the exact search (a deterministic limit)")
      ->check(CLI::PositiveNumber);
  cmd->callback([opts] { run(*opts); });
});
}  // namespace
