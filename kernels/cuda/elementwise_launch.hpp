// The CUDA side of kernels/cuda/elementwise.hpp's adds and argmax: elementwise.cpp validates the
// arguments (it may use the planner's C++20 headers), elementwise.cu launches. Kept free of
// planner types because nvcc compiles C++17 here. Not for other callers: use elementwise.hpp.
// (embed_rows launches through dequantize_rows.hpp.)
#pragma once
#include <cstdint>

namespace infer_plan::kernels::cuda {

// Arguments already validated: non-null pointers, n >= 1, rows >= 1; argmax_rows_launch: rows
// < 2^31 (one thread block per row) and n < 2^32 (indices are uint32, 2^32 - 1 marks none).
void add_launch(float* x, const float* y, uint64_t n, void* stream);
void add_bias_launch(float* x, const float* bias, uint32_t rows, uint64_t n, void* stream);
void scale_launch(float* x, uint64_t n, float s, void* stream);
void softcap_launch(float* x, uint64_t n, float cap, void* stream);  // cap > 0
void argmax_rows_launch(const float* x, uint32_t rows, uint64_t n, uint32_t* out, void* stream);

}  // namespace infer_plan::kernels::cuda
