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
Json distribution_figures(const Distribution& d, double scale = 1);
// Every section of a prediction (planner/plan/predict.hpp), keyed as the commands print them.
Json prediction_figures(const Prediction& p);

}  // namespace infer_plan
