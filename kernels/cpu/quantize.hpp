// Quantize and dequantize rows of Q8_0, Q4_0, the K-quants, IQ4_NL, IQ4_XS, MXFP4 and Q8_K blocks (and
// F32/F16/BF16 rows), bit-identical to ggml's reference quantizers (quantize_row_*_ref; for IQ4_NL and
// IQ4_XS, what llama-quantize calls without an importance matrix, quantize_iq4_nl / quantize_iq4_xs) and
// dequantizers (dequantize_row_*) in ggml-quants.c. Blocks are
// packed byte arrays with no padding, laid out as ggml-common.h's block structs; block sizes come
// from planner/core/ggml_type (the one table of layouts).
#pragma once
#include <cstdint>
#include <span>

#include "planner/core/ggml_type.hpp"

namespace infer_plan::kernels {

// True for the types this file can quantize and dequantize: Q8_0, Q4_0, Q2_K-Q6_K, IQ4_NL, IQ4_XS, MXFP4, Q8_K (ggml's
// activation type for K-quant dot products), and the float types F32, F16, BF16 (converted with
// round-to-nearest-even, stored little-endian).
bool has_quantizer(GgmlType type);
std::string_view quantizer_type_names();  // "F32, F16, BF16, Q8_0, ..." for messages

// `values.size()` must be a whole number of blocks and `blocks.size()` exactly the row's bytes
// (ggml_row_bytes); throws InputError otherwise (`what` names the input for the message).
void quantize_row(GgmlType type, std::span<const float> values, std::span<uint8_t> blocks,
                  std::string_view what);
void dequantize_row(GgmlType type, std::span<const uint8_t> blocks, std::span<float> values,
                    std::string_view what);

// One type each, for the kernels that know their type; sizes as above, checked by assert.
void quantize_row_q8_0(std::span<const float> values, std::span<uint8_t> blocks);
void quantize_row_q4_0(std::span<const float> values, std::span<uint8_t> blocks);
void quantize_row_q4_1(std::span<const float> values, std::span<uint8_t> blocks);
void quantize_row_q5_1(std::span<const float> values, std::span<uint8_t> blocks);
void quantize_row_q2_k(std::span<const float> values, std::span<uint8_t> blocks);
void quantize_row_q3_k(std::span<const float> values, std::span<uint8_t> blocks);
void quantize_row_q4_k(std::span<const float> values, std::span<uint8_t> blocks);
void quantize_row_q5_k(std::span<const float> values, std::span<uint8_t> blocks);
void quantize_row_q6_k(std::span<const float> values, std::span<uint8_t> blocks);
void quantize_row_iq4_nl(std::span<const float> values, std::span<uint8_t> blocks);
void quantize_row_iq4_xs(std::span<const float> values, std::span<uint8_t> blocks);
void quantize_row_mxfp4(std::span<const float> values, std::span<uint8_t> blocks);
void quantize_row_q8_k(std::span<const float> values, std::span<uint8_t> blocks);
void dequantize_row_q8_0(std::span<const uint8_t> blocks, std::span<float> values);
void dequantize_row_q4_0(std::span<const uint8_t> blocks, std::span<float> values);
void dequantize_row_q4_1(std::span<const uint8_t> blocks, std::span<float> values);
void dequantize_row_q5_1(std::span<const uint8_t> blocks, std::span<float> values);
void dequantize_row_q2_k(std::span<const uint8_t> blocks, std::span<float> values);
void dequantize_row_q3_k(std::span<const uint8_t> blocks, std::span<float> values);
void dequantize_row_q4_k(std::span<const uint8_t> blocks, std::span<float> values);
void dequantize_row_q5_k(std::span<const uint8_t> blocks, std::span<float> values);
void dequantize_row_q6_k(std::span<const uint8_t> blocks, std::span<float> values);
void dequantize_row_iq4_nl(std::span<const uint8_t> blocks, std::span<float> values);
void dequantize_row_iq4_xs(std::span<const uint8_t> blocks, std::span<float> values);
void dequantize_row_mxfp4(std::span<const uint8_t> blocks, std::span<float> values);
void dequantize_row_q8_k(std::span<const uint8_t> blocks, std::span<float> values);

// ggml's nearest_int: round to nearest, ties to even, by adding 1.5 * 2^23 and reading the low
// mantissa bits. Exact for |x| <= 4194303; beyond that it wraps as ggml's does (kept, not fixed,
// so that Q2_K stays bit-identical for every input).
int nearest_int(float x);

}  // namespace infer_plan::kernels
