// Prefill/decode disaggregation executed, beside the colocated servers it is weighed against.
//
// The split (the plan's pd section): prefill workers and decode workers, each a device of its own
// (its own thread pool, weights, KV cache and forward pass), running at once on the backend's
// clock with the rules the planner simulates (planner/serving/pd_serving.hpp):
// - a prefill worker takes the next prompt in arrival order when it is free, prefills it whole
//   (in passes of RunOptions::prefill_chunk tokens), copies its KV pages out and frees them;
// - one link carries each request's pages, one transfer at a time in the order the prefills end,
//   copying them in chunks paced to the plan's link (its bandwidth times pd.link_scale); the bytes
//   copied are counted. With pd.stream each layer's whole pages leave as soon as the layer has
//   written them, so the transfer overlaps the prefill;
// - the landed requests go to the decode workers in turn; each worker's DecodePool admits them
//   (their pages written into its cache) and decodes its batch a token a step. The prompt's last
//   position is computed again there and gives the first token.
// The colocated side: as many servers as workers, each run_plan on its share of the same arrivals
// (request i on server i mod n), all at once. Every worker and server gets the same threads.
#pragma once
#include <cstdint>
#include <vector>

#include "planner/core/json_fields.hpp"
#include "planner/plan/predict.hpp"
#include "planner/serving/pd_serving.hpp"
#include "runtime/backend.hpp"
#include "runtime/server.hpp"

namespace infer_plan::runtime {

struct PdRunResult {
  std::string backend;
  unsigned threads_per_worker = 0;
  std::vector<ServingRequest> arrivals;
  PdServingResult split;                     // each request's course on the split, from t = 0
  std::vector<uint64_t> kv_transfer_bytes;   // per request: bytes the link copied (0: rejected)
  std::string link;
  double link_bytes_per_s = 0;               // the pace, as the plan scales the link
  double link_message_s = 0;                 // the wait before each transfer's first byte, scaled alike
  std::vector<StepRecord> prefill_steps, decode_steps;  // the split's passes, all workers
  std::vector<RunResult> colocated;          // server k served requests k, k + n, ...
  bool interrupted = false;
};

// The threads each worker computes with: the run's compute threads shared among the prefill and
// decode workers (one each at least).
unsigned pd_worker_threads(const Plan& plan, unsigned threads);
// What check_runnable refuses, and what a split cannot run yet: offload, speculation, a shared
// prefix, window layers (whose ring pages are not exported), a backend whose KV the host cannot
// address.
void check_pd_runnable(const ResolvedPlan& rp, const Backend& backend);
// Greedy; `options.on_token` hears the split's tokens (from the decode workers' threads, one at a
// time), not the colocated servers'.
PdRunResult run_pd_plan(const ResolvedPlan& rp, Backend& backend, const RunOptions& options);

// As the prediction's pd section (planner/plan/figures: pd_figures) keys it: kv_transfer_bytes
// (the largest of the requests'), kv_transfer_ms (the link's mean crossing), split, colocated, choice.
struct MeasuredPd {
  uint64_t kv_transfer_bytes = 0, kv_transfer_bytes_min = 0;
  PdServingResult split;
  ServedSummary split_served, colocated;
  PdChoice choice = PdChoice::colocate;
};
MeasuredPd measured_pd(const PdRunResult& r);
Json measured_pd_json(const PdRunResult& r, const MeasuredPd& m);

}  // namespace infer_plan::runtime
