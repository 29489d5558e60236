// The commands that execute plans on a backend, registered where the runtime is built.
#include <CLI/CLI.hpp>

#include "apps/cli_main.hpp"
#include "apps/commands.hpp"

namespace infer_plan::apps {

void add_runtime_commands(CLI::App& app) {
  add_gguf_write_command(*app.get_subcommand("gguf"));
  add_run_command(app);
  add_tokenize_command(app);
  add_quality_command(app);
  add_probe_command(app);
  add_report_command(app);
}

}  // namespace infer_plan::apps
