// Rotary position embedding. Two layouts, as ggml names them: `normal` rotates adjacent pairs
// (x[2i], x[2i+1]) (Llama as llama.cpp stores it), `neox` rotates (x[i], x[i + d/2]) (Qwen3).
// Pair i turns by position * theta_base^(-2i / head_dim) / freq_factors[i]: the factors are
// Llama 3.1's "llama3" rope scaling as a GGUF stores it (rope_freqs.weight, head_dim / 2 floats;
// llama.cpp divides the angle by them); nullptr for none.
#pragma once
#include <cstdint>

namespace infer_plan::kernels {

enum class RopeLayout { normal, neox };

// x holds n_heads * head_dim floats, rotated in place for one token at `position`.
void rope(float* x, uint64_t n_heads, uint64_t head_dim, uint64_t position, float theta_base,
          RopeLayout layout, const float* freq_factors = nullptr);
// Plain loop in double.
void rope_reference(float* x, uint64_t n_heads, uint64_t head_dim, uint64_t position,
                    float theta_base, RopeLayout layout, const float* freq_factors = nullptr);

}  // namespace infer_plan::kernels
