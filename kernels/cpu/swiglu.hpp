// The gated FFN activation of Llama and Qwen3: out[i] = silu(gate[i]) * up[i],
// silu(g) = g / (1 + exp(-g)).
#pragma once
#include <cstdint>

namespace infer_plan::kernels {

void swiglu(const float* gate, const float* up, uint64_t n, float* out);  // out may alias gate

// Gemma's: out[i] = gelu(gate[i]) * up[i], gelu the tanh approximation, as ggml's CPU backend computes
// it: gate rounded to fp16, looked up in a table of fp16 results (0 at or below -10, the identity at
// or above 10). out may alias gate.
void geglu(const float* gate, const float* up, uint64_t n, float* out);
// GPT-OSS's experts, as ggml's swiglu_oai: x = min(gate, limit), y = up clamped to +-limit,
// out = x / (1 + exp(-alpha x)) * (y + 1), alpha 1.702. out may alias gate.
void swiglu_oai(const float* gate, const float* up, uint64_t n, float limit, float* out);
void swiglu_reference(const float* gate, const float* up, uint64_t n, float* out);

}  // namespace infer_plan::kernels
