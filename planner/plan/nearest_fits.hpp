// When a plan does not fit: the nearest plans that do, one lever at a time, as a serving guide's
// checklist walks them, each a field of the plan changed: a smaller weight type, a smaller
// KV type, a shorter context, fewer requests, more tensor-parallel devices, llama.cpp's layer
// split. Each lever's answer is the least change that fits (the largest weight type, the longest
// context, the most requests, the fewest devices, the most layers on the device).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "planner/plan/predict.hpp"

namespace infer_plan {

// One changed field of the plan (the CLI writes it as the flag a user passes).
struct FitSuggestion {
  std::string lever;     // the Plan field: "weights", "kv", "context", "requests", "tp", "gpu_layers"
  std::string value;     // its new value: "Q4_K_M", "q8_0", "47"
  std::string outcome;   // "weights 39.59 GiB, FITS with 1.20 GiB to spare"
  int64_t headroom_bytes = 0;  // the device's margin with the change
};

// Empty when rp.fit fits. Each candidate is the plan with one field changed, resolved and fitted
// as the plan itself (a candidate the model or profile refuses is skipped).
std::vector<FitSuggestion> nearest_fits(const ResolvedPlan& rp);

}  // namespace infer_plan
