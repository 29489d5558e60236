#include "planner/plan/nearest_fits.hpp"

#include <fmt/format.h>

#include <optional>
#include <vector>

#include "planner/core/input_error.hpp"
#include "planner/core/units.hpp"
#include "planner/cost/kv_cache.hpp"

namespace infer_plan {
namespace {

// The plan with one change, resolved; nullopt when the change is refused (a head count tensor
// parallel cannot split, a row length a type cannot store) or does not fit.
std::optional<ResolvedPlan> fitting(const Plan& changed) {
  try {
    ResolvedPlan rp = resolve_plan(changed);
    if (rp.fit.fits) return rp;
  } catch (const InputError&) {
  }
  return std::nullopt;
}

std::string spare(const FitResult& f) { return fmt::format("FITS with {} to spare", gib(f.headroom_bytes)); }

// llama.cpp's common file types, and vLLM's checkpoint formats, each from the most bits down.
constexpr const char* kLlamaCppLadder[] = {"Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q3_K_M", "Q2_K"};
constexpr const char* kVllmLadder[] = {"FP8", "AWQ_INT4_G128"};

}  // namespace

std::vector<FitSuggestion> nearest_fits(const ResolvedPlan& rp) {
  std::vector<FitSuggestion> out;
  if (rp.fit.fits) return out;
  const Plan& plan = rp.plan;

  if (!plan.weights_bytes) {  // a given file size has no smaller type to offer
    const bool vllm = plan.engine == "vllm" || plan.weights.starts_with("FP8") || plan.weights.starts_with("AWQ") ||
                      plan.weights.starts_with("GPTQ") || plan.weights.starts_with("INT8") ||
                      plan.weights.starts_with("NVFP4");
    const auto try_ladder = [&](const auto& ladder) {
      for (const char* type : ladder) {
        Plan changed = plan;
        changed.weights = type;
        std::optional<ResolvedPlan> r;
        try {
          if (plan_weights(rp.spec, type, std::nullopt).bytes >= rp.weights.bytes) continue;  // not smaller
          r = fitting(changed);
        } catch (const InputError&) {
          continue;
        }
        if (!r) continue;
        out.push_back({"weights", type,
                       fmt::format("weights {}{}, {}", gib(r->fit.weights_bytes), r->fit.tp > 1 ? " per device" : "",
                                   spare(r->fit)),
                       r->fit.headroom_bytes});
        return;
      }
    };
    if (vllm) try_ladder(kVllmLadder);
    else try_ladder(kLlamaCppLadder);
  }

  {
    // llama.cpp's cache types; vLLM quantizes its cache to fp8 only
    const uint64_t now = kv_bytes_per_token(rp.spec, plan.kv);
    const std::vector<const char*> kv_ladder =
        plan.engine == "vllm" ? std::vector<const char*>{"fp8"} : std::vector<const char*>{"q8_0", "q4_0"};
    for (const char* name : kv_ladder) {
      Plan changed = plan;
      const GgmlType type = kv_cache_type(name, "KV type").type;
      changed.kv = {type, type};
      if (kv_bytes_per_token(rp.spec, changed.kv) >= now) continue;
      if (const std::optional<ResolvedPlan> r = fitting(changed)) {
        out.push_back({"kv", name,
                       fmt::format("KV {}, {}", gib(r->fit.kv_bytes), spare(r->fit)), r->fit.headroom_bytes});
        break;
      }
    }
  }

  if (rp.fit.max_context > 0 && rp.fit.max_context < plan.context) {
    Plan changed = plan;
    changed.context = rp.fit.max_context;
    if (const std::optional<ResolvedPlan> r = fitting(changed))
      out.push_back({"context", std::to_string(changed.context),
                     fmt::format("{} tokens per request, {}", changed.context, spare(r->fit)), r->fit.headroom_bytes});
  }
  if (rp.fit.max_requests > 0 && rp.fit.max_requests < plan.requests) {
    Plan changed = plan;
    changed.requests = rp.fit.max_requests;
    if (const std::optional<ResolvedPlan> r = fitting(changed))
      out.push_back({"requests", std::to_string(changed.requests),
                     fmt::format("{} concurrent request{}, {}", changed.requests, changed.requests == 1 ? "" : "s",
                                 spare(r->fit)),
                     r->fit.headroom_bytes});
  }

  // (a list of devices, or of their shares, is the user's: more devices of it are not a change of one field)
  if (!plan.gpu_layers && !plan.gpu_layers_auto && plan.devices.empty() && plan.tensor_split.empty()) {
    for (uint64_t tp = plan.tp * 2; tp <= 8; tp *= 2) {
      Plan changed = plan;
      changed.tp = tp;
      if (const std::optional<ResolvedPlan> r = fitting(changed)) {
        out.push_back({"tp", std::to_string(tp),
                       fmt::format("{} devices, {} of weights each, {}", tp, gib(r->fit.weights_bytes), spare(r->fit)),
                       r->fit.headroom_bytes});
        break;
      }
    }
    if (rp.hw.host && plan.tp == 1 && !plan.offload) {
      Plan changed = plan;
      changed.gpu_layers_auto = true;
      if (const std::optional<ResolvedPlan> r = fitting(changed); r && r->split && r->split->gpu_layers > 0) {
        const double step_s = r->server.decode_iteration_s(1, plan.context);
        out.push_back({"gpu_layers", std::to_string(r->split->gpu_layers),
                       fmt::format("{} of {} layers on the device, the rest in host memory: decode {:.1f} tokens/s at "
                                   "batch 1, {}",
                                   r->split->gpu_layers, split_layer_count(rp.spec), 1.0 / step_s, spare(r->fit)),
                       r->fit.headroom_bytes});
      }
    }
  }
  return out;
}

}  // namespace infer_plan
