// Matrix-vector and small-batch products on the GPU, the work of every projection in a decode step
// (batch 1) and a speculative verify (a few tokens): y[t][r] = sum_c W[r][c] * x[t][c]. W stays in
// its GGML row layout (BF16, Q8_0, Q4_0, Q2_K) and is dequantized in registers; x and y are F32.
// Plain C++ (device pointers as void*, streams as void*); implemented in matvec.cpp + matvec.cu,
// built only with CUDA. The CPU reference is kernels/cpu/quantize's dequantize_row and a plain sum.
#pragma once
#include <cstdint>
#include <string>

#include "planner/core/ggml_type.hpp"

namespace infer_plan::kernels::cuda {

// The most tokens one call multiplies: each token keeps one accumulator per thread in registers.
constexpr uint32_t kMatvecTokensMax = 8;

// True for BF16, Q8_0, Q4_0, Q2_K.
bool has_matvec(GgmlType weight_type);
std::string matvec_type_names();  // "BF16, Q8_0, ..." for messages (kernels/cuda/row_types.hpp)

// weights: `rows` consecutive GGML rows of `cols` values of `weight_type` (device memory, at least
// 2-byte aligned; 4-byte for Q2_K). x: tokens x cols floats, row-major, 16-byte aligned (cudaMalloc
// gives 256). y: tokens x rows floats, y[t * rows + r]. tokens in 1..kMatvecTokensMax. Launches on
// `stream` (a cudaStream_t; nullptr = the default stream) and returns without synchronizing.
// Throws std::invalid_argument on bad arguments and std::runtime_error ("file:line: call: error")
// when the launch fails.
void matvec(GgmlType weight_type, const void* weights, uint64_t rows, uint64_t cols, const float* x,
            uint32_t tokens, float* y, void* stream);

}  // namespace infer_plan::kernels::cuda
