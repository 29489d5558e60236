// AVX2 dot products: the same sums as matmul.cpp's scalar loops (integer dot per block, then one
// float multiply-add per block), eight lanes at a time. Every load is unaligned (blocks start at
// any 2-byte boundary). Each function carries target("avx2,fma,f16c") instead of the whole file
// being built with -mavx2, so nothing here runs unless avx2_dot() found the CPU able.
#include "kernels/cpu/dot_avx2.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define INFER_PLAN_X86_DOTS 1
#include <immintrin.h>
#endif

#include <array>
#include <cstring>

namespace infer_plan::kernels {

#ifdef INFER_PLAN_X86_DOTS
#define INFER_PLAN_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace {

// Q2_K block (ggml-common.h block_q2_K): scales[16] at 0, qs[64] at 16, fp16 d at 80, dmin at 82.
// Q8_K block: float d at 0, qs[256] at 4, int16 bsums[16] at 260.
constexpr uint64_t kQ2KBytes = 84;
constexpr uint64_t kQ8KBytes = 292;

INFER_PLAN_AVX2 inline __m256i load256(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
INFER_PLAN_AVX2 inline __m128i load128(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}
INFER_PLAN_AVX2 inline float load_fp16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}
INFER_PLAN_AVX2 inline float load_f32(const uint8_t* p) {
  float f;
  std::memcpy(&f, p, 4);
  return f;
}

INFER_PLAN_AVX2 inline float horizontal_sum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Eight lanes of int32, each the sum of four int8 x int8 products. maddubs multiplies unsigned
// by signed bytes, so move the sign of a onto b: |a| * (b * sign(a)) = a * b. Codes are in
// -127..127 (our quantizers and ggml's never write -128), so neither side overflows; the 16-bit
// pair sums stay within 2 * 127 * 127.
INFER_PLAN_AVX2 inline __m256i dot_i8_lanes(__m256i a, __m256i b) {
  const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(a, a), _mm256_sign_epi8(b, a));
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

// Float rows: eight values to eight float lanes, and one value for the tail.
INFER_PLAN_AVX2 inline __m256 load8_f32(const uint8_t* p) {
  return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
}
INFER_PLAN_AVX2 inline __m256 load8_f16(const uint8_t* p) { return _mm256_cvtph_ps(load128(p)); }
// bfloat16 is the top half of a float: widen to 32 bits and shift into place.
INFER_PLAN_AVX2 inline __m256 load8_bf16(const uint8_t* p) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load128(p)), 16));
}
INFER_PLAN_AVX2 inline float load_bf16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Four accumulators of eight lanes hide the FMA latency; the tail (cols not a multiple of 8)
// runs scalar.
template <uint64_t kValueBytes, __m256 (*load8)(const uint8_t*), float (*load1)(const uint8_t*)>
INFER_PLAN_AVX2 inline float dot_float_row(const uint8_t* w, const uint8_t* x, uint64_t cols) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  __m256 acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
  uint64_t i = 0;
  for (; i + 32 <= cols; i += 32) {
    const uint8_t* wi = w + i * kValueBytes;
    const uint8_t* xi = x + i * kValueBytes;
    acc0 = _mm256_fmadd_ps(load8(wi), load8(xi), acc0);
    acc1 = _mm256_fmadd_ps(load8(wi + 8 * kValueBytes), load8(xi + 8 * kValueBytes), acc1);
    acc2 = _mm256_fmadd_ps(load8(wi + 16 * kValueBytes), load8(xi + 16 * kValueBytes), acc2);
    acc3 = _mm256_fmadd_ps(load8(wi + 24 * kValueBytes), load8(xi + 24 * kValueBytes), acc3);
  }
  for (; i + 8 <= cols; i += 8)
    acc0 = _mm256_fmadd_ps(load8(w + i * kValueBytes), load8(x + i * kValueBytes), acc0);
  float sum = horizontal_sum(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
  for (; i < cols; ++i) sum += load1(w + i * kValueBytes) * load1(x + i * kValueBytes);
  return sum;
}

