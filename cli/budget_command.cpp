// `kvaudit budget`: every budget rule for one (T, rho, c), the reproduce command of budget findings.
#include <iostream>

#include "audit/budget_match.h"
#include "cli/command_registry.h"
#include "core/compression_ratio.h"
#include "core/error.h"
#include "oracle/chunk_selection.h"

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
  cmd->callback([args] {
    if (args->tokens < 1 || args->tokens > (1LL << 40)) throw kvaudit::InputError("--tokens", "tokens", "must be in [1, 2^40]");
    if (args->chunk_length < 1) throw kvaudit::InputError("--chunk-length", "chunk_length", "must be >= 1");
    kvaudit::CompressionRatio rho = kvaudit::parse_compression_ratio(args->ratio);
    auto ck = kvaudit::audit::chunkkv_token_counts(args->tokens, rho.value, args->chunk_length);
    kvaudit::Index eg = kvaudit::oracle::kvpress_token_budget(args->tokens, rho.value);
    nlohmann::json chunkkv = {{"kept_chunks", ck.kept_chunks}, {"kept_tokens_without_partial_chunk", ck.without_partial},
                              {"per_head_fallback", ck.per_head_fallback}};
    if (ck.with_partial >= 0) chunkkv["kept_tokens_with_partial_chunk"] = ck.with_partial;
    bool matched = ck.without_partial == eg || ck.with_partial == eg;
    std::cout << nlohmann::json{{"tokens", args->tokens},
                                {"compression_ratio", rho.text},
                                {"chunk_length", args->chunk_length},
                                {"exact_budget", kvaudit::oracle::exact_token_budget(args->tokens, rho.text)},
                                {"kvpress_float_budget", eg},
                                {"eg_chunkkv_kept_tokens", eg},
                                {"chunkkv", chunkkv},
                                {"budget_matched", matched}}
                     .dump()
              << "\n";
  });
});

}  // namespace
