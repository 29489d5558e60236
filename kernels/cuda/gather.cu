// One thread per element, rows in blockIdx.y: both kernels move a few rows of a few thousand
// floats, so they are launch-bound; the grid's x covers a row.
#include "kernels/cuda/gather.hpp"

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "kernels/cuda/check.hpp"

namespace infer_plan::kernels::cuda {
namespace {

constexpr unsigned kThreads = 256;

__global__ void gather_kernel(const float* __restrict__ src, uint64_t width, const uint32_t* __restrict__ idx,
                              float* __restrict__ dst) {
  const uint64_t j = static_cast<uint64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (j >= width) return;
  dst[blockIdx.y * width + j] = src[static_cast<uint64_t>(idx[blockIdx.y]) * width + j];
}

__global__ void scatter_add_kernel(float* __restrict__ dst, uint64_t width, const float* __restrict__ src,
                                   const uint32_t* __restrict__ idx, const float* __restrict__ scale) {
  const uint64_t j = static_cast<uint64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (j >= width) return;
  // Two roundings, as the CPU decoder's x += w * down (nvcc would otherwise fuse them into one FMA).
  float& d = dst[static_cast<uint64_t>(idx[blockIdx.y]) * width + j];
  d = __fadd_rn(d, __fmul_rn(scale[blockIdx.y], src[blockIdx.y * width + j]));
}

void check_rows(const char* what, uint64_t width, uint32_t n) {
  static_assert(kGatherMaxWidth == uint64_t{0x7fffffff} * kThreads, "the grid's x limit times the block");
  if (width < 1 || n < 1 || n > 65535 || width > kGatherMaxWidth)
    throw std::invalid_argument(std::string(what) + ": width = " + std::to_string(width) + ", n = " + std::to_string(n) +
                                ": expected width 1.." + std::to_string(kGatherMaxWidth) + " and 1..65535 rows");
}

dim3 grid(uint64_t width, uint32_t n) { return dim3(static_cast<unsigned>((width + kThreads - 1) / kThreads), n); }

}  // namespace

void gather_rows(const float* src, uint64_t width, const uint32_t* idx, uint32_t n, float* dst, void* stream) {
  if (!src || !idx || !dst) throw std::invalid_argument("gather_rows: src, idx and dst must be device pointers, not null");
  check_rows("gather_rows", width, n);
  gather_kernel<<<grid(width, n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(src, width, idx, dst);
  CUDA_CHECK(cudaGetLastError());
}

void scatter_add_rows(float* dst, uint64_t width, const float* src, const uint32_t* idx, const float* scale,
                      uint32_t n, void* stream) {
  if (!src || !idx || !dst || !scale)
    throw std::invalid_argument("scatter_add_rows: dst, src, idx and scale must be device pointers, not null");
  check_rows("scatter_add_rows", width, n);
  scatter_add_kernel<<<grid(width, n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(dst, width, src, idx, scale);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace infer_plan::kernels::cuda
