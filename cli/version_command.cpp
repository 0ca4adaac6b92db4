// `kvaudit version`: the toolkit version and the kvpress release its kvpress flavour reproduces.
#include <iostream>

#include "cli/command_registry.h"

namespace {
const bool registered = kvaudit::cli::register_command([](CLI::App& root) {
  auto* cmd = root.add_subcommand("version", "Print the toolkit version and the kvpress release it models");
  cmd->callback([] { std::cout << "{\"kvaudit\": \"0.1.0\", \"kvpress_modelled\": \"0.5.5\"}\n"; });
});
}  // namespace
