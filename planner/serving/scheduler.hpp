// The serving scheduler: between two steps, what the next step runs, as bookkeeping over request ids
// and token counts. Both evaluators drive this one object, so they decide alike by construction:
// the serving simulation (serving_sim.cpp) on a virtual clock, each step timed by the step model
// (scheduled_step_s); the runtime (runtime/server.cpp) with forward passes on the backend's clock,
// each request's tokens kept by id and its paged KV cache following the reservations (KvPagePool).
// Admission by deadline runs a copy of it forward (admission_finish_s).
//
// The policy is the ServerModel's (max_batch, kv_capacity_tokens in pages of kv_page_tokens,
// step_token_budget):
// - FCFS. The head of the queue is admitted when a batch slot is free and its whole KV (prompt +
//   output, whole pages) fits beside the reservations of the admitted requests (admits_head); it
//   blocks those behind it. Its pages are reserved at admission and released when it leaves.
// - No step token budget: prefill first. While the head is admissible, a step prefills it alone
//   (the running batch stalls); else a step decodes the running batch, a token each.
// - A step token budget (chunked prefill, vLLM V1's): a step decodes the running batch and spends
//   what is left of the budget on prompts: first the one part-way through, then the heads of the
//   queue as they are admitted, each whole or, the last, a chunk that continues in the next steps.
//   Each engine's choices (engine_policy.hpp): without mix_decodes (SGLang) a step of prompts runs
//   alone whenever there are any; without chunk_prompts (TensorRT-LLM) a prompt waits for a step
//   with room for it whole, or runs whole over the budget as a step's first.
// - A prompt's last chunk emits the request's first token; a request with `output` tokens then
//   decodes output - 1 steps. It leaves at its last token.
// - KV on demand (kv_on_demand, vLLM's): pages are taken as tokens are written instead of at
//   admission. A step first gives the running batch the pages its decodes open, preempting the
//   newest admitted request (the prompt part-way through first) until they fit: its pages return
//   and it waits again at the head of the queue, to prefill its prompt and the tokens it emitted
//   anew (preemption by recompute), which emits its next token. The prompt part-way through then
//   takes its chunk's pages, or is preempted itself; the heads of the queue are admitted only in a
//   step that preempted nobody, each when its first chunk's pages are free.
// - Prefix caching (prefix_caching, with a shared prefix set): the first prefill to pass the
//   shared prefix's whole pages leaves them to the cache, pinned, and every request admitted later
//   begins its prefill after them (its first chunk's `done`), holding only its own pages.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "planner/serving/serving_sim.hpp"

namespace infer_plan {

// What the scheduler asks of a real KV pool beside its own count: the runtime's paged cache takes
// and returns each request's pages as the scheduler decides (the simulation needs none).
class KvPagePool {
 public:
  virtual ~KvPagePool() = default;
  // Request `id` holds pages for its first `tokens` tokens (it may hold some already): its whole
  // life at admission, or with KV on demand what the step writes; the scheduler counted them free.
  virtual void hold(uint32_t id, uint64_t tokens) = 0;
  virtual void release(uint32_t id) = 0;  // all its pages (it left, or was preempted), not the cache's
  // Prefix caching: request `id`'s pages of its first `tokens` tokens become the cache's (they
  // outlive it); a request admitted later begins with them (attach_prefix, before its hold).
  virtual void pin_prefix(uint32_t id, uint64_t tokens) = 0;
  virtual void attach_prefix(uint32_t id, uint64_t tokens) = 0;
};

// Prompt tokens [done, done + tokens) of request `id`, in one step.
struct PrefillChunk {
  uint32_t id = 0;
  uint64_t done = 0;
  uint64_t tokens = 0;
};

// One step: the running batch decodes a token each, beside the prompts' chunks. A chunk may
// recompute a preempted request's prompt and emitted tokens (Scheduler::prefill_tokens).
struct ScheduledStep {
  std::vector<uint32_t> preempted;  // before the step, newest first: they wait again at the head
  std::vector<PrefillChunk> prefill;
  uint64_t batch = 0;           // running requests decoding (0: a prefill alone)
  uint64_t context_tokens = 0;  // the sum of their contexts before the step (prompt + tokens emitted)
};

// A step's seconds by the model's callbacks: each chunk that continues a prompt costs
// prefill_s(done + tokens) - prefill_s(done) (a prompt's chunks cost what it costs whole), the
// prompts begun in the step prefill_s of their tokens together, and the batch decode_iteration_s.
// InputError when a callback returns a negative or non-finite time (they come from user figures).
double scheduled_step_s(const ServerModel& server, const ScheduledStep& step);
double checked_decode_s(const ServerModel& server, uint64_t batch, uint64_t context_tokens);
double checked_prefill_s(const ServerModel& server, uint64_t prompt_tokens);

// What one prompt costs the decoding batch under the policy (pd's stall, with the engine's
// scheduler): `batch` requests decode at `context_tokens` in all while a prompt of `prompt`
// tokens is scheduled. The longest wait between two of their tokens: a whole prefill beside or
// between decode steps (no budget, no chunking, or steps of prompts alone: they run back to
// back), else the slowest step carrying one of its chunks of at most budget - batch tokens.
struct PromptStall {
  double gap_s = 0;          // decode step + what the prompt adds to it
  uint64_t steps = 1;        // steps the prompt is spread over
  uint64_t chunk_tokens = 0;  // its largest chunk
};
PromptStall prompt_stall(const ServerModel& server, uint64_t prompt, uint64_t batch, uint64_t context_tokens);

class Scheduler {
 public:
  // A running request and the decode step whose end emits its last token.
  struct Running {
    uint32_t id;
    uint64_t finish_step;
    uint64_t admitted;  // the order in which it was admitted (preemption takes the newest)
  };

