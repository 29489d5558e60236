// Softmax in float (the sum in double): subtracting the max first keeps every exp in (0, 1], so large logits cannot
// overflow and the largest term is exactly 1 (the sum is >= 1, never 0). -inf entries (masked
// tokens) give 0 as long as one entry is finite.
#include "kernels/cpu/softmax.hpp"

#include <cassert>
#include <cmath>

namespace infer_plan::kernels {

void softmax(float* x, uint64_t n) {
  assert(n > 0);
  float max = x[0];
  for (uint64_t i = 1; i < n; ++i) max = x[i] > max ? x[i] : max;
  double sum = 0.0;  // a float running sum over a 150k vocabulary would drift by ~1e-4; exp dominates the cost anyway
  for (uint64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  const float inv_sum = static_cast<float>(1.0 / sum);
  for (uint64_t i = 0; i < n; ++i) x[i] *= inv_sum;
}

void softmax_reference(float* x, uint64_t n) {
  assert(n > 0);
  double max = x[0];
  for (uint64_t i = 1; i < n; ++i) max = x[i] > max ? x[i] : max;
  double sum = 0.0;
  for (uint64_t i = 0; i < n; ++i) sum += std::exp(x[i] - max);
  for (uint64_t i = 0; i < n; ++i) x[i] = static_cast<float>(std::exp(x[i] - max) / sum);
}

}  // namespace infer_plan::kernels
