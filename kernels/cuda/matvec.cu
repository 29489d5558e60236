// Matrix-vector kernels per weight type: one warp computes R whole rows for all T tokens, lanes
// split each row's blocks, and a warp-shuffle sum ends it. Every weight byte is read once per call
// (all T tokens use it while it sits in registers); x (a few KiB per token) is re-read from L1/L2.
// Layouts are ggml-common.h's blocks, as kernels/cpu/quantize.cpp reads them.
//
// Loads. A row's blocks are only 2-byte aligned: a Q8_0 block is 34 bytes and a Q4_0 block 18, so
// the codes of every other block start 2 bytes past a 4-byte boundary. A 32-bit load there is
// misaligned (a fault on the GPU), so Q8_0 and Q4_0 read their codes as two 16-bit loads per lane
// (4 bytes); adjacent lanes read adjacent halves, so a warp's request still covers whole contiguous
// sectors and DRAM traffic is the same as with wide loads, only the instruction count doubles.
// Q2_K blocks are 84 bytes = 21 words, so with a 4-byte-aligned matrix every block is 4-byte
// aligned: 32-bit loads throughout. BF16 rows use 16-byte loads (8 values) when the matrix is
// 16-byte aligned and cols % 8 == 0 (every row then starts 16-byte aligned), else 16-bit loads.
//
// Rows per warp (R). With F32 activations a lane reads 4 bytes of x per weight value: 2 bytes of x
// per weight byte for BF16 but 8 for Q4_0 and 16 for Q2_K. An SM's L1 serves about 128 B/clock,
// while its share of HBM (4.8 TB/s / 132 SMs / ~1.9 GHz) is ~19 B/clock, so x traffic would bound
// Q4_0 and Q2_K well below the memory's speed. A warp that computes R rows reads x once for all
// R, dividing that traffic by R: R = 1 for BF16, 2 for Q8_0, 4 for Q4_0, Q2_K and the decoded
// types (an estimate; bench/bench_cuda_gemv measures it). Rows past the end re-read the last row and store nothing.
#include "kernels/cuda/matvec_launch.hpp"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/block_decode.hpp"
#include "kernels/block_layout.hpp"
#include "kernels/cuda/check.hpp"

namespace infer_plan::kernels::cuda {
namespace {

constexpr int kWarp = 32;
constexpr int kWarpsPerBlock = 4;  // 128 threads: small blocks keep the last wave short
constexpr int kThreads = kWarp * kWarpsPerBlock;
constexpr unsigned kAllLanes = 0xffffffffu;

// Q2_K is read in 32-bit words (kernels/block_layout.hpp's offsets / 4): whole blocks, scales and
// codes start on word boundaries, and d (low half) and dmin (high half) share one word.
static_assert(kQ2_KBytes % 4 == 0 && kQ2_KScales % 4 == 0 && kQ2_KQs % 4 == 0, "Q2_K words");
static_assert(kQ2_KD % 4 == 0 && kQ2_KDmin == kQ2_KD + 2, "Q2_K's d and dmin in one word");

__device__ __forceinline__ float fp16_bits_to_float(uint32_t h) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(h & 0xFFFFu)));
}

// 4 bytes at a 2-byte-aligned address, as two 16-bit loads (little-endian, as the file stores them).
__device__ __forceinline__ uint32_t load_u32_align2(const uint8_t* p) {
  const auto* h = reinterpret_cast<const unsigned short*>(p);
  return static_cast<uint32_t>(__ldg(h)) | (static_cast<uint32_t>(__ldg(h + 1)) << 16);
}

__device__ __forceinline__ float4 load_x4(const float* p) { return __ldg(reinterpret_cast<const float4*>(p)); }

// The warp's first row; the whole warp leaves together when it has none (no block-level sync).
template <int R>
__device__ __forceinline__ uint32_t first_row() {
  return (blockIdx.x * kWarpsPerBlock + threadIdx.x / kWarp) * static_cast<uint32_t>(R);
}

