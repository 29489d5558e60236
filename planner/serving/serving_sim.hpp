// A discrete-event simulation of one continuous-batching server under an arrival process, fast
// enough to sweep (10^4 requests in milliseconds). It knows no device: the iteration and prefill
// times are callbacks (the roofline fills them; the CLI passes constants) and KV capacity is a
// token count. It answers what Little's law cannot: queueing, bursts, deadlines and stability.
//
// Server model (the scheduler's rules, planner/serving/scheduler.hpp, which the runtime drives too):
// - FCFS. A waiting request is admitted when a batch slot is free (running < max_batch) and its
//   whole KV (prompt + output tokens, in whole pages of kv_page_tokens) fits beside the
//   reservations of the admitted requests (sum <= kv_capacity_tokens). The head of the queue
//   blocks those behind it. With kv_on_demand (vLLM's) pages are taken as tokens are written
//   instead, and the newest request is preempted and recomputed when they run out; with
//   prefix_caching a load's shared prefix is prefilled once (scheduler.hpp has the rules).
// - No chunked prefill: an admitted request's prefill runs as one step on its own and the decode
//   batch stalls meanwhile. Prefill comes first: after every step the scheduler admits and
//   prefills before it decodes again (vLLM's default without chunked prefill). The prefill
//   emits the request's first token (TTFT = prefill end - arrival). With a step token budget
//   (ServerModel::step_token_budget), prefills share each step with a decode iteration of the
//   running batch instead, in what the batch leaves of the budget, a long prompt over several
//   steps (vLLM V1's chunked prefill; below).
// - Every decode iteration emits one token for each running request; a request with `output`
//   tokens needs output - 1 iterations after its prefill. Its context during an iteration is
//   prompt + tokens emitted so far; the iteration time sees the batch size and the batch's sum.
// - The scheduler acts between steps: a request that arrives during a step waits for its end.
// - Every request ends completed or rejected with a reason; none is lost.
//
// Admission by deadline (when a deadline is set): at arrival the simulator predicts the
// request's finish by running a copy of the server forward from its current state (running
// batch, queue, KV reservations), and rejects the request when that finish is past its deadline.
// What the copy assumes about requests arriving later is the rule:
// - load_persists (default): every request that leaves is replaced by one with the same lengths,
//   queued behind the new request: the load stays as it is now, as it does on average in a
//   steady state. Its prefill stalls the batch and it keeps the batch as large.
// - no_more_arrivals: nobody else comes. Later arrivals can only delay a request (they queue
//   behind it, but their prefills stall its decoding and they enlarge the batch), so this
//   prediction is a lower bound: it rejects only requests certain to miss, and under overload
//   most admitted requests then finish late (tests/planner/serving/test_serving_sim.cpp measures both).
// Both predict the prefill start and first token exactly (nobody behind a request in the queue
// can start before it); they differ on the decoding. Requests admitted but late are counted
// (completed_late). While the request still waits, the copy stops as soon as its clock plus the
// request's own service at batch 1 passes the deadline; this assumes, like stability test (a),
// that the iteration time does not fall as the batch or the context grows.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace infer_plan {

// Token lengths: fixed (min == max) or uniform on the integers [min, max].
struct TokenLengths {
  uint64_t min_tokens = 1;
  uint64_t max_tokens = 1;
  static TokenLengths fixed(uint64_t tokens) { return {tokens, tokens}; }
  double mean() const { return 0.5 * static_cast<double>(min_tokens + max_tokens); }
};
// "512", "8K" (fixed) or "256:1024" (uniform); InputError naming `what` otherwise.
TokenLengths parse_token_lengths(std::string_view text, std::string_view what);

