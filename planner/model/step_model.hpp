// The calibrated step model: what a real engine adds to the roofline's byte and FLOP counts.
// A decode step costs a fixed time (launches, synchronization, sampling, the engine's
// bookkeeping) + the bytes it reads at the profile's read rate / an achieved efficiency + each
// token beyond the first at its weight type's extra cost per weight byte; a prefill costs its own
// fixed time + the roofline's compute time / a prefill efficiency. The terms are fitted by
// `calibrate` (planner/calibration/calibration) on measurements an engine printed; the roofline ceiling
// max(bytes / bandwidth, FLOPs / compute) stays beside the prediction and bounds it from below.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "planner/core/json_fields.hpp"

namespace infer_plan {

// Relative error of a calibrated figure, measured / predicted - 1, from leave-one-out residuals.
struct ErrorBand {
  double lo = 0;                   // e.g. -0.08: the measurement may be 8% below the prediction
  double hi = 0;                   // e.g. +0.12
  uint64_t points = 0;             // measurements fitted
  double loo_median_abs = 0;       // median |leave-one-out residual|
};

// (tokens, seconds per weight byte beyond one token's product), tokens >= 2, increasing.
using ExtraTokenCurve = std::vector<std::pair<double, double>>;
// The curve at `tokens` (0 at one token or fewer).
double extra_token_s_per_byte(const ExtraTokenCurve& curve, double tokens);

struct DecodeTerms {
  double fixed_s = 0;              // per step, whatever the model's size
  // Per layer per step, whatever its size: the kernels' launches and the tails one sequence's
  // small products leave (llama.cpp's fits: a 70B model's 80 layers pay 2.5 x a 7B model's 32);
  // 0 where a server's fixed time is fitted whole (fixed_s).
  double layer_s = 0;
  // per running sequence per step (a batched server's sampling, attention launches and
  // bookkeeping; 0 for llama-bench's single sequence)
  double per_sequence_s = 0;
  double read_efficiency = 1;      // achieved fraction of the profile's read rate (weights and KV)
  // GGML type name -> that type's own achieved fraction, for its weights (dequantization costs
  // differ: a K-quant may read slower than Q4_0 on the same device); absent types use the above.
  std::map<std::string, double> read_efficiency_by_type;
  // The KV cache's own achieved fraction (attention reads it at long contexts slower than a
  // matrix-vector product reads weights); absent: read_efficiency.
  std::optional<double> kv_read_efficiency;
  // A mixture-of-experts model's own fraction, for all of its weights (a batched server's fused
  // expert kernels reach less of the bandwidth than its dense ones); absent: read_efficiency.
  std::optional<double> moe_read_efficiency;
  // Per layer with experts, per step, for a layer routing to 4 experts (ModelSpec::moe_layer_units
  // scales it to k): the router, the top-k selection, the expert products' and the adds of their
  // outputs' own launches (a llama.cpp mixture-of-experts layer runs 8 + k kernels beside a dense
  // layer's), fitted; 0: none.
  double moe_layer_s = 0;
  // Under tensor parallelism, the time of one all-reduce call (launch and synchronization, beside
  // the bytes over the link), fitted; absent: the profile's link latency.
  std::optional<double> all_reduce_call_s;
  // GGML type name ("Q8_0") -> what a product of T tokens costs beyond a product of one, in
  // seconds per weight byte, measured at a few T (the CPU probe: 2, 4, 8, 32) or one figure per
  // extra token (a point at T = 2). Between points linear in T, past the last at the last
  // segment's slope; absent (or 0) where the kernel reuses each weight load across tokens.
  std::map<std::string, ExtraTokenCurve> extra_token_s_per_byte;
  ErrorBand error;
};

struct PrefillTerms {
  double fixed_s = 0;              // per prefill micro-batch (llama.cpp's n_ubatch tokens; one for
                                   // an engine that chunks prompts in its scheduler)
  double compute_efficiency = 1;   // achieved fraction of the profile's compute rate
  // GGML type name -> that type's own fraction, for its share of the products (K-quants and
  // i-quants dequantize before the product; absent types use the above).
  std::map<std::string, double> compute_efficiency_by_type;
  std::optional<double> moe_compute_efficiency;  // a mixture-of-experts model's; absent: the above
  ErrorBand error;
  // Attention's products (QK and PV over the prompt) at their own fraction: without flash
  // attention they run far below the weights' GEMMs, a cost that grows with the prompt's length.
  std::optional<double> attention_efficiency;     // absent: compute_efficiency (or the MoE one)
  // Each expert a micro-batch routes tokens to is a product of its own, and a product costs at
  // least a tile of tokens however few it got (llama.cpp's kernels pad to their column tile): the
  // time of kExpertTile tokens through every such product at the datasheet compute rate
  // (StepCost::expert_tile_s) times this, fitted; 0: none.
  double expert_tile_factor = 0;
};

struct StepCalibration {
  std::string engine;              // "llama.cpp", "infer-plan cpu"
  std::string source;              // what was fitted: files, points, builds
  // "calibrated": fitted to this device's own measurements; "transferred": pooled from other
  // devices' fits (planner/calibration/step_prior), `basis_note` saying from which.
  std::string basis = "calibrated";
  std::string basis_note;
  DecodeTerms decode;
  std::optional<PrefillTerms> prefill;  // absent: prefill stays the roofline ceiling
  // A server's time on each request's first token beyond its prefill (HTTP, tokenization,
  // scheduling): added to TTFT and end-to-end latency, not to the device's steps.
  double first_token_s = 0;
};

// The profile's "calibration" block: {"engine", "source", "first_token_ms", "decode": {"fixed_ms", "per_sequence_ms",
// "read_efficiency", "read_efficiency_by_type": {"Q4_K": 0.7}, "moe_layer_ms", "extra_token_ms_per_gb": {"Q8_0":
// 0.6 (per extra token) or {"2": 0.6, "4": 1.5, "8": 3.1}}, "error": [lo, hi], "points",
// "loo_median_abs_error"}, "prefill": {"fixed_ms", "compute_efficiency", "error", ...}}.
StepCalibration step_calibration_from_json(const Json& j, const std::string& where);
Json step_calibration_to_json(const StepCalibration& c);

}  // namespace infer_plan
