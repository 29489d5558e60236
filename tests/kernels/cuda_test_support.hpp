// The CUDA kernel tests' shared plumbing: a checked CUDA call that names the test's file and line,
// the failure count each test's main returns from, and the argument-check helper (argument checks
// run before the device check, so they run without a GPU too).
#pragma once
#include <cuda_runtime.h>

#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>

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
