// AVX2 quantizers for the activations of a product (matmul's convert_activations): Q8_0 (for Q8_0
// and Q4_0 weights) and Q8_K (for Q2_K), byte for byte what quantize.cpp's quantize_row_q8_0 and
// quantize_row_q8_k (ggml's reference quantizers) write. A decode step converts each projection's
// input on one thread before the rows are split; the scalar loops (a libm round per value) cost
// about as much as a Q4_0 product of a few hundred rows.
#pragma once
#include <cstdint>

#include "planner/core/ggml_type.hpp"

namespace infer_plan::kernels {

// `count` values (whole blocks of the type) to blocks at `out`.
using QuantizeRowFn = void (*)(const float* values, uint64_t count, uint8_t* out);

// The quantizer for Q8_0 or Q8_K, or nullptr for other types, on CPUs without AVX2, or off x86-64.
QuantizeRowFn avx2_quantize_row(GgmlType type);

}  // namespace infer_plan::kernels
