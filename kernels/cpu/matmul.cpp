// y = W x for a small batch: activations converted once to the weight type's vec_dot type, then
// one dot product per (weight row, activation row). The scalar dots here are the portable path
// and spell out each block format; kernels/cpu/dot_avx2 has the same sums eight lanes wide.
// Rows outer, batch inner: each weight row is streamed from memory once per call and reused from
// L1 for every activation row, which is what keeps a decode step memory-bound.
#include "kernels/cpu/matmul.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstring>

#include "kernels/block_layout.hpp"
#include "kernels/cpu/dot_avx2.hpp"
#include "kernels/cpu/half.hpp"
#include "kernels/cpu/quantize.hpp"
#include "kernels/cpu/quantize_avx2.hpp"
#include "planner/core/input_error.hpp"

namespace infer_plan::kernels {
namespace {

std::atomic<bool> g_force_scalar{false};

float load_f32(const uint8_t* p) {
  float f;
  std::memcpy(&f, p, 4);  // the hosts we build for are little-endian, as in a GGUF file
  return f;
}
uint16_t load_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

// --- scalar dot products: one weight row . one converted activation row ---------------------

using DotFn = float (*)(const uint8_t* weights, const uint8_t* x, uint64_t cols);

float dot_f32(const uint8_t* w, const uint8_t* x, uint64_t cols) {
  float sum = 0;
  for (uint64_t i = 0; i < cols; ++i) sum += load_f32(w + 4 * i) * load_f32(x + 4 * i);
  return sum;
}

// F16 x F16 and BF16 x BF16: each product of two 11-bit (8-bit) significands is exact in float,
// so only the running sum rounds.
float dot_f16(const uint8_t* w, const uint8_t* x, uint64_t cols) {
  float sum = 0;
  for (uint64_t i = 0; i < cols; ++i) sum += load_fp16(w + 2 * i) * load_fp16(x + 2 * i);
  return sum;
}

float dot_bf16(const uint8_t* w, const uint8_t* x, uint64_t cols) {
  float sum = 0;
  for (uint64_t i = 0; i < cols; ++i)
    sum += bf16_to_fp32(load_u16(w + 2 * i)) * bf16_to_fp32(load_u16(x + 2 * i));
  return sum;
}

// Q8_0 x Q8_0, block {fp16 d; int8 qs[32]}: the code products sum exactly in int (at most
// 32 * 127 * 127), then one float multiply by both scales per block, as ggml's vec_dot_q8_0_q8_0.
float dot_q8_0(const uint8_t* w, const uint8_t* x, uint64_t cols) {
  float sum = 0;
  for (uint64_t b = 0; b < cols / kQ8_0Values; ++b) {
    const uint8_t* wb = w + b * kQ8_0Bytes;
    const uint8_t* xb = x + b * kQ8_0Bytes;
    int isum = 0;
    for (uint32_t j = 0; j < kQ8_0Values; ++j)
      isum += static_cast<int8_t>(wb[kQ8_0Qs + j]) * static_cast<int8_t>(xb[kQ8_0Qs + j]);
    sum += static_cast<float>(isum) * (load_fp16(wb) * load_fp16(xb));
  }
  return sum;
}

// Q4_0 x Q8_0, weight block {fp16 d; u8 qs[16]}: value j is byte j's low nibble minus 8, value
// j + 16 its high nibble minus 8.
float dot_q4_0(const uint8_t* w, const uint8_t* x, uint64_t cols) {
  static_assert(kQ4_0Values == kQ8_0Values, "one activation block per weight block");
  float sum = 0;
  for (uint64_t b = 0; b < cols / kQ4_0Values; ++b) {
    const uint8_t* wb = w + b * kQ4_0Bytes;
    const uint8_t* xb = x + b * kQ8_0Bytes;
    int isum = 0;
    for (uint32_t j = 0; j < kQ4_0Values / 2; ++j) {
      const int lo = (wb[kQ4_0Qs + j] & 0x0F) - 8;
      const int hi = (wb[kQ4_0Qs + j] >> 4) - 8;
      isum += lo * static_cast<int8_t>(xb[kQ8_0Qs + j]) +
              hi * static_cast<int8_t>(xb[kQ8_0Qs + kQ4_0Values / 2 + j]);
    }
    sum += static_cast<float>(isum) * (load_fp16(wb) * load_fp16(xb));
  }
  return sum;
}

// Q2_K x Q8_K (ggml's vec_dot_q2_K_q8_K). Weight value = d * scale_j * code - dmin * min_j in
// sub-block j (16 values), so the block's dot is
//   d_x * d * sum_j scale_j * (codes_j . x_j)  -  d_x * dmin * sum_j min_j * bsums_j,
// both sums exact in int; bsums_j (Q8_K's sum of sub-block j's activation codes) makes the mins
// one multiply per sub-block. Blocks as kernels/block_layout.hpp's BlockQ2_K (scale j in the
// low nibble of scales[j], min j in the high) and BlockQ8_K.
float dot_q2_k(const uint8_t* w, const uint8_t* x, uint64_t cols) {
  static_assert(kQ2_KValues == kQ8_KValues && kQ2_KSubValues == kQ8_KSumValues, "bsums entry j is sub-block j's");
  float sum = 0;
  for (uint64_t b = 0; b < cols / kQ2_KValues; ++b) {
    const uint8_t* wb = w + b * kQ2_KBytes;
    const uint8_t* xb = x + b * kQ8_KBytes;
    const uint8_t* sc = wb + kQ2_KScales;
    int min_sum = 0;
    for (int j = 0; j < 16; ++j)
      min_sum += static_cast<int16_t>(load_u16(xb + kQ8_KBsums + 2 * j)) * (sc[j] >> 4);
    const float dx = load_f32(xb + kQ8_KD);
    const float dall = dx * load_fp16(wb + kQ2_KD);
    const float dmin = dx * load_fp16(wb + kQ2_KDmin);
    // Codes in the order dequantize_row_q2_k reads them: each 128-value half owns 32 bytes, and
    // shift s of byte l holds value 32 s + l of that half; bytes 0-15 and 16-31 are two sub-blocks.
    int isum = 0;
    int j = 0;  // sub-block
    const int8_t* q8 = reinterpret_cast<const int8_t*>(xb + kQ8_KQs);
    for (int half = 0; half < 2; ++half) {
      const uint8_t* q2 = wb + kQ2_KQs + 32 * half;
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 32; part += 16) {
          int sub = 0;
          for (int l = 0; l < 16; ++l) sub += q8[l] * ((q2[part + l] >> shift) & 3);
          isum += (sc[j++] & 0x0F) * sub;
          q8 += 16;
        }
      }
    }
    sum += dall * static_cast<float>(isum) - dmin * static_cast<float>(min_sum);
  }
  return sum;
}

