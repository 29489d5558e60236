// AVX2 dot products: the same sums as matmul.cpp's scalar loops (integer dot per block, then one
// float multiply-add per block), eight lanes at a time. Every load is unaligned (blocks start at
// any 2-byte boundary). Each function carries target("avx2,fma,f16c") instead of the whole file
// being built with -mavx2, so nothing here runs unless avx2_dot() found the CPU able.
#include "kernels/cpu/dot_avx2.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define INFER_PLAN_X86_DOTS 1
#include <cpuid.h>
#include <immintrin.h>
#endif

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "kernels/block_layout.hpp"
#include "kernels/cpu/half.hpp"

namespace infer_plan::kernels {

#ifdef INFER_PLAN_X86_DOTS
#define INFER_PLAN_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace {

// A batch-1 product streams the weights once, so each core must keep many cache-line reads in
// flight; with the quantized dots' work between loads the hardware prefetcher alone left Q8_0 at
// about 65% of the read bandwidth on a Zen 3, about 80% with this. 1 to 8 KiB ahead measured
// alike; 2 KiB is about one 4096-column Q8_0 row. Past the last row it only touches lines that
// are not used (a prefetch never faults). The float dots do not prefetch: there it measured 10
// to 15 points worse than the hardware prefetcher alone.
constexpr uint64_t kPrefetchBytes = 2048;

INFER_PLAN_AVX2 inline void prefetch(const uint8_t* p) {
  _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetchBytes), _MM_HINT_T0);
}

// fp16 -> float for block scales by table lookup (256 KiB, as ggml's ggml_table_f32_f16): an
// entry that vbroadcastss takes straight from memory, where F16C costs three vector micro-ops
// per scale (insert, vcvtph2ps, broadcast), two scales per block beside about seven micro-ops
// for the block's products. Real scales span few exponents, so few table lines stay hot.
const float* fp16_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t h = 0; h < 65536; ++h) t[h] = fp16_to_fp32(static_cast<uint16_t>(h));
    return t;
  }();
  return table.data();
}
inline const float* fp16_entry(const float* table, const uint8_t* p) {
  return table + (p[0] | (p[1] << 8));
}

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

// The (row, token) loops of a register block unrolled, so the accumulator arrays live in registers
// (GCC at -O2 otherwise keeps them on the stack: a store and a load around every FMA).
#define INFER_PLAN_UNROLL _Pragma("GCC unroll 8")

// Float rows against several activation rows at once: one weight row by T tokens (T <= 6). Each
// (row, token) pair sums in two accumulators of eight lanes, the even and the odd 8-value
// groups of each 16 in order (a last lone group into the even one), then horizontal_sum of
// their sum, then the scalar tail (cols not a multiple of 8). That sum is the same whatever
// tokens a pair is computed beside, so a verify pass over m tokens gives the bits m decode steps
// would. Each weight vector is loaded once into a register and feeds T FMAs, the activations
// come from L1: per 16 values 2 + 2T loads for 2T FMAs (one token at a time was 2 loads per
// FMA), so with 6 tokens the FMA units, not the load ports, set the pace, and a row streams from
// memory once per 6 tokens while its products run: the weight stream and the arithmetic of a
// verify or prefill pass overlap. No software prefetch (see kPrefetchBytes).
constexpr uint64_t kFloatTokens = 6;  // 12 accumulators and 2 weight vectors: 14 of 16 registers

template <int T, uint64_t kValueBytes, __m256 (*load8)(const uint8_t*), float (*load1)(const uint8_t*)>
INFER_PLAN_AVX2 inline void dot_float_tokens(const uint8_t* w, const uint8_t* x, uint64_t x_stride, uint64_t cols,
                                             float* y, uint64_t y_stride) {
  constexpr uint64_t kGroup = 8 * kValueBytes;  // bytes of one 8-value group
  __m256 acc[T][2];
  INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  uint64_t i = 0;
  for (; i + 16 <= cols; i += 16) {
    INFER_PLAN_UNROLL for (int g = 0; g < 2; ++g) {
      __m256 wv = load8(w + i * kValueBytes + g * kGroup);
      asm("" : "+x"(wv));  // one load per weight vector, not one folded into each of T FMAs
      INFER_PLAN_UNROLL for (int t = 0; t < T; ++t)
        acc[t][g] = _mm256_fmadd_ps(wv, load8(x + t * x_stride + i * kValueBytes + g * kGroup), acc[t][g]);
    }
  }
  if (i + 8 <= cols) {
    const __m256 wv = load8(w + i * kValueBytes);
    INFER_PLAN_UNROLL for (int t = 0; t < T; ++t)
      acc[t][0] = _mm256_fmadd_ps(wv, load8(x + t * x_stride + i * kValueBytes), acc[t][0]);
    i += 8;
  }
  for (int t = 0; t < T; ++t) {
    float sum = horizontal_sum(_mm256_add_ps(acc[t][0], acc[t][1]));
    for (uint64_t j = i; j < cols; ++j) sum += load1(w + j * kValueBytes) * load1(x + t * x_stride + j * kValueBytes);
    y[t * y_stride] = sum;
  }
}

