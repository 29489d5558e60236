// A build without the runtime (INFER_PLAN_RUNTIME=OFF, what `tools/setup.sh run` builds: only
// what `fit` needs) still knows the runtime's commands by name: each says how to build it
// instead of "unknown command".
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <string>

#include "apps/cli_main.hpp"
#include "planner/core/input_error.hpp"

namespace infer_plan::apps {

namespace {

void add_absent(CLI::App& parent, const std::string& name, const std::string& path, const std::string& what) {
  CLI::App* cmd = parent.add_subcommand(name, what + " (not in this build: it leaves the runtime out)");
  cmd->allow_extras();
  cmd->callback([path] {
    throw InputError(fmt::format(
        "{}: this build leaves the runtime out (configured with -DINFER_PLAN_RUNTIME=OFF, as `tools/setup.sh run` "
        "does to build only what fit needs); build the whole: tools/setup.sh test, or cmake -S . -B build "
        "-DINFER_PLAN_RUNTIME=ON && cmake --build build -j2",
        path));
  });
}

}  // namespace

void add_runtime_commands(CLI::App& app) {
  add_absent(*app.get_subcommand("gguf"), "write", "gguf write", "Write a model's shape with synthetic weights");
  add_absent(app, "run", "run", "Execute a plan on a backend and measure it");
  add_absent(app, "tokenize", "tokenize", "Text to a model's token ids (and ids back to text)");
  add_absent(app, "quality", "quality", "What a weight and KV type cost in quality");
  add_absent(app, "probe", "probe", "Measure this machine's bandwidth and per-type product rates");
  add_absent(app, "report", "report", "Predict a plan and execute it; print predicted, measured and error side by side");
}

}  // namespace infer_plan::apps
