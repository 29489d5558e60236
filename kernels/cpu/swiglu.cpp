// SwiGLU in float. For a very negative gate exp(-g) overflows to inf and g / inf gives -0, the
// right limit, so no special case is needed.
#include "kernels/cpu/swiglu.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "kernels/cpu/half.hpp"

namespace infer_plan::kernels {

void swiglu(const float* gate, const float* up, uint64_t n, float* out) {
  for (uint64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

namespace {
// GELU with the tanh approximation, in float as ggml writes it.
float gelu_tanh(float x) {
  constexpr float kCoefA = 0.044715f;
  constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoefA * x * x)));
}
const std::array<uint16_t, 65536>& gelu_table() {  // fp16 in, fp16 out, as ggml's table
  static const std::array<uint16_t, 65536> table = [] {
    std::array<uint16_t, 65536> t{};
    for (uint32_t h = 0; h < 65536; ++h) t[h] = fp32_to_fp16(gelu_tanh(fp16_to_fp32(static_cast<uint16_t>(h))));
    return t;
  }();
  return table;
}
}  // namespace

void geglu(const float* gate, const float* up, uint64_t n, float* out) {
  const std::array<uint16_t, 65536>& table = gelu_table();
  for (uint64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    if (g <= -10.0f) out[i] = 0.0f;
    else if (g >= 10.0f) out[i] = g * up[i];
    else out[i] = fp16_to_fp32(table[fp32_to_fp16(g)]) * up[i];
  }
}

void swiglu_oai(const float* gate, const float* up, uint64_t n, float limit, float* out) {
  for (uint64_t i = 0; i < n; ++i) {
    const float x = std::min(gate[i], limit);
    const float y = std::clamp(up[i], -limit, limit);
    out[i] = x / (1.0f + std::exp(kSwigluOaiAlpha * -x)) * (y + 1.0f);
  }
}

void swiglu_reference(const float* gate, const float* up, uint64_t n, float* out) {
  for (uint64_t i = 0; i < n; ++i) {
    const double g = gate[i];
    out[i] = static_cast<float>(g / (1.0 + std::exp(-g)) * up[i]);
  }
}

}  // namespace infer_plan::kernels
