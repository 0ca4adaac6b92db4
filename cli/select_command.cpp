// `kvaudit select`: run the optimized ChunkKV / EG-ChunkKV selector on one layer's scores from an NPY file.
#include <iostream>

#include "cli/command_registry.h"
#include "cli/select_args.h"
#include "core/select/chunk_select.h"

namespace {

const bool registered = kvaudit::cli::register_command([](CLI::App& root) {
  auto args = std::make_shared<kvaudit::cli::SelectArgs>();
  auto* cmd = root.add_subcommand("select", "Select the kept positions with the optimized ChunkKV / EG-ChunkKV (JSON on stdout)");
  kvaudit::cli::add_select_options(cmd, *args);
  cmd->callback([args] {
    using namespace kvaudit;
    const SelectorParams p = api::selector_params(args->options);
    const api::ScoreFile f = cli::read_score_file(args->scores);
    std::cout << api::select_answer(p, f, select::select_layer(f.view(), p)).dump() << "\n";
  });
});

}  // namespace
