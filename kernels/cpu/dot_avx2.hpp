// AVX2 (+FMA, F16C) dot products of one weight row with one converted activation row, the inner
// loop of kernels/cpu/matmul. Compiled with per-function target attributes, so the library still
// runs on CPUs without AVX2: matmul asks avx2_dot() once and falls back to its scalar loops.
#pragma once
#include <cstdint>

#include "planner/core/ggml_type.hpp"

namespace infer_plan::kernels {

// One row: `weights` holds `cols` values of the weight type as packed GGML blocks, `x` the same
// count in the weight type's activation type (matmul.hpp's activation_type). Blocks are packed
// with no padding, so neither pointer is aligned beyond 2 bytes.
using DotFn = float (*)(const uint8_t* weights, const uint8_t* x, uint64_t cols);

// The AVX2 dot product for `weight_type` (F32, F16, BF16, Q8_0, Q4_0, Q2_K), or nullptr when
// this CPU lacks AVX2, FMA or F16C, the build is not for x86-64, or the type has none.
DotFn avx2_dot(GgmlType weight_type);

// Many rows by many activation rows at once: y[t * y_stride + r] = dot(weight row r, x row t) for
// r < rows, t < tokens, rows `w_stride` and `x_stride` bytes apart. Each weight load feeds up to
// six tokens' products; every value is bit-identical to avx2_dot's for the same pair.
using RowsDotFn = void (*)(const uint8_t* w, uint64_t w_stride, uint64_t rows, const uint8_t* x,
                           uint64_t x_stride, uint64_t tokens, uint64_t cols, float* y, uint64_t y_stride);

// The blocked product for `weight_type` (F32 and F16), or nullptr where avx2_dot is, or for the
// other types (their dots are limited by block decoding, not by loads).
RowsDotFn avx2_rows_dot(GgmlType weight_type);

}  // namespace infer_plan::kernels
