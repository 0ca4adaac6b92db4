// Subcommands register themselves at static-initialization time, so adding one is adding a file.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <vector>

namespace kvaudit::cli {

// A subcommand's setup: add options to `app` and install a callback that sets the exit code.
using CommandSetup = std::function<void(CLI::App& root)>;

inline std::vector<CommandSetup>& command_setups() {
  static std::vector<CommandSetup> setups;
  return setups;
}

inline bool register_command(CommandSetup setup) {
  command_setups().push_back(std::move(setup));
  return true;
}

// The process exit code a subcommand's callback decided on: 0 pass, 1 finding, 2 bad input or usage.
inline int& exit_code() {
  static int code = 0;
  return code;
}

}  // namespace kvaudit::cli