// Sums each accumulator over the warp; lane 0 stores y[t][row] for the rows that exist.
template <int R, int T>
__device__ __forceinline__ void reduce_store(float (&acc)[R][T], uint32_t row0, uint32_t rows, float* y) {
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int t = 0; t < T; ++t) {
#pragma unroll
      for (int offset = kWarp / 2; offset > 0; offset /= 2)
        acc[r][t] += __shfl_xor_sync(kAllLanes, acc[r][t], offset);
    }
    if (threadIdx.x % kWarp == 0 && row0 + r < rows) {
#pragma unroll
      for (int t = 0; t < T; ++t) y[static_cast<size_t>(t) * rows + row0 + r] = acc[r][t];
    }
  }
}

// Row r of the warp's R, clamped to the last row (its results are not stored).
template <int R>
__device__ __forceinline__ void row_pointers(const uint8_t* w, uint32_t row0, uint32_t rows, uint64_t row_bytes,
                                             const uint8_t* (&wr)[R]) {
#pragma unroll
  for (int r = 0; r < R; ++r) wr[r] = w + static_cast<uint64_t>(min(row0 + r, rows - 1)) * row_bytes;
}

// BF16, vector path: lane i of the warp reads values 8i..8i+7 of each 256 as one 16-byte load.
template <int T, int R>
__global__ void __launch_bounds__(kThreads)
    matvec_bf16_x8(const uint8_t* __restrict__ w, uint32_t rows, uint32_t cols, const float* __restrict__ x,
                   float* __restrict__ y) {
  const uint32_t row0 = first_row<R>();
  if (row0 >= rows) return;
  const uint32_t lane = threadIdx.x % kWarp;
  const uint8_t* wr[R];
  row_pointers<R>(w, row0, rows, static_cast<uint64_t>(cols) * 2, wr);
  float acc[R][T] = {};
#pragma unroll 2
  for (uint32_t i = lane; i < cols / 8; i += kWarp) {
    float wv[R][8];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const uint4 q = __ldg(reinterpret_cast<const uint4*>(wr[r]) + i);
      const uint32_t words[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
      for (int k = 0; k < 4; ++k) {  // value 2k is the low half of word k
        wv[r][2 * k] = __uint_as_float(words[k] << 16);
        wv[r][2 * k + 1] = __uint_as_float(words[k] & 0xFFFF0000u);
      }
    }
#pragma unroll
    for (int t = 0; t < T; ++t) {
      const float* xt = x + static_cast<size_t>(t) * cols + 8 * i;
      const float4 a = load_x4(xt), b = load_x4(xt + 4);
#pragma unroll
      for (int r = 0; r < R; ++r)
        acc[r][t] += wv[r][0] * a.x + wv[r][1] * a.y + wv[r][2] * a.z + wv[r][3] * a.w + wv[r][4] * b.x +
                     wv[r][5] * b.y + wv[r][6] * b.z + wv[r][7] * b.w;
    }
  }
  reduce_store<R, T>(acc, row0, rows, y);
}

// BF16, any cols or alignment: one 16-bit load per value, lanes on consecutive values.
template <int T, int R>
__global__ void __launch_bounds__(kThreads)
    matvec_bf16_x1(const uint8_t* __restrict__ w, uint32_t rows, uint32_t cols, const float* __restrict__ x,
                   float* __restrict__ y) {
  const uint32_t row0 = first_row<R>();
  if (row0 >= rows) return;
  const uint8_t* wr[R];
  row_pointers<R>(w, row0, rows, static_cast<uint64_t>(cols) * 2, wr);
  float acc[R][T] = {};
  for (uint32_t c = threadIdx.x % kWarp; c < cols; c += kWarp) {
    float wv[R];
#pragma unroll
    for (int r = 0; r < R; ++r)
      wv[r] = __uint_as_float(static_cast<uint32_t>(__ldg(reinterpret_cast<const unsigned short*>(wr[r]) + c)) << 16);
#pragma unroll
    for (int t = 0; t < T; ++t) {
      const float xv = __ldg(x + static_cast<size_t>(t) * cols + c);
#pragma unroll
      for (int r = 0; r < R; ++r) acc[r][t] += wv[r] * xv;
    }
  }
  reduce_store<R, T>(acc, row0, rows, y);
}