INFER_PLAN_AVX2 float dot_f32(const uint8_t* w, const uint8_t* x, uint64_t cols) {
  return dot_float_row<4, load8_f32, load_f32>(w, x, cols);
}
INFER_PLAN_AVX2 float dot_f16(const uint8_t* w, const uint8_t* x, uint64_t cols) {
  return dot_float_row<2, load8_f16, load_fp16>(w, x, cols);
}
INFER_PLAN_AVX2 float dot_bf16(const uint8_t* w, const uint8_t* x, uint64_t cols) {
  return dot_float_row<2, load8_bf16, load_bf16>(w, x, cols);
}

// Q8_0 x Q8_0, block {fp16 d; int8 qs[32]} (34 bytes): per block the 32 code products in int32
// lanes, converted exactly to float and scaled by d_w * d_x. Two accumulators for two blocks in
// flight, so a block's work need not wait for the previous block's FMA.
INFER_PLAN_AVX2 float dot_q8_0(const uint8_t* w, const uint8_t* x, uint64_t cols) {
  constexpr uint64_t kBytes = 34;
  const uint64_t blocks = cols / 32;
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  uint64_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    const uint8_t* w0 = w + b * kBytes;
    const uint8_t* x0 = x + b * kBytes;
    const __m256i p0 = dot_i8_lanes(load256(w0 + 2), load256(x0 + 2));
    const __m256i p1 = dot_i8_lanes(load256(w0 + kBytes + 2), load256(x0 + kBytes + 2));
    const __m256 d0 = _mm256_set1_ps(load_fp16(w0) * load_fp16(x0));
    const __m256 d1 = _mm256_set1_ps(load_fp16(w0 + kBytes) * load_fp16(x0 + kBytes));
    acc0 = _mm256_fmadd_ps(d0, _mm256_cvtepi32_ps(p0), acc0);
    acc1 = _mm256_fmadd_ps(d1, _mm256_cvtepi32_ps(p1), acc1);
  }
  for (; b < blocks; ++b) {
    const uint8_t* w0 = w + b * kBytes;
    const uint8_t* x0 = x + b * kBytes;
    const __m256i p0 = dot_i8_lanes(load256(w0 + 2), load256(x0 + 2));
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(load_fp16(w0) * load_fp16(x0)), _mm256_cvtepi32_ps(p0), acc0);
  }
  return horizontal_sum(_mm256_add_ps(acc0, acc1));
}

// Q4_0 block {fp16 d; u8 qs[16]} (18 bytes): value j is the low nibble of byte j, value j + 16
// the high nibble, each minus 8. One 16-byte load becomes 32 codes in value order: low nibbles
// in the lower 128 bits, high nibbles in the upper.
INFER_PLAN_AVX2 inline __m256i q4_0_codes(const uint8_t* qs) {
  const __m128i bytes = load128(qs);
  const __m256i nibbles = _mm256_and_si256(
      _mm256_set_m128i(_mm_srli_epi16(bytes, 4), bytes), _mm256_set1_epi8(0x0F));
  return _mm256_sub_epi8(nibbles, _mm256_set1_epi8(8));
}

INFER_PLAN_AVX2 float dot_q4_0(const uint8_t* w, const uint8_t* x, uint64_t cols) {
  constexpr uint64_t kWBytes = 18, kXBytes = 34;
  const uint64_t blocks = cols / 32;
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  uint64_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    const uint8_t* w0 = w + b * kWBytes;
    const uint8_t* x0 = x + b * kXBytes;
    const __m256i p0 = dot_i8_lanes(q4_0_codes(w0 + 2), load256(x0 + 2));
    const __m256i p1 = dot_i8_lanes(q4_0_codes(w0 + kWBytes + 2), load256(x0 + kXBytes + 2));
    const __m256 d0 = _mm256_set1_ps(load_fp16(w0) * load_fp16(x0));
    const __m256 d1 = _mm256_set1_ps(load_fp16(w0 + kWBytes) * load_fp16(x0 + kXBytes));
    acc0 = _mm256_fmadd_ps(d0, _mm256_cvtepi32_ps(p0), acc0);
    acc1 = _mm256_fmadd_ps(d1, _mm256_cvtepi32_ps(p1), acc1);
  }
  for (; b < blocks; ++b) {
    const uint8_t* w0 = w + b * kWBytes;
    const uint8_t* x0 = x + b * kXBytes;
    const __m256i p0 = dot_i8_lanes(q4_0_codes(w0 + 2), load256(x0 + 2));
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(load_fp16(w0) * load_fp16(x0)), _mm256_cvtepi32_ps(p0), acc0);
  }
  return horizontal_sum(_mm256_add_ps(acc0, acc1));
}

