// `kvaudit budget`: every budget rule for one (T, rho, c), the reproduce command of budget findings.
#include <iostream>

#include "api/chunk_answers.h"
#include "cli/command_registry.h"

namespace {

struct BudgetArgs {
  long long tokens = 0;
  std::string ratio;
  long long chunk_length = 10;
};

const bool registered = kvaudit::cli::register_command([](CLI::App& root) {
  auto args = std::make_shared<BudgetArgs>();
  auto* cmd = root.add_subcommand("budget", "Print the exact and kvpress budgets and ChunkKV's possible kept-token counts");
  cmd->add_option("--tokens", args->tokens, "context length T")->required();
  cmd->add_option("--compression-ratio", args->ratio, "rho, the fraction removed, as a decimal")->required();
  cmd->add_option("--chunk-length", args->chunk_length, "chunk length c")->capture_default_str();
  cmd->callback([args] { std::cout << kvaudit::api::budget_answer(args->tokens, args->ratio, args->chunk_length).dump() << "\n"; });
});

}  // namespace