// Rows [0, rows) by tokens [0, tokens): groups of up to kFloatTokens tokens, each group over
// every row in turn (the tile of rows stays in L1 for the next group).
template <uint64_t kValueBytes, __m256 (*load8)(const uint8_t*), float (*load1)(const uint8_t*)>
INFER_PLAN_AVX2 void dot_float_rows(const uint8_t* w, uint64_t w_stride, uint64_t rows, const uint8_t* x,
                                    uint64_t x_stride, uint64_t tokens, uint64_t cols, float* y,
                                    uint64_t y_stride) {
  using Group = void (*)(const uint8_t*, const uint8_t*, uint64_t, uint64_t, float*, uint64_t);
  static constexpr Group kGroups[kFloatTokens] = {
      dot_float_tokens<1, kValueBytes, load8, load1>, dot_float_tokens<2, kValueBytes, load8, load1>,
      dot_float_tokens<3, kValueBytes, load8, load1>, dot_float_tokens<4, kValueBytes, load8, load1>,
      dot_float_tokens<5, kValueBytes, load8, load1>, dot_float_tokens<6, kValueBytes, load8, load1>};
  for (uint64_t t = 0; t < tokens; t += kFloatTokens) {
    const Group group = kGroups[std::min(kFloatTokens, tokens - t) - 1];
    for (uint64_t r = 0; r < rows; ++r) group(w + r * w_stride, x + t * x_stride, x_stride, cols, y + t * y_stride + r, y_stride);
  }
}

INFER_PLAN_AVX2 float dot_f32(const uint8_t* w, const uint8_t* x, uint64_t cols) {
  float y;
  dot_float_tokens<1, 4, load8_f32, load_f32>(w, x, 0, cols, &y, 0);
  return y;
}
INFER_PLAN_AVX2 float dot_f16(const uint8_t* w, const uint8_t* x, uint64_t cols) {
  float y;
  dot_float_tokens<1, 2, load8_f16, load_fp16>(w, x, 0, cols, &y, 0);
  return y;
}
INFER_PLAN_AVX2 void dot_f32_rows(const uint8_t* w, uint64_t w_stride, uint64_t rows, const uint8_t* x,
                                  uint64_t x_stride, uint64_t tokens, uint64_t cols, float* y, uint64_t y_stride) {
  dot_float_rows<4, load8_f32, load_f32>(w, w_stride, rows, x, x_stride, tokens, cols, y, y_stride);
}
INFER_PLAN_AVX2 void dot_f16_rows(const uint8_t* w, uint64_t w_stride, uint64_t rows, const uint8_t* x,
                                  uint64_t x_stride, uint64_t tokens, uint64_t cols, float* y, uint64_t y_stride) {
  dot_float_rows<2, load8_f16, load_fp16>(w, w_stride, rows, x, x_stride, tokens, cols, y, y_stride);
}
// BF16 x BF16 without widening: 16 values in 32 bytes are eight 32-bit words, each an even-index
// value (low half) and an odd-index one (high half). Shifting left 16 makes the even values
// floats, masking the low half away makes the odd ones floats, and the even and odd products
// go to separate accumulators: half the work of widening eight values at a time.
INFER_PLAN_AVX2 float dot_bf16(const uint8_t* w, const uint8_t* x, uint64_t cols) {
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
  __m256 even0 = _mm256_setzero_ps(), odd0 = _mm256_setzero_ps();
  __m256 even1 = _mm256_setzero_ps(), odd1 = _mm256_setzero_ps();
  uint64_t i = 0;
  for (; i + 32 <= cols; i += 32) {
    const __m256i w0 = load256(w + 2 * i), x0 = load256(x + 2 * i);
    const __m256i w1 = load256(w + 2 * i + 32), x1 = load256(x + 2 * i + 32);
    even0 = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(w0, 16)),
                            _mm256_castsi256_ps(_mm256_slli_epi32(x0, 16)), even0);
    odd0 = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(w0, high)),
                           _mm256_castsi256_ps(_mm256_and_si256(x0, high)), odd0);
    even1 = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(w1, 16)),
                            _mm256_castsi256_ps(_mm256_slli_epi32(x1, 16)), even1);
    odd1 = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(w1, high)),
                           _mm256_castsi256_ps(_mm256_and_si256(x1, high)), odd1);
  }
  for (; i + 8 <= cols; i += 8) even0 = _mm256_fmadd_ps(load8_bf16(w + 2 * i), load8_bf16(x + 2 * i), even0);
  float sum = horizontal_sum(_mm256_add_ps(_mm256_add_ps(even0, odd0), _mm256_add_ps(even1, odd1)));
  for (; i < cols; ++i) sum += load_bf16(w + 2 * i) * load_bf16(x + 2 * i);
  return sum;
}

