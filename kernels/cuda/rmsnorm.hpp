// RMSNorm on the GPU, as kernels/cpu/rmsnorm: out[r][i] = x[r][i] / sqrt(mean_i(x[r]^2) + eps) *
// weight[i], for `rows` rows of n floats that share one weight (tokens of a batch, or Qwen3's q and
// k heads, head_dim at a time). Plain C++ (device pointers, stream as void*); rmsnorm.cu.
#pragma once
#include <cstdint>

namespace infer_plan::kernels::cuda {

// x, out: rows x n floats, row-major, on the device; out may equal x. weight: n floats. Launches on
// `stream` (cudaStream_t; nullptr = default) without synchronizing. Throws std::invalid_argument on
// bad arguments, std::runtime_error ("file:line: call: error") when the launch fails.
void rmsnorm(const float* x, const float* weight, uint32_t rows, uint32_t n, float eps, float* out, void* stream);

}  // namespace infer_plan::kernels::cuda
