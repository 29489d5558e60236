// GGML rows to F32 or BF16: one thread block per output row, threads strided over its values, one
// value per thread per step. Each value is decoded on its own from its block (the block's scale is
// re-read by every thread of the block, served by L1), which keeps the code a transcription of
// kernels/cpu/quantize.cpp's dequantizers. Used for small gathers (an embedding row per token) and
// for converting a prefill's weights once per product, where the 2-byte stores dominate anyway.
//
// Exactness. Every decoded value is computed as the CPU computes it and lands on the same float:
// an fp16 scale converts exactly; Q8_0's code * d and Q4_0's (code - 8) * d are products of at most
// 8 and 11 significant bits, so exact; Q2_K's dl = d * (scale & 15) and ml = dmin * (scale >> 4)
// are exact (11 x 4 bits), so is dl * code (15 x 2 bits), and only the final subtraction rounds,
// once, as on the CPU. __fmul_rn keeps nvcc from fusing that product into an FMA (which here would
// give the same result, the product being exact, but the reason should not depend on that).
//
// Loads. Q8_0 (34-byte) and Q4_0 (18-byte) blocks are only 2-byte aligned and Q2_K fields are read
// one at a time, so codes are byte loads and fp16 fields 16-bit loads: no access is misaligned.
// The K-quants from Q3_K on, the i-quants, MXFP4 and Q5_0 go through kernels/block_decode.hpp (8
// values a thread, bytes only), whose exactness test_block_decode checks on the host.
#include "kernels/cuda/dequantize_rows.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>

#include "kernels/block_decode.hpp"
#include "kernels/block_layout.hpp"
#include "kernels/cuda/check.hpp"

namespace infer_plan::kernels::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float load_fp16(const uint8_t* p) {
  return __half2float(__ushort_as_half(__ldg(reinterpret_cast<const unsigned short*>(p))));
}

// Value c of a row of type T.
template <RowType T>
__device__ __forceinline__ float value_at(const uint8_t* row, uint32_t c);

template <>
__device__ __forceinline__ float value_at<RowType::f32>(const uint8_t* row, uint32_t c) {
  return __ldg(reinterpret_cast<const float*>(row) + c);
}

template <>
__device__ __forceinline__ float value_at<RowType::f16>(const uint8_t* row, uint32_t c) {
  return load_fp16(row + 2 * static_cast<uint64_t>(c));
}

template <>
__device__ __forceinline__ float value_at<RowType::bf16>(const uint8_t* row, uint32_t c) {
  // BF16 is the top half of an F32: widening is a shift.
  return __uint_as_float(static_cast<uint32_t>(__ldg(reinterpret_cast<const unsigned short*>(row) + c)) << 16);
}

template <>
__device__ __forceinline__ float value_at<RowType::q8_0>(const uint8_t* row, uint32_t c) {
  const uint8_t* block = row + static_cast<uint64_t>(c / kQ8_0Values) * kQ8_0Bytes;
  const auto code = static_cast<int8_t>(__ldg(block + kQ8_0Qs + c % kQ8_0Values));
  return static_cast<float>(code) * load_fp16(block);
}

template <>
__device__ __forceinline__ float value_at<RowType::q4_0>(const uint8_t* row, uint32_t c) {
  const uint8_t* block = row + static_cast<uint64_t>(c / kQ4_0Values) * kQ4_0Bytes;
  const uint32_t j = c % kQ4_0Values;
  const uint32_t byte = __ldg(block + kQ4_0Qs + j % (kQ4_0Values / 2));
  const uint32_t code = j < kQ4_0Values / 2 ? byte & 0xFu : byte >> 4;
  return static_cast<float>(static_cast<int>(code) - 8) * load_fp16(block);
}

// Value v (0..255) of a block: half h = v / 128 (32 code bytes each), shift 2s with s = (v % 128) / 32,
// part p = (v % 32) / 16 (code bytes 0-15 or 16-31 of the half), position l = v % 16; its scale
// byte is sub-block 8h + 2s + p, in value order (dequantize_row_q2_k's loop order).
template <>
__device__ __forceinline__ float value_at<RowType::q2_k>(const uint8_t* row, uint32_t c) {
  const uint8_t* block = row + static_cast<uint64_t>(c / kQ2_KValues) * kQ2_KBytes;
  const uint32_t v = c % kQ2_KValues;
  const uint32_t h = v / 128, s = (v % 128) / 32, p = (v % 32) / 16, l = v % 16;
  const uint32_t scale = __ldg(block + kQ2_KScales + 8 * h + 2 * s + p);
  const float dl = load_fp16(block + kQ2_KD) * static_cast<float>(scale & 0xFu);
  const float ml = load_fp16(block + kQ2_KDmin) * static_cast<float>(scale >> 4);
  const uint32_t code = (__ldg(block + kQ2_KQs + 32 * h + 16 * p + l) >> (2 * s)) & 3u;
  return __fmul_rn(dl, static_cast<float>(code)) - ml;
}

__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ void store(uint16_t* p, float v) { *p = __bfloat16_as_ushort(__float2bfloat16_rn(v)); }