// Eight lanes of int32, each the sum of four int8 x int8 products. maddubs multiplies unsigned
// by signed bytes, so move the sign of a onto b: |a| * (b * sign(a)) = a * b. Codes are in
// -127..127 (our quantizers and ggml's never write -128), so neither side overflows; the 16-bit
// pair sums stay within 2 * 127 * 127.
INFER_PLAN_AVX2 inline __m256i dot_i8_lanes(__m256i a, __m256i b) {
  const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(a, a), _mm256_sign_epi8(b, a));
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

// One block's eight int32 lanes scaled by d_w * d_x and added to acc, as
// acc + d_w * (d_x * lanes): both scales come broadcast from memory (the table, the block).
INFER_PLAN_AVX2 inline __m256 add_scaled(__m256 acc, __m256i lanes, const float* dw, const float* dx) {
  const __m256 scaled_x = _mm256_mul_ps(_mm256_cvtepi32_ps(lanes), _mm256_broadcast_ss(dx));
  return _mm256_fmadd_ps(_mm256_broadcast_ss(dw), scaled_x, acc);
}

// Q8_0 x Q8_0, block {fp16 d; int8 qs[32]} (34 bytes): per block the 32 code products in int32
// lanes, converted exactly to float and scaled. Four blocks (136 bytes) per step into four
// accumulators, so no block waits for the previous block's FMA (4 cycles of latency).
INFER_PLAN_AVX2 float dot_q8_0(const uint8_t* w, const uint8_t* x, uint64_t cols) {
  const float* table = fp16_table();
  const uint64_t blocks = cols / kQ8_0Values;
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  uint64_t b = 0;
  for (; b + 4 <= blocks; b += 4) {
    prefetch(w + b * kQ8_0Bytes);
    prefetch(w + b * kQ8_0Bytes + 64);
    for (uint64_t k = 0; k < 4; ++k) {
      const uint8_t* wk = w + (b + k) * kQ8_0Bytes;
      const uint8_t* xk = x + (b + k) * kQ8_0Bytes;
      const __m256i p = dot_i8_lanes(load256(wk + kQ8_0Qs), load256(xk + kQ8_0Qs));
      acc[k] = add_scaled(acc[k], p, fp16_entry(table, wk), fp16_entry(table, xk));
    }
  }
  for (; b < blocks; ++b) {
    const uint8_t* w0 = w + b * kQ8_0Bytes;
    const uint8_t* x0 = x + b * kQ8_0Bytes;
    acc[0] = add_scaled(acc[0], dot_i8_lanes(load256(w0 + kQ8_0Qs), load256(x0 + kQ8_0Qs)),
                        fp16_entry(table, w0), fp16_entry(table, x0));
  }
  return horizontal_sum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
}

