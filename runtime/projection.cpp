#include "runtime/projection.hpp"

namespace infer_plan::runtime {
namespace {
// rows per chunk boundary: threads never share an output cache line, and interleaved rows split at
// whole groups
constexpr uint64_t kRowGrain = 16;
static_assert(kRowGrain % kernels::kInterleavedRows == 0);
}

void project(ThreadPool& pool, GgmlType type, const uint8_t* weights, uint64_t rows, uint64_t cols,
             const float* x, uint64_t tokens, float* y, kernels::Activations& act, kernels::RowOrder order) {
  kernels::convert_activations(type, x, tokens, cols, act);
  pool.parallel_for(rows, [&](uint64_t b, uint64_t e) { kernels::matmul_rows(type, weights, rows, act, b, e, y, order); },
                    kRowGrain);
}

}  // namespace infer_plan::runtime
