// The gated FFN activations on the GPU, as kernels/cpu/swiglu: out[i] = silu(gate[i]) * up[i],
// silu(g) = g / (1 + exp(-g)), and Gemma's and GPT-OSS's variants. Plain C++ (device pointers,
// stream as void*); swiglu.cu.
#pragma once
#include <cstdint>

namespace infer_plan::kernels::cuda {

// gate, up, out: n floats on the device (a batch's rows back to back); out may equal gate or up.
// Launches on `stream` (cudaStream_t; nullptr = default) without synchronizing. Throws
// std::invalid_argument on bad arguments, std::runtime_error when the launch fails.
void swiglu(const float* gate, const float* up, uint64_t n, float* out, void* stream);

// Gemma's GEGLU, as kernels/cpu's geglu (GELU-tanh through fp16, as ggml's table); GPT-OSS's clamped
// SwiGLU, as kernels/cpu's swiglu_oai (limit > 0). Same arguments and errors as swiglu.
void geglu(const float* gate, const float* up, uint64_t n, float* out, void* stream);
void swiglu_oai(const float* gate, const float* up, uint64_t n, float limit, float* out, void* stream);

}  // namespace infer_plan::kernels::cuda
