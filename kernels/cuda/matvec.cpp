// Argument checks for kernels/cuda/matvec.hpp, in host C++20 (the planner's type table), before
// matvec.cu launches. Bad arguments are a caller's bug, so they throw std::invalid_argument with
// the value and the expectation rather than reach a kernel that would read out of bounds.
#include "kernels/cuda/matvec.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <stdexcept>

#include "kernels/cuda/matvec_launch.hpp"

namespace infer_plan::kernels::cuda {
namespace {

bool aligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

MatvecWeights launch_type(GgmlType type) {
  switch (type) {
    case GgmlType::BF16: return MatvecWeights::bf16;
    case GgmlType::Q8_0: return MatvecWeights::q8_0;
    case GgmlType::Q4_0: return MatvecWeights::q4_0;
    case GgmlType::Q2_K: return MatvecWeights::q2_k;
    default: break;
  }
  throw std::invalid_argument(fmt::format("matvec: no kernel for {} weights; known: {}", ggml_type_info(type).name,
                                          matvec_type_names()));
}

}  // namespace

bool has_matvec(GgmlType weight_type) {
  return weight_type == GgmlType::BF16 || weight_type == GgmlType::Q8_0 || weight_type == GgmlType::Q4_0 ||
         weight_type == GgmlType::Q2_K;
}

std::string_view matvec_type_names() { return "BF16, Q8_0, Q4_0, Q2_K"; }

void matvec(GgmlType weight_type, const void* weights, uint64_t rows, uint64_t cols, const float* x,
            uint32_t tokens, float* y, void* stream) {
  const MatvecWeights type = launch_type(weight_type);
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
  // Q2_K reads 32-bit words (its 84-byte blocks keep 4-byte alignment); the others 16-bit halves.
  const uintptr_t weights_align = weight_type == GgmlType::Q2_K ? 4 : 2;
  if (!aligned(weights, weights_align))
    throw std::invalid_argument(fmt::format("matvec: {} weights must be {}-byte aligned", info.name, weights_align));
  if (!aligned(x, 16)) throw std::invalid_argument("matvec: x must be 16-byte aligned (read as float4)");
  if (!aligned(y, 4)) throw std::invalid_argument("matvec: y must be 4-byte aligned");
  matvec_launch(type, weights, static_cast<uint32_t>(rows), static_cast<uint32_t>(cols), x, tokens, y, stream);
}

}  // namespace infer_plan::kernels::cuda
