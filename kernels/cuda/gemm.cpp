// The prefill's products through cuBLAS: x (F32) and, unless already BF16, the weights are first
// converted to BF16 in the caller's scratch (dequantize_rows.cu), then one cublasGemmEx multiplies
// with FP32 accumulation and an F32 result. Column-major view: W's row-major rows x cols bytes are
// a cols x rows column-major matrix, so y^T (rows x tokens) = op_T(W) * x_bf16^T, where x_bf16's
// row-major tokens x cols is a cols x tokens column-major matrix and y's row-major tokens x rows a
// rows x tokens one. Argument checks first (std::invalid_argument), before any CUDA call.
#include "kernels/cuda/gemm.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <stdexcept>

#include "kernels/cuda/check.hpp"
#include "kernels/cuda/dequantize_rows.hpp"
#include "kernels/cuda/row_types.hpp"

namespace infer_plan::kernels::cuda {
namespace {

// cuBLAS takes int dimensions; the conversions launch one thread block per row (gridDim.x < 2^31).
constexpr uint64_t kDimMax = std::numeric_limits<int32_t>::max();
constexpr uintptr_t kScratchAlign = 256;  // what cudaMalloc gives; cuBLAS is fastest on aligned operands

bool aligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

const CudaRowType& weight_row_type(GgmlType type) {
  const CudaRowType* t = find_cuda_row_type(type);
  if (t == nullptr || !t->matrix)
    throw std::invalid_argument(fmt::format("Gemm::multiply: no product for {} weights; known: {}",
                                            ggml_type_info(type).name, cuda_row_type_names(true)));
  return *t;
}

cublasHandle_t as_handle(void* h) { return static_cast<cublasHandle_t>(h); }

}  // namespace

Gemm::Gemm(void* stream) : stream_(stream) {
  cublasHandle_t handle = nullptr;
  CUBLAS_CHECK(cublas().create(&handle));
  handle_ = handle;
  try {
    CUBLAS_CHECK(cublas().set_stream(handle, static_cast<cudaStream_t>(stream)));
  } catch (...) {
    (void)cublas().destroy(handle);  // the destructor does not run when the constructor throws
    throw;
  }
}

Gemm::~Gemm() { (void)cublas().destroy(as_handle(handle_)); }  // a destructor must not throw

uint64_t Gemm::scratch_bf16(GgmlType type, uint64_t rows, uint64_t cols, uint32_t tokens) {
  const uint64_t x_elements = static_cast<uint64_t>(tokens) * cols;
  return type == GgmlType::BF16 ? x_elements : x_elements + rows * cols;
}

void Gemm::check_multiply(GgmlType type, const void* weights, uint64_t rows, uint64_t cols, const float* x,
                          uint32_t tokens, const float* y, const void* scratch) {
  (void)weight_row_type(type);  // throws for a type without a product
  const GgmlTypeInfo& info = ggml_type_info(type);
  if (weights == nullptr || x == nullptr || y == nullptr || scratch == nullptr)
    throw std::invalid_argument("Gemm::multiply: weights, x, y and scratch must be device pointers, not null");
  if (tokens < 1 || tokens > kDimMax)
    throw std::invalid_argument(fmt::format("Gemm::multiply: tokens = {}, expected 1..{}", tokens, kDimMax));
  if (rows < 1 || rows > kDimMax || cols < 1 || cols > kDimMax)
    throw std::invalid_argument(
        fmt::format("Gemm::multiply: {} x {} weights, expected 1..{} rows and cols", rows, cols, kDimMax));
  if (cols % info.block_values != 0)
    throw std::invalid_argument(fmt::format("Gemm::multiply: cols = {} is not a whole number of {}-value {} blocks",
                                            cols, info.block_values, info.name));
  // Weights are converted by dequantize_rows, whose loads need the type's row alignment.
  const uint32_t align = weight_row_type(type).row_align;
  if (!aligned(weights, align))
    throw std::invalid_argument(fmt::format("Gemm::multiply: {} weights must be {}-byte aligned", info.name, align));
  if (!aligned(x, 4) || !aligned(y, 4)) throw std::invalid_argument("Gemm::multiply: x and y must be 4-byte aligned");
  if (!aligned(scratch, kScratchAlign))
    throw std::invalid_argument(fmt::format("Gemm::multiply: scratch must be {}-byte aligned", kScratchAlign));
}

void Gemm::multiply(GgmlType type, const void* weights, uint64_t rows, uint64_t cols, const float* x,
                    uint32_t tokens, float* y, void* scratch) {
  check_multiply(type, weights, rows, cols, x, tokens, y, scratch);
  const RowType row_type = weight_row_type(type).row;
  const GgmlTypeInfo& info = ggml_type_info(type);
  const auto n_rows = static_cast<int>(rows), n_cols = static_cast<int>(cols), n_tokens = static_cast<int>(tokens);
  // Scratch: x in BF16 (tokens x cols), then W in BF16 (rows x cols) for the quantized types. Their
  // cols are a multiple of 32, so W starts 64-byte aligned.
  auto* x_bf16 = static_cast<uint16_t*>(scratch);
  dequantize_rows_bf16(RowType::f32, x, cols * sizeof(float), nullptr, tokens, static_cast<uint32_t>(cols), x_bf16,
                       stream_);
  const void* w_bf16 = weights;
  if (type != GgmlType::BF16) {
    uint16_t* w_scratch = x_bf16 + static_cast<uint64_t>(tokens) * cols;
    const uint64_t row_bytes = cols / info.block_values * info.block_bytes;
    dequantize_rows_bf16(row_type, weights, row_bytes, nullptr, static_cast<uint32_t>(rows),
                         static_cast<uint32_t>(cols), w_scratch, stream_);
    w_bf16 = w_scratch;
  }
  const float alpha = 1.0f, beta = 0.0f;
  CUBLAS_CHECK(cublas().gemm_ex(as_handle(handle_), CUBLAS_OP_T, CUBLAS_OP_N, n_rows, n_tokens, n_cols, &alpha, w_bf16,
                            CUDA_R_16BF, n_cols, x_bf16, CUDA_R_16BF, n_cols, &beta, y, CUDA_R_32F, n_rows,
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace infer_plan::kernels::cuda
