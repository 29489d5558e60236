// The CUDA side of GGML rows to F32 or BF16: the embedding gather (elementwise.cpp's embed_rows)
// and the prefill GEMM's conversions (gemm.cpp: x to BF16, quantized weights to BF16) share these
// launchers, so one device copy of each block layout serves both. Callers validate the arguments
// (they may use the planner's C++20 headers); this header stays free of planner types because nvcc
// compiles C++17 here. Implemented in dequantize_rows.cu.
#pragma once
#include <cstdint>

#include "kernels/cuda/row_type.hpp"

namespace infer_plan::kernels::cuda {

// Output row i (i < rows) = source row ids[i] (or row i when ids is nullptr) of `table`, each
// `cols` values of `type`, rows `row_bytes` apart, converted to F32 (values exactly as
// kernels/cpu/quantize.cpp's dequantize_row gives them) or to BF16 (those values rounded to
// nearest even). out is rows x cols, row-major. Launches on `stream` without synchronizing; throws
// std::runtime_error ("file:line: call: error") when the launch fails.
// Validated by the caller: rows in 1..2^31-1, cols a whole number of blocks, table aligned to 4
// bytes for F32 and 2 for the others, and row_bytes a multiple of that alignment.
void dequantize_rows_f32(RowType type, const void* table, uint64_t row_bytes, const uint32_t* ids, uint32_t rows,
                         uint32_t cols, float* out, void* stream);
void dequantize_rows_bf16(RowType type, const void* table, uint64_t row_bytes, const uint32_t* ids, uint32_t rows,
                          uint32_t cols, uint16_t* out, void* stream);

}  // namespace infer_plan::kernels::cuda
