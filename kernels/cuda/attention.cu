// Paged decode attention in two kernels (split-K, "flash decoding").
//
// attention_split: one 256-thread block per (query token, KV head, up to 8 of its query heads,
// block of kSplitTokens positions). The group's heads share every K and V load. It finds the block's
// rows through the page table, then
//   1. scores: warp w takes positions w, w + 8, ...; lane l reads values l, l + 32, ... of the K
//      head (a warp's 32 values are one Q8_0/Q4_0 block, or 64 contiguous bytes of BF16/F16, so the
//      reads coalesce), dots them with each query head (q pre-scaled by 1/sqrt(head_dim) or the
//      model's scale, in shared memory), a shuffle sum ends each dot, and Gemma 2's soft-cap, if
//      any, caps it;
//   2. softmax within the block: warp g takes head g: its max, exp(score - max), their sum;
//   3. V: thread (part, d) adds weight * V[d] over positions part, part + parts, ..., for each head
//      (parts = 256 / head_dim groups of threads split the positions), then shared memory sums the
//      parts;
// and writes the block's partial (max, sum, unnormalized weighted V) to the scratch.
// attention_combine: one block per (token, query head) rescales each split's partial by
// exp(max_s - max) and divides by the combined sum.
// A sliding window moves each token's first position (blocks wholly before it exit, the combine skips
// them); GPT-OSS's sinks join the combine's max and denominator. Blocks past a token's context exit
// at once, so the grid is sized by max_ctx and a captured graph
// serves any ctx <= max_ctx. Rows are dequantized value by value in registers, exactly as
// kernels/cpu/quantize's dequantize_row (code * d in float). All arithmetic is float.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>

#include "kernels/block_layout.hpp"
#include "kernels/cuda/attention_launch.hpp"
#include "kernels/cuda/check.hpp"