// Q3_K x Q8_K (ggml's vec_dot_q3_K_q8_K): weight value = d * scale_j * q, q = the two low bits
// minus 4 unless the high bit is set, in sub-block j (16 values): d_x * d * sum_j scale_j * (q_j . x_j),
// exact in int.
float dot_q3_k(const uint8_t* w, const uint8_t* x, uint64_t cols) {
  static_assert(kQ3_KValues == kQ8_KValues);
  float sum = 0;
  for (uint64_t b = 0; b < cols / kQ3_KValues; ++b) {
    const uint8_t* wb = w + b * kQ3_KBytes;
    const uint8_t* xb = x + b * kQ8_KBytes;
    const int8_t* q8 = reinterpret_cast<const int8_t*>(xb + kQ8_KQs);
    int isum = 0;
    for (uint32_t j = 0; j < kQ3_KValues / kQ3_KSubValues; ++j) {
      int sub = 0;
      for (uint32_t v = 16 * j; v < 16 * j + 16; ++v) {
        const uint32_t half = v / 128, s = (v % 128) / 32, l = v % 32;
        const int low = (wb[kQ3_KQs + 32 * half + l] >> (2 * s)) & 3;
        const int high = (wb[kQ3_KHmask + l] >> (4 * half + s)) & 1;
        sub += (low - (high ? 0 : 4)) * q8[v];
      }
      isum += q3_k_scale(j, wb + kQ3_KScales) * sub;
    }
    sum += load_f32(xb + kQ8_KD) * load_fp16(wb + kQ3_KD) * static_cast<float>(isum);
  }
  return sum;
}

