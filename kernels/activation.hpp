// The activations' arithmetic, one value at a time, written once for both backends: kernels/cpu's
// swiglu.cpp and the decoder's logit soft-cap call these on the host, kernels/cuda's swiglu.cu and
// elementwise.cu on the device. The host takes std::exp and std::tanh, the device CUDA's accurate
// expf and tanhf (no --use_fast_math), each within 2 ulp of the true value; everything else is the
// same float operations in the same order. Forms as ggml writes them.
#pragma once
#include <cmath>

#include "kernels/host_device.hpp"

namespace infer_plan::kernels::act {

INFER_PLAN_HOST_DEVICE inline float exp_f(float x) {
#if defined(__CUDA_ARCH__)
  return expf(x);
#else
  return std::exp(x);
#endif
}

INFER_PLAN_HOST_DEVICE inline float tanh_f(float x) {
#if defined(__CUDA_ARCH__)
  return tanhf(x);
#else
  return std::tanh(x);
#endif
}

// SwiGLU: silu(g) u. For a very negative gate exp(-g) overflows to inf and g / inf gives -0, the
// right limit, so no special case is needed.
INFER_PLAN_HOST_DEVICE inline float silu_times(float g, float u) { return g / (1.0f + exp_f(-g)) * u; }

// GPT-OSS's experts, as ggml's swiglu_oai: x = min(g, limit), y = u clamped to +-limit,
// x / (1 + exp(-alpha x)) (y + 1). min and clamp as std::min and std::clamp take them (a NaN gate
// stays NaN).
constexpr float kSwigluOaiAlpha = 1.702f;
INFER_PLAN_HOST_DEVICE inline float swiglu_oai(float g, float u, float limit) {
  const float x = limit < g ? limit : g;
  const float y = u < -limit ? -limit : (limit < u ? limit : u);
  return x / (1.0f + exp_f(kSwigluOaiAlpha * -x)) * (y + 1.0f);
}

// GELU with the tanh approximation, in float as ggml writes it (Gemma's GEGLU takes it through an
// fp16 table on the CPU, and through the same fp16 roundings on the device).
INFER_PLAN_HOST_DEVICE inline float gelu_tanh(float x) {
  constexpr float kCoefA = 0.044715f;
  constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
  return 0.5f * x * (1.0f + tanh_f(kSqrt2OverPi * x * (1.0f + kCoefA * x * x)));
}
// Where GEGLU leaves the table: 0 at or below, the identity at or above.
constexpr float kGeluTableLow = -10.0f, kGeluTableHigh = 10.0f;

// A soft-cap as ggml forms it for Gemma 2's logits and prefill scores: scale by 1 / cap, tanh, scale by
// the cap.
INFER_PLAN_HOST_DEVICE inline float softcap(float x, float inv_cap, float cap) { return tanh_f(x * inv_cap) * cap; }

}  // namespace infer_plan::kernels::act
