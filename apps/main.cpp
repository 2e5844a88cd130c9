// warpstream: the command-line front end. Thin: parsing and printing only; all work lives in src/.
#include <cstdio>
#include <memory>

#include "command.h"

namespace ws::app {
std::vector<Command>& command_registry() {
  static std::vector<Command> registry;
  return registry;
}
}  // namespace ws::app

int main(int argc, char** argv) {
  CLI::App app{"WarpStream: fixed-shape inference runtime (lanes: latency rail; flow: capacity rail)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "warpstream 0.1.0");
  std::function<int()> run;
  for (auto& command : ws::app::command_registry()) {
    CLI::App* sub = app.add_subcommand(command.name, command.help);
    auto fn = command.setup(*sub);
    sub->callback([&run, fn] { run = fn; });
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  return run ? run() : 2;
}
