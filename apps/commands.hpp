// Each subcommand registers itself on the root CLI11 app; cli_main.cpp calls these and maps errors
// to exit codes (0 success, 2 bad input). Commands print; the planner only returns values.
#pragma once
#include <CLI/CLI.hpp>

namespace infer_plan::apps {

void add_quant_command(CLI::App& app);
void add_kv_command(CLI::App& app);
void add_fit_command(CLI::App& app);
void add_model_command(CLI::App& app);
void add_hw_command(CLI::App& app);
void add_roofline_command(CLI::App& app);
void add_offload_command(CLI::App& app);
void add_spec_command(CLI::App& app);
void add_pd_command(CLI::App& app);
void add_sweep_command(CLI::App& app);
void add_queue_command(CLI::App& app);
void add_admit_command(CLI::App& app);
void add_advise_command(CLI::App& app);
void add_gguf_command(CLI::App& app);
void add_calibrate_command(CLI::App& app);
void add_completion_command(CLI::App& app);

// The commands that execute plans, in the runtime's half of the CLI (infer_plan_apps_runtime);
// add_runtime_commands (apps/cli_main.hpp) registers them.
void add_gguf_write_command(CLI::App& gguf);  // `gguf write`
void add_tokenize_command(CLI::App& app);
void add_quality_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_probe_command(CLI::App& app);
void add_report_command(CLI::App& app);

}  // namespace infer_plan::apps
