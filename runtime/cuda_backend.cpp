// Allocations are accounted as requested (not rounded to the allocator's pages), like the CPU
// backend's, so measured memory compares to the planner's bytes; memory_info() sets the driver's
// figure beside it.
#include "runtime/cuda_backend.hpp"

#include <fmt/format.h>

#include <cassert>
#include <chrono>

#include "kernels/cuda/check.hpp"
#include "planner/core/input_error.hpp"

namespace infer_plan::runtime {

CudaBackend::CudaBackend(int device_index) : device_(device_index) {
  CUDA_CHECK(cudaSetDevice(device_));
  CUDA_CHECK(cudaFree(nullptr));  // creates the context now, so its memory is not charged to a buffer
  cudaStream_t s = nullptr;
  // A blocking stream: cudaMemcpy (legacy default stream) stays ordered with the work on it.
  CUDA_CHECK(cudaStreamCreate(&s));
  stream_ = s;
}

CudaBackend::~CudaBackend() {
  assert(live_buffers_ == 0 && "CudaBackend destroyed with live buffers");
  // A destructor must not throw: report and carry on (the process is usually ending).
  if (const cudaError_t e = cudaStreamDestroy(static_cast<cudaStream_t>(stream_)); e != cudaSuccess)
    fmt::print(stderr, "{}:{}: cudaStreamDestroy: {}\n", __FILE__, __LINE__, cudaGetErrorName(e));
}

DeviceBuffer CudaBackend::allocate(size_t bytes, MemoryCategory category) {
  if (category == MemoryCategory::offload_host) return allocate_pinned_host(bytes);
  void* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, bytes == 0 ? 1 : bytes));  // a zero-byte buffer still gets a distinct pointer
  count_allocation(category, bytes);
  ++live_buffers_;
  return {p, bytes, category};
}

DeviceBuffer CudaBackend::allocate_pinned_host(size_t bytes) {
  void* p = nullptr;
  CUDA_CHECK(cudaHostAlloc(&p, bytes == 0 ? 1 : bytes, cudaHostAllocDefault));
  count_allocation(MemoryCategory::offload_host, bytes);
  ++live_buffers_;
  return {p, bytes, MemoryCategory::offload_host};
}

void CudaBackend::free(DeviceBuffer& b) {
  if (!b.data) return;
  if (b.category == MemoryCategory::offload_host) CUDA_CHECK(cudaFreeHost(b.data));
  else CUDA_CHECK(cudaFree(b.data));
  count_free(b.category, b.bytes);
  --live_buffers_;
  b = {};
}

void CudaBackend::copy_to_device(DeviceBuffer& dst, const void* src, size_t bytes) {
  assert(bytes <= dst.bytes);
  CUDA_CHECK(cudaMemcpy(dst.data, src, bytes, cudaMemcpyDefault));
}

void CudaBackend::copy_to_host(void* dst, const DeviceBuffer& src, size_t bytes) {
  assert(bytes <= src.bytes);
  CUDA_CHECK(cudaMemcpy(dst, src.data, bytes, cudaMemcpyDefault));
}

void CudaBackend::synchronize() { CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_))); }

uint64_t CudaBackend::now_ns() const {
  CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)));
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

CudaMemoryInfo CudaBackend::memory_info() const {
  CudaMemoryInfo m;
  for (const auto& [category, bytes] : allocated()) {
    if (category == MemoryCategory::offload_host) m.allocated_host_bytes += bytes;
    else m.allocated_device_bytes += bytes;
  }
  size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaSetDevice(device_));  // cudaMemGetInfo answers for the current device
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  m.driver_free_bytes = free_bytes;
  m.driver_total_bytes = total_bytes;
  return m;
}

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the "no driver" / "no device" error so later calls start clean
    return 0;
  }
  return count;
}

std::unique_ptr<Backend> make_cuda_backend() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw InputError(fmt::format("--backend cuda: no CUDA device visible (cudaGetDeviceCount: {}: {}); "
                                 "use --backend cpu, or run on a machine with an NVIDIA GPU and its driver",
                                 cudaGetErrorName(e), cudaGetErrorString(e)));
  }
  if (count == 0)
    throw InputError("--backend cuda: no CUDA device visible (cudaGetDeviceCount found 0); use --backend cpu");
  return std::make_unique<CudaBackend>(0);
}

}  // namespace infer_plan::runtime