// Q4_K and Q5_K x Q8_K (ggml's vec_dot_q4_K_q8_K, q5_K): weight value = d * scale_j * code -
// dmin * min_j in sub-block j (32 values, two bsums entries), so the block's dot is
//   d_x * d * sum_j scale_j * (codes_j . x_j)  -  d_x * dmin * sum_j min_j * (bsums_2j + bsums_2j+1),
// both sums exact in int. Codes as dequantize_row_q4_k reads them (kernels/block_layout.hpp).
template <int Bits>
float dot_k_scale_min(const uint8_t* w, const uint8_t* x, uint64_t cols) {
  static_assert(Bits == 4 || Bits == 5);
  constexpr uint32_t kBytes = Bits == 4 ? kQ4_KBytes : kQ5_KBytes;
  constexpr uint32_t kScales = Bits == 4 ? kQ4_KScales : kQ5_KScales, kQs = Bits == 4 ? kQ4_KQs : kQ5_KQs;
  static_assert(kQ4_KValues == kQ8_KValues && kQ4_KSubValues == 2 * kQ8_KSumValues, "two bsums per sub-block");
  float sum = 0;
  for (uint64_t b = 0; b < cols / kQ4_KValues; ++b) {
    const uint8_t* wb = w + b * kBytes;
    const uint8_t* xb = x + b * kQ8_KBytes;
    const int8_t* q8 = reinterpret_cast<const int8_t*>(xb + kQ8_KQs);
    int isum = 0, min_sum = 0;
    for (uint32_t j = 0; j < kQ4_KValues / kQ4_KSubValues; ++j) {
      const KScaleMin m = k_scale_min(j, wb + kScales);
      min_sum += m.min * (static_cast<int16_t>(load_u16(xb + kQ8_KBsums + 4 * j)) +
                          static_cast<int16_t>(load_u16(xb + kQ8_KBsums + 4 * j + 2)));
      const uint8_t* qs = wb + kQs + 32 * (j / 2);
      const int shift = 4 * static_cast<int>(j % 2);
      int sub = 0;
      for (uint32_t l = 0; l < 32; ++l) {
        int q = (qs[l] >> shift) & 0xF;
        if constexpr (Bits == 5) q += ((wb[kQ5_KQh + l] >> j) & 1) << 4;
        sub += q * q8[32 * j + l];
      }
      isum += m.scale * sub;
    }
    const float dx = load_f32(xb + kQ8_KD);
    sum += dx * load_fp16(wb + (Bits == 4 ? kQ4_KD : kQ5_KD)) * static_cast<float>(isum) -
           dx * load_fp16(wb + (Bits == 4 ? kQ4_KDmin : kQ5_KDmin)) * static_cast<float>(min_sum);
  }
  return sum;
}

// Q6_K x Q8_K (ggml's vec_dot_q6_K_q8_K): weight value = d * scale_j * (code - 32) in sub-block j
// (16 values): d_x * d * sum_j scale_j * ((codes_j - 32) . x_j), exact in int.
float dot_q6_k(const uint8_t* w, const uint8_t* x, uint64_t cols) {
  static_assert(kQ6_KValues == kQ8_KValues);
  float sum = 0;
  for (uint64_t b = 0; b < cols / kQ6_KValues; ++b) {
    const uint8_t* wb = w + b * kQ6_KBytes;
    const uint8_t* xb = x + b * kQ8_KBytes;
    const int8_t* q8 = reinterpret_cast<const int8_t*>(xb + kQ8_KQs);
    const int8_t* sc = reinterpret_cast<const int8_t*>(wb + kQ6_KScales);
    int isum = 0;
    for (uint32_t h = 0; h < kQ6_KValues / 128; ++h) {
      const uint8_t* ql = wb + kQ6_KQl + 64 * h;
      const uint8_t* qh = wb + kQ6_KQh + 32 * h;
      // quarter k of this 128: values 32 k + l, low bits from ql[32 (k % 2) + l] (nibble k / 2),
      // high bits from qh[l] bits 2k, 2k + 1
      for (uint32_t k = 0; k < 4; ++k) {
        for (uint32_t half = 0; half < 2; ++half) {
          int sub = 0;
          for (uint32_t l = 16 * half; l < 16 * half + 16; ++l) {
            const int q = (((ql[32 * (k % 2) + l] >> (4 * (k / 2))) & 0xF) | (((qh[l] >> (2 * k)) & 3) << 4)) - 32;
            sub += q * q8[128 * h + 32 * k + l];
          }
          isum += sc[8 * h + 2 * k + half] * sub;
        }
      }
    }
    sum += load_f32(xb + kQ8_KD) * load_fp16(wb + kQ6_KD) * static_cast<float>(isum);
  }
  return sum;
}

