// y = W x for a weight matrix stored as GGML rows, its rows split across a thread pool: the one
// way the runtime multiplies by weights (decoder, probe), so what probe measures is what a decode
// step does.
#pragma once
#include <cstdint>

#include "kernels/cpu/matmul.hpp"
#include "runtime/thread_pool.hpp"

namespace infer_plan::runtime {

// y is tokens x rows; x is tokens x cols; `act` is the caller's reusable conversion buffer. The
// weights' rows in `order` (kernels/cpu/interleave.hpp).
void project(ThreadPool& pool, GgmlType type, const uint8_t* weights, uint64_t rows, uint64_t cols,
             const float* x, uint64_t tokens, float* y, kernels::Activations& act,
             kernels::RowOrder order = kernels::RowOrder::ggml);

}  // namespace infer_plan::runtime
