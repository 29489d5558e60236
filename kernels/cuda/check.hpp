// Checked CUDA and cuBLAS calls: a failure throws std::runtime_error naming the file, line, the
// call as written, and the error's name and message, so a device run's log says what failed where.
// Include only from CUDA sources (.cu, runtime/cuda_*.cpp): it pulls in the CUDA headers.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "kernels/cuda/cublas_loader.hpp"

#include <stdexcept>
#include <string>

namespace infer_plan::kernels::cuda {

// "file:line: call: cudaErrorName: message"
inline void check_cuda(cudaError_t e, const char* call, const char* file, int line) {
  if (e == cudaSuccess) return;
  // Clear a non-sticky error (e.g. cudaErrorMemoryAllocation) so that a later cudaGetLastError
  // after a launch does not report this one again; sticky errors stay, as the context is lost.
  (void)cudaGetLastError();
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + call + ": " +
                           cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

// cuBLAS has a name for each status (cublasGetStatusName) and a sentence (cublasGetStatusString).
inline void check_cublas(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + call + ": " +
                           cublas().status_name(s) + ": " + cublas().status_string(s));
}

}  // namespace infer_plan::kernels::cuda

#define CUDA_CHECK(call) ::infer_plan::kernels::cuda::check_cuda((call), #call, __FILE__, __LINE__)
#define CUBLAS_CHECK(call) ::infer_plan::kernels::cuda::check_cublas((call), #call, __FILE__, __LINE__)
