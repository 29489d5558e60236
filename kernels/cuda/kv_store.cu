// The KV cache's writer on the GPU (kernels/cuda/attention.hpp's kv_store): one warp per 32 values
// of a K or V row (one Q8_0 / Q4_0 block), lane j holding value j. The bytes are those of
// kernels/cpu/quantize's quantize_row, bit for bit: every float operation is the one ggml's
// reference quantizer does, in the same order, each rounded once as C does (explicit _rn
// intrinsics, so nvcc cannot fuse a multiply and an add into an FMA), and the block's largest
// magnitude is order-free (a max; Q4_0's signed max is the first index on ties, as the CPU's scan).
// NaN inputs are outside that promise for Q8_0 / Q4_0 (fmaxf drops a NaN the CPU's compare keeps).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/block_layout.hpp"
#include "kernels/cuda/attention_launch.hpp"
#include "kernels/cuda/check.hpp"

namespace infer_plan::kernels::cuda {
namespace {

constexpr int kWarp = 32;
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / kWarp;
constexpr unsigned kAllLanes = 0xffffffffu;
static_assert(kQ8_0Values == kWarp && kQ4_0Values == kWarp, "a warp per block, lane j holding value j");

// kernels/cpu/half's fp32_to_bf16: round to nearest even; a NaN stays a quiet NaN with its payload.
__device__ __forceinline__ unsigned short bf16_bits(float f) {
  uint32_t x = __float_as_uint(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<unsigned short>((x >> 16) | 64u);
  x += 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<unsigned short>(x >> 16);
}

// kernels/cpu/half's fp32_to_fp16: the hardware's round-to-nearest-even conversion (subnormals and
// overflow to inf included) except for NaN, which the CPU writes as sign | 0x7E00.
__device__ __forceinline__ unsigned short fp16_bits(float f) {
  if (isnan(f)) return static_cast<unsigned short>(((__float_as_uint(f) >> 16) & 0x8000u) | 0x7E00u);
  return __half_as_ushort(__float2half_rn(f));
}

// kernels/cpu/quantize's truncate_to_int8: C's (int8_t) cast of a float as x86 performs it.
__device__ __forceinline__ int truncate_to_int8(float v) {
  if (!(v > -2147483648.0f && v < 2147483648.0f)) return 0;
  return static_cast<int8_t>(static_cast<uint8_t>(static_cast<int32_t>(v) & 0xFF));
}

__device__ __forceinline__ void store_half(uint8_t* p, unsigned short h) { *reinterpret_cast<unsigned short*>(p) = h; }

// quantize_row_q8_0 for one block: d = amax / 127, codes round(x / d) (std::round: half away from 0).
__device__ __forceinline__ void store_q8_0(uint8_t* block, float x, uint32_t lane) {
  float amax = fabsf(x);
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) amax = fmaxf(amax, __shfl_xor_sync(kAllLanes, amax, offset));
  const float d = __fdiv_rn(amax, 127.0f);
  const float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
  if (lane == 0) store_half(block, fp16_bits(d));
  block[kQ8_0Qs + lane] = static_cast<uint8_t>(truncate_to_int8(roundf(__fmul_rn(x, id))));
}

// quantize_row_q4_0 for one block: d = max / -8 with max the signed value of largest magnitude
// (the first on ties; +0 when all are zero, as the CPU's scan never moves past its initial 0).
__device__ __forceinline__ void store_q4_0(uint8_t* block, float x, uint32_t lane) {
  float amax = fabsf(x);
  uint32_t first = lane;
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(kAllLanes, amax, offset);
    const uint32_t other_first = __shfl_xor_sync(kAllLanes, first, offset);
    if (other > amax || (other == amax && other_first < first)) {
      amax = other;
      first = other_first;
    }
  }
  const float max_value = __shfl_sync(kAllLanes, x, first);
  const float max = amax > 0.0f ? max_value : 0.0f;
  const float d = __fdiv_rn(max, -8.0f);
  const float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
  const float x_high = __shfl_down_sync(kAllLanes, x, kWarp / 2);  // lane j < 16: value j + 16
  if (lane == 0) store_half(block, fp16_bits(d));
  if (lane < kWarp / 2) {
    const int q0 = min(15, truncate_to_int8(__fadd_rn(__fmul_rn(x, id), 8.5f)));
    const int q1 = min(15, truncate_to_int8(__fadd_rn(__fmul_rn(x_high, id), 8.5f)));
    block[kQ4_0Qs + lane] = static_cast<uint8_t>(static_cast<uint8_t>(q0) | (static_cast<uint8_t>(q1) << 4));
  }
}

// grid: (row chunks of kWarps * 32 values, tokens, 2 = K then V). A warp whose chunk is past the
// row leaves alone (no block-level barrier here).
__global__ void __launch_bounds__(kThreads)
    kv_store_kernel(KvPages kv, uint32_t kv_width, const float* __restrict__ k, const float* __restrict__ v,
                    const uint32_t* __restrict__ pos, const uint32_t* __restrict__ pages,
                    const uint32_t* __restrict__ page_table) {
  const uint32_t lane = threadIdx.x % kWarp;
  const uint32_t chunk = blockIdx.x * kWarps + threadIdx.x / kWarp;
  if (chunk >= kv_width / kWarp) return;
  const uint32_t t = blockIdx.y;
  const bool value = blockIdx.z == 1;
  const uint32_t p = pos[t];
  const uint64_t page = page_table[pages[t] + p / kv.page_tokens];
  const uint64_t slot = p % kv.page_tokens;
  uint8_t* row = kv.base + page * kv.page_bytes + kv.layer_offset +
                 (value ? kv.v_offset + slot * kv.v_row_bytes : slot * kv.k_row_bytes);
  const uint32_t i = chunk * kWarp + lane;
  const float x = (value ? v : k)[static_cast<uint64_t>(t) * kv_width + i];
  switch (value ? kv.v_type : kv.k_type) {
    case KvRowType::bf16: store_half(row + 2 * i, bf16_bits(x)); return;
    case KvRowType::f16: store_half(row + 2 * i, fp16_bits(x)); return;
    case KvRowType::q8_0: store_q8_0(row + chunk * kQ8_0Bytes, x, lane); return;
    case KvRowType::q4_0: store_q4_0(row + chunk * kQ4_0Bytes, x, lane); return;
  }
}

}  // namespace

void kv_store_launch(const KvPages& kv, uint32_t kv_width, const float* k, const float* v, uint32_t tokens,
                     const uint32_t* pos, const uint32_t* pages, const uint32_t* page_table, void* stream) {
  const uint32_t chunks = kv_width / kWarp;
  const dim3 grid((chunks + kWarps - 1) / kWarps, tokens, 2);
  kv_store_kernel<<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(kv, kv_width, k, v, pos, pages,
                                                                              page_table);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace infer_plan::kernels::cuda
