// `kvaudit select`: run the optimized ChunkKV / EG-ChunkKV selector on one layer's scores from an NPY file.
#include <iostream>
#include <set>

#include "cli/command_registry.h"
#include "cli/select_args.h"

namespace {

const bool registered = kvaudit::cli::register_command([](CLI::App& root) {
  auto args = std::make_shared<kvaudit::cli::SelectArgs>();
  auto* cmd = root.add_subcommand("select", "Select the kept positions with the optimized ChunkKV / EG-ChunkKV (JSON on stdout)");
  kvaudit::cli::add_select_options(cmd, *args);
  cmd->callback([args] {
    using namespace kvaudit;
    const SelectorParams p = cli::to_params(*args);
    const cli::ScoreFile f = cli::read_score_file(args->scores);
    const Selection sel = select::select_layer(f.view(), p);

    nlohmann::json out = cli::describe_params(p, f);
    const Index declared = cli::declared_token_budget(p, f.tokens);
    out["per_head"] = sel.per_head();
    if (sel.per_head()) {
      // kvpress ChunkKV with T < C: the inner scorer's top-k, a different set per head. "kept" is their
      // union (what any head keeps); "kept_per_head" is the selection itself; "budget" is per head.
      std::set<Index> all;
      for (const Positions& h : sel.kept) all.insert(h.begin(), h.end());
      out["kept"] = Positions(all.begin(), all.end());
      out["kept_per_head"] = sel.kept;
    } else {
      out["kept"] = sel.kept[0];
    }
    out["budget"] = declared >= 0 ? declared : static_cast<Index>(sel.kept[0].size());
    std::cout << out.dump() << "\n";
  });
});

}  // namespace