namespace infer_plan::kernels::cuda {
namespace {

constexpr int kWarp = 32;
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / kWarp;
constexpr unsigned kAllLanes = 0xffffffffu;
constexpr uint32_t kHeadDimMax = 256;
constexpr uint32_t kChunksMax = kHeadDimMax / kWarp;  // a lane's values of one K row, at most
constexpr uint32_t kHeadsPerBlock = 8;                // query heads of one group per block (a warp each in step 2)
static_assert(kHeadsPerBlock <= kWarps, "step 2 gives each head a warp");
static_assert(kHeadDimMax <= kThreads, "step 3 gives each value of the head a thread");

struct SplitArgs {
  KvPages kv;
  uint32_t n_head, n_kv_head, head_dim, group, head_tiles, splits, max_ctx;
  const uint32_t* ctx;
  const uint32_t* pages;
  const uint32_t* page_table;
  const float* q;
  float* scratch;
  float scale;    // ScoreParts': 1 / sqrt(head_dim) unless the model says otherwise
  float softcap;  // 0: none
  uint32_t window;  // 0: the whole context
};

// The first position a token of context n attends to: the last `window` positions (0: all).
__device__ __forceinline__ uint32_t first_position(uint32_t n, uint32_t window) {
  return window > 0 && n > window ? n - window : 0;
}

__device__ __forceinline__ float fp16_bits_to_float(unsigned short h) { return __half2float(__ushort_as_half(h)); }

// Value i of a cache row (values of all KV heads back to back), as dequantize_row gives it.
template <KvRowType T>
__device__ __forceinline__ float load_value(const uint8_t* row, uint32_t i) {
  const auto* halves = reinterpret_cast<const unsigned short*>(row);
  if constexpr (T == KvRowType::bf16) {
    return __uint_as_float(static_cast<uint32_t>(__ldg(halves + i)) << 16);
  } else if constexpr (T == KvRowType::f16) {
    return fp16_bits_to_float(__ldg(halves + i));
  } else if constexpr (T == KvRowType::q8_0) {
    const uint8_t* block = row + (i / kQ8_0Values) * kQ8_0Bytes;
    const float d = fp16_bits_to_float(__ldg(reinterpret_cast<const unsigned short*>(block)));
    return static_cast<float>(static_cast<int8_t>(__ldg(block + kQ8_0Qs + i % kQ8_0Values))) * d;
  } else {
    const uint8_t* block = row + (i / kQ4_0Values) * kQ4_0Bytes;
    const float d = fp16_bits_to_float(__ldg(reinterpret_cast<const unsigned short*>(block)));
    const uint32_t j = i % kQ4_0Values;
    const uint32_t byte = __ldg(block + kQ4_0Qs + j % (kQ4_0Values / 2));
    const uint32_t nibble = j < kQ4_0Values / 2 ? byte & 0xFu : byte >> 4;
    return static_cast<float>(static_cast<int>(nibble) - 8) * d;
  }
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(kAllLanes, v, offset);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(kAllLanes, v, offset));
  return v;
}

// Positions a token attends to: ctx[t], clamped to max_ctx so that a bad ctx cannot index past the
// scratch (the contract says ctx[t] <= max_ctx).
__device__ __forceinline__ uint32_t token_ctx(const uint32_t* ctx, uint32_t t, uint32_t max_ctx) {
  return min(ctx[t], max_ctx);
}

template <KvRowType K, KvRowType V>
__global__ void __launch_bounds__(kThreads) attention_split(SplitArgs a) {
  const uint32_t split = blockIdx.x, t = blockIdx.z;
  const uint32_t kv_head = blockIdx.y / a.head_tiles;
  const uint32_t tile = blockIdx.y % a.head_tiles;
  const uint32_t head0 = kv_head * a.group + tile * kHeadsPerBlock;  // the block's first query head
  const uint32_t heads = min(kHeadsPerBlock, a.group - tile * kHeadsPerBlock);
  const uint32_t ctx = token_ctx(a.ctx, t, a.max_ctx);
  const uint32_t block_start = split * kSplitTokens, first = first_position(ctx, a.window);
  // The whole block leaves together when nothing of this split is attended (past the context, or
  // before a window); the combine reads only the splits that hold positions.
  if (block_start >= ctx || block_start + kSplitTokens <= first) return;
  const uint32_t start = max(block_start, first);
  const uint32_t n = min(block_start + kSplitTokens, ctx) - start;
  const uint32_t head_dim = a.head_dim;
  const uint32_t value0 = kv_head * head_dim;  // the KV head's first value in a row
  const uint32_t warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;

  __shared__ float q_s[kHeadsPerBlock][kHeadDimMax];    // scaled query heads
  __shared__ float w_s[kHeadsPerBlock][kSplitTokens];   // scores, then exp(score - max)
  __shared__ uint64_t k_row_s[kSplitTokens];            // byte offsets of the block's rows from base
  __shared__ uint64_t v_row_s[kSplitTokens];
  __shared__ float max_s[kHeadsPerBlock], sum_s[kHeadsPerBlock];
  __shared__ float parts_s[kThreads * kHeadsPerBlock];  // step 3's per-part sums

  // 0. The rows (page i of the token's sequence holds positions i * page_tokens ...) and q.
  const uint32_t* page_list = a.page_table + a.pages[t];
  for (uint32_t i = threadIdx.x; i < n; i += kThreads) {
    const uint32_t p = start + i;
    const uint64_t page = page_list[p / a.kv.page_tokens];
    const uint64_t slot = p % a.kv.page_tokens;
    const uint64_t layer = page * a.kv.page_bytes + a.kv.layer_offset;
    k_row_s[i] = layer + slot * a.kv.k_row_bytes;
    v_row_s[i] = layer + a.kv.v_offset + slot * a.kv.v_row_bytes;
  }
  for (uint32_t i = threadIdx.x; i < heads * head_dim; i += kThreads) {
    const uint32_t g = i / head_dim, d = i % head_dim;
    q_s[g][d] = a.q[(static_cast<uint64_t>(t) * a.n_head + head0 + g) * head_dim + d] * a.scale;
  }
  __syncthreads();

  // 1. Scores: a warp per position, lanes across the head's values (chunks of 32).
  const uint32_t chunks = head_dim / kWarp;
  for (uint32_t i = warp; i < n; i += kWarps) {
    const uint8_t* row = a.kv.base + k_row_s[i];
    float k[kChunksMax];
#pragma unroll
    for (uint32_t c = 0; c < kChunksMax; ++c)
      if (c < chunks) k[c] = load_value<K>(row, value0 + c * kWarp + lane);
    for (uint32_t g = 0; g < heads; ++g) {
      float dot = 0.0f;
#pragma unroll
      for (uint32_t c = 0; c < kChunksMax; ++c)
        if (c < chunks) dot += q_s[g][c * kWarp + lane] * k[c];
      dot = warp_sum(dot);
      if (lane == 0) w_s[g][i] = a.softcap > 0.0f ? a.softcap * tanhf(dot / a.softcap) : dot;  // as the CPU's decode
    }
  }
  __syncthreads();

  // 2. Softmax within the block, a warp per head: n >= 1, so the max is a score and the sum >= 1.
  if (warp < heads) {
    float m = -INFINITY;
    for (uint32_t i = lane; i < n; i += kWarp) m = fmaxf(m, w_s[warp][i]);
    m = warp_max(m);
    float sum = 0.0f;
    for (uint32_t i = lane; i < n; i += kWarp) {
      const float e = expf(w_s[warp][i] - m);
      w_s[warp][i] = e;
      sum += e;
    }
    sum = warp_sum(sum);
    if (lane == 0) {
      max_s[warp] = m;
      sum_s[warp] = sum;
    }
  }
  __syncthreads();

  // 3. Weighted V: thread (part, d); head_dims that do not divide 256 leave the last threads idle.
  const uint32_t parts = kThreads / head_dim;
  const uint32_t part = threadIdx.x / head_dim, d = threadIdx.x % head_dim;
  float acc[kHeadsPerBlock] = {};
  if (part < parts) {
#pragma unroll 4
    for (uint32_t i = part; i < n; i += parts) {
      const float v = load_value<V>(a.kv.base + v_row_s[i], value0 + d);
#pragma unroll
      for (uint32_t g = 0; g < kHeadsPerBlock; ++g)
        if (g < heads) acc[g] += w_s[g][i] * v;
    }
  }
  if (parts > 1) {  // the same for the whole block, so every thread reaches the barrier
    if (part >= 1 && part < parts) {
#pragma unroll
      for (uint32_t g = 0; g < kHeadsPerBlock; ++g)
        if (g < heads) parts_s[(part * kHeadsPerBlock + g) * head_dim + d] = acc[g];
    }
    __syncthreads();
    if (part == 0) {
      for (uint32_t p = 1; p < parts; ++p) {
#pragma unroll
        for (uint32_t g = 0; g < kHeadsPerBlock; ++g)
          if (g < heads) acc[g] += parts_s[(p * kHeadsPerBlock + g) * head_dim + d];
      }
    }
  }
  if (part != 0) return;
  const uint64_t partial_stride = static_cast<uint64_t>(head_dim) + kPartialHeaderFloats;
#pragma unroll
  for (uint32_t g = 0; g < kHeadsPerBlock; ++g) {
    if (g >= heads) continue;
    float* partial = a.scratch + ((static_cast<uint64_t>(t) * a.n_head + head0 + g) * a.splits + split) * partial_stride;
    if (d == 0) {
      partial[0] = max_s[g];
      partial[1] = sum_s[g];
    }
    partial[kPartialHeaderFloats + d] = acc[g];
  }
}

// out[t][h][d] = sum_s exp(max_s - max) acc_s[d] / sum_s exp(max_s - max) sum_s, over the token's
// splits; a thread per d, each reading the splits' (max, sum) (the same for all: L1 broadcasts). A
// sink joins the max and the denominator (exp(sink - max)) and brings no value.
__global__ void __launch_bounds__(kThreads)
    attention_combine(const float* __restrict__ scratch, const uint32_t* __restrict__ ctx, uint32_t n_head,
                      uint32_t head_dim, uint32_t splits, uint32_t max_ctx, const float* __restrict__ sinks,
                      uint32_t window, float* __restrict__ out) {
  const uint32_t h = blockIdx.x, t = blockIdx.y, d = threadIdx.x;
  if (d >= head_dim) return;
  float* o = out + (static_cast<uint64_t>(t) * n_head + h) * head_dim;
  const uint32_t n = token_ctx(ctx, t, max_ctx);
  if (n == 0) {  // outside the contract (ctx >= 1); zeros as kernels/cpu/attention gives
    o[d] = 0.0f;
    return;
  }
  const uint32_t used = (n + kSplitTokens - 1) / kSplitTokens;
  const uint32_t first = first_position(n, window) / kSplitTokens;  // splits before a window wrote nothing
  const uint64_t stride = static_cast<uint64_t>(head_dim) + kPartialHeaderFloats;
  const float* partial = scratch + (static_cast<uint64_t>(t) * n_head + h) * splits * stride;
  float m = sinks != nullptr ? sinks[h] : -INFINITY;
  for (uint32_t s = first; s < used; ++s) m = fmaxf(m, partial[s * stride]);
  float sum = sinks != nullptr ? expf(sinks[h] - m) : 0.0f, acc = 0.0f;
  for (uint32_t s = first; s < used; ++s) {
    const float w = expf(partial[s * stride] - m);
    sum += w * partial[s * stride + 1];
    acc += w * partial[s * stride + kPartialHeaderFloats + d];
  }
  o[d] = acc / sum;
}

template <KvRowType K>
void launch_split(KvRowType v_type, dim3 grid, cudaStream_t stream, const SplitArgs& a) {
  switch (v_type) {
    case KvRowType::bf16: attention_split<K, KvRowType::bf16><<<grid, kThreads, 0, stream>>>(a); return;
    case KvRowType::f16: attention_split<K, KvRowType::f16><<<grid, kThreads, 0, stream>>>(a); return;
    case KvRowType::q8_0: attention_split<K, KvRowType::q8_0><<<grid, kThreads, 0, stream>>>(a); return;
    case KvRowType::q4_0: attention_split<K, KvRowType::q4_0><<<grid, kThreads, 0, stream>>>(a); return;
  }
  throw std::logic_error("attention_launch: unknown V type");
}

}  // namespace

