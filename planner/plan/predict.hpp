// planner::predict: a Plan in, the predicted Figures out (the left half of DESIGN's picture).
// Each section is what the matching command prints with --json.
#pragma once
#include <memory>

#include "planner/catalog/catalog.hpp"
#include "planner/core/json_fields.hpp"
#include "planner/cost/offload.hpp"
#include "planner/plan/plan.hpp"
#include "planner/cost/roofline.hpp"
#include "planner/cost/memory_fit.hpp"
#include "planner/serving/serving_sim.hpp"
#include "planner/weights/weights_size.hpp"

namespace infer_plan {

// A plan's named inputs, loaded and checked once.
struct ResolvedPlan {
  Plan plan;
  ModelSpec spec;
  HwProfile hw;
  PlanWeights weights;
  std::unique_ptr<Roofline> roofline;
};
ResolvedPlan resolve_plan(const Plan& plan);
// The server the serving simulation runs for a plan: roofline steps, the KV pool fit sized
// (requests x context, whole pages), at most load.max_batch running (requests without a load).
// Holds a pointer to rp's roofline: rp must outlive it.
ServerModel plan_server_model(const ResolvedPlan& rp, const FitResult& fit);
// The load a plan's `load` section offers: each request holds `context` tokens of KV, a prompt of
// context - output tokens and `output` generated tokens; arrivals at load.rate_per_s.
ServingLoad plan_serving_load(const Plan& plan);
// The plan's model at the plan's scale: the shape the planner predicts and the runtime executes.
ModelSpec plan_model_spec(const Plan& plan);

// The decode iteration the plan uses: its measured decode_ms, else the roofline at the plan's
// batch (requests) and context; `source` says which.
double plan_iteration_s(const ResolvedPlan& rp, std::string* source);

// What the plan's offload section moves off the device and its slots take (offload_memory), for
// fit; nullopt without an offload section.
std::optional<OffloadMemory> plan_offload_memory(const Plan& plan, const ModelSpec& spec, const PlanWeights& weights);

// The offload planner's inputs from a plan with an offload section: the link (named, or the
// profile's first host link), the batch and lengths, and plan_iteration_s.
OffloadInput plan_offload_input(const ResolvedPlan& rp, LinkProfile* link_used = nullptr);

// The roofline of a speculative plan's draft: the target's first draft_layers blocks (same
// weights, KV types and hardware), or the named draft model resolved like the plan's. InputError
// when draft_layers exceeds the target's layers; null when the plan gives times instead.
std::unique_ptr<Roofline> plan_draft_roofline(const ResolvedPlan& rp);

Json predict(const Plan& plan);

}  // namespace infer_plan