// Q5_0 x Q8_0 (ggml's vec_dot_q5_0_q8_0): as Q4_0 with 5-bit codes less 16.
float dot_q5_0(const uint8_t* w, const uint8_t* x, uint64_t cols) {
  static_assert(kQ5_0Values == kQ8_0Values, "one activation block per weight block");
  float sum = 0;
  for (uint64_t b = 0; b < cols / kQ5_0Values; ++b) {
    const uint8_t* wb = w + b * kQ5_0Bytes;
    const uint8_t* xb = x + b * kQ8_0Bytes;
    int isum = 0;
    for (uint32_t j = 0; j < kQ5_0Values; ++j)
      isum += (static_cast<int>(q5_0_code(wb, j)) - 16) * static_cast<int8_t>(xb[kQ8_0Qs + j]);
    sum += static_cast<float>(isum) * (load_fp16(wb + kQ5_0D) * load_fp16(xb));
  }
  return sum;
}

// Q4_1 and Q5_1 x Q8_0: d_w d_x sum(q_w q_x) + m_w d_x sum(q_x), the terms of ggml's
// vec_dot_q4_1_q8_1 / q5_1_q8_1. ggml's Q8_1 activations carry s = d_x sum(q_x) rounded to fp16 (d_x
// before its own rounding); here s is formed in F32 from the Q8_0 block: within fp16's 2^-11 of it.
template <int kBits>
float dot_min_scale(const uint8_t* w, const uint8_t* x, uint64_t cols) {
  static_assert(kQ4_1Values == kQ8_0Values && kQ5_1Values == kQ8_0Values, "one activation block per weight block");
  constexpr uint32_t kBytes = kBits == 4 ? kQ4_1Bytes : kQ5_1Bytes;
  float sum = 0;
  for (uint64_t b = 0; b < cols / kQ4_1Values; ++b) {
    const uint8_t* wb = w + b * kBytes;
    const uint8_t* xb = x + b * kQ8_0Bytes;
    int isum = 0, xsum = 0;
    for (uint32_t j = 0; j < kQ4_1Values; ++j) {
      const int q = kBits == 4 ? (j < 16 ? wb[kQ4_1Qs + j] & 0x0F : wb[kQ4_1Qs + j - 16] >> 4)
                               : static_cast<int>(q5_code(wb + kQ5_1Qh, wb + kQ5_1Qs, j));
      const int xq = static_cast<int8_t>(xb[kQ8_0Qs + j]);
      isum += q * xq;
      xsum += xq;
    }
    const float dx = load_fp16(xb);
    sum += (load_fp16(wb + kQ4_1D) * dx) * static_cast<float>(isum) +
           load_fp16(wb + kQ4_1M) * (dx * static_cast<float>(xsum));
  }
  return sum;
}

// IQ4_NL x Q8_0 (ggml's vec_dot_iq4_nl_q8_0): as Q4_0, with each nibble an index into the table.
float dot_iq4_nl(const uint8_t* w, const uint8_t* x, uint64_t cols) {
  static_assert(kIQ4_NLValues == kQ8_0Values, "one activation block per weight block");
  float sum = 0;
  for (uint64_t b = 0; b < cols / kIQ4_NLValues; ++b) {
    const uint8_t* wb = w + b * kIQ4_NLBytes;
    const uint8_t* xb = x + b * kQ8_0Bytes;
    int isum = 0;
    for (uint32_t j = 0; j < kIQ4_NLValues / 2; ++j) {
      isum += kIq4Values[wb[kIQ4_NLQs + j] & 0x0F] * static_cast<int8_t>(xb[kQ8_0Qs + j]) +
              kIq4Values[wb[kIQ4_NLQs + j] >> 4] * static_cast<int8_t>(xb[kQ8_0Qs + kIQ4_NLValues / 2 + j]);
    }
    sum += static_cast<float>(isum) * (load_fp16(wb + kIQ4_NLD) * load_fp16(xb));
  }
  return sum;
}

