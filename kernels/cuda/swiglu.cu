// SwiGLU: one thread per value, a grid-stride loop. expf is the accurate one (no --use_fast_math):
// for a very negative gate exp(-g) overflows to inf and g / inf = -0, the right limit, as on the CPU.
#include "kernels/cuda/swiglu.hpp"

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "kernels/cuda/check.hpp"

namespace infer_plan::kernels::cuda {
namespace {

constexpr int kThreads = 256;
constexpr uint64_t kBlocksMax = 4096;  // enough to fill an H200 (132 SMs x 2048 threads) with a stride loop

// out may alias gate or up (no __restrict__): each element is read, then written, by one thread.
__global__ void __launch_bounds__(kThreads) swiglu_kernel(const float* gate, const float* up, uint64_t n, float* out) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * kThreads;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
    const float g = gate[i];
    out[i] = g / (1.0f + expf(-g)) * up[i];
  }
}

}  // namespace

void swiglu(const float* gate, const float* up, uint64_t n, float* out, void* stream) {
  if (gate == nullptr || up == nullptr || out == nullptr)
    throw std::invalid_argument("swiglu: gate, up and out must be device pointers, not null");
  if (n < 1) throw std::invalid_argument("swiglu: n must be >= 1");
  const uint64_t blocks = (n + kThreads - 1) / kThreads < kBlocksMax ? (n + kThreads - 1) / kThreads : kBlocksMax;
  swiglu_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(gate, up, n, out);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace infer_plan::kernels::cuda
