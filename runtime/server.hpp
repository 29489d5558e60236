// Executes a Plan on a backend and measures it in the planner's terms: the serving loop
// (continuous batching, each step decided by the planner's own scheduler,
// planner/serving/scheduler.hpp, so predicted and measured runs decide alike), a timeline of every step on the backend's clock, and the measured
// Figures built from it.
//
// Without a `load` section the plan runs as a closed batch: `requests` requests arrive at t = 0,
// each with a prompt of context - output tokens (or RunOptions' prompt) and `output` tokens to
// generate. With one, the
// requests and their arrival times are the planner's own draws (serving_requests), replayed on
// the clock. KV pages are taken as the engine's policy takes them: for a request's whole life
// (prompt + output) when it is admitted, so that the cache never runs out mid-generation and a
// request waits at the head of the queue until pages are free; or with KV on demand (vLLM's) as
// its tokens are written, a request preempted when they run out and its prefill recomputed. One
// larger than the whole pool is rejected on arrival (reason "exceeds_kv_capacity"). With a deadline, each arrival is admitted or rejected (reason
// "deadline") by the planner's own rule: the serving simulation run forward from the server's
// state (planner/serving/scheduler.hpp, admission_finish_s). Every request ends completed or
// rejected; none is lost.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kernels/cpu/sampling.hpp"
#include "planner/core/json_fields.hpp"
#include "planner/plan/predict.hpp"
#include "planner/serving/engine_policy.hpp"
#include "planner/serving/scheduler.hpp"
#include "runtime/backend.hpp"
#include "runtime/forward_pass.hpp"
#include "runtime/model_weights.hpp"
#include "runtime/thread_pool.hpp"

