// Moving rows of a batch on the GPU: the head's input (each sequence's last token), and MoE's
// tokens in and out of an expert (gather the tokens routed to it, add its output back scaled by
// the routing weight). Plain C++ (device pointers, stream as void*); gather.cu.
#pragma once
#include <cstdint>

namespace infer_plan::kernels::cuda {

// The widest row either call takes: one thread per float in blocks of 256, the grid's x dimension
// at most 2^31 - 1 blocks. Wider rows are refused (std::invalid_argument) before any launch.
inline constexpr uint64_t kGatherMaxWidth = uint64_t{0x7fffffff} * 256;

// dst[i][0..width) = src[idx[i]][0..width) for i < n; idx: n device uint32.
void gather_rows(const float* src, uint64_t width, const uint32_t* idx, uint32_t n, float* dst, void* stream);

// dst[idx[i]][j] += scale[i] * src[i][j] for i < n, j < width; idx must not repeat within one call
// (one expert's tokens are distinct), so no two threads add to one element. scale: n device floats.
void scatter_add_rows(float* dst, uint64_t width, const float* src, const uint32_t* idx, const float* scale,
                      uint32_t n, void* stream);

}  // namespace infer_plan::kernels::cuda