  // `server` and `requests` (ids are their indices) must outlive the scheduler and its copies.
  Scheduler(const ServerModel& server, const std::vector<ServingRequest>& requests);

  const ServerModel& server() const { return *server_; }
  const ServingRequest& request(uint32_t id) const {
    return id < requests_->size() ? (*requests_)[id] : added_[id - requests_->size()];
  }
  // A request beyond the list (the lookahead's stand-ins): its id.
  uint32_t add(const ServingRequest& r);
  // The pool that follows the reservations (none: the scheduler only counts).
  void set_pool(KvPagePool* pool) { pool_ = pool; }
  // The first `tokens` tokens of every prompt are the same (what prefix caching reuses).
  void set_shared_prefix(uint64_t tokens) { shared_prefix_ = tokens; }

  // Request `id` arrives at `now_s`: rejected when its KV exceeds the pool ("exceeds_kv_capacity")
  // or, with a deadline, when admission_finish_s predicts it late ("deadline"; its last token must
  // leave the device first_token_s before arrival + deadline); else it joins the queue (nullptr).
  const char* offer(uint32_t id, double now_s, std::optional<double> deadline_s,
                    DeadlinePrediction how = DeadlinePrediction::load_persists);
  // The request joins the back of the queue (the lookahead's stand-ins, a snapshot's queue).
  void enqueue(uint32_t id) { waiting_.push_back(id); }
  // A request already decoding, `emitted` tokens out (the first from its prefill), its KV held.
  void restore_running(uint32_t id, uint64_t emitted);
  // The tokens request `id`'s prefill runs: its prompt, and after a preemption the tokens it had
  // emitted too (its prompt-like chunks cover them; the last emits its next token).
  uint64_t prefill_tokens(uint32_t id) const;

  bool has_work() const { return head_admissible() || !running_.empty() || partial_; }
  // Decides the next step (has_work() must hold): admits what it starts (started()).
  const ScheduledStep& schedule();
  // The step scheduled has run: the batch's tokens, then the first tokens of the prompts it ended
  // (first_tokens(); a recomputed one emits its next token: resumed()); the requests that emitted
  // their last leave (departed(), in that order).
  void complete();

  const ScheduledStep& scheduled() const { return scheduled_; }  // the last schedule()'s step
  // What the last schedule() and complete() did.
  const std::vector<uint32_t>& started() const { return started_; }
  const std::vector<uint32_t>& first_tokens() const { return first_tokens_; }
  const std::vector<uint32_t>& resumed() const { return resumed_; }
  const std::vector<uint32_t>& departed() const { return departed_; }

  const std::vector<Running>& running() const { return running_; }  // in no particular order
  uint64_t waiting() const { return waiting_.size(); }
  uint64_t prefilling() const { return partial_ ? 1 : 0; }  // a prompt part-way through
  uint64_t reserved_tokens() const { return reserved_tokens_; }
  uint64_t peak_reserved_tokens() const { return peak_reserved_tokens_; }
  uint64_t peak_batch() const { return peak_batch_; }
  uint64_t chunks_continued() const { return chunks_continued_; }  // prompts' chunks that did not end them
  uint64_t preemptions() const { return preemptions_; }
  uint64_t recomputed_tokens() const { return recomputed_tokens_; }  // emitted tokens prefilled again
  uint64_t prefix_hit_tokens() const { return prefix_hit_tokens_; }  // prompt tokens the cache held

