// RMSNorm: one thread block per row. Threads sum squares over a strided share of the row in F32,
// a warp shuffle and then shared memory combine the block's partial sums, and each thread scales
// the values it read. A decode step's rows are short (hidden 4096, head_dim 128), so a row fits one
// block and the kernel is launch-bound, not bandwidth-bound.
#include "kernels/cuda/rmsnorm.hpp"

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "kernels/cuda/check.hpp"

namespace infer_plan::kernels::cuda {
namespace {

constexpr int kWarp = 32;
constexpr int kThreads = 256;
constexpr unsigned kAllLanes = 0xffffffffu;

__global__ void __launch_bounds__(kThreads)
    rmsnorm_kernel(const float* x, const float* __restrict__ weight, uint32_t n, float eps, float* out) {
  // x and out may alias (no __restrict__): each thread reads its values before the barrier and
  // writes the same values after it.
  const float* xr = x + static_cast<size_t>(blockIdx.x) * n;
  float* outr = out + static_cast<size_t>(blockIdx.x) * n;
  float sum = 0.0f;
  for (uint32_t i = threadIdx.x; i < n; i += kThreads) sum += xr[i] * xr[i];
  for (int offset = kWarp / 2; offset > 0; offset /= 2) sum += __shfl_xor_sync(kAllLanes, sum, offset);
  __shared__ float warp_sums[kThreads / kWarp];
  if (threadIdx.x % kWarp == 0) warp_sums[threadIdx.x / kWarp] = sum;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < kThreads / kWarp; ++w) total += warp_sums[w];  // every thread, same order
  const float inv_rms = 1.0f / sqrtf(total / static_cast<float>(n) + eps);
  for (uint32_t i = threadIdx.x; i < n; i += kThreads) outr[i] = xr[i] * inv_rms * weight[i];
}

}  // namespace

void rmsnorm(const float* x, const float* weight, uint32_t rows, uint32_t n, float eps, float* out, void* stream) {
  if (x == nullptr || weight == nullptr || out == nullptr)
    throw std::invalid_argument("rmsnorm: x, weight and out must be device pointers, not null");
  if (rows < 1 || n < 1 || rows > 0x7FFFFFFFu)
    throw std::invalid_argument("rmsnorm: rows = " + std::to_string(rows) + ", n = " + std::to_string(n) +
                                ": expected 1..2^31-1 rows and n >= 1");
  if (!(eps >= 0.0f)) throw std::invalid_argument("rmsnorm: eps must be >= 0");
  rmsnorm_kernel<<<rows, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(x, weight, n, eps, out);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace infer_plan::kernels::cuda