// Q8_0: 8 lanes per block, lane part j (0..7) holds codes 4j..4j+3; a warp covers 4 blocks a step.
template <int T, int R>
__global__ void __launch_bounds__(kThreads)
    matvec_q8_0(const uint8_t* __restrict__ w, uint32_t rows, uint32_t cols, const float* __restrict__ x,
                float* __restrict__ y) {
  const uint32_t row0 = first_row<R>();
  if (row0 >= rows) return;
  const uint32_t lane = threadIdx.x % kWarp;
  const uint32_t blocks = cols / kQ8_0Values;
  const uint8_t* wr[R];
  row_pointers<R>(w, row0, rows, static_cast<uint64_t>(blocks) * kQ8_0Bytes, wr);
  const uint32_t j = lane % 8;
  float acc[R][T] = {};
#pragma unroll 2
  for (uint32_t b = lane / 8; b < blocks; b += kWarp / 8) {
    float d[R];
    float q[R][4];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const uint8_t* block = wr[r] + static_cast<uint64_t>(b) * kQ8_0Bytes;
      d[r] = fp16_bits_to_float(__ldg(reinterpret_cast<const unsigned short*>(block)));
      const uint32_t codes = load_u32_align2(block + kQ8_0Qs + 4 * j);
#pragma unroll
      for (int k = 0; k < 4; ++k) q[r][k] = static_cast<float>(static_cast<int8_t>((codes >> (8 * k)) & 0xFFu));
    }
#pragma unroll
    for (int t = 0; t < T; ++t) {
      const float4 xv = load_x4(x + static_cast<size_t>(t) * cols + b * kQ8_0Values + 4 * j);
#pragma unroll
      for (int r = 0; r < R; ++r)
        acc[r][t] += d[r] * (q[r][0] * xv.x + q[r][1] * xv.y + q[r][2] * xv.z + q[r][3] * xv.w);
    }
  }
  reduce_store<R, T>(acc, row0, rows, y);
}

// Q4_0: 4 lanes per block, lane part j (0..3) holds bytes 4j..4j+3 = values 4j..4j+3 (low nibbles)
// and 16+4j..16+4j+3 (high nibbles), each minus 8; a warp covers 8 blocks a step.
template <int T, int R>
__global__ void __launch_bounds__(kThreads)
    matvec_q4_0(const uint8_t* __restrict__ w, uint32_t rows, uint32_t cols, const float* __restrict__ x,
                float* __restrict__ y) {
  const uint32_t row0 = first_row<R>();
  if (row0 >= rows) return;
  const uint32_t lane = threadIdx.x % kWarp;
  const uint32_t blocks = cols / kQ4_0Values;
  const uint8_t* wr[R];
  row_pointers<R>(w, row0, rows, static_cast<uint64_t>(blocks) * kQ4_0Bytes, wr);
  const uint32_t j = lane % 4;
  float acc[R][T] = {};
#pragma unroll 2
  for (uint32_t b = lane / 4; b < blocks; b += kWarp / 4) {
    float d[R];
    float lo[R][4], hi[R][4];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const uint8_t* block = wr[r] + static_cast<uint64_t>(b) * kQ4_0Bytes;
      d[r] = fp16_bits_to_float(__ldg(reinterpret_cast<const unsigned short*>(block)));
      const uint32_t codes = load_u32_align2(block + kQ4_0Qs + 4 * j);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        lo[r][k] = static_cast<float>(static_cast<int>((codes >> (8 * k)) & 0xFu) - 8);
        hi[r][k] = static_cast<float>(static_cast<int>((codes >> (8 * k + 4)) & 0xFu) - 8);
      }
    }
#pragma unroll
    for (int t = 0; t < T; ++t) {
      const float* xb = x + static_cast<size_t>(t) * cols + b * kQ4_0Values + 4 * j;
      const float4 a = load_x4(xb), c = load_x4(xb + kQ4_0Values / 2);
#pragma unroll
      for (int r = 0; r < R; ++r)
        acc[r][t] += d[r] * (lo[r][0] * a.x + lo[r][1] * a.y + lo[r][2] * a.z + lo[r][3] * a.w + hi[r][0] * c.x +
                             hi[r][1] * c.y + hi[r][2] * c.z + hi[r][3] * c.w);
    }
  }
  reduce_store<R, T>(acc, row0, rows, y);
}

