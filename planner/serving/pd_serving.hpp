// Prefill/decode disaggregation on the serving clock: the pools a disaggregated server runs and
// their rules, written once for the simulation here and the runtime's workers.
//
// - Prefill pool: `prefill_workers` workers take the prompts in arrival order (one shared FCFS
//   queue); a worker prefills one prompt at a time, prefill_s of its tokens.
// - Link: each prefilled request's KV (the prompt's cache as the decode side holds it) crosses one
//   link, in the order the prefills end, one transfer at a time: transfer_s of the request. Or
//   streamed as the prefill makes it (stream_pieces), the transfer overlapping the prefill.
// - Decode pool: `decode_workers` workers; the requests whose KV has landed are handed to them in
//   turn (round-robin in landing order). A worker is the scheduler's decode server (DecodePool):
//   FCFS, a request admitted when a batch slot is free and its whole KV (prompt + output, whole
//   pages) fits beside those admitted; every step decodes a token for each admitted request.
// - The first token a client sees is the decode side's: the prefill's last position is computed
//   again there (as vLLM's disaggregated serving does), so a request joins its first decode step
//   with its prompt as context and decodes `output` steps in all. TTFT = queue + prefill + transfer
//   + the wait for and run of that first decode step.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "planner/serving/serving_sim.hpp"

namespace infer_plan {

// One decode worker's policy (both evaluators drive it): requests arrive with their KV, wait in
// FCFS order, and are admitted at a step's start when a batch slot is free and their reservation
// (prompt + output, whole pages of the server's kv_page_tokens) fits beside the admitted ones'; the
// head blocks those behind it. Each step decodes one token of every admitted request.
class DecodePool {
 public:
  // `server`: max_batch, kv_capacity_tokens and kv_page_tokens (its callbacks are not called);
  // `requests` (ids are indices) must outlive the pool.
  DecodePool(const ServerModel& server, const std::vector<ServingRequest>& requests);

  // Request `id`'s KV has landed: it waits. False (and ignored) when its KV exceeds the whole pool.
  bool offer(uint32_t id);
  bool has_work() const { return !running_.empty() || admits_head(); }
  // Admits what fits and returns the step's batch (ids, each decoding one token).
  const std::vector<uint32_t>& schedule();
  // The step scheduled has run: the requests that emitted their last token leave (departed()).
  void complete();

  const std::vector<uint32_t>& started() const { return started_; }    // admitted by the last schedule()
  const std::vector<uint32_t>& departed() const { return departed_; }  // left at the last complete()
  // The sum of the batch's contexts during the last step scheduled (prompt + tokens decoded before it).
  uint64_t context_tokens() const { return context_tokens_; }
  uint64_t waiting() const { return waiting_.size(); }
  uint64_t reserved_tokens() const { return reserved_tokens_; }

 private:
  struct Running {
    uint32_t id;
    uint64_t decoded;  // tokens decoded so far
  };
  bool admits_head() const;

