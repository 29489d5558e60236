// Roofline cost of one step: bytes moved over memory bandwidth vs FLOPs over compute, whichever
// is slower, plus tensor-parallel all-reduce time over the device link. Decode reads every weight
// it touches once per step (active experts only for MoE, each distinct expert once per batch) and
// the KV of every sequence; prefill reads the weights once per micro-batch of the prompt (once
// for the whole prompt unless set_prefill_micro_batch says otherwise).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "planner/model/hw_profile.hpp"
#include "planner/cost/kv_cache.hpp"
#include "planner/model/model_spec.hpp"
#include "planner/weights/weights_size.hpp"

namespace infer_plan {

// The rates a roofline uses, and where they came from (the output says which were used).
struct RooflineRates {
  double memory_bytes_per_s = 0;
  double compute_ops_per_s = 0;
  std::string precision;         // "bf16"
  std::string memory_source;     // "datasheet 4.8 TB/s", "measured (probe ...)", "datasheet x 0.9"
  std::string compute_source;
  double device_link_bytes_per_s = 0;  // the all-reduce's link: the device link, else the first host link; 0: none
  double all_reduce_latency_s = 0;     // per all-reduce call over that link
  std::string all_reduce_source;       // "nvlink-4, 450 GB/s, 5 us per call"
  // What time_s is: "calibrated: llama.cpp (...)", or "datasheet ceiling, uncalibrated" (or
  // "probe ceiling, uncalibrated" with a measured block).
  std::string step_source;
  // "calibrated" (this device's measurements), "transferred" (other devices' pooled), "ceiling".
  std::string basis = "ceiling";
};
RooflineRates roofline_rates(const HwProfile& hw);
// The rate `type`'s products run at on `hw`, from its roofline rates `r`: a format with its own
// tensor-core precision (FP8, INT8, FP4) at the profile's rate for it; a GGUF type other than BF16
// and F32 (F16, the block quants) at the profile's fp16 rate, as llama.cpp multiplies them (F16
// accumulation in cuBLAS, or the quants' own kernels); else, or where the profile lists no such
// rate, r's.
double product_rate(const HwProfile& hw, const RooflineRates& r, GgmlType type);

struct StepCost {
  double weight_bytes = 0;  // weights read
  double expert_bytes = 0;  // ... of them, the routed experts' (the distinct experts the step's tokens touch)
  double kv_bytes = 0;      // KV read and written
  double flops = 0;
  double comm_bytes = 0;    // all-reduce traffic per device
  double memory_s = 0;
  double compute_s = 0;
  double comm_s = 0;
  const char* comm_kind = "all-reduce";  // or "hand-over" between devices holding whole layers
  double overhead_s = 0;    // kernel launches x the measured launch overhead
  double ceiling_s = 0;     // the roofline: max(memory_s, compute_s) + comm_s + overhead_s
  // The calibrated step model's terms (planner/model/step_model), all 0 without a calibration:
  double fixed_s = 0;         // the engine's fixed time of the step (per layer or per step; per prefill micro-batch)
  double micro_batches = 1;   // prefill: the graph evaluations the prompt takes (each reads the weights)
  double read_s = 0;          // memory_s / achieved read efficiency (prefill: or compute_s / its efficiency)
  double extra_tokens_s = 0;  // the step's product of all its tokens beyond one token's (per weight type)
  double attention_s = 0;     // ... of compute_s, attention's products (QK and PV) at the profile's rate
  // prefill: kExpertTile tokens through every expert product of the micro-batches (an expert
  // each micro-batch routes to, per layer with experts) at the profile's rate; 0 for a dense model
  double expert_tile_s = 0;
  bool calibrated = false;
  // The prediction: the calibrated terms' sum (never below the ceiling), else the ceiling; and
  // its error band from the calibration's leave-one-out residuals (== time_s uncalibrated).
  double time_s = 0;
  double time_lo_s = 0, time_hi_s = 0;
  bool compute_bound = false;
  double bytes() const { return weight_bytes + kv_bytes; }
};

class Roofline {
 public:
  // `weights_scale` rescales the layout's bytes to a known file size (--weights-size).
  Roofline(const ModelSpec& spec, const WeightsLayout& layout, KvTypes kv, const HwProfile& hw,
           uint64_t tp = 1, double weights_scale = 1.0);

  // One decode step of `batch` sequences, each at `context` tokens, each adding
  // `tokens_per_sequence` tokens (1 for decode; m + 1 for a speculative verify pass).
  StepCost decode_step(uint64_t batch, uint64_t context, uint64_t tokens_per_sequence = 1) const;
  // Prefill of `sequences` prompts of `prompt_tokens` each, in one step.
  StepCost prefill(uint64_t prompt_tokens, uint64_t sequences = 1) const;

  // The model's layers split across `devices` that run them one after another (llama.cpp's -sm
  // layer): a step costs what one device holding every layer costs, plus a hand-over per boundary.
  void split_layers(uint64_t devices) { layer_split_ = devices; }
  // A prompt evaluated `tokens` at a time (llama.cpp's n_ubatch; 0: the whole prompt at once, as
  // an engine that chunks prompts in its scheduler evaluates each chunk): each micro-batch reads
  // the weights (the routed experts its tokens touch) and costs the calibration's fixed time again.
  void set_prefill_micro_batch(uint64_t tokens) { prefill_micro_batch_ = tokens; }
  uint64_t layer_split() const { return layer_split_; }
  // ... over different devices (llama.cpp's -dev A,B): this roofline's device runs `own_share` of the
  // weights' layers, each other device its share at its own speed; a step is the sum of their times
  // (they take turns), each share of its device's whole-model step, and the hand-overs once.
  void mix_devices(double own_share, std::vector<std::pair<double, std::shared_ptr<const Roofline>>> others) {
    own_share_ = own_share;
    others_ = std::move(others);
  }

