// Allocation sizes are accounted exactly as requested (not rounded to the alignment), so the
// runtime's memory figures compare to the planner's byte for byte.
#include "runtime/cpu_backend.hpp"

#include <cassert>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <fmt/format.h>
#include <new>

#include "planner/core/input_error.hpp"
#if INFER_PLAN_HAVE_CUDA
#include "runtime/cuda_backend.hpp"
#endif

namespace infer_plan::runtime {

std::string_view memory_category_name(MemoryCategory c) {
  switch (c) {
    case MemoryCategory::weights: return "weights";
    case MemoryCategory::kv_cache: return "kv_cache";
    case MemoryCategory::activations: return "activations";
    case MemoryCategory::offload_buffers: return "offload_buffers";
    case MemoryCategory::offload_host: return "offload_host";
    case MemoryCategory::scratch: return "scratch";
  }
  return "?";
}

uint64_t Backend::allocated(MemoryCategory c) const {
  const std::lock_guard lock(accounting_);
  auto it = allocated_.find(c);
  return it == allocated_.end() ? 0 : it->second;
}

CpuBackend::~CpuBackend() { assert(live_buffers_ == 0 && "CpuBackend destroyed with live buffers"); }

DeviceBuffer CpuBackend::allocate(size_t bytes, MemoryCategory category) {
  constexpr size_t kAlign = 64;
  const size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded == 0 ? kAlign : rounded);
  if (!p) throw std::bad_alloc();
  count_allocation(category, bytes);
  ++live_buffers_;
  return {p, bytes, category};
}

void CpuBackend::free(DeviceBuffer& b) {
  if (!b.data) return;
  std::free(b.data);
  count_free(b.category, b.bytes);
  --live_buffers_;
  b = {};
}

void CpuBackend::copy_to_device(DeviceBuffer& dst, const void* src, size_t bytes) {
  assert(bytes <= dst.bytes);
  std::memcpy(dst.data, src, bytes);
}

void CpuBackend::copy_to_host(void* dst, const DeviceBuffer& src, size_t bytes) {
  assert(bytes <= src.bytes);
  std::memcpy(dst, src.data, bytes);
}

uint64_t CpuBackend::now_ns() const {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

std::optional<uint64_t> host_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib * 1024;
  }
  return std::nullopt;
}

std::unique_ptr<Backend> make_backend(std::string_view name) {
  if (name == "cpu") return std::make_unique<CpuBackend>();
#if INFER_PLAN_HAVE_CUDA
  if (name == "cuda") return make_cuda_backend();  // an InputError when no device is visible
#else
  if (name == "cuda")
    throw InputError("--backend cuda: this build has no CUDA support (nvcc was not found when it was configured); "
                     "reconfigure with nvcc on the PATH or -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc "
                     "-DINFER_PLAN_CUDA=ON, or use --backend cpu");
#endif
  throw InputError(fmt::format("--backend: unknown backend '{}'; expected cpu or cuda", name));
}

}  // namespace infer_plan::runtime
