// `kvaudit page-select`: Page-EntroKV on one layer's (q_heads, T) attention; kept pages per KV group, retained
// tokens, head weights, and the verdict of the exact oracle on the same input (exit 1 if it disagrees).
#include <iostream>

#include "api/page_answers.h"
#include "cli/command_registry.h"
#include "cli/paging_input.h"

namespace {

struct PageSelectArgs {
  kvaudit::cli::AttnSource input;
  kvaudit::paging::PageOptions options;
};

const bool registered = kvaudit::cli::register_command([](CLI::App& root) {
  auto a = std::make_shared<PageSelectArgs>();
  auto* cmd = root.add_subcommand("page-select", "Page-EntroKV page selection per KV group, checked against the exact oracle");
  kvaudit::cli::add_attn_options(cmd, a->input);
  kvaudit::cli::add_page_options(cmd, a->options);
  cmd->callback([a] {
    using namespace kvaudit;
    const PageParams p = paging::parse_page_options(a->options);
    api::Float32Input input;
    const ScoreTensor attn = cli::load_attention(a->input, input);
    const api::Answer answer = api::page_select_answer(attn, p, input);
    std::cout << answer.body.dump() << "\n";
    cli::exit_code() = api::exit_code(answer.verdict);
  });
});

}  // namespace
