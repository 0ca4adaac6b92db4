// `kvaudit partition`: the entropy-budgeted contiguous partition of a 1-D probability vector (docs/pooling.md)
// by the certified exact solver, exhaustive enumeration or the greedy heuristic, printed as one JSON object.
#include <cmath>
#include <iostream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "api/partition_answers.h"
#include "cli/command_registry.h"
#include "core/io/npy.h"

namespace {
struct Options {
  std::string probs;
  double budget = std::nan("");
  std::optional<long long> groups;
  std::string solver = "exact";
  double time_limit = 10.0;
  long node_limit = kvaudit::api::kDefaultPartitionNodeLimit;
};

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
  cmd->callback([opts] {
    namespace api = kvaudit::api;
    const auto arr = kvaudit::io::read_npy(opts->probs);
    std::cout << api::partition_answer(arr.shape, arr.values, arr.dtype, opts->probs, opts->budget, opts->groups, opts->solver,
                                       api::partition_limits(opts->node_limit, opts->time_limit))
                     .dump()
              << "\n";
  });
});
}  // namespace