void attention_launch(const KvPages& kv, uint32_t n_head, uint32_t n_kv_head, uint32_t head_dim,
                      const ScoreParts& parts, const uint32_t* ctx, const uint32_t* pages, const uint32_t* page_table, const float* q,
                      uint32_t tokens, uint32_t max_ctx, float* out, float* scratch, void* stream) {
  SplitArgs a{};
  a.kv = kv;
  a.n_head = n_head;
  a.n_kv_head = n_kv_head;
  a.head_dim = head_dim;
  a.group = n_head / n_kv_head;
  a.head_tiles = (a.group + kHeadsPerBlock - 1) / kHeadsPerBlock;
  a.splits = (max_ctx + kSplitTokens - 1) / kSplitTokens;
  a.max_ctx = max_ctx;
  a.ctx = ctx;
  a.pages = pages;
  a.page_table = page_table;
  a.q = q;
  a.scratch = scratch;
  a.scale = parts.scale;
  a.softcap = parts.softcap;
  a.window = parts.window;
  const auto s = static_cast<cudaStream_t>(stream);
  const dim3 grid(a.splits, n_kv_head * a.head_tiles, tokens);
  switch (kv.k_type) {
    case KvRowType::bf16: launch_split<KvRowType::bf16>(kv.v_type, grid, s, a); break;
    case KvRowType::f16: launch_split<KvRowType::f16>(kv.v_type, grid, s, a); break;
    case KvRowType::q8_0: launch_split<KvRowType::q8_0>(kv.v_type, grid, s, a); break;
    case KvRowType::q4_0: launch_split<KvRowType::q4_0>(kv.v_type, grid, s, a); break;
  }
  CUDA_CHECK(cudaGetLastError());
  attention_combine<<<dim3(n_head, tokens), kThreads, 0, s>>>(scratch, ctx, n_head, head_dim, a.splits, max_ctx,
                                                              parts.sinks, parts.window, out);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace infer_plan::kernels::cuda
