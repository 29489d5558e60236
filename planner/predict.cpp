// Sections present: fit and roofline always; offload when the plan has an offload section.
#include "planner/predict.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>

#include "planner/figures.hpp"
#include "planner/input_error.hpp"
#include "planner/memory_fit.hpp"
#include "planner/offload.hpp"
#include "planner/speculative.hpp"
#include "planner/units.hpp"

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

namespace {

// quant: the block layout of the plan's weight type, when it is one GGML type.
Json quant_section(const std::string& weights) {
  for (const auto& t : ggml_types())
    if (t.name.size() == weights.size() &&
        std::equal(t.name.begin(), t.name.end(), weights.begin(),
                   [](char a, char b) { return a == std::toupper(static_cast<unsigned char>(b)); }))
      return Json{{"type", t.name}, {"block_values", t.block_values}, {"block_bytes", t.block_bytes},
                  {"code_bytes", t.code_bytes}, {"meta_bytes", t.meta_bytes},
                  {"bits_per_value", t.bits_per_value()}, {"meta_fraction", t.meta_fraction()},
                  {"size_vs_bf16", t.bits_per_value() / 16.0}};
  return nullptr;
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

Json spec_section(const ResolvedPlan& rp) {
  const SpeculativePlan& sp = *rp.plan.speculative;
  SpecInputs in;
  in.accept_rates = sp.accept;
  in.max_block = sp.max_block;
  in.group = sp.group;
  in.names = {"speculative.accept", "speculative.verify_ms", "speculative.draft_ms", "decode_ms",
              "speculative.max_block", "speculative.group"};
  if (!sp.draft.empty() && !(sp.verify_ms && sp.draft_ms)) {
    Plan draft_plan = rp.plan;
    draft_plan.model = sp.draft;
    draft_plan.weights_bytes.reset();
    draft_plan.offload.reset();
    draft_plan.speculative.reset();
    const ResolvedPlan draft = resolve_plan(draft_plan);
    in.verify_ms = roofline_verify_ms(*rp.roofline, rp.plan.requests, rp.plan.context);
    in.draft_ms = roofline_draft_ms(*draft.roofline, rp.plan.requests, rp.plan.context);
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

}  // namespace

Json predict(const Plan& plan) {
  const ResolvedPlan rp = resolve_plan(plan);
  Json figures;
  figures["model"] = rp.spec.name;
  figures["hw"] = rp.hw.name;
  figures["fit"] = fit_figures(fit_memory(rp.spec, rp.hw, plan, rp.weights.bytes, rp.weights.label));
  figures["roofline"] = latency_figures(estimate_latency(*rp.roofline, plan.requests, plan.context, plan.output),
                                        rp.roofline->rates());
  figures["quant"] = quant_section(plan.weights);
  figures["kv"] = kv_section(rp.spec, plan);
  if (plan.speculative) figures["spec"] = spec_section(rp);
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
