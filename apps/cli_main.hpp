// The whole command line: parses argv, runs the subcommand, returns the process's exit code
// (apps/exit_code.hpp). Declared apart from commands.hpp so that main.cpp needs no CLI11.
#pragma once

namespace CLI {
class App;
}

namespace infer_plan::apps {

// Registers the commands that execute plans (run, tokenize, quality, probe, report, gguf write):
// apps/runtime_commands.cpp where the runtime is built, apps/runtime_absent.cpp where it is not
// (INFER_PLAN_RUNTIME=OFF). main.cpp passes it in, so the commands' library does not depend on
// the runtime's.
using AddCommandsFn = void (*)(CLI::App& app);
void add_runtime_commands(CLI::App& app);

int cli_main(int argc, char** argv, AddCommandsFn add_runtime);

}  // namespace infer_plan::apps