  const RooflineRates& rates() const { return rates_; }
  const std::optional<StepCalibration>& calibration() const { return calibration_; }
  const ModelSpec& spec() const { return spec_; }
  uint64_t tp() const { return tp_; }
  double dense_weight_bytes() const { return dense_bytes_; }    // per device
  double expert_weight_bytes() const { return expert_bytes_; }  // all experts, per device
  double kv_bytes_per_token() const { return static_cast<double>(kv_per_token_); }
  // The GGML types of the weights, and the seconds a step over `tokens` tokens spends reading
  // one type's weights at the profile's rates (the calibration's per-type terms).
  std::vector<std::string> weight_types() const;
  double weight_read_s_of_type(const std::string& type, double tokens) const;
  // Per GGML type, its share of the parameters one token multiplies (the calibration's per-type
  // prefill terms: each type dequantizes before its product at its own cost).
  std::map<std::string, double> matmul_share_by_type() const;
  // Expected distinct experts per MoE layer touched by `tokens` routed tokens (uniform routing).
  double distinct_experts(double tokens) const;

 private:
  // `head_tokens`: tokens whose logits are computed (all of a decode or verify step's; one per
  // sequence in a prefill, as engines compute only the last prompt token's logits).
  StepCost finish(StepCost c, double tokens, double head_tokens, double attention_flops, bool prefill) const;
  // With mix_devices: the step as the devices share it (`other` gives another device's whole step).
  StepCost mixed(StepCost own, const std::function<StepCost(const Roofline&)>& other) const;
  // The calibrated terms on top of finish()'s ceiling (planner/model/step_model).
  void apply_calibration(StepCost& c, double tokens, double head_tokens, bool prefill) const;
  // What a product of `tokens` tokens costs beyond one token's: each type's weights one token
  // multiplies (dense tensors, the active share of the experts) x the calibration's curve; the
  // head's at `head_tokens` (a prefill computes one prompt's last logits only).
  double extra_token_s(double tokens, double head_tokens) const;
  // Weights read by a step over `tokens` tokens: dense once, the distinct experts, embedding rows.
  double weight_bytes_read(double tokens) const;
  double expert_bytes_read(double tokens) const;  // the routed experts' part of it
  // Seconds to read them, each tensor at its type's measured matrix-vector rate (probe) or the
  // memory rate; and seconds to multiply them, at each type's measured product rate or the
  // compute rate.
  double weight_read_s(double tokens) const;
  double matmul_s(double tokens, double head_tokens) const;

  ModelSpec spec_;
  RooflineRates rates_;
  uint64_t tp_ = 1;
  uint64_t layer_split_ = 1;
  uint64_t prefill_micro_batch_ = 0;
  double own_share_ = 1;
  std::vector<std::pair<double, std::shared_ptr<const Roofline>>> others_;
  double dense_bytes_ = 0;          // matrices read whole every step (attention, dense FFN, head)
  double embd_row_bytes_ = 0;       // one token_embd row (the lookup reads one per token)
  double expert_bytes_ = 0;         // all routed experts of all layers
  uint64_t moe_layers_ = 0;
  double matmul_params_active_ = 0; // parameters multiplied per token (2 FLOPs each)
  double dense_read_s_ = 0;         // seconds to read dense_bytes_ at each type's rate
  double expert_read_s_ = 0;        // seconds to read all experts
  double matmul_s_per_token_ = 0;   // seconds to multiply the active parameters for one token
  double launch_overhead_s_ = 0;    // per kernel (measured; 0 without a probe)
  double head_params_ = 0;          // the output head's share of matmul_params_active_
  double head_matmul_s_ = 0;        // ... and of matmul_s_per_token_
  double launches_per_step_ = 0;    // kernels of one forward pass
  uint64_t kv_per_token_ = 0;
  KvLayerWindows layer_windows_;  // the decode and prefill steps' attended positions
  // Linear-attention layers: each sequence's state, read and written back every step, and the
  // delta rule's FLOPs per token (a state read by k, updated by an outer product, read by q)
  double state_bytes_ = 0, linear_flops_per_token_ = 0;
  std::map<std::string, double> token_bytes_by_type_;  // per GGML type, bytes one token multiplies
  std::map<std::string, double> head_bytes_by_type_;   // ... of the output head (one token per prompt in a prefill)
  struct TypeReadS {
    double dense = 0, experts = 0;  // seconds to read the type's dense weights, all its experts
  };
  std::map<std::string, TypeReadS> read_s_by_type_;
  std::optional<StepCalibration> calibration_;
};

}  // namespace infer_plan

namespace infer_plan {

// The latency figures of a plan from its roofline: a decode iteration at the prompt's context,
// TPOT at the mean context while generating (prompt + output / 2), TTFT = prefill of the prompt
// (no queueing), tokens/s = batch / TPOT.
struct LatencyEstimate {
  uint64_t batch = 1;
  uint64_t context = 0;
  uint64_t output = 0;
  StepCost decode;       // at `context`
  StepCost generation;   // at the mean context while generating
  StepCost prefill;      // one prompt of `context` tokens
  double decode_iteration_ms = 0;
  double prefill_ms = 0;
  double ttft_s = 0;
  double tpot_ms = 0;
  double tokens_per_s = 0;
  std::vector<std::string> derivation;
};
LatencyEstimate estimate_latency(const Roofline& roofline, uint64_t batch, uint64_t context, uint64_t output);

}  // namespace infer_plan
