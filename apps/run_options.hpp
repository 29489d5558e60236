// The flags of the commands that execute a plan (run, report, probe): backend, threads, seed;
// and the one place that turns them into a runtime run with progress on a terminal.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "planner/json_fields.hpp"
#include "planner/predict.hpp"
#include "runtime/probe.hpp"
#include "runtime/server.hpp"

namespace infer_plan::apps {

struct RuntimeOptions {
  std::string backend = "cpu";
  unsigned threads = 0;
  uint64_t seed = 1;
  bool quiet = false;
  void add_to(CLI::App& cmd);
};

// Runs the plan on the chosen backend. Progress goes to stderr when it is a terminal (and not
// --quiet).
runtime::RunResult execute_plan(const ResolvedPlan& rp, const RuntimeOptions& options);

// Probes the backend (runtime/probe.hpp); `quick` trades precision for time; the copy thread
// copies in pieces of `copy_chunk_bytes` (an offload group; 0: whole buffers).
runtime::ProbeResult probe_on(const RuntimeOptions& options, bool quick, uint64_t copy_chunk_bytes = 0);

// Refuses an output path whose folder does not exist, before minutes of probing or running.
void check_output_path(const std::string& path, std::string_view flag);

void write_json_file(const std::string& path, const Json& j, std::string_view flag);

}  // namespace infer_plan::apps
