// In numbers (Qwen3-8B BF16, FFN of one layer in every 4): 9 x 288 MiB = 2592 MiB freed;
// 1 buffer -> net 2304 MiB -> +2 requests of 1152 MiB; 2592 MiB = 2.72 GB per round over
// 64 GB/s = 42.5 ms, above a 26.26 ms iteration: 255 rounds take 10.8 s.
#include "planner/cost/offload.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "planner/core/input_error.hpp"
#include "planner/core/units.hpp"

namespace infer_plan {
namespace {

std::string mib(uint64_t b) { return fmt::format("{:.0f} MiB", to_mib(b)); }
std::string mib(int64_t b) { return fmt::format("{:.0f} MiB", static_cast<double>(b) / MiB); }

}  // namespace

bool offload_part_contains(OffloadPart part, TensorRole role) {
  switch (part) {
    case OffloadPart::layer: return true;
    case OffloadPart::attn:
      return role == TensorRole::attn_q || role == TensorRole::attn_k || role == TensorRole::attn_v ||
             role == TensorRole::attn_output || role == TensorRole::attn_q_bias ||
             role == TensorRole::attn_k_bias || role == TensorRole::attn_v_bias || role == TensorRole::attn_q_a ||
             role == TensorRole::attn_q_a_norm || role == TensorRole::attn_q_b || role == TensorRole::attn_kv_a_mqa ||
             role == TensorRole::attn_kv_a_norm || role == TensorRole::attn_k_b || role == TensorRole::attn_v_b ||
             role == TensorRole::attn_qkv || role == TensorRole::attn_output_bias || role == TensorRole::attn_sinks ||
             role == TensorRole::attn_kv_b;
    case OffloadPart::ffn:
      return role == TensorRole::ffn_gate || role == TensorRole::ffn_up || role == TensorRole::ffn_down ||
             role == TensorRole::ffn_gate_inp || role == TensorRole::ffn_gate_exps ||
             role == TensorRole::ffn_up_exps || role == TensorRole::ffn_down_exps || role == TensorRole::ffn_gate_shexp ||
             role == TensorRole::ffn_up_shexp || role == TensorRole::ffn_down_shexp ||
             role == TensorRole::ffn_exp_probs_b || role == TensorRole::ffn_gate_inp_bias ||
             role == TensorRole::ffn_gate_exps_bias || role == TensorRole::ffn_up_exps_bias ||
             role == TensorRole::ffn_down_exps_bias;
  }
  return false;
}

bool offload_layer_selected(uint64_t layer, uint64_t every) { return (layer + 1) % every == 0; }

OffloadPart parse_offload_part(std::string_view text, std::string_view what) {
  if (text == "ffn") return OffloadPart::ffn;
  if (text == "attn") return OffloadPart::attn;
  if (text == "layer") return OffloadPart::layer;
  throw InputError(fmt::format("{}: '{}' is not an offload part; expected ffn, attn or layer", what, text));
}

std::string_view offload_part_name(OffloadPart part) {
  switch (part) {
    case OffloadPart::ffn: return "ffn";
    case OffloadPart::attn: return "attn";
    case OffloadPart::layer: return "layer";
  }
  return "?";
}

uint64_t offload_group_bytes(const WeightsLayout& layout, OffloadPart part, uint64_t layer) {
  uint64_t bytes = 0;
  for (const TensorPlacement& p : layout.tensors)
    if (p.tensor.layer == static_cast<int64_t>(layer) && offload_part_contains(part, p.tensor.role)) bytes += p.bytes;
  return bytes;
}

std::string OffloadMemory::label() const {
  return fmt::format("{} of {} of {} layers, {} slot{} of {}", offload_part_name(part), layers_offloaded, layers,
                     buffers, buffers == 1 ? "" : "s", mib(group_bytes));
}

OffloadMemory offload_memory(const ModelSpec& spec, const WeightsLayout& layout, double weights_scale,
                             OffloadPart part, uint64_t every, uint64_t buffers) {
  if (every == 0 || every > spec.layers)
    throw InputError(fmt::format("offload.every (--every): {} is out of range; expected 1 (every layer) to {} (one layer of {})",
                                 every, spec.layers, spec.name));
  if (buffers == 0 || buffers > spec.layers)
    throw InputError(fmt::format("offload.buffers (--buffers): {} is out of range; expected 1 to {} (2 overlap copy and compute)",
                                 buffers, spec.layers));
  OffloadMemory m{part, every, buffers, spec.layers};
  for (uint64_t l = 0; l < spec.layers; ++l) {
    if (!offload_layer_selected(l, every)) continue;
    const auto group = static_cast<uint64_t>(std::llround(
        static_cast<double>(offload_group_bytes(layout, part, l)) * weights_scale));
    ++m.layers_offloaded;
    m.freed_bytes += group;
    m.group_bytes = std::max(m.group_bytes, group);
  }
  m.buffer_bytes = buffers * m.group_bytes;
  return m;
}

OffloadResult plan_offload(const ModelSpec& spec, const WeightsLayout& layout, double weights_scale,
                           KvTypes kv, const OffloadInput& in, const Roofline* roofline, uint64_t max_batch) {
  const OffloadMemory memory = offload_memory(spec, layout, weights_scale, in.part, in.every, in.buffers);
  if (!(in.link_bytes_per_s > 0)) throw InputError("--link: the link bandwidth must be positive");
  if (!(in.iteration_s > 0)) throw InputError("--decode-ms: the decode iteration must be positive");
  if (in.requests == 0) throw InputError("--parallel: expected at least 1");

  OffloadResult r;
  r.layers_offloaded = memory.layers_offloaded;
  r.freed_bytes = memory.freed_bytes;
  r.group_bytes = memory.group_bytes;
  r.buffer_bytes = memory.buffer_bytes;
  r.net_saving_bytes = memory.net_saving_bytes();
  const uint64_t kv_token = kv_bytes_per_token(spec, kv);
  r.kv_bytes_per_request = kv_token * in.prompt_tokens;
  r.kv_bytes_per_request_reserved = kv_token * (in.prompt_tokens + in.output_tokens);
  if (r.net_saving_bytes > 0) {
    r.extra_requests = static_cast<uint64_t>(r.net_saving_bytes) / r.kv_bytes_per_request;
    r.extra_requests_reserved = static_cast<uint64_t>(r.net_saving_bytes) / r.kv_bytes_per_request_reserved;
  }

  r.bytes_per_round = r.freed_bytes;
  const double round_s = static_cast<double>(r.bytes_per_round) / in.link_bytes_per_s;
  r.round_ms = round_s * 1e3;
  r.iteration_ms = in.iteration_s * 1e3;
  r.transfer_exceeds_iteration = round_s > in.iteration_s;
  r.overlapped = in.buffers >= 2;
  // Per group: compute runs layer by layer (c = iteration / layers each); the copy of group i+1
  // may start once a buffer is free. With two or more buffers it overlaps the compute of the k
  // layers between groups; with one it must wait until group i's own part has been computed, so
  // its window is k layers minus that part (c_part, its share of the layer's bytes). Whatever
  // exceeds the window stalls decode. Evenly spaced groups make this max(round, iteration).
  const double layer_s = in.iteration_s / static_cast<double>(spec.layers);
  const uint64_t layer_bytes = offload_group_bytes(layout, OffloadPart::layer, in.every - 1);
  const double part_share = layer_bytes ? static_cast<double>(offload_group_bytes(layout, in.part, in.every - 1)) /
                                              static_cast<double>(layer_bytes)
                                        : 0.0;
  const double group_copy_s = static_cast<double>(r.group_bytes) / in.link_bytes_per_s;
  r.window_ms = (static_cast<double>(in.every) - (r.overlapped ? 0.0 : part_share)) * layer_s * 1e3;
  r.stall_per_group_ms = std::max(0.0, group_copy_s * 1e3 - r.window_ms);
  const double effective_s = in.iteration_s + static_cast<double>(r.layers_offloaded) * r.stall_per_group_ms / 1e3;
  r.effective_round_ms = effective_s * 1e3;
  r.throughput_ceiling_tok_s = static_cast<double>(in.requests) / effective_s;
  r.rounds = in.output_tokens > 0 ? in.output_tokens - 1 : 0;
  r.transfer_total_s = static_cast<double>(r.rounds) * round_s;
  r.generation_s = static_cast<double>(r.rounds) * effective_s;
  if (in.deadline_s) r.meets_deadline = r.generation_s <= *in.deadline_s;

  const double group_s = static_cast<double>(r.group_bytes) / in.link_bytes_per_s;
  r.max_hidden_layers = group_s > 0 ? std::min<uint64_t>(spec.layers, static_cast<uint64_t>(in.iteration_s / group_s))
                                    : spec.layers;
  if (roofline && max_batch > 0) {
    // decode iterations grow with the batch (more KV to read, more FLOPs); find the first that
    // covers the round, by bisection over a monotone function of the batch
    const uint64_t mean_context = in.prompt_tokens + in.output_tokens / 2;
    auto covers = [&](uint64_t b) { return roofline->decode_step(b, mean_context).time_s >= round_s; };
    r.hiding_batch_searched_to = max_batch;
    if (covers(max_batch)) {
      uint64_t lo = 1, hi = max_batch;
      while (lo < hi) {
        const uint64_t mid = lo + (hi - lo) / 2;
        if (covers(mid)) hi = mid; else lo = mid + 1;
      }
      r.hiding_batch = lo;
    }
  }

  auto& d = r.derivation;
  d.push_back(fmt::format("offloaded = layers with (l + 1) % {} == 0 = {} of {} layers ({})", in.every,
                          r.layers_offloaded, spec.layers, offload_part_name(in.part)));
  d.push_back(fmt::format("freed     = {} x {} ({} B per group) = {} ({} B)", r.layers_offloaded,
                          mib(r.group_bytes), r.group_bytes, mib(r.freed_bytes), r.freed_bytes));
  d.push_back(fmt::format("net       = freed - {} buffer{} x {} = {} - {} = {}", in.buffers,
                          in.buffers == 1 ? "" : "s", mib(r.group_bytes), mib(r.freed_bytes),
                          mib(r.buffer_bytes), mib(r.net_saving_bytes)));
  d.push_back(fmt::format("extra     = floor({} / {} per request at {} tokens) = {}; reserved to completion "
                          "({} + {} tokens, {}): {}", mib(r.net_saving_bytes), mib(r.kv_bytes_per_request),
                          in.prompt_tokens, r.extra_requests, in.prompt_tokens, in.output_tokens,
                          mib(r.kv_bytes_per_request_reserved), r.extra_requests_reserved));
  d.push_back(fmt::format("round     = {} B / {} ({}) = {:.2f} ms vs iteration {:.2f} ms ({}) -> {}",
                          r.bytes_per_round, format_rate(in.link_bytes_per_s), in.link_name, r.round_ms,
                          r.iteration_ms, in.iteration_source,
                          r.transfer_exceeds_iteration ? "the transfer is NOT hidden" : "hidden under compute"));
  d.push_back(fmt::format("window    = ({} layers{}) x {:.3f} ms per layer = {:.3f} ms per group; copy {:.3f} ms "
                          "-> stall {:.3f} ms per group", in.every,
                          r.overlapped ? "" : fmt::format(" - {:.2f} (the part itself, 1 buffer)", part_share),
                          layer_s * 1e3, r.window_ms, group_copy_s * 1e3, r.stall_per_group_ms));
  d.push_back(fmt::format("effective = iteration + {} x stall = {:.2f} + {} x {:.3f} = {:.2f} ms per round",
                          r.layers_offloaded, r.iteration_ms, r.layers_offloaded, r.stall_per_group_ms,
                          r.effective_round_ms));
  d.push_back(fmt::format("ceiling   = {} requests / {:.4f} s = {:.1f} tok/s", in.requests, effective_s,
                          r.throughput_ceiling_tok_s));
  d.push_back(fmt::format("generation= {} rounds x {:.2f} ms = {:.2f} s (transfer alone {:.2f} s){}", r.rounds,
                          r.effective_round_ms, r.generation_s, r.transfer_total_s,
                          in.deadline_s ? fmt::format(" vs deadline {} s -> {}", *in.deadline_s,
                                                      *r.meets_deadline ? "meets it" : "misses it")
                                        : ""));
  d.push_back(fmt::format("hidden    = floor({:.2f} ms / {:.3f} ms per group) = {} layers at most (of {})",
                          r.iteration_ms, group_s * 1e3, r.max_hidden_layers, spec.layers));
  return r;
}

}  // namespace infer_plan
