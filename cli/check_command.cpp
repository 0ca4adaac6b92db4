// `kvaudit check`: is a claimed selection one ChunkKV / EG-ChunkKV could produce (oracle admissibility)?
#include <iostream>

#include "cli/command_registry.h"
#include "cli/json_file.h"
#include "cli/select_args.h"

namespace {

using kvaudit::Index;
using kvaudit::InputError;

Index read_position(const nlohmann::json& v, const std::string& path, const std::string& field) {
  if (!v.is_number_integer()) throw InputError(path, field, "every entry must be an integer, got " + v.dump());
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
    throw InputError(path, field, "integer out of range: " + v.dump());
  return v.get<Index>();
}

kvaudit::Positions read_positions(const nlohmann::json& v, const std::string& path, const std::string& field) {
  if (!v.is_array()) throw InputError(path, field, "must be an array of integers");
  kvaudit::Positions out;
  for (const auto& e : v) out.push_back(read_position(e, path, field));
  return out;
}

// {"kept": [...]} or, for a per-head selection, {"kept_per_head": [[...], ...]} (takes precedence).
// Order, duplicates and range are not input errors: they are what the checker judges.
kvaudit::Selection read_selection(const std::string& path) {
  const nlohmann::json j = kvaudit::cli::read_json_object(path, "\"kept\"");
  kvaudit::Selection sel;
  if (j.contains("kept_per_head")) {
    const auto& heads = j["kept_per_head"];
    if (!heads.is_array() || heads.empty()) throw InputError(path, "kept_per_head", "must be a non-empty array of arrays");
    for (const auto& h : heads) sel.kept.push_back(read_positions(h, path, "kept_per_head"));
    return sel;
  }
  if (!j.contains("kept")) throw InputError(path, "kept", "missing");
  sel.kept.push_back(read_positions(j["kept"], path, "kept"));
  return sel;
}

const bool registered = kvaudit::cli::register_command([](CLI::App& root) {
  auto args = std::make_shared<kvaudit::cli::SelectArgs>();
  auto selection = std::make_shared<std::string>();
  auto* cmd = root.add_subcommand("check", "Decide whether a claimed selection is admissible under ChunkKV / EG-ChunkKV (exit 0 admissible, 1 not, 3 inconclusive)");
  kvaudit::cli::add_select_options(cmd, *args);
  cmd->add_option("--selection", *selection, "JSON file: {\"kept\": [positions]} (or \"kept_per_head\")")->required();
  cmd->callback([args, selection] {
    using namespace kvaudit;
    const SelectorParams p = api::selector_params(args->options);
    const api::ScoreFile f = cli::read_score_file(args->scores);
    const api::Answer a = api::check_answer(p, f, read_selection(*selection), std::nullopt);
    std::cout << a.body.dump() << "\n";
    cli::exit_code() = api::exit_code(a.verdict);
  });
});

}  // namespace
