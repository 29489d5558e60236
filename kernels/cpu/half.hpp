// IEEE half and bfloat16 <-> float, bit-exact with round-to-nearest-even (as ggml's
// GGML_FP32_TO_FP16 and GGML_FP32_TO_BF16 do); NaNs stay NaN. Used by every quantized block
// (its fp16 scale) and by BF16/F16 weights and KV.
#pragma once
#include <cstdint>

namespace infer_plan::kernels {

float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);
float bf16_to_fp32(uint16_t b);
uint16_t fp32_to_bf16(float f);

// A block's fp16 field (scale, min) in memory: little-endian whatever the host, as in a GGUF file.
void store_fp16(uint8_t* p, float f);
float load_fp16(const uint8_t* p);

}  // namespace infer_plan::kernels
