// Executes a Plan on a backend and measures it in the planner's terms: the serving loop
// (continuous batching with the same rules as planner/serving_sim.hpp, so the two can be
// compared step for step), a timeline of every step on the backend's clock, and the measured
// Figures built from it.
//
// Without a `load` section the plan runs as a closed batch: `requests` requests arrive at t = 0,
// each with a prompt of context - output tokens and `output` tokens to generate. With one, the
// requests and their arrival times are the planner's own draws (serving_requests), replayed on
// the clock. KV pages for a request's whole life (prompt + output) are reserved when it is
// admitted, so the cache can never run out mid-generation: a request waits at the head of the
// queue until pages are free, and one larger than the whole pool is rejected on arrival
// (reason "exceeds_kv_capacity"). With a deadline, each arrival is admitted or rejected (reason
// "deadline") by the planner's own rule: the serving simulation run forward from the server's
// state (planner/serving_sim.hpp, admission_finish_s). Every request ends completed or
// rejected; none is lost.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "planner/json_fields.hpp"
#include "planner/predict.hpp"
#include "runtime/backend.hpp"

namespace infer_plan::runtime {

struct RunOptions {
  unsigned threads = 0;           // 0: one per hardware thread
  uint64_t seed = 1;              // synthetic weights and prompts
  uint64_t prefill_chunk = 256;   // tokens per prefill forward pass (a prompt runs in chunks)
  // Called now and then with a one-line status (the CLI shows it on a terminal).
  std::function<void(const std::string&)> progress;
};

struct RequestRecord {
  double arrival_s = 0, start_s = -1, first_token_s = -1, finish_s = -1;  // from t = 0
  uint64_t prompt_tokens = 0, output_tokens = 0;
  std::string rejected;  // empty when completed; else the reason
};

struct StepRecord {
  bool prefill = false;
  uint64_t batch = 0;           // sequences in the step
  uint64_t tokens = 0;          // tokens processed
  uint64_t context_tokens = 0;  // sum over the batch of each sequence's context after the step
  double start_s = 0, end_s = 0;
};

struct RunResult {
  std::string backend;
  unsigned threads = 0;
  std::string model;            // the shape executed ("qwen3-8b@0.25")
  uint64_t weights_bytes = 0;   // allocated, from the backend's accounting
  uint64_t kv_bytes = 0;
  uint64_t kv_pages = 0;
  std::optional<double> deadline_s;  // the plan's, for counting late completions
  double setup_s = 0;           // allocating and writing the weights
  double span_s = 0;            // t = 0 to the last departure
  // The scheduler's own count of requests present (waiting + running), integrated over time as
  // it sees them between steps: independent of the per-request records, and late by up to one
  // step for a request that arrives during a step.
  double in_system_area = 0;    // request-seconds
  std::vector<RequestRecord> requests;
  std::vector<StepRecord> steps;
};

RunResult run_plan(const ResolvedPlan& rp, Backend& backend, const RunOptions& options);

// The measured Figures: weights_bytes, kv_bytes, decode_iteration_ms and prefill_ms
// (distributions), ttft_s, tpot_ms, throughput_tok_s, mean_in_system (time average over the
// span), mean_sojourn_s, rate_per_s (admitted / span), littles_law_in_system (rate x sojourn),
// completed, rejected (with reasons).
Json measured_figures(const RunResult& r);

}  // namespace infer_plan::runtime
