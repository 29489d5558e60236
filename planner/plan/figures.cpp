// Byte figures stay integers; times carry their unit in the key (_ms, _s); absent answers are
// null, never a made-up number (e.g. hiding_batch when no batch hides the transfer).
#include "planner/plan/figures.hpp"

#include "planner/core/units.hpp"

namespace infer_plan {

Json fit_figures(const FitResult& r) {
  Json reserves = Json::array();
  for (const auto& n : r.reserves) reserves.push_back({{"name", n.name}, {"bytes", n.bytes}});
  Json j{{"weights", r.weights_label},
              {"engine_assumption", r.engine_assumption},
              {"context", r.context},
              {"requests", r.requests},
              {"tp", r.tp},
              {"capacity_bytes", r.capacity_bytes},
              {"system_reserved_bytes", r.system_reserved_bytes},
              {"usable_bytes", r.usable_bytes},
              {"weights_bytes", r.weights_bytes},
              {"kv_bytes_per_token", r.kv_bytes_per_token},
              {"kv_bytes_per_request", r.kv_bytes_per_request},
              {"kv_bytes", r.kv_bytes},
              {"reserves", reserves},
              {"reserved_bytes", r.reserved_bytes},
              {"free_after_weights_bytes", r.free_after_weights_bytes},
              {"headroom_bytes", r.headroom_bytes},
              {"fits", r.fits},
              {"max_requests", r.max_requests},
              {"max_context", r.max_context},
              {"warnings", r.warnings}};
  j["device_weights_bytes"] = r.device_weights_bytes;
  j["kv_pool_bytes"] = r.kv_room_bytes;
  if (r.kv_pool_tokens) j["kv_pool_tokens"] = *r.kv_pool_tokens;
  if (r.offload) {
    j["offload"] = {{"part", offload_part_name(r.offload->part)}, {"every", r.offload->every},
                    {"layers_offloaded", r.offload->layers_offloaded}, {"group_bytes", r.offload->group_bytes},
                    {"freed_bytes", r.offload->freed_bytes}, {"buffers", r.offload->buffers},
                    {"buffer_bytes", r.offload->buffer_bytes}};
  }
  if (r.split)
    j["split"] = {{"gpu_layers", r.split->gpu_layers}, {"device_blocks", r.split->device_blocks},
                  {"head_on_device", r.split->head_on_device}, {"device_weights_bytes", r.split->device_weights_bytes},
                  {"host_weights_bytes", r.split->host_weights_bytes}};
  if (r.host)
    j["host"] = {{"description", r.host->description}, {"capacity_bytes", r.host->capacity_bytes},
                 {"reserved_bytes", r.host->reserved_bytes}, {"usable_bytes", r.host->usable_bytes},
                 {"weights_bytes", r.host->weights_bytes}, {"kv_bytes", r.host->kv_bytes},
                 {"headroom_bytes", r.host->headroom_bytes}, {"fits", r.host->fits}};
  return j;
}

Json latency_figures(const LatencyEstimate& e, const RooflineRates& rates) {
  Json j{{"batch", e.batch},
              {"context", e.context},
              {"output", e.output},
              {"decode_iteration_ms", e.decode_iteration_ms},
              {"bytes_per_iteration", e.decode.bytes()},
              {"weight_bytes_per_iteration", e.decode.weight_bytes},
              {"kv_bytes_per_iteration", e.decode.kv_bytes},
              {"flops_per_iteration", e.decode.flops},
              {"decode_memory_ms", e.decode.memory_s * 1e3},
              {"decode_compute_ms", e.decode.compute_s * 1e3},
              {"decode_comm_ms", e.decode.comm_s * 1e3},
              {"decode_bound", e.decode.compute_bound ? "compute" : "memory"},
              {"prefill_ms", e.prefill_ms},
              {"prefill_bound", e.prefill.compute_bound ? "compute" : "memory"},
              {"prefill_micro_batches", static_cast<uint64_t>(e.prefill.micro_batches)},
              {"ttft_ms", e.ttft_s * 1e3},
              {"tpot_ms", e.tpot_ms},
              {"tokens_per_s", e.tokens_per_s},
              {"memory_bandwidth_bytes_per_s", rates.memory_bytes_per_s},
              {"memory_source", rates.memory_source},
              {"compute_ops_per_s", rates.compute_ops_per_s},
              {"compute_source", rates.compute_source},
              {"all_reduce_source", rates.all_reduce_source},
              {"step_model", rates.step_source},
              {"basis", e.decode.calibrated ? rates.basis : "ceiling"},
              {"calibrated", e.decode.calibrated},
              {"ceiling_ms", e.decode.ceiling_s * 1e3},
              {"prefill_ceiling_ms", e.prefill.ceiling_s * 1e3}};
  if (e.decode.calibrated) {  // the step model's terms and its leave-one-out band
    j["decode_iteration_ms_lo"] = e.decode.time_lo_s * 1e3;
    j["decode_iteration_ms_hi"] = e.decode.time_hi_s * 1e3;
    j["tpot_ms_lo"] = e.generation.time_lo_s * 1e3;
    j["tpot_ms_hi"] = e.generation.time_hi_s * 1e3;
    j["decode_fixed_ms"] = e.decode.fixed_s * 1e3;
    j["decode_read_ms"] = e.decode.read_s * 1e3;
    j["decode_extra_tokens_ms"] = e.decode.extra_tokens_s * 1e3;
  }
  if (e.prefill.calibrated) {
    j["prefill_ms_lo"] = e.prefill.time_lo_s * 1e3;
    j["prefill_ms_hi"] = e.prefill.time_hi_s * 1e3;
  }
  return j;
}

Json offload_figures(const OffloadResult& r) {
  Json j{{"layers_offloaded", r.layers_offloaded},
         {"group_bytes", r.group_bytes},
         {"freed_bytes", r.freed_bytes},
         {"buffer_bytes", r.buffer_bytes},
         {"net_saving_bytes", r.net_saving_bytes},
         {"kv_bytes_per_request", r.kv_bytes_per_request},
         {"kv_bytes_per_request_reserved", r.kv_bytes_per_request_reserved},
         {"extra_requests", r.extra_requests},
         {"extra_requests_reserved", r.extra_requests_reserved},
         {"bytes_per_round", r.bytes_per_round},
         {"round_ms", r.round_ms},
         {"iteration_ms", r.iteration_ms},
         {"transfer_exceeds_iteration", r.transfer_exceeds_iteration},
         {"overlapped", r.overlapped},
         {"window_ms", r.window_ms},
         {"stall_per_group_ms", r.stall_per_group_ms},
         {"effective_round_ms", r.effective_round_ms},
         {"throughput_ceiling_tok_s", r.throughput_ceiling_tok_s},
         {"rounds", r.rounds},
         {"transfer_total_s", r.transfer_total_s},
         {"generation_s", r.generation_s},
         {"meets_deadline", nullptr},
         {"max_hidden_layers", r.max_hidden_layers},
         {"hiding_batch", nullptr},
         {"hiding_batch_searched_to", r.hiding_batch_searched_to}};
  if (r.meets_deadline) j["meets_deadline"] = *r.meets_deadline;
  if (r.hiding_batch) j["hiding_batch"] = *r.hiding_batch;
  return j;
}

Json distribution_figures(const Distribution& d, double scale) {
  Json unresolved = Json::array();
  for (const auto& [name, p] : {std::pair{"p90", 0.90}, std::pair{"p95", 0.95}, std::pair{"p99", 0.99}})
    if (!percentile_resolved(d.count, p)) unresolved.push_back(name);
  return Json{{"mean", d.mean * scale}, {"median", d.p50 * scale}, {"p90", d.p90 * scale}, {"p95", d.p95 * scale},
              {"p99", d.p99 * scale},   {"max", d.max * scale},   {"count", d.count},          {"unresolved", unresolved}};
}

Json serving_metrics(const ServingResult& r) {
  Json j;
  const ServingLatency* lat = r.latency ? &*r.latency : nullptr;
  auto dist = [&](const char* key, Distribution ServingLatency::*member) {
    j[key] = lat && (lat->*member).count > 0 ? distribution_figures(lat->*member, 1e3) : Json(nullptr);
  };
  dist("ttft_ms", &ServingLatency::ttft_s);
  dist("tpot_ms", &ServingLatency::tpot_s);
  dist("itl_ms", &ServingLatency::itl_s);
  dist("e2el_ms", &ServingLatency::sojourn_s);
  dist("queue_wait_ms", &ServingLatency::queue_wait_s);
  j["request_throughput_req_s"] = lat ? Json(lat->rate_effective_per_s) : Json(nullptr);
  j["output_throughput_tok_s"] = lat ? Json(r.throughput_tok_s) : Json(nullptr);
  j["goodput_req_s"] = lat && r.good_requests && r.span_s > 0
                           ? Json(static_cast<double>(*r.good_requests) / r.span_s)
                           : Json(nullptr);
  j["mean_in_system"] = lat ? Json(lat->mean_in_system) : Json(nullptr);
  j["littles_law_in_system"] = lat ? Json(lat->littles_law_in_system) : Json(nullptr);
  return j;
}

namespace {

// quant: the block layout of the plan's weight type, when it is one GGML type.
Json quant_figures(const GgmlTypeInfo* type) {
  if (!type) return nullptr;
  const GgmlTypeInfo& t = *type;
  return Json{{"type", t.name}, {"block_values", t.block_values}, {"block_bytes", t.block_bytes},
              {"code_bytes", t.code_bytes}, {"meta_bytes", t.meta_bytes},
              {"bits_per_value", t.bits_per_value()}, {"meta_fraction", t.meta_fraction()},
              {"size_vs_bf16", t.bits_per_value() / 16.0}};
}

// kv: bytes per token and per request for the common cache types, keyed by type name, each
// against the first (BF16).
Json kv_figures(const std::vector<KvTypeCost>& kv, uint64_t context) {
  Json out = Json::object();
  if (kv.empty()) return out;
  const uint64_t reference = kv.front().bytes_per_token * context;
  for (const KvTypeCost& c : kv) {
    const uint64_t request = c.bytes_per_token * context;
    out[std::string(ggml_type_info(c.type).name)] = {
        {"bytes_per_token", c.bytes_per_token},
        {"bytes_per_request", request},
        {"mib_per_request", to_mib(request)},
        {"saving_vs_bf16_bytes", static_cast<int64_t>(reference) - static_cast<int64_t>(request)},
        {"saving_vs_bf16_mib", (static_cast<double>(reference) - static_cast<double>(request)) / MiB}};
  }
  return out;
}

Json spec_figures(const SpecPrediction& p) {
  const SpecResult& r = p.table;
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
           {"draft_ms", p.draft_ms}};
  if (p.block) {
    out["spec_ms_per_token"] = r.rows[*p.block - 1].ms_per_token;
    out["spec_tokens_per_round"] = r.rows[*p.block - 1].expected_tokens;
  }
  return out;
}

Json serving_figures(const ServingPrediction& p) {
  const ServingResult& r = p.result;
  Json j{{"stable", r.stable}, {"unstable_reason", r.unstable_reason}, {"requests", r.requests},
         {"completed", r.completed}, {"rejected", r.rejected.total()}, {"rejection_rate", r.rejection_rate},
         {"kv_capacity_tokens", p.kv_capacity_tokens}, {"utilisation", r.utilisation},
         {"mean_batch", r.mean_batch}, {"rate_per_s", p.rate_per_s}};
  // An unstable load has no latency figures (null), never a number.
  j.update(serving_metrics(r));
  return j;
}

}  // namespace

