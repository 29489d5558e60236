// The prefill's products on the GPU: y = W x for many tokens through cuBLAS. BF16 weights multiply
// directly (x converted to BF16, FP32 accumulation, cublasGemmEx); the other GGML types are first
// dequantized to BF16 in a scratch buffer. Plain C++ (device pointers, handle and stream as void*);
// gemm.cpp + gemm.cu.
#pragma once
#include <cstdint>

#include "planner/core/ggml_type.hpp"

namespace infer_plan::kernels::cuda {

// A cuBLAS handle bound to a stream; destroyed with the object. Every cuBLAS call checked.
class Gemm {
 public:
  explicit Gemm(void* stream);
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  // BF16 elements of scratch `gemm` needs for `tokens` tokens of a rows x cols product of `type`:
  // tokens x cols for x in BF16, plus rows x cols for W unless W is BF16.
  static uint64_t scratch_bf16(GgmlType type, uint64_t rows, uint64_t cols, uint32_t tokens);

  // weights: rows GGML rows of cols values of `type` (BF16, Q8_0, Q4_0, Q2_K); x: tokens x cols
  // floats; y: tokens x rows floats (y[t * rows + r]). scratch: scratch_bf16(...) elements of 2
  // bytes, 256-byte aligned. Launches on the handle's stream without synchronizing.
  void multiply(GgmlType type, const void* weights, uint64_t rows, uint64_t cols, const float* x, uint32_t tokens,
                float* y, void* scratch);

  // multiply's argument checks (std::invalid_argument with the value and the expectation), which it
  // runs first; static so that tests exercise them without a device (constructing a Gemm needs one).
  static void check_multiply(GgmlType type, const void* weights, uint64_t rows, uint64_t cols, const float* x,
                             uint32_t tokens, const float* y, const void* scratch);

 private:
  void* handle_ = nullptr;  // cublasHandle_t
  void* stream_ = nullptr;
};

}  // namespace infer_plan::kernels::cuda