struct ServerModel {
  // Seconds for one decode iteration of `batch` requests whose contexts sum to `context_tokens`.
  std::function<double(uint64_t batch, uint64_t context_tokens)> decode_iteration_s;
  // Seconds for the prefill of one request of `prompt_tokens`.
  std::function<double(uint64_t prompt_tokens)> prefill_s;
  std::optional<uint64_t> kv_capacity_tokens;  // absent: unlimited
  uint64_t kv_page_tokens = 1;  // the pool's page: a request reserves its KV in whole pages (the runtime's 16)
  uint64_t max_batch = 64;                     // running requests at most
  // The server's front end on each request (HTTP, tokenization, scheduling; a calibrated engine's
  // first_token_s): every token reaches the client this much after the step that made it. Added
  // to TTFT, end-to-end latency and the deadline's check; not time the device is busy.
  double first_token_s = 0;
  // Chunked prefill (vLLM's max_num_batched_tokens, SGLang's chunked_prefill_size, TensorRT-LLM's
  // max_num_tokens): a step decodes the running batch (a token each) and spends what is left of this
  // many tokens on prompts: first the one part-way through, then the heads of the queue, each whole
  // or, the last, a chunk that continues in the next steps (it holds its slot and KV meanwhile). The
  // step takes decode_iteration_s + prefill_s(the new prompts' tokens) + for the continued one
  // prefill_s(done + chunk) - prefill_s(done), so a prompt's chunks cost what it costs whole. Absent:
  // each prefill is a step of its own that stalls the batch (llama-server).
  std::optional<uint64_t> step_token_budget;
  // With a budget, how the engine spends it (the Scheduler's rules):
  // - mix_decodes: prompts share a step with the batch's decodes (vLLM V1, TensorRT-LLM's in-flight
  //   batching); false: a step prefills prompts alone, prefill first, the batch stalls (SGLang
  //   without --enable-mixed-chunk);
  // - chunk_prompts: a prompt may be cut at the budget and continue in the next steps (vLLM, SGLang);
  //   false: a prompt waits for a step with room for it whole (TensorRT-LLM without chunked
  //   context), or runs whole over the budget when it is the step's first.
  bool mix_decodes = true;
  bool chunk_prompts = true;
  // KV pages taken as tokens are written, the newest request preempted and recomputed when they run
  // out (vLLM's); false: each request's whole KV (prompt + output) reserved at admission, so none
  // is ever preempted (llama-server's slots, TensorRT-LLM's guaranteed-no-evict, SGLang here).
  bool kv_on_demand = false;
  // Prefix caching (vLLM's automatic prefix caching, SGLang's radix cache, TensorRT-LLM's block
  // reuse): the whole pages of the load's shared prefix, once a prefill has computed them, stay in
  // the pool (pinned: never evicted here), and a prompt that starts later skips them (at least its
  // last token is computed, as vLLM does).
  bool prefix_caching = false;
  // A prompt's tokens one forward pass takes (EnginePolicy::prefill_pass_tokens): how a streamed
  // disaggregated transfer is cut (PdServerModel); 0: the whole prompt in one.
  uint64_t prefill_pass_tokens = 0;
};
// "chunked prefill within 2048 tokens a step, beside the batch's decodes" and the like.
std::string describe_policy(const ServerModel& server);

enum class ArrivalProcess {
  poisson,  // exponential inter-arrival times with mean 1 / rate
  fixed,    // one arrival every 1 / rate seconds (hand-checkable runs)
};

// How admission by deadline predicts a request's finish (see the top of this file).
enum class DeadlinePrediction {
  load_persists,     // every request that leaves is replaced by one like it
  no_more_arrivals,  // a lower bound: rejects only requests certain to miss
};

struct ServingLoad {
  double rate_per_s = 1;  // lambda, offered
  uint64_t requests = 1000;
  ArrivalProcess arrivals = ArrivalProcess::poisson;
  TokenLengths prompt_tokens = TokenLengths::fixed(512);
  TokenLengths output_tokens = TokenLengths::fixed(256);
  // The first this many tokens of every prompt are the same (a shared system prompt): what a
  // server with prefix caching computes once. At most the shortest prompt.
  uint64_t shared_prefix_tokens = 0;
  std::optional<double> deadline_s;  // from arrival to last token; absent: no deadline
  DeadlinePrediction deadline_prediction = DeadlinePrediction::load_persists;
  uint64_t seed = 1;                 // std::mt19937_64; same seed, same run on every platform
  // false: no ITL distribution (ServingLatency::itl_s stays empty): recording every gap costs a
  // search that runs hundreds of simulations more than the rest of each run.
  bool inter_token_latency = true;
  // A finite benchmark run (vLLM bench's --request-rate inf: every request at once): its latencies
  // are reported even when the arrivals outpace the server (the stability verdict still says so).
  bool finite_run = false;
  // A closed loop (vLLM bench's --max-concurrency): at most this many requests in flight; each is
  // sent at its arrival or when a slot frees, whichever is later, and a slot frees when its
  // request's last token reaches the client. Its latencies are reported whatever the arrivals (the
  // loop cannot outpace the server); absent: open, every request sent at its arrival.
  std::optional<uint64_t> max_concurrency;
  // Keep each request's times in ServingResult::per_request (to compare decisions with the runtime's).
  bool record_requests = false;
  // Goodput (vLLM bench's --goodput): a completed request is good when it meets every limit given.
  struct Goodput {
    std::optional<double> ttft_s, tpot_s, e2el_s;
    bool any() const { return ttft_s || tpot_s || e2el_s; }
  } goodput;
};

