// The gated FFN activation of Llama and Qwen3: out[i] = silu(gate[i]) * up[i],
// silu(g) = g / (1 + exp(-g)).
#pragma once
#include <cstdint>

namespace infer_plan::kernels {

void swiglu(const float* gate, const float* up, uint64_t n, float* out);  // out may alias gate
void swiglu_reference(const float* gate, const float* up, uint64_t n, float* out);

}  // namespace infer_plan::kernels
