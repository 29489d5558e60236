// Rotary position embedding on the GPU, as kernels/cpu/rope (the same RopeParams: layouts,
// partial RoPE, llama3's factors, linear and YaRN scaling, magnitude); p.freq_factors, when set,
// points to rotated() / 2 device floats. Plain C++ (device pointers, stream as void*); rope.cu.
#pragma once
#include <cstdint>

#include "kernels/cpu/rope.hpp"

namespace infer_plan::kernels::cuda {

// x: tokens x n_heads x p.head_dim floats on the device, rotated in place; positions: `tokens`
// device uint32 (token t at positions[t]). p.rotated() even and <= p.head_dim. Launches on
// `stream` without synchronizing; throws std::invalid_argument / std::runtime_error as the other
// kernels.
void rope(float* x, uint32_t tokens, uint32_t n_heads, const uint32_t* positions, const RopeParams& p, void* stream);

}  // namespace infer_plan::kernels::cuda
