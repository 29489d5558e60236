// Figures: the planner's results as JSON with unit-carrying keys, the same keys that `--json`
// prints, that scenario expectations address ("offload.round_ms") and that the runtime's
// measured figures will share.
#pragma once
#include "planner/core/json_fields.hpp"
#include "planner/cost/memory_fit.hpp"
#include "planner/cost/offload.hpp"
#include "planner/cost/roofline.hpp"

namespace infer_plan {

Json fit_figures(const FitResult& r);
Json latency_figures(const LatencyEstimate& e, const RooflineRates& rates);
Json offload_figures(const OffloadResult& r);

}  // namespace infer_plan