// IQ4_XS x Q8_K (ggml's vec_dot_iq4_xs_q8_K): d_x * d * sum_j scale_j * (values_j . x_j), exact in int.
float dot_iq4_xs(const uint8_t* w, const uint8_t* x, uint64_t cols) {
  static_assert(kIQ4_XSValues == kQ8_KValues);
  float sum = 0;
  for (uint64_t b = 0; b < cols / kIQ4_XSValues; ++b) {
    const uint8_t* wb = w + b * kIQ4_XSBytes;
    const uint8_t* xb = x + b * kQ8_KBytes;
    const int8_t* q8 = reinterpret_cast<const int8_t*>(xb + kQ8_KQs);
    int isum = 0;
    for (uint32_t j = 0; j < kIQ4_XSValues / kIQ4_XSSubValues; ++j) {
      const uint8_t* qs = wb + kIQ4_XSQs + 16 * j;
      int sub = 0;
      for (uint32_t l = 0; l < 16; ++l)
        sub += kIq4Values[qs[l] & 0x0F] * q8[32 * j + l] + kIq4Values[qs[l] >> 4] * q8[32 * j + 16 + l];
      isum += iq4_xs_scale(j, wb) * sub;
    }
    sum += load_f32(xb + kQ8_KD) * load_fp16(wb + kIQ4_XSD) * static_cast<float>(isum);
  }
  return sum;
}

// MXFP4 x Q8_0 (ggml's vec_dot_mxfp4_q8_0): as IQ4_NL with the doubled E2M1 values and the halved
// E8M0 scale: d_x * scale * sum.
float dot_mxfp4(const uint8_t* w, const uint8_t* x, uint64_t cols) {
  static_assert(kMXFP4Values == kQ8_0Values, "one activation block per weight block");
  float sum = 0;
  for (uint64_t b = 0; b < cols / kMXFP4Values; ++b) {
    const uint8_t* wb = w + b * kMXFP4Bytes;
    const uint8_t* xb = x + b * kQ8_0Bytes;
    int isum = 0;
    for (uint32_t j = 0; j < kMXFP4Values / 2; ++j) {
      isum += kMxfp4Values[wb[kMXFP4Qs + j] & 0x0F] * static_cast<int8_t>(xb[kQ8_0Qs + j]) +
              kMxfp4Values[wb[kMXFP4Qs + j] >> 4] * static_cast<int8_t>(xb[kQ8_0Qs + kMXFP4Values / 2 + j]);
    }
    sum += load_fp16(xb) * mxfp4_scale(wb[kMXFP4E]) * static_cast<float>(isum);
  }
  return sum;
}

DotFn scalar_dot(GgmlType weight_type) {
  switch (weight_type) {
    case GgmlType::F32: return dot_f32;
    case GgmlType::F16: return dot_f16;
    case GgmlType::BF16: return dot_bf16;
    case GgmlType::Q8_0: return dot_q8_0;
    case GgmlType::Q4_0: return dot_q4_0;
    case GgmlType::Q4_1: return dot_min_scale<4>;
    case GgmlType::Q5_0: return dot_q5_0;
    case GgmlType::Q5_1: return dot_min_scale<5>;
    case GgmlType::Q2_K: return dot_q2_k;
    case GgmlType::Q3_K: return dot_q3_k;
    case GgmlType::Q4_K: return dot_k_scale_min<4>;
    case GgmlType::Q5_K: return dot_k_scale_min<5>;
    case GgmlType::Q6_K: return dot_q6_k;
    case GgmlType::IQ4_NL: return dot_iq4_nl;
    case GgmlType::IQ4_XS: return dot_iq4_xs;
    case GgmlType::MXFP4: return dot_mxfp4;
    default: return nullptr;
  }
}

constexpr uint64_t kTileBytes = 16 * 1024;  // half of a 32 KiB L1 data cache
constexpr uint64_t kTileRows = 4;           // the largest register block of rows (dot_avx2)

RowsDotFn chosen_rows_dot(GgmlType weight_type) {
  return g_force_scalar.load(std::memory_order_relaxed) ? nullptr : avx2_rows_dot(weight_type);
}

void check_matmul_type(GgmlType weight_type) {
  if (!has_matmul(weight_type))
    throw InputError(fmt::format("weights: no matmul for {}; known: {}", ggml_type_info(weight_type).name,
                                 matmul_type_names()));
}

}  // namespace

bool has_matmul(GgmlType weight_type) { return scalar_dot(weight_type) != nullptr; }

std::string_view matmul_type_names() { return "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4"; }

GgmlType activation_type(GgmlType weight_type) {
  check_matmul_type(weight_type);
  switch (weight_type) {
    case GgmlType::Q8_0:
    case GgmlType::Q4_0:
    case GgmlType::Q4_1:
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
    case GgmlType::IQ4_NL:
    case GgmlType::MXFP4: return GgmlType::Q8_0;
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
    case GgmlType::IQ4_XS: return GgmlType::Q8_K;
    default: return weight_type;  // F32, F16, BF16 multiply in their own type
  }
}

