// SwiGLU in float. For a very negative gate exp(-g) overflows to inf and g / inf gives -0, the
// right limit, so no special case is needed.
#include "kernels/cpu/swiglu.hpp"

#include <cmath>

namespace infer_plan::kernels {

void swiglu(const float* gate, const float* up, uint64_t n, float* out) {
  for (uint64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void swiglu_reference(const float* gate, const float* up, uint64_t n, float* out) {
  for (uint64_t i = 0; i < n; ++i) {
    const double g = gate[i];
    out[i] = static_cast<float>(g / (1.0 + std::exp(-g)) * up[i]);
  }
}

}  // namespace infer_plan::kernels
