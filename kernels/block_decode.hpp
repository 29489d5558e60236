// Eight consecutive values of a GGML block, decoded as kernels/cpu/quantize.cpp's dequantizers give
// them, in code that both compilers take: the CUDA kernels for the K-quants, the i-quants, MXFP4,
// Q4_1, Q5_0 and Q5_1 (matvec.cu, dequantize_rows.cu) decode through these on the device, and
// tests/kernels/test_block_decode runs the same functions on the host against the CPU dequantizers
// (every value, bit for bit), so the device's decoding is checked on every machine, not only where a
// GPU is lent. matvec_lane (the end of this file) is one lane's share of a matrix-vector product
// over such groups, run the same way on both.
//
// A decoder D has D::kValues and D::kBytes (per block) and D::decode8(block, first, out): values
// first .. first + 7 of the block, `first` a multiple of 8. Every block here holds a multiple of 32
// values and every sub-block 16 or 32, so the eight share one sub-block's scale.
//
// Loads are bytes: blocks of these types sit at any byte (an MXFP4 block is 17 bytes, a Q3_K block
// 110), and an fp16 field is put together from its two bytes. Arithmetic: the CPU's products in the
// CPU's order, each rounded on its own; mul_rn keeps nvcc from fusing a product with the subtraction
// after it into one FMA (kernels/cpu/quantize.cpp is built with -ffp-contract=off for the same reason).
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/block_layout.hpp"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#define INFER_PLAN_DECODE __host__ __device__ __forceinline__
#define INFER_PLAN_UNROLL _Pragma("unroll")
#else
#define INFER_PLAN_DECODE inline
#define INFER_PLAN_UNROLL
#endif

namespace infer_plan::kernels::decode {

INFER_PLAN_DECODE float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

INFER_PLAN_DECODE float bits_to_float(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
#endif
}

// An fp16 field at any byte: little-endian, widened exactly (every fp16 is a float).
INFER_PLAN_DECODE float load_fp16(const uint8_t* p) {
  const uint32_t h = p[0] | (static_cast<uint32_t>(p[1]) << 8);
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(static_cast<unsigned short>(h)));
#else
  const uint32_t sign = (h >> 15) << 31, exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
  if (exponent == 0) {  // zero or subnormal: mantissa x 2^-24, exact in a float
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exponent == 31) return bits_to_float(sign | 0x7F800000u | (mantissa << 13));  // inf or NaN
  return bits_to_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
#endif
}

// A 16-entry table of signed bytes as two 64-bit words: nvcc reads a constexpr scalar in device
// code, but not a host array at a run-time index.
constexpr uint64_t pack8(const int8_t* v) {
  uint64_t word = 0;
  for (int i = 0; i < 8; ++i) word |= static_cast<uint64_t>(static_cast<uint8_t>(v[i])) << (8 * i);
  return word;
}
inline constexpr uint64_t kIq4Low = pack8(kIq4Values), kIq4High = pack8(kIq4Values + 8);
inline constexpr uint64_t kMxfp4Low = pack8(kMxfp4Values), kMxfp4High = pack8(kMxfp4Values + 8);

INFER_PLAN_DECODE int table_value(uint64_t low, uint64_t high, uint32_t code) {
  return static_cast<int8_t>(static_cast<uint8_t>((code < 8 ? low : high) >> (8 * (code & 7))));
}

// Value j's 4-bit code of a 32-value run stored as Q4_0's: byte j's low nibble, or byte j - 16's high.
INFER_PLAN_DECODE uint32_t nibble32(const uint8_t* qs, uint32_t j) {
  return j < 16 ? qs[j] & 0xFu : static_cast<uint32_t>(qs[j - 16] >> 4);
}

struct Q5_0 {
  static constexpr uint32_t kValues = kQ5_0Values, kBytes = kQ5_0Bytes;
  INFER_PLAN_DECODE static void decode8(const uint8_t* block, uint32_t first, float (&out)[8]) {
    const float d = load_fp16(block + kQ5_0D);
    INFER_PLAN_UNROLL
    for (uint32_t k = 0; k < 8; ++k)
      out[k] = mul_rn(static_cast<float>(static_cast<int>(q5_0_code(block, first + k)) - 16), d);
  }
};

