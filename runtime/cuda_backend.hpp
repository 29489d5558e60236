// The CUDA backend: device memory from cudaMalloc with the CPU backend's per-category accounting,
// offloaded weights in pinned host memory (cudaHostAlloc), copies with cudaMemcpy, one stream.
// Plain C++ header (device pointers as void*, the stream as void*): no CUDA header is reachable
// from here. Compiled only when the CUDA build is on (INFER_PLAN_HAVE_CUDA).
#pragma once
#include <cstdint>
#include <memory>

#include "runtime/backend.hpp"

namespace infer_plan::runtime {

// The backend's accounting beside what the driver reports, for the "memory within 1%" target:
// allocated_device_bytes excludes offload_host (host memory); driver_used_bytes is
// total - free from cudaMemGetInfo, which also holds the CUDA context and the allocator's rounding
// (cudaMalloc hands out whole 2 MiB pages for large buffers).
struct CudaMemoryInfo {
  uint64_t allocated_device_bytes = 0;  // sum of allocate() over device categories, as requested
  uint64_t allocated_host_bytes = 0;    // offload_host: pinned host memory
  uint64_t driver_free_bytes = 0;       // cudaMemGetInfo
  uint64_t driver_total_bytes = 0;
  uint64_t driver_used_bytes() const { return driver_total_bytes - driver_free_bytes; }
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int device_index = 0);  // selects the device, creates the context and the stream
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string_view name() const override { return "cuda"; }
  // offload_host goes to allocate_pinned_host; every other category is device memory.
  DeviceBuffer allocate(size_t bytes, MemoryCategory category) override;
  void free(DeviceBuffer& buffer) override;
  // cudaMemcpy with cudaMemcpyDefault: unified addressing tells device from (pinned) host memory,
  // so an offload_host buffer copies as well as a device one. Synchronous, as on the CPU.
  void copy_to_device(DeviceBuffer& dst, const void* src, size_t bytes) override;
  void copy_to_host(void* dst, const DeviceBuffer& src, size_t bytes) override;
  void synchronize() override;  // waits for the backend's stream
  // The host's steady clock read after the stream drains: a timestamp that includes the device
  // work enqueued so far. (cudaEventElapsedTime is a float of milliseconds: 15 minutes from one
  // origin its resolution is 60 us, 1-2% of a decode step; events time intervals, not the clock.)
  uint64_t now_ns() const override;
  bool host_addressable(MemoryCategory category) const override { return category == MemoryCategory::offload_host; }

  // Page-locked host memory for offloaded weight groups: copies from it run at the link's full
  // rate and asynchronously (cudaMemcpyAsync on a copy stream). Accounted as offload_host.
  DeviceBuffer allocate_pinned_host(size_t bytes);

  CudaMemoryInfo memory_info() const;
  std::optional<uint64_t> driver_used_bytes() const override { return memory_info().driver_used_bytes(); }
  std::optional<uint64_t> available_bytes(MemoryCategory category) const override {
    return category == MemoryCategory::offload_host ? host_available_bytes()
                                                    : std::optional<uint64_t>(memory_info().driver_free_bytes);
  }
  int device() const { return device_; }
  void* stream() const { return stream_; }  // a cudaStream_t, for kernels and events

 private:
  int device_ = 0;
  void* stream_ = nullptr;
  uint64_t live_buffers_ = 0;
};

// Number of CUDA devices visible to this process; 0 when there is no driver or no device.
int cuda_device_count();

// make_backend("cuda"): the backend on device 0, or an InputError saying why not (no device visible,
// with the driver's answer).
std::unique_ptr<Backend> make_cuda_backend();

}  // namespace infer_plan::runtime
