// Assumptions, each stated where the output shows it: MoE routing is uniform and independent
// (distinct experts = E (1 - (1 - k/E)^T)); attention FLOPs are 4 x q_width per attended position
// per layer (QK^T and PV); activations and their traffic are ignored; the all-reduce (two per
// layer, ring: 2 (N-1)/N of the activations per device) is not overlapped with compute, and each
// call costs a fixed latency beside its bytes: the link's latency_us, else kDefaultAllReduceLatencyS.
// Without a device link (NVLink) the devices all-reduce over their host link (PCIe peer to peer).
#include "planner/cost/roofline.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "planner/core/input_error.hpp"
#include "planner/core/units.hpp"

namespace infer_plan {
namespace {

constexpr double kActivationBytes = 2.0;  // bf16 activations in the all-reduce
constexpr int kAllReducesPerLayer = 2;    // after attention and after the FFN (Megatron-style)
// One small all-reduce's fixed cost when the link states none: NCCL's ring over NVLink or PCIe
// takes several microseconds for a decode step's few KiB (the synchronisation, not the bytes), so
// a TP = 4 Llama-70B step's 160 calls add about 0.8 ms, where their bytes alone take 0.01 ms.
constexpr double kDefaultAllReduceLatencyS = 5e-6;
// The same across machines (RDMA between nodes): NCCL's small-message all-reduce over InfiniBand
// takes tens of microseconds.
constexpr double kDefaultNodeAllReduceLatencyS = 20e-6;
// A step's hand-over from one device to the next when devices hold whole layers (llama.cpp -sm
// layer): Llama-3-8B Q4_K_M's tg512 slows by 0.12-0.37 ms per added device, median 0.20, on 1-6
// RTX 3090s and 1-8 RTX 4090s (XiongjieDai/GPU-Benchmarks-on-LLM-Inference README, llama.cpp of
// May 2024); the hidden states cross the link beside it.
constexpr double kLayerHandOverS = 0.2e-3;
constexpr double kHiddenStateBytes = 4.0;  // F32 between llama.cpp's devices
// The tokens an expert product costs at least (StepCost::expert_tile_s): llama.cpp's CUDA MMQ
// kernels tile 8-128 columns; only the product of the tile and the fitted factor matters.
constexpr double kExpertTile = 64;
// Launches per layer when a launch is a projection (the CPU runtime; its norms, RoPE and adds run
// inline on the calling thread).
constexpr double kLaunchesPerAttention = 5;   // q, k, v projections, attention, output projection
constexpr double kLaunchesPerDenseLayer = kLaunchesPerAttention + 3;  // + gate, up, down
// When a launch is a kernel (runtime/cuda_decoder, each a node of the decode step's graph): the
// attention half is RMSNorm, q, k, v, RoPE on q and on k, the KV writer, attention's split and
// combine passes, the output projection and the residual add (11), plus 2 for Qwen3's q/k norms
// and 3 for Qwen2's biases; the dense FFN is RMSNorm, gate, up, SwiGLU, down and the add (6); an
// MoE FFN is RMSNorm and the router, then per active expert gather, gate, up, SwiGLU, down and
// scatter-add; the pass adds the embedding, the head rows' gather, the final RMSNorm, the head
// and the argmax (5).
constexpr double kKernelsPerAttention = 11, kKernelsQkNorm = 2, kKernelsQkvBias = 3;
constexpr double kKernelsPerDenseFfn = 6, kKernelsMoeFfnFixed = 2, kKernelsPerExpert = 6;
constexpr double kKernelsPerPass = 5;

}  // namespace

double product_rate(const HwProfile& hw, const RooflineRates& r, GgmlType type) {
  const GgmlTypeInfo& info = ggml_type_info(type);
  std::string_view precision = info.precision;
  if (precision.empty() && info.gguf && type != GgmlType::BF16 && type != GgmlType::F32) precision = "fp16";
  const auto it = precision.empty() ? hw.compute_ops_per_s.end() : hw.compute_ops_per_s.find(std::string(precision));
  if (it == hw.compute_ops_per_s.end()) return r.compute_ops_per_s;
  return r.compute_ops_per_s * it->second / hw.compute_ops_per_s.at(r.precision);
}

RooflineRates roofline_rates(const HwProfile& hw) {
  RooflineRates r;
  for (const char* prec : {"bf16", "fp16", "fp32"}) {
    if (hw.compute_ops_per_s.count(prec)) {
      r.precision = prec;
      break;
    }
  }
  if (r.precision.empty())
    throw InputError(fmt::format("{}: the profile lists no bf16, fp16 or fp32 compute figure; the "
                                 "roofline needs one (field 'compute')", hw.source));
  const double datasheet_bw = hw.memory_bandwidth_bytes_per_s;
  const double datasheet_flops = hw.compute_ops_per_s.at(r.precision);
  if (hw.measured && hw.measured->memory_bandwidth_bytes_per_s) {
    r.memory_bytes_per_s = *hw.measured->memory_bandwidth_bytes_per_s;
    r.memory_source = fmt::format("measured {} ({})", format_rate(r.memory_bytes_per_s), hw.measured->source);
  } else {
    r.memory_bytes_per_s = datasheet_bw * hw.memory_efficiency;
    r.memory_source = hw.memory_efficiency == 1.0
                          ? fmt::format("datasheet {}", format_rate(datasheet_bw))
                          : fmt::format("datasheet {} x {} efficiency", format_rate(datasheet_bw), hw.memory_efficiency);
  }
  if (hw.measured && hw.measured->compute_ops_per_s.count(r.precision)) {
    r.compute_ops_per_s = hw.measured->compute_ops_per_s.at(r.precision);
    r.compute_source = fmt::format("measured {} {} ({})", r.precision, format_flops(r.compute_ops_per_s), hw.measured->source);
  } else {
    r.compute_ops_per_s = datasheet_flops * hw.compute_efficiency;
    r.compute_source = hw.compute_efficiency == 1.0
                           ? fmt::format("datasheet {} {}", r.precision, format_flops(datasheet_flops))
                           : fmt::format("datasheet {} {} x {} efficiency", r.precision, format_flops(datasheet_flops), hw.compute_efficiency);
  }
  const LinkProfile* link = hw.device_link ? &*hw.device_link : hw.host_links.empty() ? nullptr : &hw.host_links.front();
  if (link) {
    r.device_link_bytes_per_s = link->bandwidth_bytes_per_s;
    r.all_reduce_latency_s = link->all_reduce_latency_s.value_or(kDefaultAllReduceLatencyS);
    r.all_reduce_source = fmt::format("{}{}, {}, {:g} us per call{}", link->name,
                                      hw.device_link ? "" : " (no device link: the host link)",
                                      format_rate(link->bandwidth_bytes_per_s), r.all_reduce_latency_s * 1e6,
                                      link->all_reduce_latency_s ? "" : " (assumed)");
  }
  if (hw.calibration) {
    const StepCalibration& c = *hw.calibration;
    r.basis = c.basis;
    r.step_source = c.basis == "transferred"
                        ? fmt::format("transferred: {}, no measurements of {}: {} ({})", c.engine, hw.name,
                                      c.basis_note, c.source)
                        : fmt::format("calibrated: {}{}{}", c.engine, c.source.empty() ? "" : " (" + c.source + ")",
                                      c.basis_note.empty() ? "" : "; " + c.basis_note);
  }
  else
    r.step_source = fmt::format("{}{}", hw.measured ? "probe ceiling, uncalibrated" : "datasheet ceiling, uncalibrated",
                                hw.uncalibrated_note.empty() ? "" : " (" + hw.uncalibrated_note + ")");
  return r;
}

Roofline::Roofline(const ModelSpec& spec, const WeightsLayout& layout, KvTypes kv, const HwProfile& hw,
                   uint64_t tp, double weights_scale)
    : spec_(spec), rates_(roofline_rates(hw)), tp_(tp), calibration_(hw.calibration) {
  check_tensor_parallel(spec, tp, "--tp");
  if (hw.devices_per_node > 0 && tp > hw.devices_per_node) {
    // The ring crosses machines: each device's share goes over the node link, the slowest hop.
    if (!hw.node_link)
      throw InputError(fmt::format("--tp {}: profile {} holds {} devices per node, and has no 'node_link' for an "
                                   "all-reduce across nodes",
                                   tp, hw.name, hw.devices_per_node));
    const LinkProfile& l = *hw.node_link;
    rates_.device_link_bytes_per_s = l.bandwidth_bytes_per_s;
    rates_.all_reduce_latency_s = l.all_reduce_latency_s.value_or(kDefaultNodeAllReduceLatencyS);
    rates_.all_reduce_source = fmt::format("{} between nodes ({} devices, {} per node), {}, {:g} us per call{}",
                                           l.name, tp, hw.devices_per_node, format_rate(l.bandwidth_bytes_per_s),
                                           rates_.all_reduce_latency_s * 1e6,
                                           l.all_reduce_latency_s ? "" : " (assumed)");
  }
  if (tp > 1 && rates_.device_link_bytes_per_s <= 0)
    throw InputError(fmt::format("--tp {}: profile {} has no 'device_link' nor 'host_links' for the all-reduce", tp,
                                 hw.name));
  if (tp > 1 && calibration_ && calibration_->decode.all_reduce_call_s)  // what apply_calibration charges
    rates_.all_reduce_source += fmt::format("; {}'s step model: {:.3g} us per call", calibration_->engine,
                                            *calibration_->decode.all_reduce_call_s * 1e6);
  const double split = weights_scale / static_cast<double>(tp);
  // A type's measured rates when the profile has them (probe), else the device's.
  const std::optional<MeasuredFigures>& m = hw.measured;
  auto rate_of = [&](const std::map<std::string, double> MeasuredFigures::*table, GgmlType type, double fallback) {
    if (!m) return fallback;
    const auto it = ((*m).*table).find(std::string(ggml_type_info(type).name));
    return it != ((*m).*table).end() ? it->second : fallback;
  };
  auto read_rate = [&](GgmlType t) { return rate_of(&MeasuredFigures::matvec_bytes_per_s, t, rates_.memory_bytes_per_s); };
  // A format with its own precision multiplies at the efficiency the 16-bit rate achieves (where the
  // device lists none, FP8 on an A100, the weights are dequantized to 16 bits and multiplied at that
  // rate); a GeForce card runs llama.cpp's F16 accumulation at twice its FP32-accumulate bf16 rate;
  // a checkpoint format (AWQ, GPTQ: vLLM's kernels accumulate in F32) at the 16-bit rate.
  auto ops_rate = [&](GgmlType t) { return rate_of(&MeasuredFigures::matmul_ops_per_s, t, product_rate(hw, rates_, t)); };
  for (const TensorPlacement& p : layout.tensors) {
    const double bytes = static_cast<double>(p.bytes) * split;
    const TensorInfo& t = p.tensor;
    const double params = static_cast<double>(t.elements()) / static_cast<double>(tp);
    const double read_s = bytes / read_rate(p.type);
    const double multiply_s = 2.0 * params / ops_rate(p.type);
    const std::string type_name(ggml_type_info(p.type).name);
    if (t.is_expert()) read_s_by_type_[type_name].experts += read_s;
    else if (t.role != TensorRole::token_embd || spec.tied_embeddings) read_s_by_type_[type_name].dense += read_s;
    if (t.is_expert())
      token_bytes_by_type_[type_name] += bytes * static_cast<double>(spec.experts_active) / static_cast<double>(spec.experts);
    else if (t.role == TensorRole::output || (t.role == TensorRole::token_embd && spec.tied_embeddings))
      head_bytes_by_type_[type_name] += bytes;  // multiplied only for the tokens whose logits a step computes
    else if (t.role != TensorRole::token_embd && t.is_matrix())
      token_bytes_by_type_[type_name] += bytes;
    if (t.role == TensorRole::token_embd) {
      embd_row_bytes_ = bytes / static_cast<double>(spec.vocab);
      if (spec.tied_embeddings) {  // the same matrix is the output head: read whole every step
        dense_bytes_ += bytes;
        dense_read_s_ += read_s;
        matmul_params_active_ += params;
        matmul_s_per_token_ += multiply_s;
        head_params_ += params;
        head_matmul_s_ += multiply_s;
      }
    } else if (t.is_expert()) {
      const double active = static_cast<double>(spec.experts_active) / static_cast<double>(spec.experts);
      expert_bytes_ += bytes;
      expert_read_s_ += read_s;
      matmul_params_active_ += params * active;
      matmul_s_per_token_ += multiply_s * active;
    } else {
      dense_bytes_ += bytes;
      dense_read_s_ += read_s;
      if (t.is_matrix()) {
        matmul_params_active_ += params;
        matmul_s_per_token_ += multiply_s;
      }
      if (t.role == TensorRole::output) {
        head_params_ += params;
        head_matmul_s_ += multiply_s;
      }
    }
  }
  for (uint64_t l = 0; l < spec.layers; ++l) moe_layers_ += spec.layer_is_moe(l) ? 1 : 0;
  // Kernels per forward pass, as the runtime launches them: per layer q, k, v, attention, output,
  // then gate, up, down (dense) or the router and gate, up, down per active expert; the head.
  const double dense_layers = static_cast<double>(spec.layers - moe_layers_);
  const double active = static_cast<double>(spec.experts_active);
  if (m && m->launch_unit == "kernel") {
    const double attention = kKernelsPerAttention + (spec.qk_norm ? kKernelsQkNorm : 0) + (spec.qkv_bias ? kKernelsQkvBias : 0);
    launches_per_step_ = dense_layers * (attention + kKernelsPerDenseFfn) +
                         static_cast<double>(moe_layers_) * (attention + kKernelsMoeFfnFixed + kKernelsPerExpert * active) +
                         kKernelsPerPass;
  } else {
    launches_per_step_ = dense_layers * kLaunchesPerDenseLayer +
                         static_cast<double>(moe_layers_) * (kLaunchesPerAttention + 1 + 3 * active) + 1;
  }
  if (m && m->launch_overhead_s) launch_overhead_s_ = *m->launch_overhead_s;
  kv_per_token_ = infer_plan::kv_bytes_per_token(spec, kv, tp);
  layer_windows_ = kv_layer_windows(spec);
  state_bytes_ = static_cast<double>(recurrent_state_bytes(spec, kv, tp));
  const ModelSpec::LinearAttention& a = spec.linear;
  linear_flops_per_token_ = 6.0 * static_cast<double>(spec.linear_layer_count() * a.value_heads / tp * a.key_head_dim *
                                                      a.value_head_dim);
}

double Roofline::distinct_experts(double tokens) const {
  if (!spec_.is_moe()) return 0;
  const double e = static_cast<double>(spec_.experts);
  const double k = static_cast<double>(spec_.experts_active);
  return e * (1.0 - std::pow(1.0 - k / e, tokens));
}

StepCost Roofline::finish(StepCost c, double tokens, double head_tokens, double attention_flops, bool prefill) const {
  c.memory_s = weight_read_s(tokens / c.micro_batches) * c.micro_batches + c.kv_bytes / rates_.memory_bytes_per_s;
  c.attention_s = attention_flops / rates_.compute_ops_per_s;
  c.compute_s = matmul_s(tokens, head_tokens) + c.attention_s;
  if (tp_ > 1) {
    const double n = static_cast<double>(tp_);
    c.comm_bytes = static_cast<double>(kAllReducesPerLayer * spec_.layers) * tokens *
                   static_cast<double>(spec_.hidden) * kActivationBytes * 2.0 * (n - 1) / n;
    c.comm_s = c.comm_bytes / rates_.device_link_bytes_per_s +
               static_cast<double>(kAllReducesPerLayer * spec_.layers) * rates_.all_reduce_latency_s;
  }
  if (layer_split_ > 1) {
    const double hops = static_cast<double>(layer_split_ - 1);
    c.comm_kind = "hand-over";
    c.comm_bytes = hops * tokens * static_cast<double>(spec_.hidden) * kHiddenStateBytes;
    c.comm_s = hops * kLayerHandOverS +
               (rates_.device_link_bytes_per_s > 0 ? c.comm_bytes / rates_.device_link_bytes_per_s : 0.0);
  }
  c.compute_bound = c.compute_s > c.memory_s;
  c.overhead_s = launches_per_step_ * launch_overhead_s_;
  c.ceiling_s = std::max(c.memory_s, c.compute_s) + c.comm_s + c.overhead_s;
  c.time_s = c.time_lo_s = c.time_hi_s = c.ceiling_s;
  apply_calibration(c, tokens, head_tokens, prefill);
  return c;
}

// Decode: fixed + launches + memory / read efficiency + extra tokens (+ the all-reduce); prefill:
// its fixed time + launches + the slower of compute / prefill efficiency and memory / read
// efficiency. The launches are the probe's measured overhead (0 without one); a fit subtracts
// them from what it fits, so the fixed time is what the engine adds beyond them.
// A sum below the ceiling is raised to it: no engine beats the speed of light.
void Roofline::apply_calibration(StepCost& c, double tokens, double head_tokens, bool prefill) const {
  if (!calibration_) return;
  const StepCalibration& cal = *calibration_;
  if (tp_ > 1 && cal.decode.all_reduce_call_s)  // the engine's own time per all-reduce call
    c.comm_s += static_cast<double>(kAllReducesPerLayer * spec_.layers) *
                (*cal.decode.all_reduce_call_s - rates_.all_reduce_latency_s);
  // a mixture of experts' own fractions, where the calibration has them, for the whole step
  const double read_eff = spec_.is_moe() && cal.decode.moe_read_efficiency ? *cal.decode.moe_read_efficiency
                                                                           : cal.decode.read_efficiency;
  double read_s = c.memory_s / read_eff;
  for (const auto& [type, e] : cal.decode.read_efficiency_by_type)  // a type's own rate replaces the shared one
    read_s += weight_read_s_of_type(type, tokens) * (1.0 / e - 1.0 / cal.decode.read_efficiency);
  if (cal.decode.kv_read_efficiency)  // the KV cache's own rate replaces the shared one
    read_s += c.kv_bytes / rates_.memory_bytes_per_s * (1.0 / *cal.decode.kv_read_efficiency - 1.0 / cal.decode.read_efficiency);
  const ErrorBand* band = &cal.decode.error;
  if (!prefill) {  // a batched server's cost per sequence (per token of a verify pass) counts as fixed
    c.fixed_s = cal.decode.fixed_s + cal.decode.layer_s * static_cast<double>(spec_.layers) + cal.decode.per_sequence_s * tokens +
                cal.decode.moe_layer_s * spec_.moe_layer_units();
    c.read_s = read_s;
    c.extra_tokens_s = extra_token_s(tokens, head_tokens);
  } else if (cal.prefill) {
    c.fixed_s = cal.prefill->fixed_s * c.micro_batches;
    const double compute_eff = spec_.is_moe() && cal.prefill->moe_compute_efficiency ? *cal.prefill->moe_compute_efficiency
                                                                                     : cal.prefill->compute_efficiency;
    double compute_s = c.compute_s / compute_eff;
    if (cal.prefill->attention_efficiency)  // attention's own rate replaces the shared one
      compute_s += c.attention_s * (1.0 / *cal.prefill->attention_efficiency - 1.0 / compute_eff);
    compute_s += c.expert_tile_s * cal.prefill->expert_tile_factor;
    if (!cal.prefill->compute_efficiency_by_type.empty()) {  // a type's own rate replaces the shared one
      const std::map<std::string, double> share = matmul_share_by_type();
      for (const auto& [type, e] : cal.prefill->compute_efficiency_by_type)
        if (const auto it = share.find(type); it != share.end())
          compute_s += c.compute_s * it->second * (1.0 / e - 1.0 / cal.prefill->compute_efficiency);
    }
    c.read_s = std::max(compute_s, read_s);
    band = &cal.prefill->error;
  } else if (!cal.decode.extra_token_s_per_byte.empty()) {
    // no prefill terms, but measured several-token products (the CPU probe): a prefill is one
    // product of the whole prompt, as a verify pass is
    c.read_s = read_s;
    c.extra_tokens_s = extra_token_s(tokens, head_tokens);
  } else {
    return;  // no prefill terms: the ceiling stays the prediction
  }
  c.calibrated = true;
  c.time_s = std::max(c.fixed_s + c.overhead_s + c.read_s + c.extra_tokens_s + c.comm_s, c.ceiling_s);
  c.time_lo_s = c.time_s * (1.0 + band->lo);
  c.time_hi_s = c.time_s * (1.0 + band->hi);
}

double Roofline::extra_token_s(double tokens, double head_tokens) const {
  if (!calibration_ || tokens <= 1) return 0;
  double s = 0;
  for (const auto& [type, curve] : calibration_->decode.extra_token_s_per_byte) {
    if (const auto it = token_bytes_by_type_.find(type); it != token_bytes_by_type_.end())
      s += it->second * extra_token_s_per_byte(curve, tokens);
    if (const auto it = head_bytes_by_type_.find(type); it != head_bytes_by_type_.end())
      s += it->second * extra_token_s_per_byte(curve, head_tokens);
  }
  return s;
}

std::vector<std::string> Roofline::weight_types() const {
  std::vector<std::string> types;
  for (const auto& [type, s] : read_s_by_type_) types.push_back(type);
  return types;
}

double Roofline::weight_read_s_of_type(const std::string& type, double tokens) const {
  const auto it = read_s_by_type_.find(type);
  if (it == read_s_by_type_.end()) return 0;
  const double expert_fraction =
      spec_.is_moe() ? distinct_experts(tokens) / static_cast<double>(spec_.experts) : 0.0;
  return it->second.dense + it->second.experts * expert_fraction;
}

std::map<std::string, double> Roofline::matmul_share_by_type() const {
  std::map<std::string, double> params;
  double total = 0;
  for (const auto& [type, bytes] : token_bytes_by_type_) {
    const GgmlTypeInfo& t = ggml_type_by_name(type, "roofline");
    const double n = bytes * t.block_values / t.block_bytes;
    params[type] = n;
    total += n;
  }
  for (auto& [type, n] : params) n = total > 0 ? n / total : 0;
  return params;
}

double Roofline::weight_read_s(double tokens) const {
  const double expert_fraction =
      spec_.is_moe() ? distinct_experts(tokens) / static_cast<double>(spec_.experts) : 0.0;
  return dense_read_s_ + expert_read_s_ * expert_fraction + embd_row_bytes_ * tokens / rates_.memory_bytes_per_s;
}

double Roofline::matmul_s(double tokens, double head_tokens) const {
  return (matmul_s_per_token_ - head_matmul_s_) * tokens + head_matmul_s_ * head_tokens;
}

double Roofline::expert_bytes_read(double tokens) const {
  return spec_.is_moe() ? expert_bytes_ * distinct_experts(tokens) / static_cast<double>(spec_.experts) : 0.0;
}

double Roofline::weight_bytes_read(double tokens) const {
  return dense_bytes_ + expert_bytes_read(tokens) + embd_row_bytes_ * tokens;
}

StepCost Roofline::decode_step(uint64_t batch, uint64_t context, uint64_t tokens_per_sequence) const {
  const double b = static_cast<double>(batch);
  const double tokens = b * static_cast<double>(tokens_per_sequence);
  StepCost c;
  c.weight_bytes = weight_bytes_read(tokens);
  c.expert_bytes = expert_bytes_read(tokens);
  const double kv = static_cast<double>(kv_per_token_);
  // Read the cache (a window layer only its window), write the new tokens; read and write each
  // sequence's linear-attention state.
  const double attended = kv_attended_positions(layer_windows_, context);  // layer-rows per query
  c.kv_bytes = b * attended * kv / static_cast<double>(std::max<uint64_t>(spec_.attention_layers(), 1)) + tokens * kv + 2.0 * b * state_bytes_;
  const double attention_flops = static_cast<double>(spec_.attention_flops_per_position()) /
                                 static_cast<double>(tp_) * attended * tokens + linear_flops_per_token_ * tokens;
  c.flops = 2.0 * matmul_params_active_ * tokens + attention_flops;
  return mixed(finish(c, tokens, tokens, attention_flops, false),
               [&](const Roofline& r) { return r.decode_step(batch, context, tokens_per_sequence); });
}

StepCost Roofline::prefill(uint64_t prompt_tokens, uint64_t sequences) const {
  const double p = static_cast<double>(prompt_tokens);
  const double tokens = p * static_cast<double>(sequences);
  StepCost c;
  // each micro-batch reads the weights its tokens touch (the last one's fewer tokens counted alike)
  c.micro_batches = prefill_micro_batch_ ? std::ceil(tokens / static_cast<double>(prefill_micro_batch_)) : 1.0;
  c.weight_bytes = weight_bytes_read(tokens / c.micro_batches) * c.micro_batches;
  c.expert_bytes = expert_bytes_read(tokens / c.micro_batches) * c.micro_batches;
  // written once, and each sequence's linear-attention state
  c.kv_bytes = tokens * static_cast<double>(kv_per_token_) + static_cast<double>(sequences) * state_bytes_;
  // causal attention: token i attends to i + 1 positions (at most a window layer's window), summed
  // over the layers: P (P + 1) / 2 per layer and sequence without windows
  const double attended = static_cast<double>(sequences) * kv_prefill_attended_positions(layer_windows_, prompt_tokens);
  const double attention_flops =
      static_cast<double>(spec_.attention_flops_per_position()) / static_cast<double>(tp_) * attended +
      linear_flops_per_token_ * tokens;
  const double heads = static_cast<double>(sequences);  // logits of each prompt's last token only
  c.flops = 2.0 * ((matmul_params_active_ - head_params_) * tokens + head_params_ * heads) + attention_flops;
  if (spec_.is_moe()) {  // gate, up and down per expert product
    const double products = static_cast<double>(spec_.moe_layer_count()) * distinct_experts(tokens / c.micro_batches) * c.micro_batches;
    c.expert_tile_s = products * 2.0 * 3.0 * static_cast<double>(spec_.hidden * spec_.moe_intermediate) * kExpertTile /
                      static_cast<double>(tp_) / rates_.compute_ops_per_s;
  }
  return mixed(finish(c, tokens, heads, attention_flops, true),
               [&](const Roofline& r) { return r.prefill(prompt_tokens, sequences); });
}

StepCost Roofline::mixed(StepCost own, const std::function<StepCost(const Roofline&)>& other) const {
  if (others_.empty()) return own;
  // The times a device's share scales; the totals among them carry the hand-overs, counted once (the
  // other devices' rooflines have none).
  static constexpr double StepCost::*kTimes[] = {&StepCost::time_s,   &StepCost::time_lo_s,  &StepCost::time_hi_s,
                                                 &StepCost::ceiling_s, &StepCost::memory_s,  &StepCost::compute_s,
                                                 &StepCost::overhead_s, &StepCost::fixed_s,  &StepCost::read_s,
                                                 &StepCost::extra_tokens_s, &StepCost::attention_s,
                                                 &StepCost::expert_tile_s};
  static constexpr double StepCost::*kWithComm[] = {&StepCost::time_s, &StepCost::time_lo_s, &StepCost::time_hi_s,
                                                    &StepCost::ceiling_s};
  StepCost c = own;
  for (double StepCost::*t : kWithComm) c.*t -= own.comm_s;
  for (double StepCost::*t : kTimes) c.*t *= own_share_;
  for (double StepCost::*t : kWithComm) c.*t += own.comm_s;
  for (const auto& [share, roofline] : others_) {
    const StepCost o = other(*roofline);
    for (double StepCost::*t : kTimes) c.*t += share * o.*t;
    c.calibrated = c.calibrated && o.calibrated;
  }
  c.compute_bound = c.compute_s > c.memory_s;
  return c;
}

}  // namespace infer_plan

