// Argument checks for kernels/cuda/elementwise.hpp, in host C++20 (the planner's type table), before
// elementwise.cu or dequantize_rows.cu launches. Bad arguments are a caller's bug, so they throw
// std::invalid_argument with the value and the expectation rather than reach a kernel that would
// read out of bounds. Token ids live on the device and are not checked: the caller's tokenizer
// bounds them by the vocabulary.
#include "kernels/cuda/elementwise.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include "kernels/cuda/dequantize_rows.hpp"
#include "kernels/cuda/elementwise_launch.hpp"
#include "kernels/cuda/row_types.hpp"

namespace infer_plan::kernels::cuda {
namespace {

// One thread block per row (gridDim.x < 2^31) and 32-bit column indices in the kernels.
constexpr uint64_t kRowsMax = std::numeric_limits<int32_t>::max();

bool aligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

const CudaRowType& embed_type(GgmlType type) {
  const CudaRowType* t = find_cuda_row_type(type);
  if (t == nullptr)
    throw std::invalid_argument(fmt::format("embed_rows: no dequantizer for a {} table; known: {}",
                                            ggml_type_info(type).name, cuda_row_type_names(false)));
  return *t;
}

}  // namespace

void embed_rows(GgmlType type, const void* table, uint64_t row_bytes, uint64_t cols, const uint32_t* ids,
                uint32_t tokens, float* out, void* stream) {
  const CudaRowType& row_type = embed_type(type);
  const GgmlTypeInfo& info = ggml_type_info(type);
  if (table == nullptr || ids == nullptr || out == nullptr)
    throw std::invalid_argument("embed_rows: table, ids and out must be device pointers, not null");
  if (!aligned(ids, 4) || !aligned(out, 4))
    throw std::invalid_argument("embed_rows: ids and out must be 4-byte aligned");
  if (tokens < 1 || tokens > kRowsMax)
    throw std::invalid_argument(fmt::format("embed_rows: tokens = {}, expected 1..{}", tokens, kRowsMax));
  if (cols < 1 || cols > kRowsMax)
    throw std::invalid_argument(fmt::format("embed_rows: cols = {}, expected 1..{}", cols, kRowsMax));
  if (cols % info.block_values != 0)
    throw std::invalid_argument(fmt::format("embed_rows: cols = {} is not a whole number of {}-value {} blocks", cols,
                                            info.block_values, info.name));
  const uint64_t needed = cols / info.block_values * info.block_bytes;
  if (row_bytes < needed)
    throw std::invalid_argument(fmt::format("embed_rows: row_bytes = {}, but a row of {} {} values takes {}", row_bytes,
                                            cols, info.name, needed));
  const uint64_t align = row_type.row_align;
  if (!aligned(table, align) || row_bytes % align != 0)
    throw std::invalid_argument(fmt::format("embed_rows: a {} table and its row_bytes ({}) must be {}-byte aligned",
                                            info.name, row_bytes, align));
  dequantize_rows_f32(row_type.row, table, row_bytes, ids, tokens, static_cast<uint32_t>(cols), out, stream);
}

void add(float* x, const float* y, uint64_t n, void* stream) {
  if (x == nullptr || y == nullptr) throw std::invalid_argument("add: x and y must be device pointers, not null");
  if (n < 1) throw std::invalid_argument("add: n = 0, expected at least 1 value");
  add_launch(x, y, n, stream);
}

void add_bias(float* x, const float* bias, uint32_t rows, uint64_t n, void* stream) {
  if (x == nullptr || bias == nullptr)
    throw std::invalid_argument("add_bias: x and bias must be device pointers, not null");
  if (rows < 1 || n < 1)
    throw std::invalid_argument(fmt::format("add_bias: rows = {}, n = {}, expected at least 1 of each", rows, n));
  add_bias_launch(x, bias, rows, n, stream);
}

void scale(float* x, uint64_t n, float s, void* stream) {
  if (x == nullptr) throw std::invalid_argument("scale: x must be a device pointer, not null");
  if (n < 1) throw std::invalid_argument("scale: n = 0, expected at least 1 value");
  if (!std::isfinite(s)) throw std::invalid_argument(fmt::format("scale: s = {}, expected a finite factor", s));
  scale_launch(x, n, s, stream);
}

void softcap(float* x, uint64_t n, float cap, void* stream) {
  if (x == nullptr) throw std::invalid_argument("softcap: x must be a device pointer, not null");
  if (n < 1) throw std::invalid_argument("softcap: n = 0, expected at least 1 value");
  if (!(cap > 0.0f) || !std::isfinite(cap))
    throw std::invalid_argument(
        fmt::format("softcap: cap = {}, expected a finite cap > 0 (Gemma 2's logits: 30)", cap));
  softcap_launch(x, n, cap, stream);
}

void argmax_rows(const float* x, uint32_t rows, uint64_t n, uint32_t* out, void* stream) {
  if (x == nullptr || out == nullptr)
    throw std::invalid_argument("argmax_rows: x and out must be device pointers, not null");
  if (rows < 1 || rows > kRowsMax)
    throw std::invalid_argument(fmt::format("argmax_rows: rows = {}, expected 1..{}", rows, kRowsMax));
  constexpr uint64_t kValuesMax = std::numeric_limits<uint32_t>::max();  // indices fit uint32, one spare
  if (n < 1 || n > kValuesMax)
    throw std::invalid_argument(fmt::format("argmax_rows: n = {}, expected 1..{}", n, kValuesMax));
  argmax_rows_launch(x, rows, n, out, stream);
}

}  // namespace infer_plan::kernels::cuda
