// Rotary position embedding. Two layouts, as ggml names them: `normal` rotates adjacent pairs
// (x[2i], x[2i+1]) (Llama as llama.cpp stores it), `neox` rotates (x[i], x[i + n/2]) (Qwen3),
// over the first n = rotated() values of each head (partial RoPE leaves the rest as they are).
//
// Pair i's angle, as ggml's rope with YaRN forms it (and Hugging Face's rope_utils, in other words):
//   extrap = position * theta_base^(-2i / n) / freq_factors[i]   (the trained angle)
//   interp = freq_scale * extrap                                  (linear: positions / factor)
//   angle  = interp * (1 - m) + extrap * m,  m = ext_factor * (1 - clamp((i - corr_low) / max(0.001, corr_high - corr_low), 0, 1))
// so with YaRN (ext_factor 1) the fast pairs below corr_low keep their trained angle, the slow
// ones above corr_high are interpolated, and a ramp joins them; cos and sin are then multiplied
// by `magnitude` (YaRN's attention factor, 0.1 ln(factor) + 1: the logits grow by its square).
// freq_factors are Llama 3.1's "llama3" scaling as a GGUF stores it (rope_freqs.weight, n / 2
// floats); nullptr for none. The default RopeParams is plain RoPE.
#pragma once
#include <cstdint>

namespace infer_plan::kernels {

enum class RopeLayout { normal, neox };

struct RopeParams {
  uint64_t head_dim = 0;     // values per head
  uint64_t dims = 0;         // rotated values per head, from its start; 0: all of head_dim
  float theta_base = 10000.0f;
  RopeLayout layout = RopeLayout::normal;
  const float* freq_factors = nullptr;  // rotated() / 2 divisors of the angles, or nullptr
  float freq_scale = 1.0f;   // 1 / factor for linear and YaRN scaling
  float ext_factor = 0.0f;   // 1 for YaRN, 0 otherwise
  float corr_low = 0.0f;     // YaRN's ramp, in pair indices (yarn_correction_range)
  float corr_high = 0.0f;
  float magnitude = 1.0f;    // multiplies cos and sin

  uint64_t rotated() const { return dims != 0 ? dims : head_dim; }
};

// YaRN's ramp ends for `dims` rotated values: the pair index that turns beta_fast (low) and
// beta_slow (high) times over the original context, floored and ceiled into [0, dims - 1] (the
// correction range of the YaRN paper, as ggml and transformers compute it).
struct YarnRange {
  float low, high;
};
YarnRange yarn_correction_range(uint64_t dims, uint64_t original_context, double theta_base, double beta_fast,
                                double beta_slow);

// x holds n_heads * head_dim floats, rotated in place for one token at `position`.
void rope(float* x, uint64_t n_heads, uint64_t position, const RopeParams& p);
// Every step in double, the angle blended as transformers' YaRN blends inverse frequencies.
void rope_reference(float* x, uint64_t n_heads, uint64_t position, const RopeParams& p);

}  // namespace infer_plan::kernels
