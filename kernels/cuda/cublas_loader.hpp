// cuBLAS opened on first use (dlopen) instead of linked: its libraries (libcublas, libcublasLt:
// about 700 MB) took 60 ms of page faults and static constructors at the start of every process,
// planner commands included, which never multiply on a GPU. Only the calls the kernels make.
// Include only from CUDA sources: it pulls in the cuBLAS header for the types.
#pragma once
#include <cublas_v2.h>

namespace infer_plan::kernels::cuda {

struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  // The exported C function (C++ also sees an inline overload taking a cudaDataType compute type).
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                            cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  decltype(&cublasGetStatusName) status_name = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
};

// The library of the cuBLAS major version this was built against (libcublas.so.N: by the loader's
// search path, then from the toolkit's library folder found at build time), opened once, on first
// call, thread-safely. Throws std::runtime_error naming the library and dlerror() when it cannot
// be opened or lacks a function.
const CublasApi& cublas();

}  // namespace infer_plan::kernels::cuda
