// Sections present: fit and roofline always; offload when the plan has an offload section.
#include "planner/plan/predict.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>

#include "planner/calibration/calibration.hpp"
#include "planner/cost/engine_memory.hpp"
#include "planner/plan/figures.hpp"
#include "planner/core/input_error.hpp"
#include "planner/cost/memory_fit.hpp"
#include "planner/plan/plan.hpp"
#include "planner/cost/offload.hpp"
#include "planner/serving/littles_law.hpp"
#include "planner/serving/serving_sim.hpp"
#include "planner/cost/speculative.hpp"
#include "planner/model/model_scale.hpp"
#include "planner/core/units.hpp"

namespace infer_plan {

ResolvedPlan resolve_plan(const Plan& plan) {
  ResolvedPlan rp;
  rp.plan = plan;
  rp.spec = plan_model_spec(plan);
  rp.hw = plan.hw_inline ? hw_profile_from_json(*plan.hw_inline, "inline", "plan: field 'hw'",
                                                [](const std::string& n) { return load_link(n); })
                         : load_hw_profile(plan.hw);
  if (!plan.engine.empty() && !(rp.hw.calibration && rp.hw.calibration->engine == plan.engine)) {
    // The engine's step model where published runs were fitted; else the ceiling, saying why
    // (fit still counts the engine's memory).
    (void)engine_memory(plan.engine, rp.spec, rp.hw, plan.context, plan.requests);  // a known engine
    rp.hw.calibration = builtin_calibration(rp.hw, plan.engine);
    if (!rp.hw.calibration)
      rp.hw.uncalibrated_note = fmt::format("no {} calibration for {}; built-in ones (llama.cpp): {}; fit one from your "
                                            "own llama-bench output with `infer-plan calibrate`",
                                            plan.engine, rp.hw.name, fmt::join(builtin_calibration_names(), ", "));
  }
  rp.weights = plan_weights(rp.spec, plan.weights, plan.weights_bytes);
  rp.roofline = std::make_unique<Roofline>(rp.spec, rp.weights.layout, plan.kv, rp.hw, plan.tp, rp.weights.scale);
  return rp;
}

ServerModel plan_server_model(const ResolvedPlan& rp, const FitResult& fit) {
  const Roofline* rl = rp.roofline.get();
  ServerModel server;
  server.decode_iteration_s = [rl](uint64_t batch, uint64_t context_tokens) {
    return rl->decode_step(batch, context_tokens / std::max<uint64_t>(batch, 1)).time_s;
  };
  server.prefill_s = [rl](uint64_t prompt) { return rl->prefill(prompt).time_s; };
  server.kv_capacity_tokens = fit.kv_bytes / fit.kv_bytes_per_token;
  server.max_batch = rp.plan.load ? rp.plan.load->max_batch : rp.plan.requests;
  return server;
}

ServingLoad plan_serving_load(const Plan& plan) {
  if (!plan.load || !plan.load->rate_per_s) throw InputError("plan: load.rate_per_s is needed to simulate serving");
  if (plan.output == 0 || plan.output >= plan.context)
    throw InputError(fmt::format("plan: output {} must be at least 1 and less than context {} (the prompt "
                                 "is context - output tokens)", plan.output, plan.context));
  ServingLoad load;
  load.rate_per_s = *plan.load->rate_per_s;
  load.requests = plan.load->requests;
  load.prompt_tokens = TokenLengths::fixed(plan.context - plan.output);
  load.output_tokens = TokenLengths::fixed(plan.output);
  load.deadline_s = plan.deadline_s;
  load.seed = plan.load->seed;
  return load;
}

ModelSpec plan_model_spec(const Plan& plan) {
  return scale_model_spec(load_model(plan.model), plan.scale, "scale");
}

double plan_iteration_s(const ResolvedPlan& rp, std::string* source) {
  if (rp.plan.decode_ms) {
    if (source) *source = "given";
    return *rp.plan.decode_ms / 1e3;
  }
  if (source) *source = fmt::format("roofline, batch {}", rp.plan.requests);
  return rp.roofline->decode_step(rp.plan.requests, rp.plan.context).time_s;
}

namespace {

// quant: the block layout of the plan's weight type, when it is one GGML type.
Json quant_section(const std::string& weights) {
  const GgmlTypeInfo* found = find_ggml_type(weights);
  if (!found) return nullptr;
  const GgmlTypeInfo& t = *found;
  return Json{{"type", t.name}, {"block_values", t.block_values}, {"block_bytes", t.block_bytes},
                  {"code_bytes", t.code_bytes}, {"meta_bytes", t.meta_bytes},
                  {"bits_per_value", t.bits_per_value()}, {"meta_fraction", t.meta_fraction()},
                  {"size_vs_bf16", t.bits_per_value() / 16.0}};
}

// kv: bytes per token and per request for the common cache types, keyed by type name.
Json kv_section(const ModelSpec& spec, const Plan& plan) {
  Json out = Json::object();
  const uint64_t bf16 = kv_bytes_per_token(spec, {GgmlType::BF16, GgmlType::BF16}, plan.tp) * plan.context;
  for (GgmlType t : {GgmlType::BF16, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0}) {
    const uint64_t token = kv_bytes_per_token(spec, {t, t}, plan.tp);
    out[std::string(ggml_type_info(t).name)] = {
        {"bytes_per_token", token},
        {"bytes_per_request", token * plan.context},
        {"mib_per_request", to_mib(token * plan.context)},
        {"saving_vs_bf16_bytes", static_cast<int64_t>(bf16) - static_cast<int64_t>(token * plan.context)},
        {"saving_vs_bf16_mib", (static_cast<double>(bf16) - static_cast<double>(token * plan.context)) / MiB}};
  }
  return out;
}

}  // namespace

std::unique_ptr<Roofline> plan_draft_roofline(const ResolvedPlan& rp) {
  const SpeculativePlan& sp = *rp.plan.speculative;
  if (sp.draft_layers) {
    if (*sp.draft_layers > rp.spec.layers)
      throw InputError(fmt::format("speculative.draft_layers: {} is more than the target's {} layers", *sp.draft_layers,
                                   rp.spec.layers));
    return std::make_unique<Roofline>(first_layers_spec(rp.spec, *sp.draft_layers),
                                      first_layers_layout(rp.weights.layout, *sp.draft_layers), rp.plan.kv, rp.hw,
                                      rp.plan.tp, rp.weights.scale);
  }
  if (sp.draft.empty() || (sp.verify_ms && sp.draft_ms)) return nullptr;
  Plan draft_plan = rp.plan;
  draft_plan.model = sp.draft;
  draft_plan.weights_bytes.reset();
  draft_plan.offload.reset();
  draft_plan.speculative.reset();
  ResolvedPlan draft = resolve_plan(draft_plan);
  return std::move(draft.roofline);
}

namespace {

Json spec_section(const ResolvedPlan& rp) {
  const SpeculativePlan& sp = *rp.plan.speculative;
  SpecInputs in;
  in.accept_rates = sp.accept;
  in.max_block = sp.max_block;
  in.group = sp.group;
  in.names = {"speculative.accept", "speculative.verify_ms", "speculative.draft_ms", "decode_ms",
              "speculative.max_block", "speculative.group"};
  if (const std::unique_ptr<Roofline> draft = plan_draft_roofline(rp)) {
    in.verify_ms = roofline_verify_ms(*rp.roofline, rp.plan.requests, rp.plan.context);
    in.draft_ms = roofline_draft_ms(*draft, rp.plan.requests, rp.plan.context);
  } else {
    in.verify_ms = constant_verify_ms(*sp.verify_ms);
    in.draft_ms = *sp.draft_ms;
  }
  if (rp.plan.decode_ms) in.plain_ms_per_token = *rp.plan.decode_ms;
  const SpecResult r = speculative_table(in);
  Json rows = Json::array(), by_block = Json::object();
  for (const SpecRow& row : r.rows) {
    Json j{{"block", row.block}, {"expected_tokens", row.expected_tokens}, {"drafts", row.drafts},
           {"verify_ms", row.verify_ms}, {"round_ms", row.round_ms}, {"ms_per_token", row.ms_per_token},
           {"speedup", row.speedup}};
    rows.push_back(j);
    by_block[std::to_string(row.block)] = j;
  }
  Json out{{"rows", rows}, {"by_block", by_block}, {"best_block", r.best_block},
           {"best_ms_per_token", r.best_ms_per_token}, {"best_speedup", r.best_speedup},
           {"beats_plain", r.beats_plain}, {"plain_ms_per_token", r.plain_ms_per_token},
           {"draft_ms", in.draft_ms}};
  if (sp.block) {
    if (*sp.block == 0 || *sp.block > r.rows.size())
      throw InputError(fmt::format("speculative.block: {} is outside the table 1..{}", *sp.block, r.rows.size()));
    out["spec_ms_per_token"] = r.rows[*sp.block - 1].ms_per_token;
    out["spec_tokens_per_round"] = r.rows[*sp.block - 1].expected_tokens;
  }
  return out;
}

Json distribution(const Distribution& d, double scale) {
  return Json{{"mean", d.mean * scale}, {"p50", d.p50 * scale}, {"p90", d.p90 * scale}, {"p99", d.p99 * scale},
              {"max", d.max * scale}};
}

// serving: Poisson arrivals on a continuous-batching server whose steps are the roofline's and
// whose KV capacity is the pool fit sized (requests x context, whole pages): the pool the runtime
// allocates, so a request waits for KV space in both at the same moments.
Json serving_section(const ResolvedPlan& rp, const FitResult& fit) {
  const ServerModel server = plan_server_model(rp, fit);
  ServingLoad load = plan_serving_load(rp.plan);
  const ServingResult r = simulate_serving(server, load);
  Json j{{"stable", r.stable}, {"unstable_reason", r.unstable_reason}, {"requests", r.requests},
         {"completed", r.completed}, {"rejected", r.rejected.total()}, {"rejection_rate", r.rejection_rate},
         {"kv_capacity_tokens", *server.kv_capacity_tokens}, {"utilisation", r.utilisation},
         {"mean_batch", r.mean_batch}, {"rate_per_s", load.rate_per_s}};
  if (r.stable && r.latency) {
    j["mean_in_system"] = r.latency->mean_in_system;
    j["mean_sojourn_s"] = r.latency->sojourn_s.mean;
    j["littles_law_in_system"] = r.latency->littles_law_in_system;
    j["throughput_tok_s"] = r.throughput_tok_s;
    j["sojourn_s"] = distribution(r.latency->sojourn_s, 1);
    j["ttft_s"] = distribution(r.latency->ttft_s, 1);
    j["tpot_ms"] = distribution(r.latency->tpot_s, 1e3);
  } else {  // an unstable load has no latency figures, never a number
    for (const char* k : {"mean_in_system", "mean_sojourn_s", "throughput_tok_s", "sojourn_s", "ttft_s", "tpot_ms"})
      j[k] = nullptr;
  }
  return j;
}

}  // namespace

std::optional<OffloadMemory> plan_offload_memory(const Plan& plan, const ModelSpec& spec, const PlanWeights& weights) {
  if (!plan.offload) return std::nullopt;
  return offload_memory(spec, weights.layout, weights.scale, parse_offload_part(plan.offload->part, "offload.part"),
                        plan.offload->every, plan.offload->buffers);
}

OffloadInput plan_offload_input(const ResolvedPlan& rp, LinkProfile* link_used) {
  const Plan& plan = rp.plan;
  if (!plan.offload) throw InputError("plan: no 'offload' section");
  OffloadInput in;
  in.part = parse_offload_part(plan.offload->part, "offload.part");
  in.every = plan.offload->every;
  in.buffers = plan.offload->buffers;
  LinkProfile link;
  if (!plan.offload->link.empty()) link = load_link(plan.offload->link);
  else if (!rp.hw.host_links.empty()) link = rp.hw.host_links.front();
  else throw InputError(fmt::format("offload: profile {} has no host link; name one with --link (offload.link)", rp.hw.name));
  in.link_name = link.name;
  in.link_bytes_per_s = link.bandwidth_bytes_per_s;
  in.prompt_tokens = plan.context;
  in.output_tokens = plan.output;
  in.requests = plan.requests;
  in.iteration_s = plan_iteration_s(rp, &in.iteration_source);
  in.deadline_s = plan.deadline_s;
  if (link_used) *link_used = link;
  return in;
}

Json predict(const Plan& plan) {
  const ResolvedPlan rp = resolve_plan(plan);
  Json figures;
  figures["model"] = rp.spec.name;
  figures["hw"] = rp.hw.name;
  const std::optional<OffloadMemory> offloaded = plan_offload_memory(plan, rp.spec, rp.weights);
  const FitResult fit = fit_memory(rp.spec, rp.hw, plan, rp.weights.bytes, rp.weights.label, true,
                                   offloaded ? &*offloaded : nullptr);
  figures["fit"] = fit_figures(fit);
  if (plan.load) {
    const LoadPlan& lp = *plan.load;
    const int given = (lp.rate_per_s ? 1 : 0) + (lp.sojourn_s ? 1 : 0) + (lp.in_system ? 1 : 0);
    if (given == 2) {
      LittleQuery q{lp.rate_per_s, lp.sojourn_s, lp.in_system, "load.rate_per_s", "load.sojourn_s", "load.in_system"};
      const LittleResult r = solve_littles_law(q);
      figures["queue"] = {{"mean_in_system", r.mean_in_system}, {"rate_per_s", r.rate_per_s},
                          {"mean_sojourn_s", r.mean_sojourn_s}, {"derivation", r.derivation}};
    }
    if (lp.simulate) figures["serving"] = serving_section(rp, fit);
  }
  figures["roofline"] = latency_figures(estimate_latency(*rp.roofline, plan.requests, plan.context, plan.output),
                                        rp.roofline->rates());
  figures["quant"] = quant_section(plan.weights.empty() ? std::string("BF16") : plan.weights);
  figures["kv"] = kv_section(rp.spec, plan);
  if (plan.speculative) figures["spec"] = spec_section(rp);
  if (plan.offload) {
    LinkProfile link;
    const OffloadInput in = plan_offload_input(rp, &link);
    const OffloadResult r = plan_offload(rp.spec, rp.weights.layout, rp.weights.scale, plan.kv, in,
                                         rp.roofline.get(), 4096);
    figures["offload"] = offload_figures(r);
    figures["offload"]["link"] = link.name;
  }
  return figures;
}

}  // namespace infer_plan
