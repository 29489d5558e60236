// Figures: the planner's results as JSON with unit-carrying keys, the same keys that `--json`
// prints, that scenario expectations address ("offload.round_ms") and that the runtime's
// measured figures will share.
#pragma once
#include "planner/core/json_fields.hpp"
#include "planner/cost/memory_fit.hpp"
#include "planner/cost/offload.hpp"
#include "planner/cost/roofline.hpp"
#include "planner/plan/predict.hpp"
#include "planner/serving/serving_sim.hpp"

namespace infer_plan {

Json fit_figures(const FitResult& r);
Json latency_figures(const LatencyEstimate& e, const RooflineRates& rates);
Json offload_figures(const OffloadResult& r);
// {mean, p50, p90, p99, max, count}, the values times `scale` (1e3: seconds as ms): predicted
// and measured distributions alike.
// {mean, median, p90, p99, max, count, unresolved}: `unresolved` lists the percentiles too few
// samples cannot tell from the maximum (percentile_resolved).
Json distribution_figures(const Distribution& d, double scale = 1);
// A serving run in vLLM bench's vocabulary: ttft_ms, tpot_ms, itl_ms, e2el_ms (end to end) and
// queue_wait_ms distributions; request_throughput_req_s, output_throughput_tok_s, goodput_req_s
// (null without goodput limits); mean_in_system and littles_law_in_system. All null when the
// run has no latency (unstable, or nothing completed).
Json serving_metrics(const ServingResult& r);
// The disaggregation comparison: a server's TTFT, TPOT and E2EL (ms), completed and rejected;
// the split's TTFT in parts beside them; the whole pd section (kv_transfer_bytes, kv_transfer_ms,
// split, colocated, choice). The runtime's measured pd section has the same keys.
Json served_figures(const ServedSummary& s);
Json pd_split_figures(const PdServingResult& r, const ServedSummary& served);
Json pd_figures(const PdPrediction& p);
// Every section of a prediction (planner/plan/predict.hpp), keyed as the commands print them.
Json prediction_figures(const Prediction& p);

}  // namespace infer_plan