// One request of a load: when it arrives and its lengths.
struct ServingRequest {
  double arrival_s = 0;
  uint64_t prompt_tokens = 0;
  uint64_t output_tokens = 0;
  uint64_t kv_tokens() const { return prompt_tokens + output_tokens; }
};
// The requests a load draws, in arrival order: what simulate_serving serves, and what the
// runtime replays on the clock so that predicted and measured runs see the same arrivals.
std::vector<ServingRequest> serving_requests(const ServingLoad& load);

// mean and nearest-rank percentiles (p-th percentile = the ceil(p * n)-th smallest value).
struct Distribution {
  uint64_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
  double p95 = 0;
};
// Its 50th, 90th, 95th or 99th percentile (`p` one of those); InputError for another.
double distribution_percentile(const Distribution& d, double p);

// The mean and nearest-rank percentiles of a sample (all zero when it is empty); the runtime's
// measured distributions use it too, so predicted and measured percentiles mean the same thing.
Distribution summarize(std::vector<double> values);
// The same over (value, how many times it occurs) pairs: count is the sum of the weights.
Distribution summarize_weighted(std::vector<std::pair<double, uint64_t>> values);
// Nearest rank cannot tell the p-th percentile from the maximum with fewer than 1 / (1 - p)
// samples (p99 needs 100): such a percentile is the sample's largest value.
bool percentile_resolved(uint64_t count, double p);

struct ServingLatency {
  Distribution sojourn_s;     // arrival to last token
  Distribution queue_wait_s;  // arrival to prefill start
  Distribution ttft_s;        // arrival to first token
  Distribution tpot_s;        // (last token - first token) / (output - 1); requests with output >= 2
  Distribution itl_s;         // every gap between two consecutive tokens of a request (vLLM's ITL)
  double mean_in_system = 0;  // time average of requests present over [0, span_s]
  double rate_effective_per_s = 0;  // admitted requests / span_s
  // Little's law on the sample path: mean_in_system vs rate_effective_per_s * sojourn_s.mean.
  double littles_law_in_system = 0;
};

struct Rejections {
  uint64_t deadline = 0;          // predicted finish later than the deadline
  uint64_t exceeds_kv_capacity = 0;  // prompt + output larger than the whole KV capacity
  uint64_t total() const { return deadline + exceeds_kv_capacity; }
};

// One request's course: when its prefill started, its first and last tokens came (from t = 0, at
// the step's end, before the front end's delay), or why it was rejected.
struct RequestTimes {
  double start_s = -1, first_token_s = -1, finish_s = -1;
  std::string rejected;  // empty: completed; else "exceeds_kv_capacity" or "deadline"
};

struct ServingResult {
  uint64_t requests = 0;
  std::vector<RequestTimes> per_request;  // with load.record_requests, in arrival order
  uint64_t completed = 0;
  uint64_t completed_late = 0;  // admitted, finished after the deadline
  Rejections rejected;
  double rejection_rate = 0;  // rejected / requests
  double span_s = 0;          // t = 0 to the last departure (or the last arrival, if later)
  double offered_span_s = 0;  // t = 0 to the last arrival (in a closed loop, the last request sent)
  double throughput_tok_s = 0;  // output tokens of completed requests / span_s
  double utilisation = 0;       // fraction of span_s the server ran a prefill or a decode step
  double mean_batch = 0;        // running requests per decode iteration
  uint64_t decode_iterations = 0;
  uint64_t peak_kv_tokens = 0;  // most KV tokens reserved at once
  uint64_t peak_batch = 0;      // most requests decoding at once (max_batch when the limit was reached)
  uint64_t chunks_continued = 0;  // prompts' chunks that did not end them (chunked prefill)
  uint64_t preemptions = 0;       // KV on demand: requests preempted when pages ran out
  uint64_t recomputed_tokens = 0;  // emitted tokens prefilled again after a preemption
  uint64_t prefix_hit_tokens = 0;  // prompt tokens found in the prefix cache, not prefilled
  std::optional<uint64_t> good_requests;  // with load.goodput: completed requests meeting all its limits

