// `kvaudit union-overhead`: how much a paged engine must keep when each query head of a KV group evicts on its
// own scores: |U|/k at token and page level per group, exact, with the identities checked (exit 1 if broken).
#include <iostream>

#include "api/page_answers.h"
#include "cli/command_registry.h"
#include "cli/paging_input.h"

namespace {

struct UnionArgs {
  kvaudit::cli::AttnSource input;
  kvaudit::api::UnionOptions options;
};

const bool registered = kvaudit::cli::register_command([](CLI::App& root) {
  auto a = std::make_shared<UnionArgs>();
  auto* cmd = root.add_subcommand("union-overhead", "Union overhead of head-independent top-k eviction per KV group (token and page level)");
  kvaudit::cli::add_attn_options(cmd, a->input);
  cmd->add_option("--group-size", a->options.group_size, "G: query heads per KV head")->required();
  cmd->add_option("--compression-ratio", a->options.ratio, "rho, the fraction removed, as a decimal")->required();
  cmd->add_option("--page-size", a->options.page_size, "P: tokens per page (page level: each head keeps max(1, floor(k/P)) pages)")
      ->capture_default_str();
  cmd->add_option("--page-score", a->options.page_score, "sum | max")->capture_default_str();
  cmd->callback([a] {
    using namespace kvaudit;
    if (a->options.group_size < 1) throw InputError("--group-size", "group_size", "must be >= 1, got " + std::to_string(a->options.group_size));
    api::Float32Input input;
    const ScoreTensor attn = cli::load_attention(a->input, input);
    const api::Answer answer = api::union_overhead_answer(attn, a->options, input);
    std::cout << answer.body.dump() << "\n";
    cli::exit_code() = api::exit_code(answer.verdict);
  });
});

}  // namespace
