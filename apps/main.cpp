// warpstream: the command-line front end. Thin: parsing and printing only; all work lives in src/.
// Every failure is one line on stderr starting with "error: " (exit 2 for usage and bad input).
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>

#include "command.h"
#include "core/escape.h"

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
  std::string names;
  for (auto& command : ws::app::command_registry()) {
    CLI::App* sub = app.add_subcommand(command.name, command.help);
    auto fn = command.setup(*sub);
    sub->callback([&run, fn] { run = fn; });
    names += (names.empty() ? "" : ", ") + command.name;
  }
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    for (auto& command : ws::app::command_registry()) known |= command.name == argv[1];
    if (!known) {
      std::fprintf(stderr, "error: unknown command %s; commands: %s (warpstream --help)\n", ws::quoted(argv[1]).c_str(), names.c_str());
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    for (char& c : what) if (c == '\n') c = ' ';
    // CLI11 echoes the offending argument: escaped, so an argument cannot write control sequences to the terminal.
    std::fprintf(stderr, "error: usage: %s (add --help for the options)\n", ws::escape_text(what).c_str());
    return 2;
  }
  if (!run) return 2;
  try {
    return run();
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "error: resource exhausted: out of host memory (a model, image or shape too large for this machine)\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: internal error: %s (please report)\n", e.what());
    return 1;
  }
}
