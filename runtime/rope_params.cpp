#include "runtime/rope_params.hpp"

#include <cmath>
#include <fmt/format.h>
#include <numbers>

#include "planner/core/input_error.hpp"

namespace infer_plan::runtime {

kernels::RopeParams rope_params(const ModelSpec& spec, const float* freq_factors) {
  // MLA rotates the qk_rope_dim values after each query head's non-RoPE part (the caller points
  // there) and the one shared RoPE key; llama.cpp rotates adjacent pairs in its llama and deepseek2
  const bool normal = spec.gguf_arch == "llama" || spec.gguf_arch == "deepseek2";
  kernels::RopeParams p{.head_dim = spec.head_dim,
                        .dims = spec.is_mla() ? spec.qk_rope_dim : spec.rope_dims,
                        .theta_base = static_cast<float>(spec.rope_theta),
                        .layout = normal ? kernels::RopeLayout::normal : kernels::RopeLayout::neox,
                        .freq_factors = freq_factors};
  const RopeScaling& rs = spec.rope_scaling;
  if (!rs.applies() || rs.type == "llama3") return p;  // llama3 lives in the factors
  if (rs.type != "linear" && rs.type != "yarn")
    throw InputError(fmt::format("{} = '{}': the runtime applies RoPE scaling none, llama3, linear and yarn; with "
                                 "this one its logits would be those of another model",
                                 rs.key, rs.type));
  if ((rs.mscale != 0.0 || rs.mscale_all_dim != 0.0) && !spec.is_mla())
    throw InputError(fmt::format("{}: YaRN with mscale / mscale_all_dim (DeepSeek's magnitude) is applied by the "
                                 "runtime to DeepSeek's latent attention only", rs.key));
  p.freq_scale = static_cast<float>(1.0 / rs.factor);
  if (rs.type == "linear") {
    if (rs.attention_factor != 0.0) p.magnitude = static_cast<float>(rs.attention_factor);
    return p;
  }
  const uint64_t original = rs.original_context ? rs.original_context : spec.max_context;
  const kernels::YarnRange range =
      kernels::yarn_correction_range(p.rotated(), original, spec.rope_theta, rs.beta_fast, rs.beta_slow);
  p.ext_factor = 1.0f;
  p.corr_low = range.low;
  p.corr_high = range.high;
  p.magnitude = static_cast<float>(rs.attention_factor != 0.0 ? rs.attention_factor
                                   : rs.factor > 1.0          ? 0.1 * std::log(rs.factor) + 1.0
                                                              : 1.0);
  // DeepSeek's YaRN: llama.cpp takes mscale as mscale_all_dim, so the RoPE's magnitude
  // (0.1 mscale ln f + 1) / (0.1 mscale_all_dim ln f + 1) is 1; the scores carry the rest
  if (spec.is_mla() && rs.mscale_all_dim > 0.0) p.magnitude = 1.0f;
  return p;
}

float mla_score_scale(const ModelSpec& spec) {
  const RopeScaling& rs = spec.rope_scaling;
  const double g = rs.type == "yarn" && rs.mscale_all_dim > 0.0 && rs.factor > 1.0
                       ? 0.1 * rs.mscale_all_dim * std::log(rs.factor) + 1.0
                       : static_cast<double>(rope_params(spec, nullptr).magnitude);
  return static_cast<float>(g * g / std::sqrt(static_cast<double>(spec.head_dim)));
}

std::vector<float> llama3_rope_factors(const ModelSpec& spec) {
  const RopeScaling& rs = spec.rope_scaling;
  const uint64_t n = spec.rope_dims ? spec.rope_dims : spec.head_dim;
  std::vector<float> factors(n / 2, 1.0f);
  if (rs.type != "llama3") return factors;
  const double original = static_cast<double>(rs.original_context ? rs.original_context : spec.max_context);
  const double low_wavelength = original / rs.low_freq_factor, high_wavelength = original / rs.high_freq_factor;
  for (uint64_t i = 0; i < n / 2; ++i) {
    const double freq = std::pow(spec.rope_theta, -2.0 * static_cast<double>(i) / static_cast<double>(n));
    const double wavelength = 2.0 * std::numbers::pi / freq;
    double f = 1.0;
    if (wavelength > low_wavelength) {
      f = rs.factor;
    } else if (wavelength >= high_wavelength && rs.high_freq_factor > rs.low_freq_factor) {
      const double smooth = (original / wavelength - rs.low_freq_factor) / (rs.high_freq_factor - rs.low_freq_factor);
      f = 1.0 / ((1.0 - smooth) / rs.factor + smooth);
    }
    factors[i] = static_cast<float>(f);
  }
  return factors;
}

}  // namespace infer_plan::runtime