// Q2_K: 16 lanes per block, lane part i (0..15) holds code bytes 4i..4i+3. As dequantize_row_q2_k
// lays them out, code byte B (0..63) is in half h = B / 32, part p = (B % 32) / 16, position
// l = B % 16, and its 2-bit field at shift 2s (s = 0..3) is value 128h + 32s + 16p + l of sub-block
// 8h + 2s + p: value = d * (scale & 15) * code - dmin * (scale >> 4). A warp covers 2 blocks a step.
template <int T, int R>
__global__ void __launch_bounds__(kThreads)
    matvec_q2_k(const uint8_t* __restrict__ w, uint32_t rows, uint32_t cols, const float* __restrict__ x,
                float* __restrict__ y) {
  const uint32_t row0 = first_row<R>();
  if (row0 >= rows) return;
  const uint32_t lane = threadIdx.x % kWarp;
  const uint32_t blocks = cols / kQ2_KValues;
  const uint8_t* wr[R];
  row_pointers<R>(w, row0, rows, static_cast<uint64_t>(blocks) * kQ2_KBytes, wr);
  const uint32_t i = lane % 16;
  const uint32_t h = i / 8, p = (i % 8) / 4, l0 = (i % 4) * 4;
  float acc[R][T] = {};
  for (uint32_t b = lane / 16; b < blocks; b += kWarp / 16) {
    uint32_t codes[R], scales_lo[R], scales_hi[R];
    float d[R], dmin[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const auto* block = reinterpret_cast<const uint32_t*>(wr[r] + static_cast<uint64_t>(b) * kQ2_KBytes);
      codes[r] = __ldg(block + (kQ2_KQs / 4) + i);
      scales_lo[r] = __ldg(block + kQ2_KScales / 4 + 2 * h);      // scales[8h .. 8h+3]: sub-blocks of s = 0, 1
      scales_hi[r] = __ldg(block + kQ2_KScales / 4 + 2 * h + 1);  // scales[8h+4 .. 8h+7]: s = 2, 3
      const uint32_t d_dmin = __ldg(block + kQ2_KD / 4);
      d[r] = fp16_bits_to_float(d_dmin);
      dmin[r] = fp16_bits_to_float(d_dmin >> 16);
    }
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      float dl[R], ml[R], q[R][4];
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const uint32_t scale = ((s < 2 ? scales_lo[r] : scales_hi[r]) >> (8 * (2 * (s % 2) + p))) & 0xFFu;
        dl[r] = d[r] * static_cast<float>(scale & 0xFu);
        ml[r] = dmin[r] * static_cast<float>(scale >> 4);
#pragma unroll
        for (int k = 0; k < 4; ++k) q[r][k] = static_cast<float>((codes[r] >> (8 * k + 2 * s)) & 3u);
      }
#pragma unroll
      for (int t = 0; t < T; ++t) {
        const float4 xv = load_x4(x + static_cast<size_t>(t) * cols + b * kQ2_KValues + 128 * h + 32 * s + 16 * p + l0);
        const float xsum = xv.x + xv.y + xv.z + xv.w;
#pragma unroll
        for (int r = 0; r < R; ++r)
          acc[r][t] += dl[r] * (q[r][0] * xv.x + q[r][1] * xv.y + q[r][2] * xv.z + q[r][3] * xv.w) - ml[r] * xsum;
      }
    }
  }
  reduce_store<R, T>(acc, row0, rows, y);
}

// The types of kernels/block_decode.hpp (Q4_1, Q5_0, Q5_1, Q3_K-Q6_K, IQ4_NL, IQ4_XS, MXFP4): each lane decodes
// groups of 8 consecutive values, lanes on consecutive groups, so a warp reads 8 x 32 values' bytes a
// step. The lane's loop is matvec_lane, the very code test_block_decode runs on the host over 32
// lanes against the CPU's dequantizers; here only the shuffle sum is added.
template <typename D, int T, int R>
__global__ void __launch_bounds__(kThreads)
    matvec_decoded(const uint8_t* __restrict__ w, uint32_t rows, uint32_t cols, const float* __restrict__ x,
                   float* __restrict__ y) {
  const uint32_t row0 = first_row<R>();
  if (row0 >= rows) return;
  const uint8_t* wr[R];
  row_pointers<R>(w, row0, rows, static_cast<uint64_t>(cols / D::kValues) * D::kBytes, wr);
  float acc[R][T] = {};
  decode::matvec_lane<D, R, T>(wr, cols, x, threadIdx.x % kWarp, kWarp, acc);
  reduce_store<R, T>(acc, row0, rows, y);
}