// Q4_0 x Q8_0, weight block {fp16 d; u8 qs[16]} (18 bytes): value j is the low nibble of byte
// j, value j + 16 the high nibble, each minus 8. The 16 bytes go to both halves of a register
// and one variable shift (0 bits low, 4 bits high) puts the high nibbles in place, so after the
// mask the 32 codes 0..15 are in value order. Unsigned codes go straight into maddubs; the
// "minus 8" is 8 * sum(x), another maddubs, subtracted from the 16-bit pair sums (both within
// 2 * 15 * 127, resp. 2 * 8 * 127, so the difference fits).
INFER_PLAN_AVX2 inline __m256i q4_0_lanes(const uint8_t* qs, __m256i x) {
  const __m256i bytes = _mm256_broadcastsi128_si256(load128(qs));
  const __m256i codes = _mm256_and_si256(_mm256_srlv_epi32(bytes, _mm256_set_epi32(4, 4, 4, 4, 0, 0, 0, 0)),
                                         _mm256_set1_epi8(0x0F));
  const __m256i pairs = _mm256_sub_epi16(_mm256_maddubs_epi16(codes, x),
                                         _mm256_maddubs_epi16(_mm256_set1_epi8(8), x));
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

INFER_PLAN_AVX2 float dot_q4_0(const uint8_t* w, const uint8_t* x, uint64_t cols) {
  const float* table = fp16_table();
  const uint64_t blocks = cols / kQ4_0Values;
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  uint64_t b = 0;
  for (; b + 4 <= blocks; b += 4) {  // four blocks: 72 bytes of weights, four accumulators
    prefetch(w + b * kQ4_0Bytes);
    for (uint64_t k = 0; k < 4; ++k) {
      const uint8_t* wk = w + (b + k) * kQ4_0Bytes;
      const uint8_t* xk = x + (b + k) * kQ8_0Bytes;
      acc[k] = add_scaled(acc[k], q4_0_lanes(wk + kQ4_0Qs, load256(xk + kQ8_0Qs)), fp16_entry(table, wk),
                          fp16_entry(table, xk));
    }
  }
  for (; b < blocks; ++b) {
    const uint8_t* w0 = w + b * kQ4_0Bytes;
    const uint8_t* x0 = x + b * kQ8_0Bytes;
    acc[0] = add_scaled(acc[0], q4_0_lanes(w0 + kQ4_0Qs, load256(x0 + kQ8_0Qs)), fp16_entry(table, w0),
                        fp16_entry(table, x0));
  }
  return horizontal_sum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
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

// Q2_K x Q8_K, ggml's formula: d_x * (d * sum_j scale_j * (codes_j . x_j) - dmin * sum_j
// min_j * bsums_j) over the 16 sub-blocks j; the second sum uses Q8_K's precomputed sums of 16
// codes, so the mins cost one madd per block.
INFER_PLAN_AVX2 float dot_q2_k(const uint8_t* w, const uint8_t* x, uint64_t cols) {
  const float* table = fp16_table();
  const uint64_t blocks = cols / kQ2_KValues;
  const __m256i mask2 = _mm256_set1_epi8(3);
  __m256 acc = _mm256_setzero_ps();
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint8_t* wb = w + b * kQ2_KBytes;
    const uint8_t* xb = x + b * kQ8_KBytes;
    prefetch(wb);
    prefetch(wb + 64);

    // scale j in the low nibble of byte j, min j in the high nibble
    const __m256i mins = _mm256_srli_epi16(_mm256_cvtepu8_epi16(load128(wb + kQ2_KScales)), 4);
    const __m256i mins_dot = _mm256_madd_epi16(mins, load256(xb + kQ8_KBsums));  // 16 x int16 bsums
    const __m256i scales =
        _mm256_and_si256(_mm256_broadcastsi128_si256(load128(wb + kQ2_KScales)), _mm256_set1_epi8(0x0F));

    __m256i isum = _mm256_setzero_si256();
    for (int half = 0; half < 2; ++half) {
      const __m256i q2 = load256(wb + kQ2_KQs + 32 * half);
      for (int shift = 0; shift < 4; ++shift) {
        const int k = 4 * half + shift;
        const __m256i codes = _mm256_and_si256(_mm256_srli_epi16(q2, 2 * shift), mask2);
        // codes 0..3 (unsigned) x int8 activations: pair sums within +-762, no saturation
        const __m256i pairs = _mm256_maddubs_epi16(codes, load256(xb + kQ8_KQs + 32 * k));
        const __m256i scale16 = _mm256_shuffle_epi8(scales, load256(kQ2KScaleShuffles[k].data()));
        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(scale16, pairs));
      }
    }
    __m256 block = _mm256_mul_ps(_mm256_cvtepi32_ps(isum), _mm256_broadcast_ss(fp16_entry(table, wb + kQ2_KD)));
    block = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mins_dot), _mm256_broadcast_ss(fp16_entry(table, wb + kQ2_KDmin)),
                             block);
    // x's float d read in place: Q8_K rows come from convert_activations (a vector's buffer, rows
    // of whole blocks, each a multiple of 4 bytes), so it is 4-byte aligned.
    static_assert(kQ8_KBytes % 4 == 0 && kQ8_KD % 4 == 0, "Q8_K's d stays 4-byte aligned");
    acc = _mm256_fmadd_ps(_mm256_broadcast_ss(reinterpret_cast<const float*>(xb + kQ8_KD)), block, acc);
  }
  return horizontal_sum(acc);
}

bool cpu_able() {
  // __builtin_cpu_supports also checks that the OS saves the 256-bit registers; clang (14) has no
  // "f16c" name for it, so that bit comes from CPUID leaf 1 directly.
  static const bool able = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
  }();
  return able;
}

}  // namespace

DotFn avx2_dot(GgmlType weight_type) {
  if (!cpu_able()) return nullptr;
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

RowsDotFn avx2_rows_dot(GgmlType weight_type) {
  if (!cpu_able()) return nullptr;
  switch (weight_type) {
    case GgmlType::F32: return dot_f32_rows;
    case GgmlType::F16: return dot_f16_rows;
    default: return nullptr;
  }
}

#else

DotFn avx2_dot(GgmlType) { return nullptr; }
RowsDotFn avx2_rows_dot(GgmlType) { return nullptr; }

#endif

}  // namespace infer_plan::kernels
