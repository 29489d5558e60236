// RMSNorm as Llama and Qwen3 use it: out[i] = x[i] / sqrt(mean(x^2) + eps) * weight[i]. Qwen3 also
// applies it per head to q and k (head_dim values at a time).
#pragma once
#include <cstdint>

namespace infer_plan::kernels {

// x, weight and out hold n floats; out may equal x.
void rmsnorm(const float* x, const float* weight, uint64_t n, float eps, float* out);
// Plain loop, double accumulation.
void rmsnorm_reference(const float* x, const float* weight, uint64_t n, float eps, float* out);

}  // namespace infer_plan::kernels
