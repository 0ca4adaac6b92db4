// `kvaudit partition`: the entropy-budgeted contiguous partition of a 1-D probability vector (SPEC section 4)
// by the certified exact solver, exhaustive enumeration or the greedy heuristic, printed as one JSON object.
#include <cmath>
#include <iostream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/command_registry.h"
#include "cli/partition_output.h"
#include "core/io/npy.h"

namespace {
struct Options {
  std::string probs;
  double budget = std::nan("");
  std::optional<long long> groups;
  std::string solver = "exact";
  double time_limit = 10.0;
  long node_limit = kvaudit::cli::kDefaultPartitionNodeLimit;
};

void run(const Options& o) {
  namespace cli = kvaudit::cli;
  const auto arr = kvaudit::io::read_npy(o.probs);
  cli::check_partition_input(arr.shape, arr.values, o.probs, o.budget, o.groups);
  const std::optional<kvaudit::Index> m = o.groups ? std::optional<kvaudit::Index>(*o.groups) : std::nullopt;
  nlohmann::json out =
      o.solver == "greedy"
          ? cli::describe_greedy_partition(arr.values, o.budget, m)
          : cli::describe_partition_answer(cli::solve_partition(arr.values, o.budget, m, o.solver,
                                                                cli::partition_limits(o.node_limit, o.time_limit)));
  cli::describe_partition_input(out, arr.values.size(), arr.dtype, o.budget, m.has_value());
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