  // Stability: unstable when either test says so.
  // (a) Work: rho_lower_bound = the server time the admitted requests need at the best batching
  //     the limits allow (every prefill alone; output - 1 decode iterations each, costing at
  //     least min over b <= max batch of decode_iteration_s(b, b * (min prompt + 1)) / b),
  //     divided by the span over which they arrived. rho_lower_bound >= 1: the arrivals bring
  //     work faster than the server can do it even at its best, so the backlog grows without
  //     bound. Assumes the iteration time does not fall when the context grows. Applied from
  //     50 admitted requests (fewer have no meaningful rate); not applied with a deadline: admission keeps the work ahead of any request under the deadline, so
  //     the queue is bounded by construction (and a saturated server sits at rho ~ 1).
  // (b) Growth: the time-average number in system (waiting + running) over the 2nd, 3rd and
  //     4th quarter of the offered span [0, last arrival] rises quarter by quarter, by more
  //     than max(4 requests, 0.5% of the requests) and by more than half from the 2nd to the
  //     4th. A stable system is stationary, so that level does not depend on the run's length;
  //     an unstable one grows in proportion to time. (b) catches what (a)'s best case misses
  //     (batches the KV or the arrivals never fill).
  // A short run close to rho = 1 can go either way; the verdict errs towards "unstable", and
  // an unstable run reports no latency figures (but a load.finite_run does). With a deadline, rejections bound the
  // queue: an overloaded server stays stable and its rejection rate carries the overload.
  bool stable = true;
  std::string unstable_reason;   // the figures behind the verdict
  double rho_lower_bound = 0;    // (a), 0 with a deadline; batch 1 and constant times: rho
  double in_system_q2 = 0;       // (b): time-average requests present, 2nd quarter
  double in_system_q3 = 0;       // ... 3rd quarter
  double in_system_q4 = 0;       // ... last quarter
  std::optional<ServingLatency> latency;  // absent when unstable or when nothing completed
};

// Runs the simulation. InputError (naming the field) for a rate <= 0, zero requests, zero
// lengths, min > max, max_batch 0, a deadline <= 0, or a callback returning a negative or
// non-finite time. Invariant (asserted): completed + rejected == requests.
ServingResult simulate_serving(const ServerModel& server, const ServingLoad& load);
// The same on given arrivals (in arrival order) instead of the load's draws; the load's other
// fields (deadline, shared prefix, goodput, record_requests) apply.
ServingResult simulate_serving(const ServerModel& server, const ServingLoad& load,
                               const std::vector<ServingRequest>& requests);

// The admission rules the scheduler (scheduler.hpp) calls:
// - on arrival, a request whose whole KV (prompt + output) is larger than the pool is rejected;
bool exceeds_kv_capacity(const ServerModel& server, uint64_t kv_tokens);
// - a request reserves its KV (prompt + output) in whole pages of kv_page_tokens: these many tokens;
uint64_t kv_reservation_tokens(const ServerModel& server, uint64_t kv_tokens);
// - before each step, the head of the queue is admitted (and prefilled) when a batch slot is free
//   and its reservation fits beside those of the admitted requests (both in tokens of whole pages).
bool admits_head(const ServerModel& server, uint64_t running, uint64_t reserved_kv_tokens, uint64_t head_kv_tokens);

// A real server between two steps, as the runtime sees it: the requests decoding (with the tokens
// each has emitted, the first from its prefill) and the queue, in order.
struct ServerSnapshot {
  struct Decoding {
    ServingRequest request;
    uint64_t emitted = 1;
  };
  double now_s = 0;
  std::vector<Decoding> running;
  std::vector<ServingRequest> waiting;
};

// Admission by deadline with the simulation's own rule (top of this file): the finish time
// predicted for `candidate` joining the back of the queue now, or infinity once the prediction
// passes `due_s` (it is then rejected): the lookahead from a snapshot of a server.
double admission_finish_s(const ServerModel& server, const ServerSnapshot& state, const ServingRequest& candidate,
                          double due_s, DeadlinePrediction how = DeadlinePrediction::load_persists);

// The service-level objective for max_sustainable_rate: stability is always required.
struct ServingSlo {
  std::optional<double> ttft_p99_s;
  std::optional<double> tpot_p99_s;
  std::optional<double> rejection_rate_max;  // fraction, 0..1
};

struct SustainableRate {
  std::optional<double> rate_per_s;  // highest rate found to meet the SLO; absent: none does
  std::optional<ServingResult> at_rate;
  double lower_bound_per_s = 0, upper_bound_per_s = 0;  // final bracket (meets / fails)
  int simulations = 0;
  std::string note;  // why absent, or how the bracket was found
};

bool meets_slo(const ServingResult& r, const ServingSlo& slo);

// Bisection on lambda (load.rate_per_s is ignored): start from one request's service rate,
// double or halve to bracket, then halve the bracket until (fail - meet) <= relative_tolerance
// x meet. Returns the rate that met the SLO. Each probe reuses load.seed, so arrivals are the
// same draws scaled by 1 / lambda (common random numbers): the pass/fail boundary moves
// smoothly, which bisection needs. The tolerance bounds the search, not the sampling noise of
// a finite run (rerun with other seeds or more requests for that).
SustainableRate max_sustainable_rate(const ServerModel& server, const ServingLoad& load,
                                     const ServingSlo& slo, double relative_tolerance = 0.01);

}  // namespace infer_plan
