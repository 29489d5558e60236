// The CUDA backend on a device: allocation accounting per category agrees with cudaMemGetInfo
// within the allocator's page granularity, copies round-trip the bytes (device and pinned host
// buffers), and a failing call names file, line, call and error. Skipped (77) without a device.
#include <doctest/doctest.h>

#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "runtime/cuda_backend.hpp"

using namespace infer_plan::runtime;

namespace {

constexpr uint64_t MiB = uint64_t{1} << 20;

// The unit cudaMalloc maps device memory in: the driver's recommended allocation granularity for
// this device (cuMemGetAllocationGranularity, from libcuda opened at run time so that the binary
// still starts, and skips, where no driver is installed), and at least 2 MiB, the large-page size
// of Hopper and earlier datacenter parts. Each buffer may hold up to one unit more than it asked.
uint64_t allocation_granularity() {
  uint64_t unit = 2 * MiB;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return unit;
  using DeviceGet = CUresult (*)(CUdevice*, int);
  using Granularity = CUresult (*)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags);
  const auto device_get = reinterpret_cast<DeviceGet>(dlsym(lib, "cuDeviceGet"));
  const auto granularity = reinterpret_cast<Granularity>(dlsym(lib, "cuMemGetAllocationGranularity"));
  int ordinal = 0;
  CUdevice device{};
  if (device_get && granularity && cudaGetDevice(&ordinal) == cudaSuccess && device_get(&device, ordinal) == CUDA_SUCCESS) {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    size_t g = 0;
    if (granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) == CUDA_SUCCESS && g > unit) unit = g;
  }
  dlclose(lib);
  return unit;
}

std::vector<unsigned char> pattern(size_t bytes, unsigned seed) {
  std::vector<unsigned char> v(bytes);
  uint32_t x = seed;
  for (auto& b : v) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<unsigned char>(x >> 24);
  }
  return v;
}

// Number of differing bytes; prints the first few (index, got, expected).
size_t count_mismatches(const unsigned char* got, const unsigned char* expected, size_t bytes) {
  size_t bad = 0;
  for (size_t i = 0; i < bytes; ++i) {
    if (got[i] == expected[i]) continue;
    if (bad < 8) std::printf("  mismatch at byte %zu: got %u, expected %u\n", i, got[i], expected[i]);
    ++bad;
  }
  return bad;
}

int64_t signed_difference(uint64_t a, uint64_t b) { return static_cast<int64_t>(a) - static_cast<int64_t>(b); }

}  // namespace

TEST_CASE("allocation accounting agrees with cudaMemGetInfo within the page granularity") {
  CudaBackend b;
  const uint64_t kPageBytes = allocation_granularity();
  MESSAGE("allocation granularity ", kPageBytes, " B");
  const CudaMemoryInfo before = b.memory_info();
  // Odd sizes, so that the accounting (as requested) and the driver (whole pages) differ a little.
  const uint64_t sizes[] = {256 * MiB + 12345, 64 * MiB + 1, 3 * MiB + 17};
  const MemoryCategory categories[] = {MemoryCategory::weights, MemoryCategory::kv_cache, MemoryCategory::activations};
  std::vector<DeviceBuffer> buffers;
  uint64_t requested = 0;
  for (int i = 0; i < 3; ++i) {
    buffers.push_back(b.allocate(sizes[i], categories[i]));
    requested += sizes[i];
    CHECK(b.allocated(categories[i]) == sizes[i]);  // exact, as the planner counts
  }
  DeviceBuffer pinned = b.allocate(5 * MiB + 3, MemoryCategory::offload_host);
  CHECK(b.allocated(MemoryCategory::offload_host) == 5 * MiB + 3);

  const CudaMemoryInfo after = b.memory_info();
  CHECK(after.allocated_device_bytes - before.allocated_device_bytes == requested);  // pinned host not counted
  CHECK(after.allocated_host_bytes - before.allocated_host_bytes == 5 * MiB + 3);
  CHECK(after.driver_total_bytes == before.driver_total_bytes);
  // 0 <= driver delta - requested <= one page per buffer (rounding up) + one page for the
  // allocator's own bookkeeping; the pinned buffer is host memory and not in the driver's figure.
  const int64_t driver_delta = signed_difference(after.driver_used_bytes(), before.driver_used_bytes());
  const int64_t slack = driver_delta - static_cast<int64_t>(requested);
  INFO("driver used +", driver_delta, " B for ", requested, " B requested (slack ", slack, " B, allowed 0..",
       4 * kPageBytes, ")");
  CHECK(slack >= 0);
  CHECK(slack <= static_cast<int64_t>(4 * kPageBytes));

  for (auto& buf : buffers) b.free(buf);
  b.free(pinned);
  CHECK(b.allocated(MemoryCategory::weights) == 0);
  CHECK(b.allocated(MemoryCategory::offload_host) == 0);
  const CudaMemoryInfo freed = b.memory_info();
  CHECK(freed.allocated_device_bytes == before.allocated_device_bytes);
  const int64_t left = signed_difference(freed.driver_used_bytes(), before.driver_used_bytes());
  INFO("driver used after free: ", left, " B above the start");
  CHECK(left >= -static_cast<int64_t>(kPageBytes));
  CHECK(left <= static_cast<int64_t>(kPageBytes));
}