namespace infer_plan {
namespace {

std::string step_line(std::string_view what, const StepCost& c, const RooflineRates& r) {
  if (c.calibrated)
    return fmt::format("{}: fixed {:.3f} ms + reads {:.3f} ms ({:.4g} GB weights + {:.4g} GB KV at {:.4g} GB/s, "
                       "over the achieved efficiency{}){} {}-> {:.3f} ms ({:.3f}-{:.3f}); ceiling {:.3f} ms ({})",
                       what, c.fixed_s * 1e3, c.read_s * 1e3, c.weight_bytes / 1e9, c.kv_bytes / 1e9,
                       r.memory_bytes_per_s / 1e9, c.read_s > c.memory_s * 1.0001 && c.compute_s > c.memory_s ? "; or compute" : "",
                       c.extra_tokens_s > 0 ? fmt::format(" + extra tokens {:.3f} ms", c.extra_tokens_s * 1e3) : "",
                       c.comm_s > 0 ? fmt::format("+ all-reduce {:.3f} ms ", c.comm_s * 1e3) : "", c.time_s * 1e3,
                       c.time_lo_s * 1e3, c.time_hi_s * 1e3, c.ceiling_s * 1e3,
                       c.compute_bound ? "compute-bound" : "memory-bound");
  return fmt::format("{}: ({:.4g} GB weights + {:.4g} GB KV) / {:.4g} GB/s = {:.3f} ms; {:.4g} TFLOP / {:.4g} "
                     "TFLOPS = {:.3f} ms{} -> {:.3f} ms ({})",
                     what, c.weight_bytes / 1e9, c.kv_bytes / 1e9, r.memory_bytes_per_s / 1e9, c.memory_s * 1e3,
                     c.flops / 1e12, r.compute_ops_per_s / 1e12, c.compute_s * 1e3,
                     c.comm_s > 0 ? fmt::format(" + all-reduce {:.3f} ms", c.comm_s * 1e3) : "", c.time_s * 1e3,
                     c.compute_bound ? "compute-bound" : "memory-bound");
}

}  // namespace

LatencyEstimate estimate_latency(const Roofline& rl, uint64_t batch, uint64_t context, uint64_t output) {
  if (batch == 0) throw InputError("--batch: expected at least 1 sequence");
  if (context == 0) throw InputError("--ctx-size: expected at least 1 token");
  LatencyEstimate e;
  e.batch = batch;
  e.context = context;
  e.output = output;
  e.decode = rl.decode_step(batch, context);
  e.generation = rl.decode_step(batch, context + output / 2);
  e.prefill = rl.prefill(context);
  e.decode_iteration_ms = e.decode.time_s * 1e3;
  e.prefill_ms = e.prefill.time_s * 1e3;
  const double front_s = rl.calibration() ? rl.calibration()->first_token_s : 0;
  e.ttft_s = e.prefill.time_s + front_s;
  e.tpot_ms = e.generation.time_s * 1e3;
  e.tokens_per_s = static_cast<double>(batch) / e.generation.time_s;
  const RooflineRates& r = rl.rates();
  e.derivation.push_back(fmt::format("rates: memory {}; compute {}", r.memory_source, r.compute_source));
  e.derivation.push_back(fmt::format("step model: {}", r.step_source));
  e.derivation.push_back(step_line(fmt::format("decode  (batch {}, context {})", batch, context), e.decode, r));
  e.derivation.push_back(step_line(fmt::format("TPOT    (batch {}, mean context {})", batch, context + output / 2),
                                   e.generation, r));
  e.derivation.push_back(step_line(fmt::format("prefill ({} tokens)", context), e.prefill, r));
  if (front_s > 0)
    e.derivation.push_back(fmt::format("TTFT = prefill {:.3f} ms + the engine's front end {:.3f} ms per request (HTTP, "
                                       "tokenization, scheduling) = {:.3f} ms", e.prefill_ms, front_s * 1e3, e.ttft_s * 1e3));
  e.derivation.push_back(fmt::format("tokens/s = {} / {:.3f} ms = {:.1f}", batch, e.tpot_ms, e.tokens_per_s));
  return e;
}

}  // namespace infer_plan