Json served_figures(const ServedSummary& s) {
  return Json{{"ttft_ms", distribution_figures(s.ttft_s, 1e3)}, {"tpot_ms", distribution_figures(s.tpot_s, 1e3)},
              {"e2el_ms", distribution_figures(s.e2el_s, 1e3)}, {"completed", s.completed}, {"rejected", s.rejected}};
}

Json pd_split_figures(const PdServingResult& r, const ServedSummary& served) {
  Json j = served_figures(served);
  j["queue_ms"] = distribution_figures(r.queue_s, 1e3);
  j["prefill_ms"] = distribution_figures(r.prefill_s, 1e3);
  j["transfer_ms"] = distribution_figures(r.transfer_s, 1e3);
  j["kv_transfer_ms"] = distribution_figures(r.link_s, 1e3);
  j["first_decode_ms"] = distribution_figures(r.first_decode_s, 1e3);
  return j;
}

Json pd_figures(const PdPrediction& p) {
  return Json{{"link", p.link},
              {"link_bytes_per_s", p.link_bytes_per_s},
              {"link_message_ms", to_ms_exact(p.link_message_s)},
              {"prefill_workers", p.prefill_workers},
              {"decode_workers", p.decode_workers},
              {"stream", p.stream},
              {"kv_transfer_bytes", p.kv_transfer_bytes},
              {"kv_transfer_ms", p.kv_transfer_s * 1e3},
              {"split", pd_split_figures(p.split, p.split_served)},
              {"colocated", served_figures(p.colocated)},
              {"choice", pd_choice_name(p.choice)}};
}

Json prediction_figures(const Prediction& p) {
  Json figures;
  figures["model"] = p.model;
  figures["hw"] = p.hw;
  figures["fit"] = fit_figures(p.fit);
  if (p.queue)
    figures["queue"] = {{"mean_in_system", p.queue->mean_in_system}, {"rate_per_s", p.queue->rate_per_s},
                        {"mean_sojourn_s", p.queue->mean_sojourn_s}, {"derivation", p.queue->derivation}};
  if (p.serving) figures["serving"] = serving_figures(*p.serving);
  figures["roofline"] = latency_figures(p.latency, p.rates);
  figures["quant"] = quant_figures(p.weights_type);
  figures["kv"] = kv_figures(p.kv, p.context);
  if (p.spec) figures["spec"] = spec_figures(*p.spec);
  if (p.offload) {
    figures["offload"] = offload_figures(p.offload->result);
    figures["offload"]["link"] = p.offload->link;
  }
  if (p.pd) figures["pd"] = pd_figures(*p.pd);
  return figures;
}

}  // namespace infer_plan