TEST_CASE("copy round trip through device memory and pinned host memory") {
  CudaBackend b;
  const size_t bytes = 10 * MiB + 3;  // not a multiple of any vector width
  const std::vector<unsigned char> src = pattern(bytes, 7);
  std::vector<unsigned char> back(bytes, 0);

  DeviceBuffer d = b.allocate(bytes, MemoryCategory::weights);
  b.copy_to_device(d, src.data(), bytes);
  b.copy_to_host(back.data(), d, bytes);
  CHECK(count_mismatches(back.data(), src.data(), bytes) == 0);

  // A partial copy writes only its bytes: the tail keeps the first copy's contents.
  const std::vector<unsigned char> head = pattern(4096, 9);
  b.copy_to_device(d, head.data(), head.size());
  b.copy_to_host(back.data(), d, bytes);
  CHECK(count_mismatches(back.data(), head.data(), head.size()) == 0);
  CHECK(count_mismatches(back.data() + head.size(), src.data() + head.size(), bytes - head.size()) == 0);
  b.free(d);

  // offload_host is pinned host memory: the same calls work (cudaMemcpyDefault), and the host
  // can read it directly.
  DeviceBuffer h = b.allocate(bytes, MemoryCategory::offload_host);
  b.copy_to_device(h, src.data(), bytes);
  CHECK(count_mismatches(static_cast<const unsigned char*>(h.data), src.data(), bytes) == 0);
  std::vector<unsigned char> back2(bytes, 0);
  b.copy_to_host(back2.data(), h, bytes);
  CHECK(count_mismatches(back2.data(), src.data(), bytes) == 0);
  b.free(h);

  b.synchronize();
  const uint64_t t0 = b.now_ns();
  CHECK(b.now_ns() >= t0);
}

TEST_CASE("a failing CUDA call names file, line, call and error") {
  CudaBackend b;
  // 1 PiB: more than any device holds, so cudaMalloc fails with cudaErrorMemoryAllocation.
  try {
    DeviceBuffer huge = b.allocate(uint64_t{1} << 50, MemoryCategory::scratch);
    b.free(huge);
    FAIL("allocating 1 PiB succeeded");
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("cuda_backend.cpp:") != std::string::npos);
    CHECK(what.find("cudaMalloc") != std::string::npos);
    CHECK(what.find("cudaErrorMemoryAllocation") != std::string::npos);
  }
  CHECK(b.allocated(MemoryCategory::scratch) == 0);  // a failed allocation is not accounted
  // The error was cleared: the backend still works.
  DeviceBuffer small = b.allocate(64, MemoryCategory::scratch);
  b.free(small);
}

TEST_CASE("make_backend(\"cuda\") returns the CUDA backend when a device is visible") {
  auto b = make_backend("cuda");
  CHECK(b->name() == "cuda");
  DeviceBuffer x = b->allocate(1000, MemoryCategory::kv_cache);
  CHECK(b->allocated(MemoryCategory::kv_cache) == 1000);
  b->free(x);
}
