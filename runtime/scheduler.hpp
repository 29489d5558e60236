// The runtime's scheduler, shaped as nano-vllm's: the server's state between steps (the queue,
// the running batch, their KV pages), the next step chosen from it, and each step completed.
// Its rules are the serving simulation's (planner/serving/serving_sim.hpp), through the same
// predicates, so measured and predicted runs admit and reject at the same moments:
// - on arrival: exceeds_kv_capacity (reason "exceeds_kv_capacity"), then with a deadline the
//   simulation run forward from this state (admission_finish_s; reason "deadline");
// - before each step: prefill first, when admits_head lets the head of the queue in (its pages
//   for its whole life reserved then); else a decode iteration of the running batch.
// Every request ends completed or rejected; the records say when and why.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "planner/serving/serving_sim.hpp"
#include "runtime/paged_kv_cache.hpp"

namespace infer_plan::runtime {

struct RequestRecord {
  double arrival_s = 0, start_s = -1, first_token_s = -1, finish_s = -1;  // from t = 0
  uint64_t prompt_tokens = 0, output_tokens = 0;
  std::string rejected;  // empty when completed; else the reason
};

// A request in the server: its tokens (prompt, then generated) and how many it has generated.
struct Sequence {
  uint64_t id = 0;
  std::vector<uint32_t> tokens;
  uint64_t emitted = 0;
};

// A prompt of `tokens` ids drawn from `vocab` for request `request`: the same for a seed on every
// platform and backend (the server and the speculative sweep draw theirs here).
std::vector<uint32_t> synthetic_prompt(uint64_t seed, uint64_t request, uint64_t tokens, uint64_t vocab);

class Scheduler {
 public:
  enum class Step { prefill, decode, idle, done };

  // `model` predicts deadlines (its kv_capacity_tokens and max_batch are set from `cache` and
  // `max_batch`: the pool as allocated); `prompt` gives request i its prompt tokens at arrival.
  Scheduler(ServerModel model, const std::vector<ServingRequest>& arrivals, PagedKvCache& cache, uint64_t max_batch,
            std::optional<double> deadline_s, std::function<std::vector<uint32_t>(uint64_t id, uint64_t tokens)> prompt);

  // The arrivals up to `now_s` join the queue or are rejected.
  void arrive(double now_s);
  // The next step: prefill (the head admitted, its pages reserved: prefilling()), decode (the
  // running batch: running()), idle (nothing to run until next_arrival_s()) or done.
  Step next(double now_s);
  Sequence& prefilling() { return prefilling_; }
  const std::vector<Sequence>& running() const { return running_; }
  // The prefill's first token, at `now_s`: the sequence runs, or finishes if it wanted one.
  void complete_prefill(uint32_t token, double now_s);
  // One token per running sequence (in running() order), at `now_s`.
  void complete_decode(std::span<const uint32_t> tokens, double now_s);

  double next_arrival_s() const;
  uint64_t present() const { return waiting_.size() + running_.size(); }  // waiting + running
  uint64_t ended() const { return ended_; }
  const std::vector<RequestRecord>& records() const { return records_; }
  std::vector<RequestRecord> take_records() { return std::move(records_); }

 private:
  bool admitted_by_deadline(double now_s, const ServingRequest& candidate) const;
  void finish(const Sequence& s, double now_s);

  ServerModel model_;
  const std::vector<ServingRequest>& arrivals_;
  PagedKvCache& cache_;
  std::optional<double> deadline_s_;
  std::function<std::vector<uint32_t>(uint64_t, uint64_t)> prompt_;
  std::vector<RequestRecord> records_;
  std::deque<Sequence> waiting_;
  std::vector<Sequence> running_;
  Sequence prefilling_;
  size_t next_ = 0;    // the next arrival
  uint64_t ended_ = 0;  // completed or rejected
};

}  // namespace infer_plan::runtime
