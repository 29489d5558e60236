// Sections present: fit and roofline always; offload when the plan has an offload section.
#include "planner/predict.hpp"

#include <fmt/format.h>

#include "planner/figures.hpp"
#include "planner/input_error.hpp"
#include "planner/memory_fit.hpp"
#include "planner/offload.hpp"

namespace infer_plan {

ResolvedPlan resolve_plan(const Plan& plan) {
  ResolvedPlan rp;
  rp.plan = plan;
  rp.spec = load_model(plan.model);
  rp.hw = plan.hw_inline ? hw_profile_from_json(*plan.hw_inline, "inline", "plan: field 'hw'",
                                                [](const std::string& n) { return load_link(n); })
                         : load_hw_profile(plan.hw);
  rp.weights = plan_weights(rp.spec, plan.weights, plan.weights_bytes);
  rp.roofline = std::make_unique<Roofline>(rp.spec, rp.weights.layout, plan.kv, rp.hw, plan.tp, rp.weights.scale);
  return rp;
}

double plan_iteration_s(const ResolvedPlan& rp, std::string* source) {
  if (rp.plan.decode_ms) {
    if (source) *source = "given";
    return *rp.plan.decode_ms / 1e3;
  }
  if (source) *source = fmt::format("roofline, batch {}", rp.plan.requests);
  return rp.roofline->decode_step(rp.plan.requests, rp.plan.context).time_s;
}

Json predict(const Plan& plan) {
  const ResolvedPlan rp = resolve_plan(plan);
  Json figures;
  figures["model"] = rp.spec.name;
  figures["hw"] = rp.hw.name;
  figures["fit"] = fit_figures(fit_memory(rp.spec, rp.hw, plan, rp.weights.bytes, rp.weights.label));
  figures["roofline"] = latency_figures(estimate_latency(*rp.roofline, plan.requests, plan.context, plan.output),
                                        rp.roofline->rates());
  if (plan.offload) {
    OffloadInput in;
    in.part = parse_offload_part(plan.offload->part, "offload.part");
    in.every = plan.offload->every;
    in.buffers = plan.offload->buffers;
    LinkProfile link;
    if (!plan.offload->link.empty()) link = load_link(plan.offload->link);
    else if (!rp.hw.host_links.empty()) link = rp.hw.host_links.front();
    else throw InputError(fmt::format("offload: profile {} has no host link; name one with offload.link", rp.hw.name));
    in.link_name = link.name;
    in.link_bytes_per_s = link.bandwidth_bytes_per_s;
    in.prompt_tokens = plan.context;
    in.output_tokens = plan.output;
    in.requests = plan.requests;
    in.iteration_s = plan_iteration_s(rp, &in.iteration_source);
    in.deadline_s = plan.deadline_s;
    const OffloadResult r = plan_offload(rp.spec, rp.weights.layout, rp.weights.scale, plan.kv, in,
                                         rp.roofline.get(), 4096);
    figures["offload"] = offload_figures(r);
    figures["offload"]["link"] = link.name;
  }
  return figures;
}

}  // namespace infer_plan
