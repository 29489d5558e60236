// The narrow seam between the runtime and a device: allocate and free memory by category (so
// measured memory is comparable to the planner's breakdown), copy, synchronize, and a clock.
// `cpu` implements it now; `cuda` (runtime/cuda_*) implements it next. One place picks.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace infer_plan::runtime {

// offload_host is not device memory: the home of offloaded weight groups (pinned host memory on
// CUDA), counted apart so that device memory compares to fit's and the offload planner's bytes.
enum class MemoryCategory { weights, kv_cache, activations, offload_buffers, offload_host, scratch };
std::string_view memory_category_name(MemoryCategory c);

struct DeviceBuffer {
  void* data = nullptr;
  size_t bytes = 0;
  MemoryCategory category = MemoryCategory::scratch;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  virtual DeviceBuffer allocate(size_t bytes, MemoryCategory category) = 0;
  virtual void free(DeviceBuffer& buffer) = 0;
  virtual void copy_to_device(DeviceBuffer& dst, const void* src, size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const DeviceBuffer& src, size_t bytes) = 0;
  virtual void synchronize() = 0;
  virtual uint64_t now_ns() const = 0;  // the backend's own clock (CUDA events on the GPU)
  // True when a buffer of `category` is memory the host can read and write directly (every
  // buffer on the CPU; on CUDA only offload_host, which is pinned host memory). Otherwise data
  // goes in and out through copy_to_device / copy_to_host.
  virtual bool host_addressable(MemoryCategory category) const = 0;
  // Device memory in use as the driver reports it (cudaMemGetInfo's total - free), to set beside
  // the accounting; none on the CPU, where the process's heap has no such figure.
  virtual std::optional<uint64_t> driver_used_bytes() const { return std::nullopt; }
  // Memory that buffers of `category` can still take (the host's MemAvailable on the CPU; the
  // driver's free device memory on CUDA, the host's for offload_host): a run refuses a plan beyond
  // it before writing any weights. None when the backend cannot tell.
  virtual std::optional<uint64_t> available_bytes(MemoryCategory category) const = 0;

  // Bytes currently allocated per category, from the backend's own accounting (kept under a lock:
  // the servers a disaggregation report runs side by side set up on one backend at once).
  std::map<MemoryCategory, uint64_t> allocated() const {
    const std::lock_guard lock(accounting_);
    return allocated_;
  }
  uint64_t allocated(MemoryCategory c) const;
  // The most bytes each category held at once since the backend was made.
  std::map<MemoryCategory, uint64_t> peak() const {
    const std::lock_guard lock(accounting_);
    return peak_;
  }

 protected:
  void count_allocation(MemoryCategory c, uint64_t bytes) {
    const std::lock_guard lock(accounting_);
    allocated_[c] += bytes;
    peak_[c] = std::max(peak_[c], allocated_[c]);
  }
  void count_free(MemoryCategory c, uint64_t bytes) {
    const std::lock_guard lock(accounting_);
    allocated_[c] -= bytes;
  }

 private:
  mutable std::mutex accounting_;
  std::map<MemoryCategory, uint64_t> allocated_;
  std::map<MemoryCategory, uint64_t> peak_;
};

// The host's MemAvailable (/proc/meminfo): what new allocations can take without swapping.
std::optional<uint64_t> host_available_bytes();

// "cpu" (always) or "cuda" (when built with CUDA); throws InputError for anything else.
std::unique_ptr<Backend> make_backend(std::string_view name);

}  // namespace infer_plan::runtime