// Q4_1 and Q5_1: code q d + m (ggml: x0*d + m, the product rounded, then the sum).
template <int kBits>
struct MinScaleDecode {
  static constexpr uint32_t kValues = kQ4_1Values, kBytes = kBits == 4 ? kQ4_1Bytes : kQ5_1Bytes;
  INFER_PLAN_DECODE static void decode8(const uint8_t* block, uint32_t first, float (&out)[8]) {
    static_assert(kQ4_1D == kQ5_1D && kQ4_1M == kQ5_1M, "one header");
    const float d = load_fp16(block + kQ4_1D), m = load_fp16(block + kQ4_1M);
    INFER_PLAN_UNROLL
    for (uint32_t k = 0; k < 8; ++k) {
      const uint32_t q = kBits == 4 ? nibble32(block + kQ4_1Qs, first + k)
                                    : q5_code(block + kQ5_1Qh, block + kQ5_1Qs, first + k);
      out[k] = mul_rn(static_cast<float>(q), d) + m;
    }
  }
};
using Q4_1 = MinScaleDecode<4>;
using Q5_1 = MinScaleDecode<5>;

// Value v: half v / 128, shift 2 ((v % 128) / 32), position l = v % 32 of the low bits and hmask.
struct Q3_K {
  static constexpr uint32_t kValues = kQ3_KValues, kBytes = kQ3_KBytes;
  INFER_PLAN_DECODE static void decode8(const uint8_t* block, uint32_t first, float (&out)[8]) {
    const float dl = mul_rn(load_fp16(block + kQ3_KD), static_cast<float>(q3_k_scale(first / 16, block + kQ3_KScales)));
    const uint32_t half = first / 128, s = (first % 128) / 32, l0 = first % 32;
    INFER_PLAN_UNROLL
    for (uint32_t k = 0; k < 8; ++k) {
      const int low = (block[kQ3_KQs + 32 * half + l0 + k] >> (2 * s)) & 3;
      const int high = (block[kQ3_KHmask + l0 + k] >> (4 * half + s)) & 1;
      out[k] = mul_rn(dl, static_cast<float>(low - (high != 0 ? 0 : 4)));
    }
  }
};

// Q4_K and Q5_K: value v in sub-block v / 32; its low bits in byte 32 (v / 64) + v % 32 of the codes,
// nibble (v % 64) / 32; Q5_K's fifth bit at bit 2 (v / 64) + (v % 64) / 32 of qh byte v % 32.
template <int kBits>
struct KScaleMinDecode {
  static constexpr uint32_t kValues = kQ4_KValues, kBytes = kBits == 4 ? kQ4_KBytes : kQ5_KBytes;
  static constexpr uint32_t kQs = kBits == 4 ? kQ4_KQs : kQ5_KQs;
  INFER_PLAN_DECODE static void decode8(const uint8_t* block, uint32_t first, float (&out)[8]) {
    static_assert(kQ4_KD == kQ5_KD && kQ4_KDmin == kQ5_KDmin && kQ4_KScales == kQ5_KScales, "one header");
    const KScaleMin m = k_scale_min(first / 32, block + kQ4_KScales);
    const float dl = mul_rn(load_fp16(block + kQ4_KD), static_cast<float>(m.scale));
    const float ml = mul_rn(load_fp16(block + kQ4_KDmin), static_cast<float>(m.min));
    const uint32_t p = first / 64, half = (first % 64) / 32, l0 = first % 32;
    INFER_PLAN_UNROLL
    for (uint32_t k = 0; k < 8; ++k) {
      uint32_t q = (block[kQs + 32 * p + l0 + k] >> (4 * half)) & 0xFu;
      if (kBits == 5) q |= ((block[kQ5_KQh + l0 + k] >> (2 * p + half)) & 1u) << 4;
      out[k] = mul_rn(dl, static_cast<float>(q)) - ml;
    }
  }
};
using Q4_K = KScaleMinDecode<4>;
using Q5_K = KScaleMinDecode<5>;

// Value v: half h = v / 128, quarter u = (v % 128) / 32, l = v % 32; low nibble u / 2 of ql byte
// 64 h + 32 (u % 2) + l, high bits 2u of qh byte 32 h + l, scale 8 h + l / 16 + 2 u.
struct Q6_K {
  static constexpr uint32_t kValues = kQ6_KValues, kBytes = kQ6_KBytes;
  INFER_PLAN_DECODE static void decode8(const uint8_t* block, uint32_t first, float (&out)[8]) {
    const uint32_t h = first / 128, u = (first % 128) / 32, l0 = first % 32;
    const auto scale = static_cast<int8_t>(block[kQ6_KScales + 8 * h + l0 / 16 + 2 * u]);
    const float ds = mul_rn(load_fp16(block + kQ6_KD), static_cast<float>(scale));  // ggml: (d * sc) * q
    INFER_PLAN_UNROLL
    for (uint32_t k = 0; k < 8; ++k) {
      const uint32_t low = (block[kQ6_KQl + 64 * h + 32 * (u % 2) + l0 + k] >> (4 * (u / 2))) & 0xFu;
      const uint32_t high = (block[kQ6_KQh + 32 * h + l0 + k] >> (2 * u)) & 3u;
      out[k] = mul_rn(ds, static_cast<float>(static_cast<int>(low | (high << 4)) - 32));
    }
  }
};

