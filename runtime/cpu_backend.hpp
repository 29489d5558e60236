// The CPU backend: host memory with 64-byte alignment (one cache line, and a whole AVX-512
// vector), memcpy for copies, std::chrono::steady_clock for time.
#pragma once
#include <atomic>

#include "runtime/backend.hpp"

namespace infer_plan::runtime {

class CpuBackend final : public Backend {
 public:
  ~CpuBackend() override;
  std::string_view name() const override { return "cpu"; }
  DeviceBuffer allocate(size_t bytes, MemoryCategory category) override;
  void free(DeviceBuffer& buffer) override;
  void copy_to_device(DeviceBuffer& dst, const void* src, size_t bytes) override;
  void copy_to_host(void* dst, const DeviceBuffer& src, size_t bytes) override;
  void synchronize() override {}
  uint64_t now_ns() const override;
  bool host_addressable(MemoryCategory) const override { return true; }
  std::optional<uint64_t> available_bytes(MemoryCategory) const override { return host_available_bytes(); }

 private:
  std::atomic<uint64_t> live_buffers_{0};  // several servers may set up at once
};

}  // namespace infer_plan::runtime