 private:
  // The head could start with a first chunk of `chunk` tokens (KV on demand: its pages; else its
  // whole reservation), `starting` prompts ending this step holding slots.
  bool head_admissible(uint64_t starting = 0, uint64_t chunk = 1) const;
  uint32_t admit_head(uint64_t hit, uint64_t chunk);
  void prompt_ended(uint32_t id);
  void join_running(uint32_t id, uint64_t emitted);
  void depart(uint32_t id);
  // KV on demand.
  uint64_t held_tokens(uint64_t written) const;  // the pages' tokens that hold `written` tokens
  // Prefix caching: the cached tokens the head would begin after; a request's own pages' tokens
  // when it has `tokens` tokens (less the cache's pages it shares).
  uint64_t prefix_hit(uint32_t id) const;
  uint64_t own_tokens(uint32_t id, uint64_t tokens) const;
  void cache_prefix(const PrefillChunk& c);
  uint64_t page_phase(uint32_t id, uint64_t finish_step) const;
  uint64_t free_tokens() const;
  void take(uint64_t tokens);
  void give_decode_pages();
  void preempt_partial();
  void preempt_newest_running();

  const ServerModel* server_;
  const std::vector<ServingRequest>* requests_;
  std::vector<ServingRequest> added_;  // ids from requests_->size() on
  KvPagePool* pool_ = nullptr;

  std::deque<uint32_t> waiting_;
  std::vector<Running> running_;   // a min-heap on finish_step (then id)
  struct Partial {
    uint32_t id;
    uint64_t done;
  };
  std::optional<Partial> partial_;  // the prompt part-way through its chunked prefill
  uint64_t step_ = 0;               // decode steps so far (the clock of finish_step)
  uint64_t context_tokens_ = 0;     // the sum over running requests of prompt + tokens emitted
  uint64_t reserved_tokens_ = 0, peak_reserved_tokens_ = 0, peak_batch_ = 0, chunks_continued_ = 0;
  uint64_t joined_ = 0, preemptions_ = 0, recomputed_tokens_ = 0;
  // KV on demand: running requests by the phase of the decode steps at which they open a page
  // (a request writing token t opens one when t is a multiple of the page), and the tokens each
  // preempted request had emitted (its prefill recomputes them).
  std::vector<uint64_t> page_due_;
  std::map<uint32_t, uint64_t> recompute_;
  // Prefix caching: the shared prefix's length, the tokens of its pages the cache holds (0: not
  // yet computed), and the cached tokens each admitted request shares.
  uint64_t shared_prefix_ = 0, prefix_cached_ = 0, prefix_hit_tokens_ = 0;
  std::map<uint32_t, uint64_t> sharing_;

  ScheduledStep scheduled_;
  std::vector<uint32_t> started_, first_tokens_, resumed_, departed_;
};

// Admission by deadline, the rule of serving_sim.hpp: when request `id` (not yet queued), joining
// the back of the queue of `state` at `now_s`, would finish; infinity once the prediction passes
// `due_s`. The simulation and the runtime both call it at each arrival.
double admission_finish_s(const Scheduler& state, double now_s, uint32_t id, double due_s,
                          DeadlinePrediction how = DeadlinePrediction::load_persists);

// A step as an evaluator ran it: when the scheduler decided it, and what.
struct StepDecision {
  double decided_s = 0;
  ScheduledStep step;
};

// Replay: a fresh scheduler fed the same arrivals at the recorded decision times decides every
// step again; `identical` when each step and each rejection is the same.
struct ScheduleReplay {
  uint64_t steps = 0;            // steps compared
  bool identical = true;
  std::string first_difference;  // the first step (or request) that differs, in words
};
// `rejected`: each request's reason as recorded ("" when admitted); `shared_prefix`: the tokens
// every prompt shares (Scheduler::set_shared_prefix).
ScheduleReplay replay_schedule(const ServerModel& server, const std::vector<ServingRequest>& arrivals,
                               std::optional<double> deadline_s, const std::vector<StepDecision>& decisions,
                               const std::vector<std::string>& rejected, uint64_t shared_prefix = 0);
std::string describe(const ScheduledStep& step);  // "preempt #7; decode 3 (context 412); prefill #4 [0, 64)"

}  // namespace infer_plan
