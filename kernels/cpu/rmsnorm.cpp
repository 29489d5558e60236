// RMSNorm in float with eight partial sums of squares (a shape the compiler vectorises without
// -ffast-math, and a shorter rounding chain than one running sum); the reference sums in double.
#include "kernels/cpu/rmsnorm.hpp"

#include <cmath>

namespace infer_plan::kernels {

void rmsnorm(const float* x, const float* weight, uint64_t n, float eps, float* out) {
  constexpr uint64_t kLanes = 8;
  float partial[kLanes] = {};
  uint64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (uint64_t l = 0; l < kLanes; ++l) partial[l] += x[i + l] * x[i + l];
  for (; i < n; ++i) partial[0] += x[i] * x[i];
  float sum_squares = 0.0f;
  for (uint64_t l = 0; l < kLanes; ++l) sum_squares += partial[l];
  const float inv_rms = 1.0f / std::sqrt(sum_squares / static_cast<float>(n) + eps);
  for (uint64_t j = 0; j < n; ++j) out[j] = x[j] * inv_rms * weight[j];
}

void rmsnorm_reference(const float* x, const float* weight, uint64_t n, float eps, float* out) {
  double sum_squares = 0.0;
  for (uint64_t i = 0; i < n; ++i) sum_squares += static_cast<double>(x[i]) * x[i];
  const double inv_rms = 1.0 / std::sqrt(sum_squares / static_cast<double>(n) + eps);
  for (uint64_t i = 0; i < n; ++i) out[i] = static_cast<float>(x[i] * inv_rms * weight[i]);
}

}  // namespace infer_plan::kernels
