#pragma once
// Sub-command registry for the `warpstream` CLI. Each apps/cmd_*.cpp registers itself at static
// initialisation with WS_REGISTER_COMMAND; main.cpp only dispatches. A command returns the process
// exit code (0 ok, 1 failure/mismatch, 2 usage or input error).

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace ws::app {

struct Command {
  std::string name;
  std::string help;
  /// Adds the sub-command's options to `sub` and returns the function that runs it.
  std::function<std::function<int()>(CLI::App& sub)> setup;
};

std::vector<Command>& command_registry();

struct CommandRegistrar {
  explicit CommandRegistrar(Command c) { command_registry().push_back(std::move(c)); }
};

}  // namespace ws::app

#define WS_REGISTER_COMMAND(ident, name, help, setup_fn) \
  static ::ws::app::CommandRegistrar ws_command_##ident({name, help, setup_fn})
