// The small steps of a forward pass on the GPU: the embedding gather (GGML rows dequantized to
// floats), residual adds and biases, scales and soft-caps, and the greedy pick. Plain C++ (device pointers, streams as
// void*); elementwise.cu. Each launches on `stream` without synchronizing and throws
// std::invalid_argument on bad arguments, std::runtime_error ("file:line: call: error") when a
// launch fails.
#pragma once
#include <cstdint>

#include "planner/core/ggml_type.hpp"

namespace infer_plan::kernels::cuda {

// out[t][0..cols) = dequantize(table row ids[t]) for t < tokens; table: GGML rows of `cols`
// values of `type` (F32, F16, BF16, Q8_0, Q4_0, Q2_K), row_bytes apart; ids: device uint32.
void embed_rows(GgmlType type, const void* table, uint64_t row_bytes, uint64_t cols, const uint32_t* ids,
                uint32_t tokens, float* out, void* stream);

// x[i] += y[i] for i < n.
void add(float* x, const float* y, uint64_t n, void* stream);

// x[t][i] += bias[i] for t < rows, i < n.
void add_bias(float* x, const float* bias, uint32_t rows, uint64_t n, void* stream);

// x[i] *= s for i < n (Gemma's embedding scale).
void scale(float* x, uint64_t n, float s, void* stream);

// x[i] = tanh(x[i] / cap) * cap for i < n, cap > 0, as kernels/activation.hpp's softcap (Gemma 2's
// logits; the CPU decoder's own arithmetic).
void softcap(float* x, uint64_t n, float cap, void* stream);

// out[r] = the index of the largest of x[r][0..n) (the first when tied), for r < rows.
void argmax_rows(const float* x, uint32_t rows, uint64_t n, uint32_t* out, void* stream);

}  // namespace infer_plan::kernels::cuda