template <int R>
dim3 grid_for(uint32_t rows) {
  const uint32_t rows_per_block = kWarpsPerBlock * R;
  return dim3((rows + rows_per_block - 1) / rows_per_block);
}

template <typename D, int T>
void launch_decoded(const uint8_t* w, uint32_t rows, uint32_t cols, const float* x, float* y, cudaStream_t stream) {
  matvec_decoded<D, T, 4><<<grid_for<4>(rows), kThreads, 0, stream>>>(w, rows, cols, x, y);
}

template <int T>
void launch_tokens(RowType type, const uint8_t* w, uint32_t rows, uint32_t cols, const float* x, float* y,
                   cudaStream_t stream) {
  switch (type) {
    case RowType::bf16:
      if (cols % 8 == 0 && reinterpret_cast<uintptr_t>(w) % 16 == 0)
        matvec_bf16_x8<T, 1><<<grid_for<1>(rows), kThreads, 0, stream>>>(w, rows, cols, x, y);
      else
        matvec_bf16_x1<T, 1><<<grid_for<1>(rows), kThreads, 0, stream>>>(w, rows, cols, x, y);
      return;
    case RowType::q8_0:
      matvec_q8_0<T, 2><<<grid_for<2>(rows), kThreads, 0, stream>>>(w, rows, cols, x, y);
      return;
    case RowType::q4_0:
      matvec_q4_0<T, 4><<<grid_for<4>(rows), kThreads, 0, stream>>>(w, rows, cols, x, y);
      return;
    case RowType::q2_k:
      matvec_q2_k<T, 4><<<grid_for<4>(rows), kThreads, 0, stream>>>(w, rows, cols, x, y);
      return;
    case RowType::q5_0: return launch_decoded<decode::Q5_0, T>(w, rows, cols, x, y, stream);
    case RowType::q4_1: return launch_decoded<decode::Q4_1, T>(w, rows, cols, x, y, stream);
    case RowType::q5_1: return launch_decoded<decode::Q5_1, T>(w, rows, cols, x, y, stream);
    case RowType::q3_k: return launch_decoded<decode::Q3_K, T>(w, rows, cols, x, y, stream);
    case RowType::q4_k: return launch_decoded<decode::Q4_K, T>(w, rows, cols, x, y, stream);
    case RowType::q5_k: return launch_decoded<decode::Q5_K, T>(w, rows, cols, x, y, stream);
    case RowType::q6_k: return launch_decoded<decode::Q6_K, T>(w, rows, cols, x, y, stream);
    case RowType::iq4_nl: return launch_decoded<decode::IQ4_NL, T>(w, rows, cols, x, y, stream);
    case RowType::iq4_xs: return launch_decoded<decode::IQ4_XS, T>(w, rows, cols, x, y, stream);
    case RowType::mxfp4: return launch_decoded<decode::MXFP4, T>(w, rows, cols, x, y, stream);
    default: break;
  }
  throw std::logic_error("matvec_launch: not a matrix type (matvec() validates it)");
}

}  // namespace

void matvec_launch(RowType weights_type, const void* weights, uint32_t rows, uint32_t cols, const float* x,
                   uint32_t tokens, float* y, void* stream) {
  const auto* w = static_cast<const uint8_t*>(weights);
  const auto s = static_cast<cudaStream_t>(stream);
  // Tokens are a template parameter so each accumulator is a register (a runtime count would index
  // the accumulator array dynamically and spill it to local memory).
  switch (tokens) {
    case 1: launch_tokens<1>(weights_type, w, rows, cols, x, y, s); break;
    case 2: launch_tokens<2>(weights_type, w, rows, cols, x, y, s); break;
    case 3: launch_tokens<3>(weights_type, w, rows, cols, x, y, s); break;
    case 4: launch_tokens<4>(weights_type, w, rows, cols, x, y, s); break;
    case 5: launch_tokens<5>(weights_type, w, rows, cols, x, y, s); break;
    case 6: launch_tokens<6>(weights_type, w, rows, cols, x, y, s); break;
    case 7: launch_tokens<7>(weights_type, w, rows, cols, x, y, s); break;
    case 8: launch_tokens<8>(weights_type, w, rows, cols, x, y, s); break;
    default: throw std::logic_error("matvec_launch: tokens out of range (matvec() validates it)");
  }
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace infer_plan::kernels::cuda
