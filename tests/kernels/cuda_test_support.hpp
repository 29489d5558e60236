// The CUDA kernel tests' shared plumbing: a checked CUDA call that names the test's file and line,
// the failure count each test's main returns from, the argument-check helper (argument checks
// run before the device check, so they run without a GPU too), and a device array.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace infer_plan::cuda_test {

inline int failures = 0;

inline void check(cudaError_t e, const char* what, const char* file, int line) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + what + ": " + cudaGetErrorString(e));
}

// `call` must throw std::invalid_argument; prints its message, or counts a failure.
inline void expect_throw(const char* what, const std::function<void()>& call) {
  try {
    call();
  } catch (const std::invalid_argument& e) {
    std::printf("ok: %s -> %s\n", what, e.what());
    return;
  }
  std::printf("FAILED: %s did not throw std::invalid_argument\n", what);
  ++failures;
}

}  // namespace infer_plan::cuda_test

#define CHECK_CUDA(call) ::infer_plan::cuda_test::check((call), #call, __FILE__, __LINE__)

namespace infer_plan::cuda_test {

// A device array of T: `n` uninitialised values, or a copy of a host vector; freed on scope exit.
template <typename T>
struct DeviceArray {
  T* data = nullptr;
  size_t size = 0;
  explicit DeviceArray(size_t n) : size(n) { CHECK_CUDA(cudaMalloc(&data, n * sizeof(T))); }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) {
    CHECK_CUDA(cudaMemcpy(data, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~DeviceArray() { (void)cudaFree(data); }  // a destructor must not throw; a failure shows in later calls
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  void fill_bytes(uint8_t byte) { CHECK_CUDA(cudaMemset(data, byte, size * sizeof(T))); }
  std::vector<T> to_host(size_t n) const {
    std::vector<T> out(n);
    CHECK_CUDA(cudaMemcpy(out.data(), data, n * sizeof(T), cudaMemcpyDeviceToHost));
    return out;
  }
  std::vector<T> to_host() const { return to_host(size); }
};

}  // namespace infer_plan::cuda_test