void convert_activations(GgmlType weight_type, const float* x, uint64_t batch, uint64_t cols,
                         Activations& out) {
  check_matmul_type(weight_type);
  ggml_row_bytes(weight_type, cols, "activations");  // throws unless cols is whole weight blocks
  out.type = activation_type(weight_type);
  out.cols = cols;
  out.batch = batch;
  out.row_bytes = ggml_row_bytes(out.type, cols, "activations");
  out.data.resize(batch * out.row_bytes);
  if (const QuantizeRowFn fast = g_force_scalar.load(std::memory_order_relaxed) ? nullptr : avx2_quantize_row(out.type)) {
    for (uint64_t b = 0; b < batch; ++b) fast(x + b * cols, cols, out.data.data() + b * out.row_bytes);
  } else {
    for (uint64_t b = 0; b < batch; ++b) {
      quantize_row(out.type, std::span<const float>(x + b * cols, cols),
                   std::span<uint8_t>(out.data.data() + b * out.row_bytes, out.row_bytes), "activations");
    }
  }
  out.offsets.clear();
  const uint64_t blocks = cols / kQ8_0Values;
  if (weight_type == GgmlType::IQ4_NL || weight_type == GgmlType::MXFP4 || weight_type == GgmlType::Q5_0 ||
      weight_type == GgmlType::Q4_1 || weight_type == GgmlType::Q5_1) {
    out.offsets.resize(batch * blocks);
    for (uint64_t b = 0; b < batch; ++b) {
      for (uint64_t k = 0; k < blocks; ++k) {
        const auto* q = reinterpret_cast<const int8_t*>(out.row(b) + k * kQ8_0Bytes + kQ8_0Qs);
        int32_t sum = 0;
        for (uint32_t j = 0; j < kQ8_0Values; ++j) sum += q[j];
        out.offsets[b * blocks + k] = static_cast<uint32_t>(sum);
      }
    }
    return;
  }
  if (weight_type != GgmlType::Q4_0) return;
  out.offsets.resize(batch * blocks);
  for (uint64_t b = 0; b < batch; ++b) {
    for (uint64_t k = 0; k < blocks; ++k) {
      const auto* q = reinterpret_cast<const int8_t*>(out.row(b) + k * kQ8_0Bytes + kQ8_0Qs);
      int low = 0, high = 0;
      for (uint32_t j = 0; j < kQ8_0Values; ++j) (j % 4 < 2 ? low : high) += q[j];
      out.offsets[b * blocks + k] = static_cast<uint16_t>(8 * low) | static_cast<uint32_t>(static_cast<uint16_t>(8 * high)) << 16;
    }
  }
}

namespace {

// `count` GGML rows `row_bytes` apart from `w` by every activation row: y[b * y_stride + r].
void ggml_products(GgmlType weight_type, const uint8_t* w, uint64_t row_bytes, uint64_t count, const Activations& x,
                   float* y, uint64_t y_stride) {
  // Tiles of weight rows that stay in L1 while every activation row passes over them: each
  // weight byte comes from memory once, and each activation row is read from L2 once per tile
  // rather than once per weight row (a 256-token prompt chunk is ~280 KB of Q8_0 activations).
  // At least kTileRows rows (a whole register block; rows of 14336 Q8_0 values are 15 KB, and four
  // stay in L2), and whole register blocks.
  const uint64_t fit = kTileBytes / row_bytes;
  const uint64_t tile = fit < kTileRows ? kTileRows : fit - fit % kTileRows;
  if (const RowsDotFn rows_dot = chosen_rows_dot(weight_type)) {
    for (uint64_t t0 = 0; t0 < count; t0 += tile) {
      const uint64_t t1 = std::min(count, t0 + tile);
      rows_dot(w + t0 * row_bytes, row_bytes, t1 - t0, x.row(0), x.row_bytes, x.batch, x.cols, y + t0, y_stride);
    }
    return;
  }
  const DotFn dot = scalar_dot(weight_type);
  for (uint64_t t0 = 0; t0 < count; t0 += tile) {
    const uint64_t t1 = std::min(count, t0 + tile);
    for (uint64_t b = 0; b < x.batch; ++b)
      for (uint64_t r = t0; r < t1; ++r) y[b * y_stride + r] = dot(w + r * row_bytes, x.row(b), x.cols);
  }
}

}  // namespace