template <RowType T, typename Out>
__global__ void __launch_bounds__(kThreads)
    dequantize_rows_kernel(const uint8_t* __restrict__ table, uint64_t row_bytes, const uint32_t* __restrict__ ids,
                           uint32_t cols, Out* __restrict__ out) {
  const uint32_t i = blockIdx.x;
  const uint32_t source = ids != nullptr ? __ldg(ids + i) : i;
  const uint8_t* row = table + static_cast<uint64_t>(source) * row_bytes;
  Out* out_row = out + static_cast<uint64_t>(i) * cols;
  for (uint32_t c = threadIdx.x; c < cols; c += kThreads) store(out_row + c, value_at<T>(row, c));
}

// The types of kernels/block_decode.hpp: one thread per group of 8 values, decoded together (the
// same decoder matvec.cu runs, checked against the CPU's dequantizers by test_block_decode).
template <typename D, typename Out>
__global__ void __launch_bounds__(kThreads)
    dequantize_groups_kernel(const uint8_t* __restrict__ table, uint64_t row_bytes, const uint32_t* __restrict__ ids,
                             uint32_t cols, Out* __restrict__ out) {
  const uint32_t i = blockIdx.x;
  const uint32_t source = ids != nullptr ? __ldg(ids + i) : i;
  const uint8_t* row = table + static_cast<uint64_t>(source) * row_bytes;
  Out* out_row = out + static_cast<uint64_t>(i) * cols;
  for (uint32_t g = threadIdx.x; g < cols / 8; g += kThreads) {
    const uint32_t v0 = 8 * g;
    float values[8];
    D::decode8(row + static_cast<uint64_t>(v0 / D::kValues) * D::kBytes, v0 % D::kValues, values);
#pragma unroll
    for (int k = 0; k < 8; ++k) store(out_row + v0 + k, values[k]);
  }
}

template <typename D, typename Out>
void launch_groups(const uint8_t* table, uint64_t row_bytes, const uint32_t* ids, uint32_t rows, uint32_t cols,
                   Out* out, cudaStream_t stream) {
  dequantize_groups_kernel<D, Out><<<rows, kThreads, 0, stream>>>(table, row_bytes, ids, cols, out);
}

template <typename Out>
void launch(RowType type, const void* table, uint64_t row_bytes, const uint32_t* ids, uint32_t rows, uint32_t cols,
            Out* out, void* stream) {
  const auto* t = static_cast<const uint8_t*>(table);
  const auto s = static_cast<cudaStream_t>(stream);
  switch (type) {
    case RowType::f32:
      dequantize_rows_kernel<RowType::f32, Out><<<rows, kThreads, 0, s>>>(t, row_bytes, ids, cols, out);
      break;
    case RowType::f16:
      dequantize_rows_kernel<RowType::f16, Out><<<rows, kThreads, 0, s>>>(t, row_bytes, ids, cols, out);
      break;
    case RowType::bf16:
      dequantize_rows_kernel<RowType::bf16, Out><<<rows, kThreads, 0, s>>>(t, row_bytes, ids, cols, out);
      break;
    case RowType::q8_0:
      dequantize_rows_kernel<RowType::q8_0, Out><<<rows, kThreads, 0, s>>>(t, row_bytes, ids, cols, out);
      break;
    case RowType::q4_0:
      dequantize_rows_kernel<RowType::q4_0, Out><<<rows, kThreads, 0, s>>>(t, row_bytes, ids, cols, out);
      break;
    case RowType::q2_k:
      dequantize_rows_kernel<RowType::q2_k, Out><<<rows, kThreads, 0, s>>>(t, row_bytes, ids, cols, out);
      break;
    case RowType::q5_0: launch_groups<decode::Q5_0>(t, row_bytes, ids, rows, cols, out, s); break;
    case RowType::q4_1: launch_groups<decode::Q4_1>(t, row_bytes, ids, rows, cols, out, s); break;
    case RowType::q5_1: launch_groups<decode::Q5_1>(t, row_bytes, ids, rows, cols, out, s); break;
    case RowType::q3_k: launch_groups<decode::Q3_K>(t, row_bytes, ids, rows, cols, out, s); break;
    case RowType::q4_k: launch_groups<decode::Q4_K>(t, row_bytes, ids, rows, cols, out, s); break;
    case RowType::q5_k: launch_groups<decode::Q5_K>(t, row_bytes, ids, rows, cols, out, s); break;
    case RowType::q6_k: launch_groups<decode::Q6_K>(t, row_bytes, ids, rows, cols, out, s); break;
    case RowType::iq4_nl: launch_groups<decode::IQ4_NL>(t, row_bytes, ids, rows, cols, out, s); break;
    case RowType::iq4_xs: launch_groups<decode::IQ4_XS>(t, row_bytes, ids, rows, cols, out, s); break;
    case RowType::mxfp4: launch_groups<decode::MXFP4>(t, row_bytes, ids, rows, cols, out, s); break;
    default: throw std::logic_error("dequantize_rows: unknown row type");
  }
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void dequantize_rows_f32(RowType type, const void* table, uint64_t row_bytes, const uint32_t* ids, uint32_t rows,
                         uint32_t cols, float* out, void* stream) {
  launch(type, table, row_bytes, ids, rows, cols, out, stream);
}

void dequantize_rows_bf16(RowType type, const void* table, uint64_t row_bytes, const uint32_t* ids, uint32_t rows,
                          uint32_t cols, uint16_t* out, void* stream) {
  launch(type, table, row_bytes, ids, rows, cols, out, stream);
}

}  // namespace infer_plan::kernels::cuda