  const ServerModel* server_;
  const std::vector<ServingRequest>* requests_;
  std::deque<uint32_t> waiting_;
  std::vector<Running> running_;
  std::vector<uint32_t> batch_, started_, departed_;
  uint64_t reserved_tokens_ = 0, context_tokens_ = 0;
};

struct PdServerModel {
  std::function<double(uint64_t prompt_tokens)> prefill_s;  // one prompt on one prefill worker
  ServerModel decode;        // a decode worker: decode_iteration_s, max_batch, its KV pool
  // Seconds one request's KV bytes take on the link (the prompt's cache: pd_kv_bytes_per_request
  // over the link's bandwidth), and the link's latency each transfer pays beside its bytes (a
  // request crossing whole is one transfer; streamed, each piece is one).
  std::function<double(uint64_t prompt_tokens)> transfer_s;
  double message_s = 0;
  uint64_t prefill_workers = 1, decode_workers = 1;
  // 1: a request's KV crosses whole once its prefill ends. N > 1: streamed as the prefill makes
  // it, N pieces (a layer each) per forward pass of the prompt: a pass of prefill_pass_tokens (0:
  // the whole prompt in one) sends each layer's pages it completed (the last pass, the rest), its
  // k-th piece (from 0) ready at (k + stream_ready_share) / N of the pass (a layer's K and V are
  // final before its FFN runs: pd_kv_written_share), the passes sharing the prefill's time as
  // their tokens do; a pass that completes no page sends nothing. The link takes the pieces of all
  // requests in the order they are ready, one at a time.
  uint64_t stream_pieces = 1;
  double stream_ready_share = 1;
  uint64_t prefill_pass_tokens = 0;
  struct StreamPiece {
    double ready_share;  // of the request's prefill, from its start
    double bytes_share;  // of the request's KV bytes
  };
  // A streamed request's pieces, in the order they are ready (one piece, whole, when not streamed).
  std::vector<StreamPiece> pieces(uint64_t prompt_tokens) const;
  // The link's time for one request's KV: its bytes and a latency per piece.
  double link_s(uint64_t prompt_tokens) const {
    return transfer_s(prompt_tokens) + static_cast<double>(pieces(prompt_tokens).size()) * message_s;
  }
};

// One request's course through the pools, from t = 0 (all -1 when it was rejected).
struct PdRequestTimes {
  double arrival_s = 0, prefill_start_s = -1, prefill_end_s = -1, transfer_start_s = -1, transfer_end_s = -1;
  double first_token_s = -1, finish_s = -1;
  double link_s = -1;    // the link's time carrying it (streamed: its pieces'); -1: transfer end - start
  std::string rejected;  // "exceeds_kv_capacity" (the decode worker's pool), else empty
};

struct PdServingResult {
  std::vector<PdRequestTimes> requests;  // in arrival order
  // TTFT and its parts, over the completed requests: waiting for a prefill worker, the prefill,
  // waiting for and crossing the link, waiting for and running the first decode step.
  Distribution ttft_s, queue_s, prefill_s, transfer_s, first_decode_s, tpot_s;
  Distribution link_s;  // the link's time carrying a request (PdRequestTimes::link_s)
  Distribution e2el_s;  // arrival to last token
  uint64_t completed = 0, rejected = 0;
  double span_s = 0;  // t = 0 to the last departure
};
// Fills `r`'s distributions and counts from r.requests (the simulation's, or a run's records).
void summarize_pd(PdServingResult& r, const std::vector<ServingRequest>& requests);

// Runs `requests` (arrival order) through the pools; every request ends completed or rejected.
// InputError for zero workers or a callback returning a negative or non-finite time.
PdServingResult simulate_pd_serving(const PdServerModel& model, const std::vector<ServingRequest>& requests);

// A server's requests as the split and the colocated servers are compared: arrival, first and
// last token from t = 0 (rejected ones are counted, not timed).
struct ServedRequest {
  double arrival_s = 0, first_token_s = -1, finish_s = -1;
  uint64_t output_tokens = 0;
  bool rejected = false;
};
struct ServedSummary {
  Distribution ttft_s, tpot_s, e2el_s;
  uint64_t completed = 0, rejected = 0;
  // The colocated servers' stability (serving_sim's verdict, each server's): an unstable one's
  // figures grow with the run's length.
  bool stable = true;
  std::string unstable_reason;
};
ServedSummary summarize_served(const std::vector<ServedRequest>& requests);
ServedSummary summarize_served(const PdServingResult& r, const std::vector<ServingRequest>& requests);

// The colocated side of the comparison: `servers` servers of `server`'s policy, request i (in
// arrival order) on server i mod servers, each on its own clock from t = 0 (stable when all are).
ServedSummary simulate_colocated(const ServerModel& server, const ServingLoad& load,
                                 const std::vector<ServingRequest>& requests, uint64_t servers);
// Which pays under the load: the split when its mean end-to-end latency (TTFT plus the decode
// that follows) is below the colocated servers', else colocation.
enum class PdChoice { split, colocate };
const char* pd_choice_name(PdChoice c);  // "split", "colocate"
PdChoice pd_choice(const ServedSummary& split, const ServedSummary& colocated);

}  // namespace infer_plan
