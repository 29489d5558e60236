// The whole command line: parses argv, runs the subcommand, returns the process's exit code
// (apps/exit_code.hpp). Declared apart from commands.hpp so that main.cpp needs no CLI11.
#pragma once

namespace infer_plan::apps {

int cli_main(int argc, char** argv);

}  // namespace infer_plan::apps
