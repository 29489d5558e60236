// Residual adds, bias adds, scales and soft-caps, and the greedy pick. The adds are grid-stride loops (bandwidth-bound,
// a few MiB per step at most); argmax gives each row one thread block, each thread keeps the best
// of its strided share, and a warp shuffle then shared memory pick the block's best, the lowest
// index winning ties at every stage so the result is the first maximum, as kernels/cpu/sampling's
// argmax gives. Rows are assumed NaN-free: a NaN compares neither greater nor equal, so with NaNs
// the index returned depends on the thread layout (the CPU's depends on the NaN's position).
#include "kernels/cuda/elementwise_launch.hpp"

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/activation.hpp"
#include "kernels/cuda/check.hpp"

namespace infer_plan::kernels::cuda {
namespace {

constexpr int kWarp = 32;
constexpr int kThreads = 256;
constexpr unsigned kAllLanes = 0xffffffffu;
constexpr uint64_t kBlocksMax = 4096;  // fills an H200 (132 SMs x 2048 threads) with a stride loop
constexpr uint32_t kRowBlocksMax = 65535;  // gridDim.y's limit
constexpr uint32_t kNoIndex = 0xFFFFFFFFu;  // past every index: n < 2^32 (elementwise.cpp checks it)

uint32_t blocks_for(uint64_t n) {
  const uint64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<uint32_t>(blocks < kBlocksMax ? blocks : kBlocksMax);
}

// x and y may alias (x += x doubles it): each element is read, then written, by one thread.
__global__ void __launch_bounds__(kThreads) add_kernel(float* x, const float* y, uint64_t n) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * kThreads;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) x[i] += y[i];
}

// Gemma's embedding scale (x *= s) and Gemma 2's logit soft-cap (kernels/activation.hpp's, as the
// CPU decoder applies it): cap > 0 soft-caps, else scales by s.
__global__ void __launch_bounds__(kThreads) scale_or_cap_kernel(float* x, uint64_t n, float s, float cap) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * kThreads;
  const float inv_cap = cap > 0.0f ? 1.0f / cap : 0.0f;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride)
    x[i] = cap > 0.0f ? act::softcap(x[i], inv_cap, cap) : x[i] * s;
}

// Rows stride over gridDim.y, values over gridDim.x: no division per element.
__global__ void __launch_bounds__(kThreads) add_bias_kernel(float* x, const float* __restrict__ bias, uint32_t rows,
                                                            uint64_t n) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * kThreads;
  for (uint32_t r = blockIdx.y; r < rows; r += gridDim.y) {
    float* xr = x + static_cast<uint64_t>(r) * n;
    for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride)
      xr[i] += __ldg(bias + i);
  }
}

// (value, index) b beats a when larger, or equal with a lower index.
__device__ __forceinline__ bool beats(float bv, uint32_t bi, float av, uint32_t ai) {
  return bv > av || (bv == av && bi < ai);
}

__global__ void __launch_bounds__(kThreads) argmax_rows_kernel(const float* __restrict__ x, uint64_t n,
                                                               uint32_t* __restrict__ out) {
  const float* xr = x + static_cast<uint64_t>(blockIdx.x) * n;
  // A thread with no values holds (-inf, kNoIndex): any real value, -inf included, beats it.
  float best = __int_as_float(static_cast<int>(0xFF800000u));  // -inf
  uint32_t best_i = kNoIndex;
  for (uint64_t i = threadIdx.x; i < n; i += kThreads) {
    const float v = __ldg(xr + i);
    // Strided in increasing order: only a strictly larger value replaces the thread's best.
    if (v > best || best_i == kNoIndex) {
      best = v;
      best_i = static_cast<uint32_t>(i);
    }
  }
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    const float v = __shfl_xor_sync(kAllLanes, best, offset);
    const uint32_t i = __shfl_xor_sync(kAllLanes, best_i, offset);
    if (beats(v, i, best, best_i)) {
      best = v;
      best_i = i;
    }
  }
  __shared__ float warp_best[kThreads / kWarp];
  __shared__ uint32_t warp_best_i[kThreads / kWarp];
  if (threadIdx.x % kWarp == 0) {
    warp_best[threadIdx.x / kWarp] = best;
    warp_best_i[threadIdx.x / kWarp] = best_i;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kThreads / kWarp; ++w) {
      if (beats(warp_best[w], warp_best_i[w], best, best_i)) {
        best = warp_best[w];
        best_i = warp_best_i[w];
      }
    }
    out[blockIdx.x] = best_i;
  }
}

}  // namespace

void add_launch(float* x, const float* y, uint64_t n, void* stream) {
  add_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(x, y, n);
  CUDA_CHECK(cudaGetLastError());
}

void scale_launch(float* x, uint64_t n, float s, void* stream) {
  scale_or_cap_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(x, n, s, 0.0f);
  CUDA_CHECK(cudaGetLastError());
}

void softcap_launch(float* x, uint64_t n, float cap, void* stream) {
  scale_or_cap_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(x, n, 1.0f, cap);
  CUDA_CHECK(cudaGetLastError());
}

void add_bias_launch(float* x, const float* bias, uint32_t rows, uint64_t n, void* stream) {
  const dim3 grid(blocks_for(n), rows < kRowBlocksMax ? rows : kRowBlocksMax);
  add_bias_kernel<<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(x, bias, rows, n);
  CUDA_CHECK(cudaGetLastError());
}

void argmax_rows_launch(const float* x, uint32_t rows, uint64_t n, uint32_t* out, void* stream) {
  argmax_rows_kernel<<<rows, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(x, n, out);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace infer_plan::kernels::cuda
