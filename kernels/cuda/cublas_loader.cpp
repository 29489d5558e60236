#include "kernels/cuda/cublas_loader.hpp"

#include <dlfcn.h>

#include <stdexcept>
#include <string>
#include <type_traits>

#ifndef INFER_PLAN_CUDA_LIBRARY_DIR
#define INFER_PLAN_CUDA_LIBRARY_DIR ""
#endif

namespace infer_plan::kernels::cuda {
namespace {

CublasApi open_cublas() {
  const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string why = lib ? "" : dlerror();
  const std::string dir = INFER_PLAN_CUDA_LIBRARY_DIR;
  if (!lib && !dir.empty()) {
    lib = dlopen((dir + "/" + name).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) why += std::string("; ") + dlerror();
  }
  if (!lib) throw std::runtime_error("cuBLAS: cannot open " + name + " (" + why + "); the CUDA backend's matrix "
                                     "products need it: add its folder to LD_LIBRARY_PATH");
  CublasApi api;
  auto bind = [&](auto& fn, const char* symbol) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, symbol));
    if (!fn) throw std::runtime_error("cuBLAS: " + name + " has no " + symbol);
  };
  bind(api.create, "cublasCreate_v2");
  bind(api.destroy, "cublasDestroy_v2");
  bind(api.set_stream, "cublasSetStream_v2");
  bind(api.gemm_ex, "cublasGemmEx");
  bind(api.status_name, "cublasGetStatusName");
  bind(api.status_string, "cublasGetStatusString");
  return api;  // the library stays open for the life of the process
}

}  // namespace

const CublasApi& cublas() {
  static const CublasApi api = open_cublas();
  return api;
}

}  // namespace infer_plan::kernels::cuda
