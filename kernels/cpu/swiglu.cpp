// The gated activations in float, each value's arithmetic from kernels/activation.hpp (shared with
// kernels/cuda).
#include "kernels/cpu/swiglu.hpp"

#include <array>
#include <cmath>

#include "kernels/activation.hpp"
#include "kernels/cpu/half.hpp"

namespace infer_plan::kernels {

void swiglu(const float* gate, const float* up, uint64_t n, float* out) {
  for (uint64_t i = 0; i < n; ++i) out[i] = act::silu_times(gate[i], up[i]);
}

namespace {
const std::array<uint16_t, 65536>& gelu_table() {  // fp16 in, fp16 out, as ggml's table
  static const std::array<uint16_t, 65536> table = [] {
    std::array<uint16_t, 65536> t{};
    for (uint32_t h = 0; h < 65536; ++h) t[h] = fp32_to_fp16(act::gelu_tanh(fp16_to_fp32(static_cast<uint16_t>(h))));
    return t;
  }();
  return table;
}
}  // namespace

void geglu(const float* gate, const float* up, uint64_t n, float* out) {
  const std::array<uint16_t, 65536>& table = gelu_table();
  for (uint64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    if (g <= act::kGeluTableLow) out[i] = 0.0f;
    else if (g >= act::kGeluTableHigh) out[i] = g * up[i];
    else out[i] = fp16_to_fp32(table[fp32_to_fp16(g)]) * up[i];
  }
}

void swiglu_oai(const float* gate, const float* up, uint64_t n, float limit, float* out) {
  for (uint64_t i = 0; i < n; ++i) out[i] = act::swiglu_oai(gate[i], up[i], limit);
}

void swiglu_reference(const float* gate, const float* up, uint64_t n, float* out) {
  for (uint64_t i = 0; i < n; ++i) {
    const double g = gate[i];
    out[i] = static_cast<float>(g / (1.0 + std::exp(-g)) * up[i]);
  }
}

}  // namespace infer_plan::kernels