struct IQ4_NL {
  static constexpr uint32_t kValues = kIQ4_NLValues, kBytes = kIQ4_NLBytes;
  INFER_PLAN_DECODE static void decode8(const uint8_t* block, uint32_t first, float (&out)[8]) {
    const float d = load_fp16(block + kIQ4_NLD);
    INFER_PLAN_UNROLL
    for (uint32_t k = 0; k < 8; ++k)
      out[k] = mul_rn(d, static_cast<float>(table_value(kIq4Low, kIq4High, nibble32(block + kIQ4_NLQs, first + k))));
  }
};

struct IQ4_XS {
  static constexpr uint32_t kValues = kIQ4_XSValues, kBytes = kIQ4_XSBytes;
  INFER_PLAN_DECODE static void decode8(const uint8_t* block, uint32_t first, float (&out)[8]) {
    const uint32_t sub = first / kIQ4_XSSubValues;
    const float dl = mul_rn(load_fp16(block + kIQ4_XSD), static_cast<float>(iq4_xs_scale(sub, block)));
    const uint8_t* qs = block + kIQ4_XSQs + 16 * sub;
    INFER_PLAN_UNROLL
    for (uint32_t k = 0; k < 8; ++k)
      out[k] = mul_rn(dl, static_cast<float>(table_value(kIq4Low, kIq4High, nibble32(qs, first % 32 + k))));
  }
};

struct MXFP4 {
  static constexpr uint32_t kValues = kMXFP4Values, kBytes = kMXFP4Bytes;
  INFER_PLAN_DECODE static void decode8(const uint8_t* block, uint32_t first, float (&out)[8]) {
    const float d = mxfp4_scale(block[kMXFP4E]);
    INFER_PLAN_UNROLL
    for (uint32_t k = 0; k < 8; ++k)
      out[k] = mul_rn(static_cast<float>(table_value(kMxfp4Low, kMxfp4High, nibble32(block + kMXFP4Qs, first + k))), d);
  }
};

// Eight floats of x at a 32-byte-aligned address (x 16-byte aligned, the offset a multiple of 8).
INFER_PLAN_DECODE void load_x8(const float* p, float (&out)[8]) {
#if defined(__CUDA_ARCH__)
  const float4 a = __ldg(reinterpret_cast<const float4*>(p)), b = __ldg(reinterpret_cast<const float4*>(p) + 1);
  out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w, out[4] = b.x, out[5] = b.y, out[6] = b.z, out[7] = b.w;
#else
  for (int k = 0; k < 8; ++k) out[k] = p[k];
#endif
}

// One lane's share of y[t][r] = sum_c w_r[c] x[t][c]: the groups of 8 values g = lane, lane + lanes,
// ... of rows wr[0..R-1] (each cols values of D), added to acc[r][t] in F32. The device runs it with
// lanes = 32 and sums the lanes by shuffles; the host test runs every lane and adds them.
template <typename D, int R, int T>
INFER_PLAN_DECODE void matvec_lane(const uint8_t* const (&wr)[R], uint32_t cols, const float* x, uint32_t lane,
                                   uint32_t lanes, float (&acc)[R][T]) {
  for (uint32_t g = lane; g < cols / 8; g += lanes) {
    const uint32_t v0 = 8 * g;
    const uint64_t block = static_cast<uint64_t>(v0 / D::kValues) * D::kBytes;
    float w[R][8];
    INFER_PLAN_UNROLL
    for (int r = 0; r < R; ++r) D::decode8(wr[r] + block, v0 % D::kValues, w[r]);
    INFER_PLAN_UNROLL
    for (int t = 0; t < T; ++t) {
      float xv[8];
      load_x8(x + static_cast<size_t>(t) * cols + v0, xv);
      INFER_PLAN_UNROLL
      for (int r = 0; r < R; ++r)
        acc[r][t] += w[r][0] * xv[0] + w[r][1] * xv[1] + w[r][2] * xv[2] + w[r][3] * xv[3] + w[r][4] * xv[4] +
                     w[r][5] * xv[5] + w[r][6] * xv[6] + w[r][7] * xv[7];
    }
  }
}

}  // namespace infer_plan::kernels::decode
