// The same operations as quantize.cpp's reference loops, eight values at a time: the block's
// largest magnitude by max (exact, in any order), its scale and reciprocal in scalar float as
// there, each value times the reciprocal (one rounding, as there), and the rounding to an integer
// done exactly: Q8_0's round-half-away-from-zero as trunc(v) plus one step away from zero where
// |v - trunc(v)| >= 0.5 (that difference is exact), Q8_K's round-half-to-even by the CPU's
// conversion (what nearest_int's 1.5 * 2^23 trick computes for |v| < 2^22). A block holding an
// infinity or NaN goes to the reference loop: there the order of comparisons decides the result.
#include "kernels/cpu/quantize_avx2.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define INFER_PLAN_X86_QUANTIZE 1
#include <immintrin.h>
#endif

#include <cmath>
#include <cstring>
#include <span>

#include "kernels/block_layout.hpp"
#include "kernels/cpu/half.hpp"
#include "kernels/cpu/quantize.hpp"

namespace infer_plan::kernels {

#ifdef INFER_PLAN_X86_QUANTIZE
#define INFER_PLAN_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace {

INFER_PLAN_AVX2 inline __m256 abs8(__m256 v) {
  return _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)));
}

INFER_PLAN_AVX2 inline float horizontal_max(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

INFER_PLAN_AVX2 inline int horizontal_sum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// std::round of each lane (half away from zero), for |v| < 2^23, as int32.
INFER_PLAN_AVX2 inline __m256i round_half_away(__m256 v) {
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 half_or_more = _mm256_cmp_ps(abs8(_mm256_sub_ps(v, t)), _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  const __m256 step = _mm256_or_ps(_mm256_and_ps(v, _mm256_set1_ps(-0.0f)), _mm256_set1_ps(1.0f));  // copysign(1, v)
  return _mm256_cvttps_epi32(_mm256_add_ps(t, _mm256_and_ps(half_or_more, step)));
}

// 32 int32 lanes (four registers, values in -128..127) to 32 bytes in order.
INFER_PLAN_AVX2 inline void store_bytes(uint8_t* out, __m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i words = _mm256_packs_epi32(a, b), words2 = _mm256_packs_epi32(c, d);  // per 128-bit lane
  const __m256i bytes = _mm256_packs_epi16(words, words2);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                      _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

INFER_PLAN_AVX2 void quantize_q8_0(const float* values, uint64_t count, uint8_t* out) {
  for (uint64_t b = 0; b < count / kQ8_0Values; ++b) {
    const float* x = values + b * kQ8_0Values;
    uint8_t* block = out + b * kQ8_0Bytes;
    __m256 v[4];
    for (int k = 0; k < 4; ++k) v[k] = _mm256_loadu_ps(x + 8 * k);
    const float amax = horizontal_max(_mm256_max_ps(_mm256_max_ps(abs8(v[0]), abs8(v[1])),
                                                    _mm256_max_ps(abs8(v[2]), abs8(v[3]))));
    if (!std::isfinite(amax)) {
      quantize_row_q8_0(std::span<const float>(x, kQ8_0Values), std::span<uint8_t>(block, kQ8_0Bytes));
      continue;
    }
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_fp16(block + kQ8_0D, d);
    const __m256 scale = _mm256_set1_ps(id);
    store_bytes(block + kQ8_0Qs, round_half_away(_mm256_mul_ps(v[0], scale)), round_half_away(_mm256_mul_ps(v[1], scale)),
                round_half_away(_mm256_mul_ps(v[2], scale)), round_half_away(_mm256_mul_ps(v[3], scale)));
  }
}

INFER_PLAN_AVX2 void quantize_q8_k(const float* values, uint64_t count, uint8_t* out) {
  constexpr int kVectors = kQ8_KValues / 8;
  for (uint64_t b = 0; b < count / kQ8_KValues; ++b) {
    const float* x = values + b * kQ8_KValues;
    uint8_t* block = out + b * kQ8_KBytes;
    __m256 amax8 = _mm256_setzero_ps();
    for (int k = 0; k < kVectors; ++k) amax8 = _mm256_max_ps(amax8, abs8(_mm256_loadu_ps(x + 8 * k)));
    const float amax = horizontal_max(amax8);
    if (!std::isfinite(amax) || amax == 0) {  // the reference's own handling (zeros, or the order of NaNs)
      quantize_row_q8_k(std::span<const float>(x, kQ8_KValues), std::span<uint8_t>(block, kQ8_KBytes));
      continue;
    }
    // The first value of that magnitude, with its sign (the reference keeps the first on ties).
    float max = 0;
    for (int k = 0; k < kVectors; ++k) {
      const int hits = _mm256_movemask_ps(_mm256_cmp_ps(abs8(_mm256_loadu_ps(x + 8 * k)), _mm256_set1_ps(amax), _CMP_EQ_OQ));
      if (hits != 0) {
        max = x[8 * k + __builtin_ctz(static_cast<unsigned>(hits))];
        break;
      }
    }
    const float iscale = -127.f / max;
    const __m256 scale = _mm256_set1_ps(iscale);
    const __m256i top = _mm256_set1_epi32(127);
    for (int g = 0; g < kVectors / 4; ++g) {  // 32 values: two bsums entries
      __m256i q[4];
      for (int k = 0; k < 4; ++k)
        q[k] = _mm256_min_epi32(top, _mm256_cvtps_epi32(_mm256_mul_ps(scale, _mm256_loadu_ps(x + 32 * g + 8 * k))));
      store_bytes(block + kQ8_KQs + 32 * g, q[0], q[1], q[2], q[3]);
      for (int j = 0; j < 2; ++j) {
        const auto sum = static_cast<uint16_t>(static_cast<int16_t>(horizontal_sum_i32(_mm256_add_epi32(q[2 * j], q[2 * j + 1]))));
        block[kQ8_KBsums + 2 * (2 * g + j)] = static_cast<uint8_t>(sum & 0xFF);
        block[kQ8_KBsums + 2 * (2 * g + j) + 1] = static_cast<uint8_t>(sum >> 8);
      }
    }
    const float d = 1 / iscale;
    std::memcpy(block + kQ8_KD, &d, 4);
  }
}

bool cpu_able() {
  static const bool able = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return able;
}

}  // namespace

QuantizeRowFn avx2_quantize_row(GgmlType type) {
  if (!cpu_able()) return nullptr;
  switch (type) {
    case GgmlType::Q8_0: return quantize_q8_0;
    case GgmlType::Q8_K: return quantize_q8_k;
    default: return nullptr;
  }
}

#else

QuantizeRowFn avx2_quantize_row(GgmlType) { return nullptr; }

#endif

}  // namespace infer_plan::kernels
