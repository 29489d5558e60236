// Argument checks for kernels/cuda/matvec.hpp, in host C++20 (the planner's type table), before
// matvec.cu launches. Bad arguments are a caller's bug, so they throw std::invalid_argument with
// the value and the expectation rather than reach a kernel that would read out of bounds.
#include "kernels/cuda/matvec.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <stdexcept>

#include "kernels/cuda/matvec_launch.hpp"
#include "kernels/cuda/row_types.hpp"

namespace infer_plan::kernels::cuda {
namespace {

bool aligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

const CudaRowType& matrix_type(GgmlType type) {
  const CudaRowType* t = find_cuda_row_type(type);
  if (t == nullptr || !t->matrix)
    throw std::invalid_argument(fmt::format("matvec: no kernel for {} weights; known: {}", ggml_type_info(type).name,
                                            matvec_type_names()));
  return *t;
}

}  // namespace

bool has_matvec(GgmlType weight_type) {
  const CudaRowType* t = find_cuda_row_type(weight_type);
  return t != nullptr && t->matrix;
}

std::string matvec_type_names() { return cuda_row_type_names(true); }

void matvec(GgmlType weight_type, const void* weights, uint64_t rows, uint64_t cols, const float* x,
            uint32_t tokens, float* y, void* stream) {
  const CudaRowType& type = matrix_type(weight_type);
  const GgmlTypeInfo& info = ggml_type_info(weight_type);
  if (weights == nullptr || x == nullptr || y == nullptr)
    throw std::invalid_argument("matvec: weights, x and y must be device pointers, not null");
  if (tokens < 1 || tokens > kMatvecTokensMax)
    throw std::invalid_argument(fmt::format("matvec: tokens = {}, expected 1..{}", tokens, kMatvecTokensMax));
  // Row indices and the grid are 32-bit in the kernels; cols * 4 bytes of x per token stays 32-bit too.
  constexpr uint64_t kMax = std::numeric_limits<int32_t>::max() / 4;
  if (rows < 1 || rows > kMax || cols < 1 || cols > kMax)
    throw std::invalid_argument(fmt::format("matvec: {} x {} weights, expected 1..{} rows and cols", rows, cols, kMax));
  if (cols % info.block_values != 0)
    throw std::invalid_argument(fmt::format("matvec: cols = {} is not a whole number of {}-value {} blocks", cols,
                                            info.block_values, info.name));
  if (!aligned(weights, type.matvec_align))
    throw std::invalid_argument(fmt::format("matvec: {} weights must be {}-byte aligned", info.name, type.matvec_align));
  if (!aligned(x, 16)) throw std::invalid_argument("matvec: x must be 16-byte aligned (read as float4)");
  if (!aligned(y, 4)) throw std::invalid_argument("matvec: y must be 4-byte aligned");
  matvec_launch(type.row, weights, static_cast<uint32_t>(rows), static_cast<uint32_t>(cols), x, tokens, y, stream);
}

}  // namespace infer_plan::kernels::cuda
