// The first CUDA translation unit: proves the CUDA build path (nvcc, architectures, linking)
// from day one, and answers "is there a GPU?" for tests that must skip without one.
#include "kernels/cuda/device_query.hpp"

#include <cuda_runtime.h>
#include <stdexcept>
#include <string>

namespace infer_plan::kernels::cuda {
namespace {

void check(cudaError_t e, const char* what, const char* file, int line) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + what + ": " +
                             cudaGetErrorString(e));
}
#define INFER_PLAN_CUDA_CHECK(call) check((call), #call, __FILE__, __LINE__)

__global__ void saxpy_kernel(float a, float x, float y, float* out) { *out = a * x + y; }

}  // namespace

std::vector<DeviceInfo> devices() {
  std::vector<DeviceInfo> out;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no driver" error
    return out;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    out.push_back({i, p.name, p.totalGlobalMem, p.major, p.minor});
  }
  return out;
}

float saxpy_check(float a, float x, float y) {
  float* d = nullptr;
  float h = 0;
  INFER_PLAN_CUDA_CHECK(cudaMalloc(&d, sizeof(float)));
  saxpy_kernel<<<1, 1>>>(a, x, y, d);
  INFER_PLAN_CUDA_CHECK(cudaGetLastError());
  INFER_PLAN_CUDA_CHECK(cudaMemcpy(&h, d, sizeof(float), cudaMemcpyDeviceToHost));
  INFER_PLAN_CUDA_CHECK(cudaFree(d));
  return h;
}

}  // namespace infer_plan::kernels::cuda