namespace infer_plan::runtime {

// A request's course, from t = 0: when its prefill started, its first and last tokens came, or
// why it was rejected on arrival.
struct RequestRecord {
  double arrival_s = 0, start_s = -1, first_token_s = -1, finish_s = -1;
  uint64_t prompt_tokens = 0, output_tokens = 0;
  std::string rejected;  // empty when completed; else "exceeds_kv_capacity" or "deadline"
};

// A prompt of `tokens` ids drawn from `vocab` for request `request`: the same for a seed on every
// platform and backend (the server and the speculative sweep draw theirs here).
std::vector<uint32_t> synthetic_prompt(uint64_t seed, uint64_t request, uint64_t tokens, uint64_t vocab);
// The stream of a load's shared prefix (load.shared_prefix): the same tokens begin every prompt.
inline constexpr uint64_t kSharedPrefixStream = ~uint64_t{0};

// One token a request generated (run --emit): its index among the request's outputs, the
// position of the token whose logits chose it, and those logits (when RunOptions asks for them;
// valid only during the call).
struct TokenEvent {
  uint64_t request = 0;
  uint64_t step = 0;
  uint64_t position = 0;
  uint32_t token = 0;
  std::span<const float> logits;
};

struct RunOptions {
  unsigned threads = 0;           // 0: one per hardware thread
  uint64_t seed = 1;              // synthetic weights and prompts, and sampling
  uint64_t prefill_chunk = kRuntimePrefillPassTokens;  // tokens per prefill forward pass (a prompt runs in chunks)
  // Every request's prompt (run --prompt-tokens); empty: seeded random ids of the plan's length.
  std::vector<uint32_t> prompt;
  // temperature 0: greedy. Above 0, request i draws from its own generator (seed, i), so its
  // tokens do not depend on what it was batched with.
  kernels::SamplingParams sampling;
  // Called for every generated token, in order within a request; with token_logits its row of
  // logits comes along (the pass then brings the logits to the host).
  std::function<void(const TokenEvent&)> on_token;
  bool token_logits = false;
  // Called now and then with a one-line status (the CLI shows it on a terminal).
  std::function<void(const std::string&)> progress;
  // The arrivals to serve (arrival order) instead of the plan's: one of several servers sharing a load.
  std::vector<ServingRequest> arrivals;
  // Called once the setup is done, before the clock starts: servers started together wait for
  // each other there, so that none serves while another writes its weights.
  std::function<void()> on_ready;
};

struct StepRecord {
  bool prefill = false;         // prompts only (a prompt alone, or chunks with no decode beside them)
  uint64_t batch = 0;           // sequences in the step (decoding ones, when it mixes in prompts' chunks)
  uint64_t tokens = 0;          // tokens processed
  uint64_t context_tokens = 0;  // sum over the batch of each sequence's context after the step
  uint64_t prompt_tokens = 0;   // prompts' tokens in a decode step (chunked prefill); 0: a pure decode
  size_t decision = 0;          // its step in RunResult::schedule
  bool mixed() const { return !prefill && prompt_tokens > 0; }
  double start_s = 0, end_s = 0;
  // With offload: this pass's groups (runtime/offload_prefetcher.hpp), bytes copied, the copy
  // thread's busy time on them and the time compute waited for them.
  uint64_t offload_bytes = 0;
  double offload_copy_s = 0, offload_wait_s = 0;
};

struct RunResult {
  std::string backend;
  unsigned threads = 0;
  std::string model;            // the shape executed ("qwen3-8b@0.25")
  uint64_t weights_bytes = 0;   // allocated, from the backend's accounting
  uint64_t kv_bytes = 0;
  uint64_t kv_pages = 0;
  uint64_t kv_peak_pages = 0;   // the most pages reserved at once
  std::map<MemoryCategory, uint64_t> peak_bytes;  // the most each category held at once
  // SIGINT or SIGTERM stopped the run after a step (runtime/interrupt.hpp): the records are
  // the requests that ended by then; `unfinished` arrived or were due and did not.
  bool interrupted = false;
  uint64_t unfinished = 0;
  // With offload: the host pool (offloaded groups) and the device slots, from the backend's
  // accounting; weights_bytes above is what stays in device weights.
  bool offload = false;
  uint64_t offload_host_bytes = 0;
  uint64_t offload_buffer_bytes = 0;
  // The driver's device memory in use (CUDA) before the weights and after the setup (weights, KV
  // pool, offload slots; the decoder's working buffers come with the first pass): their difference
  // is the model's state as the device sees it, allocator rounding included.
  std::optional<uint64_t> driver_before_bytes, driver_after_setup_bytes;
  std::optional<double> deadline_s;  // the plan's, for counting late completions
  double setup_s = 0;           // allocating and writing the weights
  double span_s = 0;            // t = 0 to the last departure
  // The scheduler's own count of requests present (waiting + running), integrated over time as
  // it changes: an arrival from its arrival time (the scheduler learns of it after the step it
  // came during), a departure at the end of its step. Independent of the per-request records.
  double in_system_area = 0;    // request-seconds
  uint64_t chunks_continued = 0;  // prompts' chunks that did not end them (chunked prefill)
  uint64_t preemptions = 0, recomputed_tokens = 0;  // KV on demand: pages ran out (Scheduler)
  uint64_t shared_prefix_tokens = 0, prefix_hit_tokens = 0;  // the load's shared prefix; what the cache held
  // Every step as the scheduler decided it, and the policy and pool it decided with: what a replay
  // (replay_schedule) feeds a fresh scheduler to check the run decided as the planner does.
  std::vector<StepDecision> schedule;
  ServerModel scheduler_model;
  std::vector<double> token_gaps_s;  // every gap between two consecutive tokens of a request
  std::vector<RequestRecord> requests;
  std::vector<StepRecord> steps;
};

// The server's largest forward pass: a prefill chunk of up to `prefill_chunk` tokens (one
// sequence, one head row) or a decode step of up to load.max_batch sequences (requests without a
// load; never more than the KV pool has pages), each reserving up to `context` tokens. With a step
// token budget (chunked prefill) a step is one pass of up to the budget's tokens in as many rows.
PassShape server_pass_shape(const Plan& plan, uint64_t prefill_chunk,
                            std::optional<uint64_t> step_token_budget = std::nullopt);

// Refuses, before any allocation, a plan the runtime cannot execute or this machine cannot hold:
// tp > 1, a given weights size, a context beyond the model's trained one, or weights and KV
// beyond the backend's available memory. On CUDA also what its decoder cannot run
// (cuda_decoder_refusal), and device memory short of the working buffers of `decoders` decoders
// after passes up to `largest_pass` (cuda_decoder_scratch) on top of the weights and KV.
void check_runnable(const ResolvedPlan& rp, const Backend& backend, const PassShape& largest_pass,
                    uint64_t decoders = 1);

RunResult run_plan(const ResolvedPlan& rp, Backend& backend, const RunOptions& options);

// A plan's weights as a run writes them: a .gguf model's own tensors (as stored, or quantized on
// load to the plan's types), else synthetic ones from `seed` (a shape shrunk by --scale, a config).
bool plan_weights_from_file(const ResolvedPlan& rp);
ModelWeights plan_model_weights(const ResolvedPlan& rp, Backend& backend, ThreadPool& pool, uint64_t seed,
                                const std::optional<WeightsOffload>& offload = std::nullopt);

// The threads that compute for a plan: `threads` (0: one per hardware thread), less one for the
// offload copy thread when the plan offloads (at least one), so that the copy never waits for a
// core the compute threads spin on. The probe measures compute rates with the same count.
unsigned compute_threads(const Plan& plan, unsigned threads);

// The measured Figures, in the planner's terms and units (their JSON keys are the field names).
struct MeasuredOffload {
  uint64_t host_bytes = 0, buffer_bytes = 0;  // the backend's accounting
  uint64_t rounds = 0;                         // decode rounds (prefill passes copy too but are not rounds)
  Distribution bytes_per_round;
  Distribution round_ms;                       // the copy thread's busy time per round
  Distribution stall_ms;                       // compute's wait per round
  double bandwidth_bytes_per_s = 0;            // bytes / copy time, all decode rounds
};
struct MeasuredFigures {
  std::string backend;
  unsigned threads = 0;
  std::string model;
  uint64_t weights_bytes = 0, kv_bytes = 0, kv_pages = 0, kv_peak_pages = 0;
  std::map<std::string, uint64_t> peak_bytes;  // by memory category name
  bool interrupted = false;
  uint64_t unfinished = 0;
  double setup_s = 0, span_s = 0;
  Distribution decode_iteration_ms, prefill_ms, ttft_s, tpot_ms, sojourn_s;
  Distribution mixed_step_ms;  // decode steps with prompts' chunks beside (chunked prefill)
  Distribution itl_ms;         // every gap between two consecutive tokens of a request (vLLM's ITL)
  double throughput_tok_s = 0;
  double mean_in_system = 0;         // the scheduler's count, time average over the span
  double mean_sojourn_s = 0;
  double rate_per_s = 0;             // completed / span
  double littles_law_in_system = 0;  // rate x mean sojourn
  uint64_t requests = 0, completed = 0, completed_late = 0, rejected = 0;
  std::map<std::string, uint64_t> rejected_by_reason;
  std::optional<uint64_t> driver_setup_bytes;  // CUDA: the driver's growth over the setup
  std::optional<MeasuredOffload> offload;
  uint64_t steps = 0, chunks_continued = 0;  // the scheduler's steps; prompts' chunks that did not end them
  uint64_t preemptions = 0, recomputed_tokens = 0;  // requests preempted; their emitted tokens prefilled again
  uint64_t prefix_hit_tokens = 0;  // prompt tokens the prefix cache held (not prefilled)
  // The run's arrivals and decision times fed through a fresh scheduler (absent when interrupted).
  std::optional<ScheduleReplay> schedule_replay;
};
MeasuredFigures measured_figures(const RunResult& r);
// As `run --json` and `report --json` print them (offload's keys prefixed offload_).
Json measured_json(const MeasuredFigures& m);

}  // namespace infer_plan::runtime
