// Rotary position embedding on the GPU, as kernels/cpu/rope: `normal` rotates (x[2i], x[2i+1]),
// `neox` rotates (x[i], x[i + d/2]); pair i of a head turns by pos * theta_base^(-2i / head_dim)
// / freq_factors[i] (Llama 3.1's rope_freqs, head_dim / 2 device floats; nullptr for none).
// Plain C++ (device pointers, stream as void*); rope.cu.
#pragma once
#include <cstdint>

#include "kernels/cpu/rope.hpp"

namespace infer_plan::kernels::cuda {

// x: tokens x n_heads x head_dim floats on the device, rotated in place; positions: `tokens`
// device uint32 (token t at positions[t]). head_dim even. Launches on `stream` without
// synchronizing; throws std::invalid_argument / std::runtime_error as the other kernels.
void rope(float* x, uint32_t tokens, uint32_t n_heads, uint32_t head_dim, const uint32_t* positions,
          float theta_base, RopeLayout layout, void* stream, const float* freq_factors = nullptr);

}  // namespace infer_plan::kernels::cuda