void matmul_rows(GgmlType weight_type, const uint8_t* weights, uint64_t rows, const Activations& x,
                 uint64_t row_begin, uint64_t row_end, float* y, RowOrder order) {
  assert(has_matmul(weight_type) && x.type == activation_type(weight_type));
  assert(row_begin <= row_end && row_end <= rows);
  const uint64_t row_bytes = ggml_row_bytes(weight_type, x.cols, "weights");
  if (order == RowOrder::ggml) {
    ggml_products(weight_type, weights + row_begin * row_bytes, row_bytes, row_end - row_begin, x, y + row_begin, rows);
    return;
  }
  assert(can_interleave(weight_type, rows) && row_begin % kInterleavedRows == 0 && row_end % kInterleavedRows == 0);
  assert(x.type == GgmlType::Q8_K || x.offsets.size() == x.batch * (x.cols / kQ8_0Values));
  const uint64_t first = row_begin / kInterleavedRows, groups = (row_end - row_begin) / kInterleavedRows;
  const uint64_t group_bytes = kInterleavedRows * row_bytes;
  const GroupsDotFn groups_dot =
      g_force_scalar.load(std::memory_order_relaxed) ? nullptr : avx2_interleaved_dot(weight_type);
  if (groups_dot) {
    groups_dot(weights + first * group_bytes, groups, x.row(0), x.row_bytes, x.offsets.data(), x.batch, x.cols,
               y + row_begin, rows);
    return;
  }
  // No interleaved product on this CPU: each group back in GGML order, then its rows as usual.
  std::vector<uint8_t> plain(group_bytes);
  for (uint64_t g = first; g < first + groups; ++g) {
    deinterleave_group(weight_type, weights, x.cols, g, plain.data());
    ggml_products(weight_type, plain.data(), row_bytes, kInterleavedRows, x, y + g * kInterleavedRows, rows);
  }
}

void matmul_rows_reference(GgmlType weight_type, const uint8_t* weights, uint64_t rows,
                           const Activations& x, uint64_t row_begin, uint64_t row_end, float* y, RowOrder order) {
  assert(has_matmul(weight_type) && x.type == activation_type(weight_type));
  assert(row_begin <= row_end && row_end <= rows);
  const uint64_t row_bytes = ggml_row_bytes(weight_type, x.cols, "weights");
  std::vector<uint8_t> plain;  // the whole matrix in GGML order, when it is interleaved
  if (order == RowOrder::interleaved) {
    plain.assign(weights, weights + rows * row_bytes);
    deinterleave_rows(weight_type, plain.data(), rows, x.cols);
    weights = plain.data();
  }
  std::vector<float> x_rows(x.batch * x.cols), w_row(x.cols);
  for (uint64_t b = 0; b < x.batch; ++b) {
    dequantize_row(x.type, std::span<const uint8_t>(x.row(b), x.row_bytes),
                   std::span<float>(x_rows.data() + b * x.cols, x.cols), "activations");
  }
  for (uint64_t r = row_begin; r < row_end; ++r) {
    dequantize_row(weight_type, std::span<const uint8_t>(weights + r * row_bytes, row_bytes), w_row,
                   "weights");
    for (uint64_t b = 0; b < x.batch; ++b) {
      const float* xb = x_rows.data() + b * x.cols;
      double sum = 0;  // products of two floats are exact in double; only the sum rounds
      for (uint64_t i = 0; i < x.cols; ++i) sum += static_cast<double>(w_row[i]) * xb[i];
      y[b * rows + r] = static_cast<float>(sum);
    }
  }
}

std::string_view matmul_implementation() {
  const bool avx2 = !g_force_scalar.load(std::memory_order_relaxed) && avx2_rows_dot(GgmlType::F32) != nullptr;
  if (!avx2) return "scalar";
  const bool vnni = avx512_vnni_able(), bf16 = avx512_bf16_able();
  return vnni && bf16 ? "avx2+avx512vnni+avx512bf16" : vnni ? "avx2+avx512vnni" : bf16 ? "avx2+avx512bf16" : "avx2";
}

void matmul_force_scalar(bool force) { g_force_scalar.store(force, std::memory_order_relaxed); }

}  // namespace infer_plan::kernels
