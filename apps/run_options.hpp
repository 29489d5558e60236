// The flags of the commands that execute a plan (run, report, probe): backend, threads, seed;
// and the one place that turns them into a runtime run with progress on a terminal.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "apps/output_files.hpp"
#include "planner/core/json_fields.hpp"
#include "planner/plan/predict.hpp"
#include "runtime/probe.hpp"
#include "runtime/pd_server.hpp"
#include "runtime/server.hpp"
#include "runtime/speculative_sweep.hpp"

namespace infer_plan::apps {

struct RuntimeOptions {
  std::string backend = "cpu";
  unsigned threads = 0;
  uint64_t seed = 1;
  bool quiet = false;
  void add_to(CLI::App& cmd);
};

// Runs the plan on the chosen backend. Progress goes to stderr when it is a terminal (and not
// --quiet). `base` brings what the command adds (a prompt, sampling, emitted tokens).
runtime::RunResult execute_plan(const ResolvedPlan& rp, const RuntimeOptions& options, runtime::RunOptions base = {});
// A plan with a pd section: its split and the colocated servers (runtime/pd_server).
runtime::PdRunResult execute_pd_plan(const ResolvedPlan& rp, const RuntimeOptions& options);
// The plan's speculative section measured over block lengths (runtime/speculative_sweep.hpp).
runtime::SpecSweepResult execute_speculative_sweep(const ResolvedPlan& rp, const RuntimeOptions& options,
                                                   uint64_t repeats);

// How the probe's copy thread runs (runtime/probe.hpp): in pieces of `chunk_bytes` (an offload
// group; 0: whole buffers) beside `type` products of `tokens` tokens (a decode batch).
struct ProbeCopy {
  uint64_t chunk_bytes = 0;
  GgmlType type = GgmlType::Q8_0;
  uint64_t tokens = 1;
  uint64_t product_cols = 0;  // the several-token products' row width (a plan's hidden; 0: 4096)
  std::vector<GgmlType> types;  // the weight types to probe (a plan's); empty: every type
};

// The GGML types of a plan's weights (its resolved layout's), for the probe to measure those only.
std::vector<GgmlType> plan_weight_types(const Plan& plan);

// Probes the CPU backend (runtime/probe.hpp); `quick` trades precision for time.
runtime::ProbeResult probe_on(const RuntimeOptions& options, bool quick, const ProbeCopy& copy = {});

// The profile of options.backend as probed now, named `name`: the CPU probe (with `copy`) or the
// CUDA probe (runtime/cuda_probe.hpp). report --probe predicts with it.
Json probe_profile(const RuntimeOptions& options, bool quick, const ProbeCopy& copy, const std::string& name);

// --spec-repeats: generations per block length in a speculative sweep (run, report).
inline constexpr uint64_t kDefaultSpecRepeats = 4;
void add_spec_repeats_option(CLI::App& cmd, uint64_t& repeats);



}  // namespace infer_plan::apps
