// kvaudit entry point: parse, dispatch to the registered subcommand, map errors to one line + exit 2.
#include <iostream>

#include "cli/command_registry.h"
#include "core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"kvaudit: verify KV-cache compression selectors against exact oracles"};
  app.require_subcommand(1);
  for (const auto& setup : kvaudit::cli::command_setups()) setup(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "kvaudit: usage: " << e.what() << " (see --help)\n";
    return 2;
  } catch (const kvaudit::InputError& e) {
    std::cerr << "kvaudit: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kvaudit: error: " << e.what() << "\n";
    return 2;
  }
  return kvaudit::cli::exit_code();
}
