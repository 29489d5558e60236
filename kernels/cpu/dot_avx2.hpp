// AVX2 (+FMA, F16C) dot products of weight rows with converted activation rows, the inner loop of
// kernels/cpu/matmul. Compiled with per-function target attributes, so the library still
// runs on CPUs without AVX2: matmul asks avx2_rows_dot() once and falls back to its scalar loops.
#pragma once
#include <cstdint>

#include "planner/core/ggml_type.hpp"

namespace infer_plan::kernels {

// Many weight rows by many activation rows at once: y[t * y_stride + r] = dot(weight row r, x row t)
// for r < rows, t < tokens, rows `w_stride` and `x_stride` bytes apart. Weight rows hold `cols`
// values of the weight type as packed GGML blocks, activation rows the same count in the weight
// type's activation type (matmul.hpp's activation_type). Blocks are packed with no padding, so no
// pointer is aligned beyond 2 bytes. Each weight load feeds several tokens' products, and every
// value's bits are the same whatever rows and tokens are computed beside it (one token alone
// included): a verify pass equals the decode steps it replaces.
using RowsDotFn = void (*)(const uint8_t* w, uint64_t w_stride, uint64_t rows, const uint8_t* x,
                           uint64_t x_stride, uint64_t tokens, uint64_t cols, float* y, uint64_t y_stride);

// The product for `weight_type` (F32, F16, BF16, Q8_0, Q4_0, Q2_K-Q6_K, IQ4_NL, IQ4_XS, MXFP4), or
// nullptr when this CPU
// lacks AVX2, FMA or F16C, the build is not for x86-64, or the type has none. With `avx512`, where
// the CPU has them: Q2_K on AVX-512 VNNI (the AVX2 product's bits, tested), BF16 on AVX512_BF16
// (the same sum in another order: bits may differ from the AVX2 product's).
RowsDotFn avx2_rows_dot(GgmlType weight_type, bool avx512 = true);

// The same for weights in interleaved order (kernels/cpu/interleave.hpp): `groups` groups of
// kInterleavedRows rows from `w`, y[t * y_stride + 8 g + r] = dot(row r of group g, x row t).
// `offsets` are the activations' Activations::offsets, `cols` / 32 per activation row. The same
// guarantee: a (row, token) pair's bits do not depend on the tokens beside it.
using GroupsDotFn = void (*)(const uint8_t* w, uint64_t groups, const uint8_t* x, uint64_t x_stride,
                             const uint32_t* offsets, uint64_t tokens, uint64_t cols, float* y, uint64_t y_stride);

// Q4_0, and IQ4_NL and MXFP4 where the CPU has AVX-512 VNNI (and `avx512_vnni`); nullptr as above.
// Q4_0 has a VNNI variant that adds four products per instruction: the same bits as its AVX2 one
// (the tests compare the two).
GroupsDotFn avx2_interleaved_dot(GgmlType weight_type, bool avx512_vnni = true);
// True when this CPU runs AVX-512 VNNI (with AVX512BW and VL) beside AVX2.
bool avx512_vnni_able();
// True when this CPU runs AVX512_BF16 (with AVX512BW and VL) beside AVX2.
bool avx512_bf16_able();

}  // namespace infer_plan::kernels