// For quarter k (values 32k..32k+31 of a Q2_K block, sub-blocks 2k and 2k+1) a shuffle that
// spreads sub-block 2k's scale over the low eight 16-bit lanes and 2k+1's over the high eight:
// exactly the lanes maddubs fills from bytes 0-15 and 16-31 of that quarter. 0x80 writes zero,
// the high byte of each 16-bit scale.
constexpr std::array<std::array<uint8_t, 32>, 8> make_q2_k_scale_shuffles() {
  std::array<std::array<uint8_t, 32>, 8> m{};
  for (int k = 0; k < 8; ++k) {
    for (int i = 0; i < 16; i += 2) {
      m[k][i] = static_cast<uint8_t>(2 * k);
      m[k][i + 1] = 0x80;
      m[k][16 + i] = static_cast<uint8_t>(2 * k + 1);
      m[k][16 + i + 1] = 0x80;
    }
  }
  return m;
}
alignas(32) constexpr std::array<std::array<uint8_t, 32>, 8> kQ2KScaleShuffles = make_q2_k_scale_shuffles();

// Q2_K x Q8_K, ggml's formula: d_x * d * sum_j scale_j * (codes_j . x_j) minus
// d_x * dmin * sum_j min_j * bsums_j over the 16 sub-blocks j; the second sum uses Q8_K's
// precomputed sums of 16 codes, so the mins cost one madd per block.
INFER_PLAN_AVX2 float dot_q2_k(const uint8_t* w, const uint8_t* x, uint64_t cols) {
  const uint64_t blocks = cols / 256;
  const __m256i mask2 = _mm256_set1_epi8(3);
  const __m128i mask4 = _mm_set1_epi8(0x0F);
  __m256 acc = _mm256_setzero_ps();
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint8_t* wb = w + b * kQ2KBytes;
    const uint8_t* xb = x + b * kQ8KBytes;
    const float dx = load_f32(xb);
    const float dall = dx * load_fp16(wb + 80);
    const float dmin = dx * load_fp16(wb + 82);

    const __m128i sc = load128(wb);
    const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc, 4), mask4));
    const __m256i mins_dot = _mm256_madd_epi16(mins, load256(xb + 260));  // 16 x int16 bsums
    const __m256i scales = _mm256_broadcastsi128_si256(_mm_and_si128(sc, mask4));

    __m256i isum = _mm256_setzero_si256();
    for (int half = 0; half < 2; ++half) {
      const __m256i q2 = load256(wb + 16 + 32 * half);
      for (int shift = 0; shift < 4; ++shift) {
        const int k = 4 * half + shift;
        const __m256i codes = _mm256_and_si256(_mm256_srli_epi16(q2, 2 * shift), mask2);
        // codes 0..3 (unsigned) x int8 activations: pair sums within +-762, no saturation
        const __m256i pairs = _mm256_maddubs_epi16(codes, load256(xb + 4 + 32 * k));
        const __m256i scale16 = _mm256_shuffle_epi8(scales, load256(kQ2KScaleShuffles[k].data()));
        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(scale16, pairs));
      }
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(dall), _mm256_cvtepi32_ps(isum), acc);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(-dmin), _mm256_cvtepi32_ps(mins_dot), acc);
  }
  return horizontal_sum(acc);
}

}  // namespace

DotFn avx2_dot(GgmlType weight_type) {
  static const bool able = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                           __builtin_cpu_supports("f16c");
  if (!able) return nullptr;
  switch (weight_type) {
    case GgmlType::F32: return dot_f32;
    case GgmlType::F16: return dot_f16;
    case GgmlType::BF16: return dot_bf16;
    case GgmlType::Q8_0: return dot_q8_0;
    case GgmlType::Q4_0: return dot_q4_0;
    case GgmlType::Q2_K: return dot_q2_k;
    default: return nullptr;
  }
}

#else

DotFn avx2_dot(GgmlType) { return nullptr; }

#endif

}  // namespace infer_plan::kernels
