// AVX2 dot products: the same sums as matmul.cpp's scalar loops (integer dot per block, then one
// float multiply-add per block), eight lanes at a time, and AVX-512 variants of some (interleaved
// Q4_0 and Q2_K on VNNI, BF16 on AVX512_BF16). Every load is unaligned (blocks start at any 2-byte
// boundary). Each function carries its target attribute (target("avx2,fma,f16c"), or the AVX-512
// sets) instead of the whole file being built with -mavx2, so nothing here runs unless
// avx2_rows_dot() or avx2_interleaved_dot() found the CPU able.
#include "kernels/cpu/dot_avx2.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define INFER_PLAN_X86_DOTS 1
#include <cpuid.h>
#include <immintrin.h>
#endif

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/block_layout.hpp"
#include "kernels/cpu/half.hpp"
#include "kernels/cpu/interleave.hpp"

namespace infer_plan::kernels {

#ifdef INFER_PLAN_X86_DOTS
#define INFER_PLAN_AVX2 __attribute__((target("avx2,fma,f16c")))
// AVX-512's VNNI on 256-bit registers (AVX512VL): vpdpbusd adds four u8 x s8 products into each
// int32 lane in one instruction.
// With AVX512BW, the same on 512-bit registers (byte shuffles and 16-bit shifts among them).
#define INFER_PLAN_AVX512_VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
// AVX512_BF16's vdpbf16ps on 512-bit registers.
#define INFER_PLAN_AVX512_BF16 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512bf16")))

namespace {

// A batch-1 product streams the weights once, so each core must keep many cache-line reads in
// flight, and the quantized dots do enough work between loads that the out-of-order window
// alone does not. Q2_K reads one row after another, a single linear stream: it prefetches 2 KiB
// ahead of its reads (the hardware prefetcher alone left it about 15 points lower). Q8_0 and
// Q4_0 read four rows side by side, four streams of a row's length (2.3 KiB for 4096 Q4_0
// values), each too short for the hardware prefetcher to learn: they prefetch the next four rows
// (the next register block, contiguous in memory) into L2 at the pace they consume these, which
// raised them from about 0.65 (Q8_0) and 0.40 (Q4_0) of the read bandwidth to 0.85 and 0.75
// (bench_gemv, Zen 3). Past the last row a prefetch only touches lines that are not used (it
// never faults). The float dots prefetch the same way: at 640 BF16 values (1.3 KiB) four rows side
// by side ran at 8 GB/s, at 13 GB/s with it; with several tokens a row block spends longer per
// byte and its streams fall behind at any length (F16 by 14336 values, 2 tokens: 5.3 ms without,
// 3.0 to 3.5 ms with; 4 tokens: 8.8-9.5 ms, 5.0-5.9 ms; bench_tokens --cols=14336 --rows=4096).
// One token over long rows depends on the host: at 4096 values (8 KiB) it cost 5 to 10 points of
// the read bandwidth on a host reading 10 GB/s per core, where the hardware prefetcher kept up,
// and gained 10 to 20 (BF16 0.61-0.72 -> 0.80-0.82, F16 0.71-0.81 -> 0.80-0.92; bench_gemv) on
// one reading 25 GB/s per core.
constexpr uint64_t kPrefetchBytes = 2048;

INFER_PLAN_AVX2 inline void prefetch_ahead(const uint8_t* p) {
  _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetchBytes), _MM_HINT_T0);
}
INFER_PLAN_AVX2 inline void prefetch_l2(const uint8_t* p) { _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T1); }

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
// (GCC at -O2 otherwise keeps them on the stack: a store and a load around every FMA, and leaves
// shift counts and table indices variable).
#define INFER_PLAN_UNROLL _Pragma("GCC unroll 16")

// How the rows of each type are cut into register blocks. Every product below runs one register
// block of R weight rows by T tokens at a time, and each (row, token) pair sums into accumulators
// of its own, in the row's value order, whatever R and T are and whatever rows and tokens share the
// block. So a pair's bits do not depend on the tokens computed beside it: a verify pass over m
// tokens gives the bits of the m decode steps it replaces, and one token alone runs the same code.
// Tokens go in groups of at most a type's register block (7 tokens are 4 + 3), each group over
// every row in turn; the caller's tile of rows stays in L1 or L2 for the next group
// (blocked_product, after the types' register blocks).
// --- float weights: F32, F16, BF16 -----------------------------------------------------------

// Each type reads 16 values as two vectors of eight floats ("halves" 0 and 1); weights and
// activations are split the same way, so the products pair up whichever eight values a half holds.
struct F32Values {
  static constexpr uint64_t kBytes = 4;
  static INFER_PLAN_AVX2 __m256 half(const uint8_t* p, int h) { return load8_f32(p + 32 * h); }
  static INFER_PLAN_AVX2 __m256 load8(const uint8_t* p) { return load8_f32(p); }
  static INFER_PLAN_AVX2 float load1(const uint8_t* p) { return load_f32(p); }
};
struct F16Values {
  static constexpr uint64_t kBytes = 2;
  static INFER_PLAN_AVX2 __m256 half(const uint8_t* p, int h) { return load8_f16(p + 16 * h); }
  static INFER_PLAN_AVX2 __m256 load8(const uint8_t* p) { return load8_f16(p); }
  static INFER_PLAN_AVX2 float load1(const uint8_t* p) { return load_fp16(p); }
};
// bfloat16 is the top half of a float. 16 values in 32 bytes are eight 32-bit words, each an
// even-index value (low half) and an odd-index one (high half): shifting left 16 makes the even
// values floats (half 0), masking the low half away makes the odd ones floats (half 1). One load
// and one operation per eight values, where widening costs two.
struct BF16Values {
  static constexpr uint64_t kBytes = 2;
  static INFER_PLAN_AVX2 __m256 half(const uint8_t* p, int h) {
    const __m256i words = load256(p);
    return _mm256_castsi256_ps(h == 0 ? _mm256_slli_epi32(words, 16)
                                      : _mm256_and_si256(words, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
  }
  static INFER_PLAN_AVX2 __m256 load8(const uint8_t* p) { return load8_bf16(p); }
  static INFER_PLAN_AVX2 float load1(const uint8_t* p) { return load_bf16(p); }
};

// R weight rows by T tokens. Each pair sums in two accumulators of eight lanes, half 0 and half 1
// of each 16 values in order (a last lone group of eight into half 0's), then horizontal_sum of
// their sum, then the scalar tail (cols not a multiple of 8). Each weight vector is loaded once
// into a register and feeds T FMAs, each activation vector R: per 16 values 2R + 2T loads for
// 2RT FMAs, so the FMA units, not the load ports, set the pace, and a row streams from memory
// once per token group while its products run. One token alone runs four rows at once: eight
// chains of FMAs, where one row's two would wait on the FMA's latency. The rows prefetch the next
// register block (see kPrefetchBytes).
constexpr uint64_t kFloatTokens = 6;
constexpr int kFloatRows[kFloatTokens + 1] = {0, 4, 2, 2, 1, 1, 1};  // 2RT accumulators + R + 1 <= 16 registers

// A kernel (FloatKernel, Q0Kernel, Q2KKernel) is its register blocks: kRows[T] rows by T tokens
// for T <= kMaxTokens, and the block's tile<R, T>; blocked_product runs any of them.
template <class V>
struct FloatKernel {
  static constexpr uint64_t kMaxTokens = kFloatTokens;
  static constexpr const int* kRows = kFloatRows;
  template <int R, int T>
  static INFER_PLAN_AVX2 void tile(const uint8_t* w, uint64_t w_stride, const uint8_t* x, uint64_t x_stride,
                                   uint64_t cols, float* y, uint64_t y_stride);
};

template <class V>
template <int R, int T>
INFER_PLAN_AVX2 void FloatKernel<V>::tile(const uint8_t* w, uint64_t w_stride, const uint8_t* x, uint64_t x_stride,
                                          uint64_t cols, float* y, uint64_t y_stride) {
  __m256 acc[R][T][2];
  INFER_PLAN_UNROLL for (int r = 0; r < R; ++r)
    INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) acc[r][t][0] = acc[r][t][1] = _mm256_setzero_ps();
  constexpr uint64_t kStepBytes = R * 16 * V::kBytes;  // what the R rows read per step
  const uint8_t* next = w + R * w_stride;               // the next register block
  uint64_t i = 0;
  for (; i + 16 <= cols; i += 16) {
    INFER_PLAN_UNROLL for (uint64_t p = 0; p < kStepBytes; p += 64) prefetch_l2(next + i / 16 * kStepBytes + p);
    INFER_PLAN_UNROLL for (int h = 0; h < 2; ++h) {
      __m256 wv[R];
      INFER_PLAN_UNROLL for (int r = 0; r < R; ++r) {
        wv[r] = V::half(w + r * w_stride + i * V::kBytes, h);
        asm("" : "+x"(wv[r]));  // one load per weight vector, not one folded into each of T FMAs
      }
      INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) {
        const __m256 xv = V::half(x + t * x_stride + i * V::kBytes, h);
        INFER_PLAN_UNROLL for (int r = 0; r < R; ++r) acc[r][t][h] = _mm256_fmadd_ps(wv[r], xv, acc[r][t][h]);
      }
    }
  }
  const uint64_t tail = i;
  if (i + 8 <= cols) {
    INFER_PLAN_UNROLL for (int r = 0; r < R; ++r) {
      const __m256 wv = V::load8(w + r * w_stride + i * V::kBytes);
      INFER_PLAN_UNROLL for (int t = 0; t < T; ++t)
        acc[r][t][0] = _mm256_fmadd_ps(wv, V::load8(x + t * x_stride + i * V::kBytes), acc[r][t][0]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) {
      float sum = horizontal_sum(_mm256_add_ps(acc[r][t][0], acc[r][t][1]));
      for (uint64_t j = tail + (tail + 8 <= cols ? 8 : 0); j < cols; ++j)
        sum += V::load1(w + r * w_stride + j * V::kBytes) * V::load1(x + t * x_stride + j * V::kBytes);
      y[t * y_stride + r] = sum;
    }
  }
}

// --- BF16 weights on AVX512_BF16 -------------------------------------------------------------

// Where the CPU has AVX512_BF16 (Zen 4 and 5, Cooper Lake, Sapphire Rapids), vdpbf16ps multiplies
// 32 pairs of bfloat16 values and adds them into 16 float lanes, each lane its odd-index product,
// then its even-index one; a product of two 8-bit significands is exact in float, so each step
// rounds once, as an FMA does. One instruction per 32 values of a (row, token) pair, where the
// AVX2 tile spends two FMAs per 16 values and two shifts or masks per 16 values of each row and
// each token. The sum's order differs from the AVX2 tile's, so the bits may too (both within the
// tests' bound of the exact sum), but each pair still runs alone in its accumulator, in value
// order, whatever tokens and rows share the tile. The instruction counts inputs and results below
// float's normal range (2^-126) as zero, far below the products' rounding for real weights. Each
// register block prefetches the next as the float tiles do; a last part of fewer than 32 values
// loads under a mask (zeros add nothing).
constexpr uint64_t kBF16Tokens = 8;
constexpr int kBF16Rows[kBF16Tokens + 1] = {0, 4, 4, 4, 4, 3, 3, 3, 3};  // R * T accumulators + R + 1 <= 32

struct BF16DotKernel {
  static constexpr uint64_t kMaxTokens = kBF16Tokens;
  static constexpr const int* kRows = kBF16Rows;
  template <int R, int T>
  static INFER_PLAN_AVX512_BF16 void tile(const uint8_t* w, uint64_t w_stride, const uint8_t* x, uint64_t x_stride,
                                          uint64_t cols, float* y, uint64_t y_stride);
};

// 32 bfloat16 values from p, those past `mask`'s set bits zero
INFER_PLAN_AVX512_BF16 inline __m512bh load32_bf16(const uint8_t* p, __mmask32 mask) {
  return reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi16(mask, p));
}
// (GCC 12's _mm512_reduce_add_ps and 512-to-256 casts trip -Wmaybe-uninitialized: see
// broadcast_16_bytes below.)
INFER_PLAN_AVX512_BF16 inline float horizontal_sum16(__m512 v) {
  const __m512d both = _mm512_castps_pd(v);
  return horizontal_sum(_mm256_add_ps(_mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xF, both, 0)),
                                      _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xF, both, 1))));
}

// 32 values (those under `mask`) of R rows from w by T tokens from x into acc
template <int R, int T>
INFER_PLAN_AVX512_BF16 inline void bf16_step(__m512 (&acc)[R][T], const uint8_t* w, uint64_t w_stride, const uint8_t* x,
                                             uint64_t x_stride, __mmask32 mask) {
  __m512bh wv[R];
  INFER_PLAN_UNROLL for (int r = 0; r < R; ++r) {
    wv[r] = load32_bf16(w + r * w_stride, mask);
    asm("" : "+v"(wv[r]));  // one load per weight vector, not one folded into each of T products
  }
  INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) {
    const __m512bh xv = load32_bf16(x + t * x_stride, mask);
    INFER_PLAN_UNROLL for (int r = 0; r < R; ++r) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], wv[r], xv);
  }
}

template <int R, int T>
INFER_PLAN_AVX512_BF16 void BF16DotKernel::tile(const uint8_t* w, uint64_t w_stride, const uint8_t* x,
                                                uint64_t x_stride, uint64_t cols, float* y, uint64_t y_stride) {
  __m512 acc[R][T];
  INFER_PLAN_UNROLL for (int r = 0; r < R; ++r)
    INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  constexpr uint64_t kStepBytes = R * 64;  // what the R rows read per step
  const uint8_t* next = w + R * w_stride;  // the next register block
  uint64_t i = 0;
  for (; i + 32 <= cols; i += 32) {
    INFER_PLAN_UNROLL for (uint64_t p = 0; p < kStepBytes; p += 64) prefetch_l2(next + i / 32 * kStepBytes + p);
    bf16_step<R, T>(acc, w + 2 * i, w_stride, x + 2 * i, x_stride, ~__mmask32{0});
  }
  if (i < cols) bf16_step<R, T>(acc, w + 2 * i, w_stride, x + 2 * i, x_stride, (uint32_t{1} << (cols - i)) - 1);
  INFER_PLAN_UNROLL for (int r = 0; r < R; ++r)
    INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) y[t * y_stride + r] = horizontal_sum16(acc[r][t]);
}

// --- Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, IQ4_NL and MXFP4 weights by Q8_0 activations ----------------

// Q4_0's 16 nibble bytes at `qs` as codes 0..15 in value order: the bytes go to both halves of a
// register, one variable shift (0 bits low, 4 bits high) puts the high nibbles in place, a mask.
INFER_PLAN_AVX2 inline __m256i nibbles32(const uint8_t* qs) {
  const __m256i bytes = _mm256_broadcastsi128_si256(load128(qs));
  return _mm256_and_si256(_mm256_srlv_epi32(bytes, _mm256_set_epi32(4, 4, 4, 4, 0, 0, 0, 0)), _mm256_set1_epi8(0x0F));
}
// The fifth bits of a 32-value run (value j's at bit j of the 4 bytes at `qh`) as 16 or 0 per byte:
// byte j takes qh's byte j / 8 and tests its bit j % 8.
INFER_PLAN_AVX2 inline __m256i fifth_bits32(const uint8_t* qh) {
  uint32_t word;
  std::memcpy(&word, qh, 4);
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int32_t>(word)),
      _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0x0000000000000000));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(16));
}
// A block's 32 weight codes as signed bytes in value order, and its fp16 scale's offset.
// Q8_0 {fp16 d; int8 qs[32]}: the codes as stored (-127..127).
struct Q8_0Codes {
  static constexpr uint64_t kBytes = kQ8_0Bytes;
  static INFER_PLAN_AVX2 __m256i codes(const uint8_t* block) { return load256(block + kQ8_0Qs); }
  static const float* scale(const uint8_t* block, const float* table) { return fp16_entry(table, block); }
};
// Q4_0 {fp16 d; u8 qs[16]}: value j is the low nibble of byte j, value j + 16 the high nibble, each
// minus 8: -8..7.
struct Q4_0Codes {
  static constexpr uint64_t kBytes = kQ4_0Bytes;
  static INFER_PLAN_AVX2 __m256i codes(const uint8_t* block) {
    return _mm256_sub_epi8(nibbles32(block + kQ4_0Qs), _mm256_set1_epi8(8));
  }
  static const float* scale(const uint8_t* block, const float* table) { return fp16_entry(table, block); }
};
// Q5_0 {fp16 d; u8 qh[4]; u8 qs[16]}: Q4_0's nibbles with a fifth bit from qh, minus 16.
struct Q5_0Codes {
  static constexpr uint64_t kBytes = kQ5_0Bytes;
  static INFER_PLAN_AVX2 __m256i codes(const uint8_t* block) {
    return _mm256_sub_epi8(_mm256_or_si256(nibbles32(block + kQ5_0Qs), fifth_bits32(block + kQ5_0Qh)),
                           _mm256_set1_epi8(16));
  }
  static const float* scale(const uint8_t* block, const float* table) { return fp16_entry(table, block); }
};
// Q4_1 {fp16 d, m; u8 qs[16]} and Q5_1 {fp16 d, m; u8 qh[4]; u8 qs[16]}: codes 0..15 or 0..31 as
// they are; each value is d code + m, so q0_block adds m d_x sum(x codes) beside (kMin).
struct Q4_1Codes {
  static constexpr uint64_t kBytes = kQ4_1Bytes;
  static constexpr bool kMin = true;
  static INFER_PLAN_AVX2 __m256i codes(const uint8_t* block) { return nibbles32(block + kQ4_1Qs); }
  static const float* scale(const uint8_t* block, const float* table) { return fp16_entry(table, block + kQ4_1D); }
  static const float* min(const uint8_t* block, const float* table) { return fp16_entry(table, block + kQ4_1M); }
};
struct Q5_1Codes {
  static constexpr uint64_t kBytes = kQ5_1Bytes;
  static constexpr bool kMin = true;
  static INFER_PLAN_AVX2 __m256i codes(const uint8_t* block) {
    return _mm256_or_si256(nibbles32(block + kQ5_1Qs), fifth_bits32(block + kQ5_1Qh));
  }
  static const float* scale(const uint8_t* block, const float* table) { return fp16_entry(table, block + kQ5_1D); }
  static const float* min(const uint8_t* block, const float* table) { return fp16_entry(table, block + kQ5_1M); }
};
// Whether a codes type carries a minimum (Q4_1, Q5_1) beside its scale.
template <class C>
constexpr bool has_min() {
  if constexpr (requires { C::kMin; }) return C::kMin;
  return false;
}
static_assert(kQ5_0D == 0 && kQ5_0Values == kQ8_0Values, "d first, one activation block per block");

// IQ4_NL {fp16 d; u8 qs[16]}: Q4_0's nibbles, each an index into the table of 16 signed values.
INFER_PLAN_AVX2 inline __m256i iq4_table() {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Values)));
}
INFER_PLAN_AVX2 inline __m256i iq4_codes(const uint8_t* qs, __m256i table) {
  return _mm256_shuffle_epi8(table, nibbles32(qs));
}
struct IQ4_NLCodes {
  static constexpr uint64_t kBytes = kIQ4_NLBytes;
  static INFER_PLAN_AVX2 __m256i codes(const uint8_t* block) { return iq4_codes(block + kIQ4_NLQs, iq4_table()); }
  static const float* scale(const uint8_t* block, const float* table) { return fp16_entry(table, block); }
};
// MXFP4 {u8 e; u8 qs[16]}: the nibbles index the doubled E2M1 values; the scale is the halved E8M0
// one, from a table of all 256.
alignas(64) constexpr std::array<float, 256> kMxfp4Scales = [] {
  std::array<float, 256> t{};
  for (uint32_t e = 0; e < 256; ++e)  // mxfp4_scale, at compile time
    t[e] = std::bit_cast<float>(e < 2 ? uint32_t{0x00200000} << e : (e - 1) << 23);
  return t;
}();
struct MXFP4Codes {
  static constexpr uint64_t kBytes = kMXFP4Bytes;
  static INFER_PLAN_AVX2 __m256i codes(const uint8_t* block) {
    return iq4_codes(block + kMXFP4Qs,
                     _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Values))));
  }
  static const float* scale(const uint8_t* block, const float*) { return kMxfp4Scales.data() + block[kMXFP4E]; }
};
static_assert(kMXFP4Values == kQ8_0Values, "one activation block per weight block");
static_assert(kIQ4_NLD == 0 && kIQ4_NLValues == kQ8_0Values, "as Q4_0: d first, one activation block per block");
static_assert(kQ8_0D == 0 && kQ4_0D == 0, "both scales at the block's start");
static_assert(kQ4_0Values == kQ8_0Values, "one activation block per weight block");

// R weight rows by T tokens, one block of 32 values at a time. A pair's block is 32 products of
// int8 codes summed exactly in eight int32 lanes, converted to float (exact) and added to the
// pair's one accumulator as acc + lanes * (d_w * d_x): the same operations in the same order for
// every pair. maddubs multiplies unsigned by signed bytes, so the activation's sign moves onto the
// weight code: |x| * (w * sign(x)) = w * x. |x| is taken once per token and block and shared by
// the R rows, the weight codes are decoded once per block and shared by the T tokens. Activation
// codes are in -127..127 (our quantizers and ggml's never write -128), so the 16-bit pair sums
// stay within 2 * 127 * 127.
// Q4_1 and Q5_1 (codes 0..31, each value d code + m) add m d_x times the block's activation codes
// summed in the same eight lanes: d_w d_x sum(q x) + m_w d_x sum(x), ggml's terms.
//
// The rows prefetch the next register block as they go (see kPrefetchBytes).
template <class C, int R, int T>
INFER_PLAN_AVX2 __attribute__((always_inline)) inline void q0_block(__m256 (&acc)[R][T], const uint8_t* w,
                                                                    uint64_t w_stride, const uint8_t* x,
                                                                    uint64_t x_stride, const float* table) {
  __m256i codes[R];
  INFER_PLAN_UNROLL for (int r = 0; r < R; ++r) codes[r] = C::codes(w + r * w_stride);
  INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) {
    const uint8_t* xb = x + t * x_stride;
    const __m256i xq = load256(xb + kQ8_0Qs);
    const __m256i x_abs = _mm256_abs_epi8(xq);
    const __m256 dx = _mm256_broadcast_ss(fp16_entry(table, xb));
    __m256 x_sums = _mm256_setzero_ps();  // Q4_1, Q5_1: the block's activation codes summed in 8 lanes
    if constexpr (has_min<C>())
      x_sums = _mm256_cvtepi32_ps(
          _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), xq), _mm256_set1_epi16(1)));
    INFER_PLAN_UNROLL for (int r = 0; r < R; ++r) {
      const __m256i pairs = _mm256_maddubs_epi16(x_abs, _mm256_sign_epi8(codes[r], xq));
      const __m256 lanes = _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
      const __m256 d = _mm256_mul_ps(_mm256_broadcast_ss(C::scale(w + r * w_stride, table)), dx);
      acc[r][t] = _mm256_fmadd_ps(lanes, d, acc[r][t]);
      if constexpr (has_min<C>()) {
        const __m256 m = _mm256_mul_ps(_mm256_broadcast_ss(C::min(w + r * w_stride, table)), dx);
        acc[r][t] = _mm256_fmadd_ps(x_sums, m, acc[r][t]);
      }
    }
  }
}

// Register blocks by token count: 4 rows for one token (four independent accumulator chains), 3
// by 2, 2 by 3 and 2 by 4 (8 accumulators, 2 weight codes, the token's codes, |codes| and scale:
// 13 of 16 registers, with temporaries).
constexpr uint64_t kQ0Tokens = 4;
constexpr int kQ0Rows[kQ0Tokens + 1] = {0, 4, 3, 2, 2};

template <class C>
struct Q0Kernel {
  static constexpr uint64_t kMaxTokens = kQ0Tokens;
  static constexpr const int* kRows = kQ0Rows;
  template <int R, int T>
  static INFER_PLAN_AVX2 void tile(const uint8_t* w, uint64_t w_stride, const uint8_t* x, uint64_t x_stride,
                                   uint64_t cols, float* y, uint64_t y_stride);
};

template <class C>
template <int R, int T>
INFER_PLAN_AVX2 void Q0Kernel<C>::tile(const uint8_t* w, uint64_t w_stride, const uint8_t* x, uint64_t x_stride,
                                       uint64_t cols, float* y, uint64_t y_stride) {
  const uint64_t blocks = cols / kQ8_0Values;
  const float* table = fp16_table();
  constexpr uint64_t kPerPrefetch = C::kBytes >= 64 ? 1 : 64 / C::kBytes;  // blocks per 64 bytes
  __m256 acc[R][T];
  INFER_PLAN_UNROLL for (int r = 0; r < R; ++r)
    INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  uint64_t b = 0;
  for (; b + kPerPrefetch <= blocks; b += kPerPrefetch) {
    // the next register block, R lines for the R x 64 bytes (at most) these rows give up
    INFER_PLAN_UNROLL for (int r = 0; r < R; ++r) prefetch_l2(w + R * w_stride + R * b * C::kBytes + 64 * r);
    INFER_PLAN_UNROLL for (uint64_t k = 0; k < kPerPrefetch; ++k)
      q0_block<C, R, T>(acc, w + (b + k) * C::kBytes, w_stride, x + (b + k) * kQ8_0Bytes, x_stride, table);
  }
  for (; b < blocks; ++b) q0_block<C, R, T>(acc, w + b * C::kBytes, w_stride, x + b * kQ8_0Bytes, x_stride, table);
  INFER_PLAN_UNROLL for (int r = 0; r < R; ++r)
    INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) y[t * y_stride + r] = horizontal_sum(acc[r][t]);
}

// --- Q2_K weights by Q8_K activations ---------------------------------------------------------

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

// One Q2_K row by T tokens (T <= kQ2KTokens), ggml's formula per block: d_x * (d * sum_j scale_j *
// (codes_j . x_j) - dmin * sum_j min_j * bsums_j) over the 16 sub-blocks j; the second sum uses
// Q8_K's precomputed sums of 16 codes, so the mins cost one madd per block and token. The codes,
// scales and mins are decoded once per block and shared by the T tokens; each token keeps an
// int32 sum per block and one float accumulator.
constexpr uint64_t kQ2KTokens = 4;
constexpr int kQ2KRows[kQ2KTokens + 1] = {0, 1, 1, 1, 1};

struct Q2KKernel {
  static constexpr uint64_t kMaxTokens = kQ2KTokens;
  static constexpr const int* kRows = kQ2KRows;
  template <int R, int T>
  static INFER_PLAN_AVX2 void tile(const uint8_t* w, uint64_t w_stride, const uint8_t* x, uint64_t x_stride,
                                   uint64_t cols, float* y, uint64_t y_stride);
};

// A block's end for T tokens: isum[t] holds token t's integer sums of scale * code * activation
// in eight lanes; the mins come off through Q8_K's sums of 16 codes, and the block's float sum adds
// to acc[t]. x points at token 0's Q8_K block, the tokens x_stride apart.
template <int T>
INFER_PLAN_AVX2 inline void q2_k_add_blocks(__m256 (&acc)[T], const __m256i (&isum)[T], const uint8_t* wb, const uint8_t* x,
                                            uint64_t x_stride, const float* table) {
  // scale j in the low nibble of byte j, min j in the high nibble
  const __m256i mins = _mm256_srli_epi16(_mm256_cvtepu8_epi16(load128(wb + kQ2_KScales)), 4);
  const __m256 d = _mm256_broadcast_ss(fp16_entry(table, wb + kQ2_KD));
  const __m256 dmin = _mm256_broadcast_ss(fp16_entry(table, wb + kQ2_KDmin));
  INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) {
    const uint8_t* xb = x + t * x_stride;
    const __m256i mins_dot = _mm256_madd_epi16(mins, load256(xb + kQ8_KBsums));  // 16 x int16 bsums
    __m256 block = _mm256_mul_ps(_mm256_cvtepi32_ps(isum[t]), d);
    block = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mins_dot), dmin, block);
    acc[t] = _mm256_fmadd_ps(_mm256_broadcast_ss(reinterpret_cast<const float*>(xb + kQ8_KD)), block, acc[t]);
  }
}

template <int R, int T>
INFER_PLAN_AVX2 void Q2KKernel::tile(const uint8_t* w, uint64_t, const uint8_t* x, uint64_t x_stride, uint64_t cols,
                                     float* y, uint64_t y_stride) {
  static_assert(R == 1, "Q2_K runs one row at a time");
  const uint64_t blocks = cols / kQ2_KValues;
  static_assert(kQ2_KValues == kQ8_KValues && kQ2_KSubValues == kQ8_KSumValues, "bsums entry j is sub-block j's");
  // x's float d read in place: Q8_K rows come from convert_activations (a vector's buffer, rows of
  // whole blocks, each a multiple of 4 bytes), so it is 4-byte aligned.
  static_assert(kQ8_KBytes % 4 == 0 && kQ8_KD % 4 == 0, "Q8_K's d stays 4-byte aligned");
  const float* table = fp16_table();
  const __m256i mask2 = _mm256_set1_epi8(3);
  __m256 acc[T];
  INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint8_t* wb = w + b * kQ2_KBytes;
    prefetch_ahead(wb);
    prefetch_ahead(wb + 64);
    const __m256i scales = _mm256_and_si256(_mm256_broadcastsi128_si256(load128(wb + kQ2_KScales)), _mm256_set1_epi8(0x0F));
    __m256i isum[T];
    INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
    INFER_PLAN_UNROLL for (int half = 0; half < 2; ++half) {
      const __m256i q2 = load256(wb + kQ2_KQs + 32 * half);
      INFER_PLAN_UNROLL for (int shift = 0; shift < 4; ++shift) {
        const int k = 4 * half + shift;
        const __m256i codes = _mm256_and_si256(_mm256_srli_epi16(q2, 2 * shift), mask2);
        const __m256i scale16 = _mm256_shuffle_epi8(scales, load256(kQ2KScaleShuffles[k].data()));
        INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) {
          // codes 0..3 (unsigned) x int8 activations: pair sums within +-762, no saturation
          const __m256i pairs = _mm256_maddubs_epi16(codes, load256(x + t * x_stride + b * kQ8_KBytes + kQ8_KQs + 32 * k));
          isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(scale16, pairs));
        }
      }
    }
    q2_k_add_blocks<T>(acc, isum, wb, x + b * kQ8_KBytes, x_stride, table);
  }
  INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) y[t * y_stride] = horizontal_sum(acc[t]);
}

// --- Q4_K, Q5_K and Q6_K weights by Q8_K activations --------------------------------------------

// One row by T tokens (T <= kKQuantTokens), as the scalar dot_k_scale_min and dot_q6_k: per block an
// int32 sum per token in eight lanes of scale * code * activation, the mins (Q4_K, Q5_K) or the codes'
// offset of 32 (Q6_K) taken off through Q8_K's sums of 16 codes, then one float multiply-add. The
// codes, scales and mins are decoded once per block and shared by the T tokens.
constexpr uint64_t kKQuantTokens = 4;
constexpr int kKQuantRows[kKQuantTokens + 1] = {0, 1, 1, 1, 1};

// Q4_K's and Q5_K's twelve scale bytes as eight 6-bit scales (bytes 0-7) and eight mins (bytes 8-15),
// the arithmetic of k_scale_min on four bytes at a time: scales 0-3 and mins 0-3 are the low six bits
// of bytes 0-3 and 4-7; scales 4-7 and mins 4-7 the nibbles of bytes 8-11 with the top two bits of
// bytes 0-3 and 4-7 above them.
inline __m128i k_scales_and_mins(const uint8_t* p) {
  uint32_t u[3];
  std::memcpy(u, p, 12);
  constexpr uint32_t kLow6 = 0x3f3f3f3f, kLow4 = 0x0f0f0f0f, kLow2 = 0x03030303;
  const uint32_t scales_lo = u[0] & kLow6, mins_lo = u[1] & kLow6;
  const uint32_t scales_hi = (u[2] & kLow4) | (((u[0] >> 6) & kLow2) << 4);
  const uint32_t mins_hi = ((u[2] >> 4) & kLow4) | (((u[1] >> 6) & kLow2) << 4);
  return _mm_set_epi32(static_cast<int>(mins_hi), static_cast<int>(mins_lo), static_cast<int>(scales_hi),
                       static_cast<int>(scales_lo));
}

// Shuffles that spread 16-bit lane j of a 128-bit register (broadcast to both halves) over all 16 lanes.
alignas(32) constexpr std::array<std::array<uint8_t, 32>, 8> kLaneSpreads = [] {
  std::array<std::array<uint8_t, 32>, 8> m{};
  for (int j = 0; j < 8; ++j)
    for (int i = 0; i < 32; i += 2) {
      m[j][i] = static_cast<uint8_t>(2 * j);
      m[j][i + 1] = static_cast<uint8_t>(2 * j + 1);
    }
  return m;
}();
// For Q6_K's quarter k of a 128-value half: 16-bit lane 2k of the half's eight scales over the low
// eight lanes (maddubs' lanes from bytes 0-15, sub-block 2k), lane 2k + 1 over the high eight.
alignas(32) constexpr std::array<std::array<uint8_t, 32>, 4> kQ6KScaleSpreads = [] {
  std::array<std::array<uint8_t, 32>, 4> m{};
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 32; i += 2) {
      const int lane = 2 * k + (i < 16 ? 0 : 1);
      m[k][i] = static_cast<uint8_t>(2 * lane);
      m[k][i + 1] = static_cast<uint8_t>(2 * lane + 1);
    }
  return m;
}();

template <int Bits>
struct KScaleMinKernel {
  static constexpr uint64_t kMaxTokens = kKQuantTokens;
  static constexpr const int* kRows = kKQuantRows;
  template <int R, int T>
  static INFER_PLAN_AVX2 void tile(const uint8_t* w, uint64_t, const uint8_t* x, uint64_t x_stride, uint64_t cols,
                                   float* y, uint64_t y_stride) {
    static_assert(R == 1, "K-quants run one row at a time");
    constexpr uint32_t kBytes = Bits == 4 ? kQ4_KBytes : kQ5_KBytes;
    constexpr uint32_t kScales = Bits == 4 ? kQ4_KScales : kQ5_KScales, kQs = Bits == 4 ? kQ4_KQs : kQ5_KQs;
    const uint64_t blocks = cols / kQ4_KValues;
    const float* table = fp16_table();
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256 acc[T];
    INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    for (uint64_t b = 0; b < blocks; ++b) {
      const uint8_t* wb = w + b * kBytes;
      prefetch_ahead(wb);
      prefetch_ahead(wb + 64);
      prefetch_ahead(wb + 128);
      const __m256i scales_and_mins = _mm256_cvtepu8_epi16(k_scales_and_mins(wb + kScales));  // 8 scales, 8 mins
      const __m256i scales = _mm256_permute2x128_si256(scales_and_mins, scales_and_mins, 0x00);
      const __m128i mins = _mm256_extracti128_si256(scales_and_mins, 1);
      __m256i isum[T];
      INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
      [[maybe_unused]] const __m256i qh = Bits == 5 ? load256(wb + kQ5_KQh) : _mm256_setzero_si256();
      INFER_PLAN_UNROLL for (int p = 0; p < 4; ++p) {
        const __m256i q = load256(wb + kQs + 32 * p);
        __m256i lo = _mm256_and_si256(q, low4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
        if constexpr (Bits == 5) {  // fifth bits 2p (lo) and 2p + 1 (hi) of qh's bytes, as 16
          const __m256i one = _mm256_set1_epi8(1);
          lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * p), one), 4));
          hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * p + 1), one), 4));
        }
        const __m256i scale_lo = _mm256_shuffle_epi8(scales, load256(kLaneSpreads[2 * p].data()));
        const __m256i scale_hi = _mm256_shuffle_epi8(scales, load256(kLaneSpreads[2 * p + 1].data()));
        INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) {
          const uint8_t* xq = x + t * x_stride + b * kQ8_KBytes + kQ8_KQs + 64 * p;
          // codes 0..31 (unsigned) x int8: pair sums within +-7874, no saturation
          isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(scale_lo, _mm256_maddubs_epi16(lo, load256(xq))));
          isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(scale_hi, _mm256_maddubs_epi16(hi, load256(xq + 32))));
        }
      }
      const __m256 d = _mm256_broadcast_ss(fp16_entry(table, wb + (Bits == 4 ? kQ4_KD : kQ5_KD)));
      const __m256 dmin = _mm256_broadcast_ss(fp16_entry(table, wb + (Bits == 4 ? kQ4_KDmin : kQ5_KDmin)));
      INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) {
        const uint8_t* xb = x + t * x_stride + b * kQ8_KBytes;
        // sub-block j's activation sum: bsums 2j + 2j+1, side by side in eight 16-bit lanes
        const __m256i bsums = load256(xb + kQ8_KBsums);
        const __m128i pair_sums = _mm_hadd_epi16(_mm256_castsi256_si128(bsums), _mm256_extracti128_si256(bsums, 1));
        const __m256i mins_dot = _mm256_zextsi128_si256(_mm_madd_epi16(mins, pair_sums));
        __m256 block = _mm256_mul_ps(_mm256_cvtepi32_ps(isum[t]), d);
        block = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mins_dot), dmin, block);
        acc[t] = _mm256_fmadd_ps(_mm256_broadcast_ss(reinterpret_cast<const float*>(xb + kQ8_KD)), block, acc[t]);
      }
    }
    INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) y[t * y_stride] = horizontal_sum(acc[t]);
  }
};

struct Q6KKernel {
  static constexpr uint64_t kMaxTokens = kKQuantTokens;
  static constexpr const int* kRows = kKQuantRows;
  template <int R, int T>
  static INFER_PLAN_AVX2 void tile(const uint8_t* w, uint64_t, const uint8_t* x, uint64_t x_stride, uint64_t cols,
                                   float* y, uint64_t y_stride) {
    static_assert(R == 1, "K-quants run one row at a time");
    const uint64_t blocks = cols / kQ6_KValues;
    const float* table = fp16_table();
    const __m256i low4 = _mm256_set1_epi8(0x0F), low2 = _mm256_set1_epi8(3);
    __m256 acc[T];
    INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    for (uint64_t b = 0; b < blocks; ++b) {
      const uint8_t* wb = w + b * kQ6_KBytes;
      prefetch_ahead(wb);
      prefetch_ahead(wb + 64);
      prefetch_ahead(wb + 128);
      prefetch_ahead(wb + 192);
      const __m256i scales16 = _mm256_cvtepi8_epi16(load128(wb + kQ6_KScales));  // 16 signed scales
      __m256i isum[T];
      INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
      INFER_PLAN_UNROLL for (int h = 0; h < 2; ++h) {
        const __m256i ql0 = load256(wb + kQ6_KQl + 64 * h), ql1 = load256(wb + kQ6_KQl + 64 * h + 32);
        const __m256i qh = load256(wb + kQ6_KQh + 32 * h);
        // this half's eight scales (sub-blocks 8h..8h+7) in both 128-bit halves
        const __m256i half_scales = h ? _mm256_permute2x128_si256(scales16, scales16, 0x11)  // clang 14 at -O1: literal
                                      : _mm256_permute2x128_si256(scales16, scales16, 0x00);
        INFER_PLAN_UNROLL for (int k = 0; k < 4; ++k) {
          // quarter k: low bits from ql0 (k even) or ql1, nibble k / 2; high bits 2k, 2k + 1 of qh
          const __m256i ql = k % 2 ? ql1 : ql0;
          const __m256i low = _mm256_and_si256(k / 2 ? _mm256_srli_epi16(ql, 4) : ql, low4);
          const __m256i high = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), low2), 4);
          const __m256i codes = _mm256_or_si256(low, high);  // 0..63, the offset of 32 comes off below
          const __m256i scale16 = _mm256_shuffle_epi8(half_scales, load256(kQ6KScaleSpreads[k].data()));
          INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) {
            const uint8_t* xq = x + t * x_stride + b * kQ8_KBytes + kQ8_KQs + 128 * h + 32 * k;
            // codes 0..63 (unsigned) x int8: pair sums within +-16002, no saturation
            isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(scale16, _mm256_maddubs_epi16(codes, load256(xq))));
          }
        }
      }
      const __m256 d = _mm256_broadcast_ss(fp16_entry(table, wb + kQ6_KD));
      INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) {
        const uint8_t* xb = x + t * x_stride + b * kQ8_KBytes;
        // 32 x sum_j scale_j x bsums_j: the codes' offset
        const __m256i offset = _mm256_slli_epi32(_mm256_madd_epi16(scales16, load256(xb + kQ8_KBsums)), 5);
        const __m256 block = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(isum[t], offset)), d);
        acc[t] = _mm256_fmadd_ps(_mm256_broadcast_ss(reinterpret_cast<const float*>(xb + kQ8_KD)), block, acc[t]);
      }
    }
    INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) y[t * y_stride] = horizontal_sum(acc[t]);
  }
};

// Q3_K's sixteen scales less 32, as 16-bit lanes: the arithmetic of q3_k_scale on four bytes at a time
// (low nibbles from bytes 0-7, top two bits from bytes 8-11).
INFER_PLAN_AVX2 inline __m256i q3_k_scales(const uint8_t* p) {
  uint32_t u[3];
  std::memcpy(u, p, 12);
  constexpr uint32_t kLow4 = 0x0f0f0f0f, kLow2 = 0x03030303;
  const uint32_t s0 = (u[0] & kLow4) | ((u[2] & kLow2) << 4);
  const uint32_t s1 = (u[1] & kLow4) | (((u[2] >> 2) & kLow2) << 4);
  const uint32_t s2 = ((u[0] >> 4) & kLow4) | (((u[2] >> 4) & kLow2) << 4);
  const uint32_t s3 = ((u[1] >> 4) & kLow4) | (((u[2] >> 6) & kLow2) << 4);
  const __m128i codes = _mm_set_epi32(static_cast<int>(s3), static_cast<int>(s2), static_cast<int>(s1), static_cast<int>(s0));
  return _mm256_cvtepi8_epi16(_mm_sub_epi8(codes, _mm_set1_epi8(32)));
}

// Q3_K as Q6_K: codes made unsigned (the low two bits and the high bit, 0..7) for maddubs, their
// offset of 4 taken off through Q8_K's sums of 16 codes.
struct Q3KKernel {
  static constexpr uint64_t kMaxTokens = kKQuantTokens;
  static constexpr const int* kRows = kKQuantRows;
  template <int R, int T>
  static INFER_PLAN_AVX2 void tile(const uint8_t* w, uint64_t, const uint8_t* x, uint64_t x_stride, uint64_t cols,
                                   float* y, uint64_t y_stride) {
    static_assert(R == 1, "K-quants run one row at a time");
    const uint64_t blocks = cols / kQ3_KValues;
    const float* table = fp16_table();
    const __m256i low2 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    __m256 acc[T];
    INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    for (uint64_t b = 0; b < blocks; ++b) {
      const uint8_t* wb = w + b * kQ3_KBytes;
      prefetch_ahead(wb);
      prefetch_ahead(wb + 64);
      const __m256i scales16 = q3_k_scales(wb + kQ3_KScales);
      const __m256i hmask = load256(wb + kQ3_KHmask);
      __m256i isum[T];
      INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
      INFER_PLAN_UNROLL for (int h = 0; h < 2; ++h) {
        const __m256i q = load256(wb + kQ3_KQs + 32 * h);
        const __m256i half_scales = h ? _mm256_permute2x128_si256(scales16, scales16, 0x11)  // clang 14 at -O1: literal
                                      : _mm256_permute2x128_si256(scales16, scales16, 0x00);
        INFER_PLAN_UNROLL for (int k = 0; k < 4; ++k) {
          // values 128 h + 32 k + l: bits 2k, 2k + 1 of qs byte l, bit 4h + k of hmask byte l
          const __m256i low = _mm256_and_si256(_mm256_srli_epi16(q, 2 * k), low2);
          const __m256i high = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hmask, 4 * h + k), one), 2);
          const __m256i codes = _mm256_or_si256(low, high);  // 0..7, the offset of 4 comes off below
          const __m256i scale16 = _mm256_shuffle_epi8(half_scales, load256(kQ6KScaleSpreads[k].data()));
          INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) {
            const uint8_t* xq = x + t * x_stride + b * kQ8_KBytes + kQ8_KQs + 128 * h + 32 * k;
            isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(scale16, _mm256_maddubs_epi16(codes, load256(xq))));
          }
        }
      }
      const __m256 d = _mm256_broadcast_ss(fp16_entry(table, wb + kQ3_KD));
      INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) {
        const uint8_t* xb = x + t * x_stride + b * kQ8_KBytes;
        const __m256i offset = _mm256_slli_epi32(_mm256_madd_epi16(scales16, load256(xb + kQ8_KBsums)), 2);
        const __m256 block = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(isum[t], offset)), d);
        acc[t] = _mm256_fmadd_ps(_mm256_broadcast_ss(reinterpret_cast<const float*>(xb + kQ8_KD)), block, acc[t]);
      }
    }
    INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) y[t * y_stride] = horizontal_sum(acc[t]);
  }
};

// IQ4_XS's eight sub-block scales less 32 as 16-bit lanes: low nibbles from scales_l (even sub-blocks
// in the low nibbles), top two bits from scales_h (bits 2j, 2j + 1), each lane's moved to bits 14-15
// by a multiply and back down by a shift.
INFER_PLAN_AVX2 inline __m128i iq4_xs_scales(const uint8_t* block) {
  uint32_t low;
  std::memcpy(&low, block + kIQ4_XSScalesL, 4);
  const __m128i l = _mm_cvtsi32_si128(static_cast<int>(low));
  const __m128i nibbles = _mm_unpacklo_epi8(_mm_and_si128(l, _mm_set1_epi8(0x0F)),
                                            _mm_and_si128(_mm_srli_epi16(l, 4), _mm_set1_epi8(0x0F)));
  const __m128i high = _mm_srli_epi16(
      _mm_mullo_epi16(_mm_set1_epi16(static_cast<int16_t>(block[kIQ4_XSScalesH] | (block[kIQ4_XSScalesH + 1] << 8))),
                      _mm_setr_epi16(1 << 14, 1 << 12, 1 << 10, 1 << 8, 1 << 6, 1 << 4, 1 << 2, 1)),
      14);
  return _mm_sub_epi16(_mm_or_si128(_mm_cvtepu8_epi16(nibbles), _mm_slli_epi16(high, 4)), _mm_set1_epi16(32));
}

struct IQ4XSKernel {
  static constexpr uint64_t kMaxTokens = kKQuantTokens;
  static constexpr const int* kRows = kKQuantRows;
  template <int R, int T>
  static INFER_PLAN_AVX2 void tile(const uint8_t* w, uint64_t, const uint8_t* x, uint64_t x_stride, uint64_t cols,
                                   float* y, uint64_t y_stride) {
    static_assert(R == 1, "IQ4_XS runs one row at a time");
    const uint64_t blocks = cols / kIQ4_XSValues;
    const float* table = fp16_table();
    const __m256i values = iq4_table();
    __m256 acc[T];
    INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    for (uint64_t b = 0; b < blocks; ++b) {
      const uint8_t* wb = w + b * kIQ4_XSBytes;
      prefetch_ahead(wb);
      prefetch_ahead(wb + 64);
      prefetch_ahead(wb + 128);
      const __m128i scales8 = iq4_xs_scales(wb);
      const __m256i scales = _mm256_broadcastsi128_si256(scales8);
      __m256i isum[T];
      INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
      INFER_PLAN_UNROLL for (int j = 0; j < 8; ++j) {
        const __m256i codes = iq4_codes(wb + kIQ4_XSQs + 16 * j, values);
        const __m256i scale = _mm256_shuffle_epi8(scales, load256(kLaneSpreads[j].data()));
        INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) {
          const __m256i xq = load256(x + t * x_stride + b * kQ8_KBytes + kQ8_KQs + 32 * j);
          // signed by signed: the activation's sign moves onto the value (pair sums within 2 x 127 x 127)
          const __m256i pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(xq), _mm256_sign_epi8(codes, xq));
          isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(scale, pairs));
        }
      }
      const __m256 d = _mm256_broadcast_ss(fp16_entry(table, wb + kIQ4_XSD));
      INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) {
        const uint8_t* xb = x + t * x_stride + b * kQ8_KBytes;
        const __m256 block = _mm256_mul_ps(_mm256_cvtepi32_ps(isum[t]), d);
        acc[t] = _mm256_fmadd_ps(_mm256_broadcast_ss(reinterpret_cast<const float*>(xb + kQ8_KD)), block, acc[t]);
      }
    }
    INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) y[t * y_stride] = horizontal_sum(acc[t]);
  }
};

// The same sums with AVX-512 VNNI on 512-bit registers, where the CPU has it. Register m holds
// values 64m..64m+63 of a block: codes from one 32-byte half of qs, broadcast to both 256-bit
// halves and shifted by a different count in each (vpsrlvw), so each byte lines up with the
// activations' own order and one 64-byte load. vpdpbusd leaves in 32-bit lane e the sum of four
// products, all in sub-block 4m + e/4; vpdpwssd multiplies that sum (within +-1524, so its low 16
// bits are it, and the high half meets a zero) by the sub-block's scale and adds. Folding lane e
// + 8 onto lane e then gives each of the AVX2 tile's eight lanes exactly its integer sum, so the
// float steps and the bits are the AVX2 tile's (tested), in about two thirds of the instructions.
// shift counts (bits) per 16-bit lane: register m takes chunks 2m and 2m + 1 of 32 values, the
// codes at bits 2 * (chunk % 4) of their half
alignas(64) constexpr std::array<std::array<uint16_t, 32>, 2> kQ2KShifts = [] {
  std::array<std::array<uint16_t, 32>, 2> s{};
  for (int odd = 0; odd < 2; ++odd)
    for (int i = 0; i < 32; ++i) s[odd][i] = static_cast<uint16_t>(4 * odd + (i < 16 ? 0 : 2));
  return s;
}();
// register m's scale per 32-bit lane: 128-bit lane i holds sub-block 4m + i's scale in each of its
// four 32-bit lanes (the scales byte, then zero bytes), from the 16 scales broadcast to every lane
alignas(64) constexpr std::array<std::array<uint8_t, 64>, 4> kQ2KScaleLanes = [] {
  std::array<std::array<uint8_t, 64>, 4> m{};
  for (int r = 0; r < 4; ++r)
    for (int i = 0; i < 64; ++i) m[r][i] = i % 4 == 0 ? static_cast<uint8_t>(4 * r + i / 16) : uint8_t{0x80};
  return m;
}();

struct Q2KVnniKernel {
  static constexpr uint64_t kMaxTokens = kQ2KTokens;
  static constexpr const int* kRows = kQ2KRows;
  template <int R, int T>
  static INFER_PLAN_AVX512_VNNI void tile(const uint8_t* w, uint64_t w_stride, const uint8_t* x, uint64_t x_stride,
                                          uint64_t cols, float* y, uint64_t y_stride);
};

INFER_PLAN_AVX512_VNNI inline __m512i load512(const uint8_t* p) { return _mm512_loadu_si512(p); }
// GCC 12's unmasked broadcasts, extracts and 512-to-256 cast fill the unused part from a
// self-initialised variable that -Wmaybe-uninitialized reports; these zero-masked forms with every
// lane kept are the same instructions.
INFER_PLAN_AVX512_VNNI inline __m512i broadcast_16_bytes(const uint8_t* p) {
  return _mm512_maskz_broadcast_i32x4(0xFFFF, load128(p));
}
INFER_PLAN_AVX512_VNNI inline __m512i broadcast_32_bytes(const uint8_t* p) {
  return _mm512_maskz_broadcast_i64x4(0xFF, load256(p));
}
// lanes e and e + 8 added, as eight 32-bit lanes
INFER_PLAN_AVX512_VNNI inline __m256i fold_halves(__m512i v) {
  return _mm256_add_epi32(_mm512_maskz_extracti64x4_epi64(0xF, v, 0), _mm512_maskz_extracti64x4_epi64(0xF, v, 1));
}

template <int R, int T>
INFER_PLAN_AVX512_VNNI void Q2KVnniKernel::tile(const uint8_t* w, uint64_t, const uint8_t* x, uint64_t x_stride,
                                                uint64_t cols, float* y, uint64_t y_stride) {
  static_assert(R == 1, "Q2_K runs one row at a time");
  const uint64_t blocks = cols / kQ2_KValues;
  const float* table = fp16_table();
  const __m512i mask2 = _mm512_set1_epi8(3);
  __m256 acc[T];
  INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint8_t* wb = w + b * kQ2_KBytes;
    prefetch_ahead(wb);
    prefetch_ahead(wb + 64);
    const __m512i scales = _mm512_and_si512(broadcast_16_bytes(wb + kQ2_KScales), _mm512_set1_epi8(0x0F));
    __m512i codes[4], scale32[4];
    INFER_PLAN_UNROLL for (int m = 0; m < 4; ++m) {
      const __m512i q2 = broadcast_32_bytes(wb + kQ2_KQs + 32 * (m / 2));
      codes[m] = _mm512_and_si512(_mm512_srlv_epi16(q2, _mm512_load_si512(kQ2KShifts[m % 2].data())), mask2);
      scale32[m] = _mm512_shuffle_epi8(scales, _mm512_load_si512(kQ2KScaleLanes[m].data()));
    }
    __m256i isum[T];
    INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) {
      const uint8_t* xq = x + t * x_stride + b * kQ8_KBytes + kQ8_KQs;
      __m512i sum = _mm512_setzero_si512();
      INFER_PLAN_UNROLL for (int m = 0; m < 4; ++m) {
        const __m512i fours = _mm512_dpbusd_epi32(_mm512_setzero_si512(), codes[m], load512(xq + 64 * m));
        sum = _mm512_dpwssd_epi32(sum, fours, scale32[m]);
      }
      isum[t] = fold_halves(sum);
    }
    q2_k_add_blocks<T>(acc, isum, wb, x + b * kQ8_KBytes, x_stride, table);
  }
  INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) y[t * y_stride] = horizontal_sum(acc[t]);
}

// --- Q4_0 weights in interleaved order by Q8_0 activations ------------------------------------

// kernels/cpu/interleave.hpp's order: per group of eight rows and block, the eight fp16 scales and
// four 32-byte loads, load k holding values 8k..8k+3 (low nibbles) and 8k+4..8k+7 (high nibbles)
// of the eight rows, four bytes per row. maddubs of those unsigned codes (0..15) with the token's
// four matching activation codes, broadcast, leaves in each row's two 16-bit lanes the sums of
// two products; the eight maddubs of a block add up in 16 bits exactly (at most 8 * 2 * 15 * 127 =
// 30480), the codes' offset of 8 comes off as 8 * the activations' sums (Activations::offsets: the
// true sum fits 16 bits, so wrapping arithmetic gives it exactly), and one madd leaves row r's
// block sum in lane r. So per block and token: 8 maddubs, 8 adds, one subtraction, one madd, one
// conversion and one FMA for eight rows, where GGML's order spends about as much per row. Each
// (row, token) pair is the same integer sums and float operations in block order for any T.
constexpr uint64_t kGroupBlockBytes = kInterleavedRows * kQ4_0Bytes;  // 8 scales + 128 code bytes
constexpr uint64_t kGroupCodes = 2 * kInterleavedRows;
constexpr uint64_t kInterleavedTokens = 4;  // 4 x (16-bit sums, float sums) + codes + scales: 13 registers

INFER_PLAN_AVX2 inline __m256i broadcast4(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// The two tiles below (AVX2, AVX-512 VNNI) share these; each keeps its own loop because a
// function's instruction set is fixed where it is declared, and the AVX2 tile must not be built
// with AVX-512 enabled.
// Load k of block `wb`: values 8k..8k+3 of the eight rows as codes 0..15 (`low`), 8k+4..8k+7
// (`high`), four bytes per row.
INFER_PLAN_AVX2 inline void group_codes(const uint8_t* wb, int k, __m256i& low, __m256i& high) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i codes = load256(wb + kGroupCodes + 32 * k);
  low = _mm256_and_si256(codes, low4);
  high = _mm256_and_si256(_mm256_srli_epi16(codes, 4), low4);
}
// One token's block: acc + (the eight rows' integer sums) * d_w * d_x, x block at `xb`.
INFER_PLAN_AVX2 inline __m256 add_block(__m256 acc, __m256i block, __m256 dw, const uint8_t* xb, const float* table) {
  const __m256 d = _mm256_mul_ps(dw, _mm256_broadcast_ss(fp16_entry(table, xb)));
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(block), d, acc);
}

template <int T>
INFER_PLAN_AVX2 void q4_0_interleaved_tile(const uint8_t* w, const uint8_t* x, uint64_t x_stride, const uint32_t* offsets,
                                           uint64_t blocks, float* y, uint64_t y_stride) {
  const float* table = fp16_table();
  __m256 acc[T];
  INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  for (uint64_t b = 0; b < blocks; ++b) {
    // One linear stream, which the hardware prefetcher follows: prefetching 2 KiB ahead into L1
    // cost 10 points of the read bandwidth, 4 KiB ahead into L2 gained nothing (bench_gemv).
    const uint8_t* wb = w + b * kGroupBlockBytes;
    __m256i sums[T];
    INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) sums[t] = _mm256_setzero_si256();
    INFER_PLAN_UNROLL for (int k = 0; k < 4; ++k) {
      __m256i low, high;
      group_codes(wb, k, low, high);
      INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) {
        const uint8_t* xq = x + t * x_stride + b * kQ8_0Bytes + kQ8_0Qs + 8 * k;
        sums[t] = _mm256_add_epi16(sums[t], _mm256_maddubs_epi16(low, broadcast4(xq)));
        sums[t] = _mm256_add_epi16(sums[t], _mm256_maddubs_epi16(high, broadcast4(xq + 4)));
      }
    }
    const __m256 dw = _mm256_cvtph_ps(load128(wb));
    INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) {
      const __m256i offset = _mm256_set1_epi32(static_cast<int32_t>(offsets[t * blocks + b]));
      const __m256i block = _mm256_madd_epi16(_mm256_sub_epi16(sums[t], offset), _mm256_set1_epi16(1));
      acc[t] = add_block(acc[t], block, dw, x + t * x_stride + b * kQ8_0Bytes, table);
    }
  }
  INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + t * y_stride, acc[t]);
}

// The same with AVX-512 VNNI, where the CPU has it: one vpdpbusd per four values of eight rows adds
// straight into 32-bit lanes, in place of maddubs, a 16-bit add and (per block) madd; the offset
// comes off as its two 16-bit halves summed. Integer sums are exact either way, so the bits equal
// the AVX2 tile's (tested), and about half the instructions remain: nibble_vnni_tile<Q4_0Group>
// below, the tile IQ4_NL and MXFP4 share.
using GroupTileFn = void (*)(const uint8_t*, const uint8_t*, uint64_t, const uint32_t*, uint64_t, float*, uint64_t);
constexpr GroupTileFn kAvx2GroupTiles[kInterleavedTokens] = {q4_0_interleaved_tile<1>, q4_0_interleaved_tile<2>,
                                                             q4_0_interleaved_tile<3>, q4_0_interleaved_tile<4>};

// A GroupsDotFn for a type whose blocks take kBlockBytes in interleaved order: each group in turn
// (its bytes stay in L1 or L2), tokens over it in groups of at most kInterleavedTokens, each group's
// tile from kTiles (by token count).
// kBlockValues: values per block (the activations' blocks too); offsets: none for Q8_K activations.
template <const GroupTileFn* kTiles, uint64_t kBlockBytes, uint64_t kBlockValues = kQ8_0Values>
void interleaved_groups(const uint8_t* w, uint64_t groups, const uint8_t* x, uint64_t x_stride,
                        const uint32_t* offsets, uint64_t tokens, uint64_t cols, float* y, uint64_t y_stride) {
  const uint64_t blocks = cols / kBlockValues;
  for (uint64_t g = 0; g < groups; ++g) {
    for (uint64_t t = 0; t < tokens; t += kInterleavedTokens) {
      const uint64_t size = std::min(kInterleavedTokens, tokens - t);
      kTiles[size - 1](w + g * blocks * kBlockBytes, x + t * x_stride, x_stride,
                       offsets ? offsets + t * blocks : nullptr, blocks, y + t * y_stride + g * kInterleavedRows,
                       y_stride);
    }
  }
}

// --- Q4_0, IQ4_NL and MXFP4 weights in interleaved order by Q8_0 activations (AVX-512 VNNI) ------

// One tile for the three: Q4_0's codes as they are (its offset of 8 as above); IQ4_NL's and MXFP4's
// with each nibble mapped through the type's table
// shifted to unsigned bytes (IQ4_NL's values + 128: 1..241; MXFP4's doubled values + 12: 0..24), so
// that vpdpbusd (unsigned by signed bytes, into 32-bit lanes: no saturation) takes them; the shift
// comes off as kBias * the block's activation sum (Activations::offsets holds that sum for these
// types), leaving each row's exact integer sum of value x code. Then the eight rows' scales times
// d_x, one FMA, as Q4_0's: a (row, token) pair's operations do not depend on the tokens beside it.
// No AVX2-only tile: maddubs would saturate at IQ4_NL's magnitudes, so without VNNI these types
// keep GGML's order.
alignas(16) constexpr std::array<uint8_t, 16> kIq4Unsigned = [] {
  std::array<uint8_t, 16> t{};
  for (int i = 0; i < 16; ++i) t[i] = static_cast<uint8_t>(kIq4Values[i] + 128);
  return t;
}();
alignas(16) constexpr std::array<uint8_t, 16> kMxfp4Unsigned = [] {
  std::array<uint8_t, 16> t{};
  for (int i = 0; i < 16; ++i) t[i] = static_cast<uint8_t>(kMxfp4Values[i] + 12);
  return t;
}();

// A type's part of the tile: its scale fields' bytes, how a nibble becomes an unsigned byte (`map`),
// what comes off a block's sum for that (`offset`, from Activations::offsets), and the scales.
// kMins: the rows' fp16 minimums after the scales (Q4_1, Q5_1: m times the block's activation sum
// joins the sum); kFifths: 32 bytes of fifth bits after the codes (Q5_0, Q5_1), as Q5_K's.
struct NibbleLayout {
  static constexpr bool kMins = false, kFifths = false;
};
struct Q4_0Group : NibbleLayout {  // codes as they are; the offset of 8 packed as two 16-bit halves (Q4_0's own)
  static constexpr uint64_t kScaleBytes = 2;
  static INFER_PLAN_AVX512_VNNI __m256i map(__m256i nibbles) { return nibbles; }
  static INFER_PLAN_AVX512_VNNI __m256i offset(uint32_t packed) {
    return _mm256_madd_epi16(_mm256_set1_epi32(static_cast<int32_t>(packed)), _mm256_set1_epi16(1));
  }
  static INFER_PLAN_AVX512_VNNI __m256 scales(const uint8_t* wb) { return _mm256_cvtph_ps(load128(wb)); }
};
template <int32_t kBias, const std::array<uint8_t, 16>& kTable>
struct TableGroup : NibbleLayout {  // the table's entry; the shift kBias times the block's activation sum
  static INFER_PLAN_AVX512_VNNI __m256i map(__m256i nibbles) {
    const __m256i table = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(kTable.data())));
    return _mm256_shuffle_epi8(table, nibbles);
  }
  static INFER_PLAN_AVX512_VNNI __m256i offset(uint32_t sum) {
    return _mm256_set1_epi32(kBias * static_cast<int32_t>(sum));
  }
};
struct IQ4_NLGroup : TableGroup<128, kIq4Unsigned> {
  static constexpr uint64_t kScaleBytes = 2;
  static INFER_PLAN_AVX512_VNNI __m256 scales(const uint8_t* wb) { return _mm256_cvtph_ps(load128(wb)); }
};
struct MXFP4Group : TableGroup<12, kMxfp4Unsigned> {
  static constexpr uint64_t kScaleBytes = 1;
  // The eight exponent bytes as mxfp4_scale gives them, 2^(e - 128): the float 2^(e - 127) (bits
  // e << 23) halved, exact down to e = 1 (2^-127, a subnormal); e = 0 (2^-128, which e << 23 would
  // make 0) is patched where a block has one.
  static INFER_PLAN_AVX512_VNNI __m256 scales(const uint8_t* wb) {
    const __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(wb)));
    const __m256 half = _mm256_mul_ps(_mm256_castsi256_ps(_mm256_slli_epi32(e, 23)), _mm256_set1_ps(0.5f));
    const __m256i zero = _mm256_cmpeq_epi32(e, _mm256_setzero_si256());
    if (__builtin_expect(_mm256_testz_si256(zero, zero) == 0, 0))
      return _mm256_blendv_ps(half, _mm256_set1_ps(0x1p-128f), _mm256_castsi256_ps(zero));
    return half;
  }
};

struct Q5_0Group : NibbleLayout {  // codes 0..31 with the fifth bits; the zero 16 times the block's sum
  static constexpr uint64_t kScaleBytes = 2;
  static constexpr bool kFifths = true;
  static INFER_PLAN_AVX512_VNNI __m256i map(__m256i codes) { return codes; }
  static INFER_PLAN_AVX512_VNNI __m256i offset(uint32_t sum) { return _mm256_set1_epi32(16 * static_cast<int32_t>(sum)); }
  static INFER_PLAN_AVX512_VNNI __m256 scales(const uint8_t* wb) { return _mm256_cvtph_ps(load128(wb)); }
};
struct Q4_1Group : NibbleLayout {  // codes as they are; d * sum + m * the block's activation sum
  static constexpr uint64_t kScaleBytes = 2;
  static constexpr bool kMins = true;
  static INFER_PLAN_AVX512_VNNI __m256i map(__m256i codes) { return codes; }
  static INFER_PLAN_AVX512_VNNI __m256 scales(const uint8_t* wb) { return _mm256_cvtph_ps(load128(wb)); }
};
struct Q5_1Group : Q4_1Group {
  static constexpr bool kFifths = true;
};

template <class G, int T>
INFER_PLAN_AVX512_VNNI void nibble_vnni_tile(const uint8_t* w, const uint8_t* x, uint64_t x_stride,
                                             const uint32_t* offsets, uint64_t blocks, float* y, uint64_t y_stride) {
  constexpr uint64_t kCodes = G::kScaleBytes * kInterleavedRows + (G::kMins ? 2 * kInterleavedRows : 0);
  constexpr uint64_t kBlockBytes = kCodes + 128 + (G::kFifths ? 32 : 0);
  const float* fp16 = fp16_table();
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256 acc[T];
  INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint8_t* wb = w + b * kBlockBytes;
    __m256i sums[T];
    INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) sums[t] = _mm256_setzero_si256();
    INFER_PLAN_UNROLL for (int k = 0; k < 4; ++k) {
      const __m256i codes = load256(wb + kCodes + 32 * k);
      __m256i low = _mm256_and_si256(codes, low4);
      __m256i high = _mm256_and_si256(_mm256_srli_epi16(codes, 4), low4);
      if constexpr (G::kFifths) {  // bits k and 4 + k of the fifth-bit bytes, to bit 4 of the codes
        const __m256i fifths = load256(wb + kCodes + 128), bit4 = _mm256_set1_epi8(0x10);
        low = _mm256_or_si256(low, _mm256_and_si256(_mm256_slli_epi16(fifths, 4 - k), bit4));
        high = _mm256_or_si256(high, _mm256_and_si256(_mm256_srli_epi16(fifths, k), bit4));
      }
      low = G::map(low);
      high = G::map(high);
      INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) {
        const uint8_t* xq = x + t * x_stride + b * kQ8_0Bytes + kQ8_0Qs + 8 * k;
        sums[t] = _mm256_dpbusd_epi32(sums[t], low, broadcast4(xq));
        sums[t] = _mm256_dpbusd_epi32(sums[t], high, broadcast4(xq + 4));
      }
    }
    const __m256 dw = G::scales(wb);
    INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) {
      const uint8_t* xb = x + t * x_stride + b * kQ8_0Bytes;
      if constexpr (G::kMins) {  // as the GGML-order product: d d_x sum, then m d_x (the activations' sum)
        const __m256 dx = _mm256_broadcast_ss(fp16_entry(fp16, xb));
        const __m256 mins = _mm256_cvtph_ps(load128(wb + G::kScaleBytes * kInterleavedRows));
        const __m256 x_sum = _mm256_set1_ps(static_cast<float>(static_cast<int32_t>(offsets[t * blocks + b])));
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums[t]), _mm256_mul_ps(dw, dx), acc[t]);
        acc[t] = _mm256_fmadd_ps(x_sum, _mm256_mul_ps(mins, dx), acc[t]);
      } else {
        acc[t] = add_block(acc[t], _mm256_sub_epi32(sums[t], G::offset(offsets[t * blocks + b])), dw, xb, fp16);
      }
    }
  }
  INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + t * y_stride, acc[t]);
}

template <class G>
constexpr GroupTileFn kVnniTiles[kInterleavedTokens] = {nibble_vnni_tile<G, 1>, nibble_vnni_tile<G, 2>,
                                                        nibble_vnni_tile<G, 3>, nibble_vnni_tile<G, 4>};

// --- Q4_K, Q5_K, IQ4_XS, Q6_K and Q3_K in interleaved order by Q8_K activations (AVX-512 VNNI) ---

// Per block of eight rows and token: each 32-value sub-block j as a Q4_0 group (eight vpdpbusd of
// unsigned codes: Q4_K's 0..15, Q5_K's 0..31 with the fifth bits ORed in, IQ4_XS's table entries
// 1..241, Q6_K's 0..63, Q3_K's 0..7, by broadcast activations leave row r's integer sum in lane r,
// at most 32 * 241 * 128), times the rows' scales (vpmulld; Q6_K and Q3_K have one per 16 values,
// so each half of the sub-block is scaled on its own), exact: a block's sum stays within
// 8 * 32 * 979424 < 2^31 (Q6_K: 16 * 16 * 63 * 128 * 128); the offset term sum_c m_c * (Q8_K's sum of
// scale c's values) by vpdpwssd on 16-bit pairs (Q4_K's and Q5_K's mins; IQ4_XS's table shift
// 128 * scale; Q6_K's 32 * scale and Q3_K's 4 * scale, their codes' zero); then d * sum - dmin *
// mins (the others: d * (sum - offset)), times d_x, as ggml's vec_dot_*_q8_K: each (row, token) the
// same integer sums and float operations whatever the tokens beside it.
// pshufb masks: bytes 2h and 2h + 1 of every 32-bit lane zero-extended to the lane's low and high
// 16 bits (h = 0, 1): a lane's four mins as the two pairs vpdpwssd takes.
alignas(32) constexpr std::array<std::array<uint8_t, 32>, 2> kBytePairs = [] {
  std::array<std::array<uint8_t, 32>, 2> m{};
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 32; i += 4) {
      const int lane = i % 16;  // the lane's first byte within its 128-bit half, where pshufb indexes
      m[h][i] = static_cast<uint8_t>(lane + 2 * h);
      m[h][i + 1] = 0x80;
      m[h][i + 2] = static_cast<uint8_t>(lane + 2 * h + 1);
      m[h][i + 3] = 0x80;
    }
  return m;
}();

// A 32-byte load of a sub-block's codes (a Q4_0 group's order) as load k's low and high nibbles.
INFER_PLAN_AVX512_VNNI inline void nibbles(const uint8_t* at, __m256i& low, __m256i& high) {
  const __m256i codes = load256(at), low4 = _mm256_set1_epi8(0x0F);
  low = _mm256_and_si256(codes, low4);
  high = _mm256_and_si256(_mm256_srli_epi16(codes, 4), low4);
}
// `bits` moved to bit `to` from bit `from` of every byte and kept there under `mask` (bytes' own
// bits only: the shift is within 16-bit lanes, and the mask drops what crosses a byte).
template <int kFrom, int kTo>
INFER_PLAN_AVX512_VNNI inline __m256i move_bits(__m256i bits, uint8_t mask) {
  const __m256i moved = kTo >= kFrom ? _mm256_slli_epi16(bits, kTo - kFrom) : _mm256_srli_epi16(bits, kFrom - kTo);
  return _mm256_and_si256(moved, _mm256_set1_epi8(static_cast<char>(mask)));
}

// A type's part of the tile: kScales (per block: 8, one per 32-value sub-block, or 16), how many
// blocks ahead the tile prefetches (kPrefetchBlocks: Q6_K and Q3_K, whose group blocks are not whole
// cache lines, streamed from memory at 0.3-0.5 of a plain read without it and 0.8-1.0 with it on
// this project's AMD EPYC; Q4_K gained nothing), its header
// unpacked once per block (`Header`), load k of sub-block j's codes as unsigned bytes (`codes`), scale
// c in the rows' lanes, the 16-bit pairs (2i, 2i + 1) of what each scale's activation sum is
// multiplied by and taken off (`pairs`), and the block's float sum from the integer ones (`finish`).
struct Q4KGroup {  // codes as they are; 6-bit scales and mins; d * sum - dmin * mins
  static constexpr uint64_t kBytes = kQ4_KBytes, kPrefetchBlocks = 0;
  static constexpr int kScales = 8;
  struct Header {
    __m256i scales_lo, scales_hi, mins_lo, mins_hi;  // four 6-bit values per 32-bit lane
    __m256 d, dmin;
  };
  // as k_scale_min: the low six bits of words 0 and 1, and word 2's nibbles below their top two bits
  static INFER_PLAN_AVX512_VNNI Header header(const uint8_t* wb) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), low6 = _mm256_set1_epi8(0x3F), low2 = _mm256_set1_epi8(0x03);
    const __m256i u0 = load256(wb + kKGroupScales), u1 = load256(wb + kKGroupScales + 32);
    const __m256i u2 = load256(wb + kKGroupScales + 64);
    Header h;
    h.scales_lo = _mm256_and_si256(u0, low6);
    h.mins_lo = _mm256_and_si256(u1, low6);
    h.scales_hi = _mm256_or_si256(_mm256_and_si256(u2, low4),
                                  _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(u0, 6), low2), 4));
    h.mins_hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(u2, 4), low4),
                                _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(u1, 6), low2), 4));
    h.d = _mm256_cvtph_ps(load128(wb + kKGroupD));
    h.dmin = _mm256_cvtph_ps(load128(wb + kKGroupDmin));
    return h;
  }
  template <int j, int k>
  static INFER_PLAN_AVX512_VNNI void codes(const uint8_t* wb, __m256i& low, __m256i& high) {
    nibbles(wb + kKGroupCodes + 128 * j + 32 * k, low, high);
  }
  static INFER_PLAN_AVX512_VNNI __m256i scale(const Header& h, int j) {
    return _mm256_and_si256(_mm256_srli_epi32(j < 4 ? h.scales_lo : h.scales_hi, 8 * (j % 4)), _mm256_set1_epi32(0xFF));
  }
  static INFER_PLAN_AVX512_VNNI void pairs(const Header& h, __m256i out[4]) {
    const __m256i pairs0 = load256(kBytePairs[0].data()), pairs1 = load256(kBytePairs[1].data());
    out[0] = _mm256_shuffle_epi8(h.mins_lo, pairs0);
    out[1] = _mm256_shuffle_epi8(h.mins_lo, pairs1);
    out[2] = _mm256_shuffle_epi8(h.mins_hi, pairs0);
    out[3] = _mm256_shuffle_epi8(h.mins_hi, pairs1);
  }
  static INFER_PLAN_AVX512_VNNI __m256 finish(const Header& h, __m256i isum, __m256i mins) {
    return _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mins), h.dmin, _mm256_mul_ps(_mm256_cvtepi32_ps(isum), h.d));
  }
};
struct Q5KGroup : Q4KGroup {  // and a fifth bit per code: bits k and 4 + k of the fifth-bit bytes
  static constexpr uint64_t kBytes = kQ5_KBytes;
  template <int j, int k>
  static INFER_PLAN_AVX512_VNNI void codes(const uint8_t* wb, __m256i& low, __m256i& high) {
    nibbles(wb + kKGroupCodes + 128 * j + 32 * k, low, high);
    const __m256i fifths = load256(wb + kKGroupFifths + 32 * j);
    low = _mm256_or_si256(low, move_bits<k, 4>(fifths, 0x10));
    high = _mm256_or_si256(high, move_bits<4 + k, 4>(fifths, 0x10));
  }
};
// IQ4_XS: IQ4_NL's table shifted by 128 (as IQ4_NLGroup), sub-block scales ls - 32 with ls the low
// nibble from scales_l and two bits from scales_h; the shift comes off as 128 * scale * the
// sub-block's activation sum, in integers: d * (sum - shift), as ggml's sums are exact.
struct IQ4XSGroup {
  static constexpr uint64_t kBytes = kIQ4_XSBytes, kPrefetchBlocks = 0;
  static constexpr int kScales = 8;
  struct Header {
    __m256i low, high;  // each row's scales_l word and scales_h, in its lane
    __m256 d;
  };
  static INFER_PLAN_AVX512_VNNI Header header(const uint8_t* wb) {
    return {load256(wb + kXSGroupScalesL), _mm256_cvtepu16_epi32(load128(wb + kXSGroupScalesH)),
            _mm256_cvtph_ps(load128(wb + kXSGroupD))};
  }
  template <int j, int k>
  static INFER_PLAN_AVX512_VNNI void codes(const uint8_t* wb, __m256i& low, __m256i& high) {
    nibbles(wb + kXSGroupCodes + 128 * j + 32 * k, low, high);
    low = IQ4_NLGroup::map(low);
    high = IQ4_NLGroup::map(high);
  }
  static INFER_PLAN_AVX512_VNNI __m256i scale(const Header& h, int j) {
    const __m256i low = _mm256_and_si256(_mm256_srli_epi32(h.low, 4 * j), _mm256_set1_epi32(0x0F));
    const __m256i high = _mm256_and_si256(_mm256_srli_epi32(h.high, 2 * j), _mm256_set1_epi32(0x03));
    return _mm256_sub_epi32(_mm256_or_si256(low, _mm256_slli_epi32(high, 4)), _mm256_set1_epi32(32));
  }
  static INFER_PLAN_AVX512_VNNI void pairs(const Header& h, __m256i out[4]) {  // 128 * scale, within 16 bits
    const __m256i low16 = _mm256_set1_epi32(0xFFFF);
    INFER_PLAN_UNROLL for (int i = 0; i < 4; ++i) {
      const __m256i pair = _mm256_or_si256(_mm256_and_si256(scale(h, 2 * i), low16), _mm256_slli_epi32(scale(h, 2 * i + 1), 16));
      out[i] = _mm256_slli_epi16(pair, 7);
    }
  }
  static INFER_PLAN_AVX512_VNNI __m256 finish(const Header& h, __m256i isum, __m256i shift) {
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(isum, shift)), h.d);
  }
};
// Q6_K and Q3_K: sixteen signed 8-bit scales per row and block (Q3_K's 6-bit ones less 32), as four
// words of four bytes in the rows' lanes; codes with a zero of kZero (the offset: kZero * scale).
template <int kLog2Zero>
struct SignedScales {
  static constexpr int kScales = 16;
  struct Header {
    __m256i words[4];  // scale 4w + b in byte b of word w
    __m256 d;
  };
  static INFER_PLAN_AVX512_VNNI __m256i scale(const Header& h, int c) {
    return _mm256_srai_epi32(_mm256_slli_epi32(h.words[c / 4], 24 - 8 * (c % 4)), 24);
  }
  static INFER_PLAN_AVX512_VNNI void pairs(const Header& h, __m256i out[8]) {  // kZero * scale, sign-extended
    INFER_PLAN_UNROLL for (int i = 0; i < 8; ++i) {
      const __m256i pair = _mm256_shuffle_epi8(h.words[i / 2], load256(kBytePairs[i % 2].data()));
      out[i] = _mm256_srai_epi16(_mm256_slli_epi16(pair, 8), 8 - kLog2Zero);
    }
  }
  static INFER_PLAN_AVX512_VNNI __m256 finish(const Header& h, __m256i isum, __m256i offset) {
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(isum, offset)), h.d);
  }
};
struct Q6KGroup : SignedScales<5> {  // codes 0..63, zero 32: the low nibbles, then two top bits
  static constexpr uint64_t kBytes = kQ6_KBytes, kPrefetchBlocks = 4;
  static INFER_PLAN_AVX512_VNNI Header header(const uint8_t* wb) {
    return {{load256(wb + kQ6GroupScales), load256(wb + kQ6GroupScales + 32), load256(wb + kQ6GroupScales + 64),
             load256(wb + kQ6GroupScales + 96)},
            _mm256_cvtph_ps(load128(wb + kQ6GroupD))};
  }
  // word k / 2's bits 4 (k % 2) and 4 (k % 2) + 2 (two each) to bits 4-5 of the low and high codes
  template <int j, int k>
  static INFER_PLAN_AVX512_VNNI void codes(const uint8_t* wb, __m256i& low, __m256i& high) {
    nibbles(wb + kQ6GroupCodes + 128 * j + 32 * k, low, high);
    const __m256i top = load256(wb + kQ6GroupHigh + 64 * j + 32 * (k / 2));
    low = _mm256_or_si256(low, move_bits<4 * (k % 2), 4>(top, 0x30));
    high = _mm256_or_si256(high, move_bits<4 * (k % 2) + 2, 4>(top, 0x30));
  }
};
struct Q3KGroup : SignedScales<2> {  // codes 0..7, zero 4: two low bits, then the third
  static constexpr uint64_t kBytes = kQ3_KBytes, kPrefetchBlocks = 2;
  // as ggml's: scale c's low nibble from byte c % 8 of the first two words (the high nibble for c >= 8),
  // its top two bits from word 2's byte c % 4, bits 2 (c / 4); less 32
  static INFER_PLAN_AVX512_VNNI Header header(const uint8_t* wb) {
    const __m256i u0 = load256(wb + kQ3GroupScales), u1 = load256(wb + kQ3GroupScales + 32);
    const __m256i u2 = load256(wb + kQ3GroupScales + 64);
    return {{word(u0, u2, 0, 0), word(u1, u2, 0, 2), word(u0, u2, 4, 4), word(u1, u2, 4, 6)},
            _mm256_cvtph_ps(load128(wb + kQ3GroupD))};
  }
  static INFER_PLAN_AVX512_VNNI __m256i word(__m256i nibbles_from, __m256i tops, int nibble_shift, int top_shift) {
    const __m256i low = _mm256_and_si256(_mm256_srli_epi32(nibbles_from, nibble_shift), _mm256_set1_epi8(0x0F));
    const __m256i top = _mm256_and_si256(_mm256_srli_epi32(tops, top_shift), _mm256_set1_epi8(0x03));
    return _mm256_sub_epi8(_mm256_or_si256(low, _mm256_slli_epi32(top, 4)), _mm256_set1_epi8(32));
  }
  template <int j, int k>
  static INFER_PLAN_AVX512_VNNI void codes(const uint8_t* wb, __m256i& low, __m256i& high) {
    const uint8_t* at = wb + kQ3GroupLow + 64 * j;
    const __m256i third = load256(wb + kQ3GroupHigh + 32 * j);
    low = _mm256_or_si256(move_bits<2 * k, 0>(load256(at), 0x03), move_bits<k, 2>(third, 0x04));
    high = _mm256_or_si256(move_bits<2 * k, 0>(load256(at + 32), 0x03), move_bits<4 + k, 2>(third, 0x04));
  }
};

// Load k (values 8k..8k + 7 of every row) of sub-block j, all tokens: into sub[] by vpdpbusd; at the
// end of each scale's values, sub[] times the scale into isum[].
template <class G, int T, int j, int k>
INFER_PLAN_AVX512_VNNI inline void k_vnni_load(const uint8_t* wb, const typename G::Header& header, const uint8_t* x,
                                               uint64_t x_stride, uint64_t b, __m256i (&sub)[T], __m256i (&isum)[T]) {
  __m256i low, high;
  G::template codes<j, k>(wb, low, high);
  INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) {
    const uint8_t* xq = x + t * x_stride + b * kQ8_KBytes + kQ8_KQs + 32 * j + 8 * k;
    sub[t] = _mm256_dpbusd_epi32(sub[t], low, broadcast4(xq));
    sub[t] = _mm256_dpbusd_epi32(sub[t], high, broadcast4(xq + 4));
  }
  constexpr int kLoadsPerScale = 4 * 8 / G::kScales;
  if constexpr ((k + 1) % kLoadsPerScale == 0) {
    const __m256i scale = G::scale(header, (4 * j + k) / kLoadsPerScale);
    INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) {
      isum[t] = _mm256_add_epi32(isum[t], _mm256_mullo_epi32(sub[t], scale));
      sub[t] = _mm256_setzero_si256();
    }
  }
}
template <class G, int T, int j, int... k>
INFER_PLAN_AVX512_VNNI inline void k_vnni_sub_block(const uint8_t* wb, const typename G::Header& header, const uint8_t* x,
                                                    uint64_t x_stride, uint64_t b, __m256i (&isum)[T],
                                                    std::integer_sequence<int, k...>) {
  __m256i sub[T];
  INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) sub[t] = _mm256_setzero_si256();
  (k_vnni_load<G, T, j, k>(wb, header, x, x_stride, b, sub, isum), ...);
}
template <class G, int T, int... j>
INFER_PLAN_AVX512_VNNI inline void k_vnni_block(const uint8_t* wb, const typename G::Header& header, const uint8_t* x,
                                                uint64_t x_stride, uint64_t b, __m256i (&isum)[T],
                                                std::integer_sequence<int, j...>) {
  (k_vnni_sub_block<G, T, j>(wb, header, x, x_stride, b, isum, std::make_integer_sequence<int, 4>()), ...);
}

template <class G, int T>
INFER_PLAN_AVX512_VNNI void k_vnni_tile(const uint8_t* w, const uint8_t* x, uint64_t x_stride, const uint32_t*,
                                        uint64_t blocks, float* y, uint64_t y_stride) {
  constexpr uint64_t kBlockBytes = kInterleavedRows * G::kBytes;
  __m256 acc[T];
  INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint8_t* wb = w + b * kBlockBytes;
    if constexpr (G::kPrefetchBlocks > 0)
      for (uint64_t line = 0; line < kBlockBytes; line += 64) __builtin_prefetch(wb + G::kPrefetchBlocks * kBlockBytes + line);
    const typename G::Header header = G::header(wb);
    __m256i isum[T];
    INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
    k_vnni_block<G, T>(wb, header, x, x_stride, b, isum, std::make_integer_sequence<int, 8>());
    __m256i pairs[G::kScales / 2];  // (2i, 2i + 1) as 16-bit pairs in every row's lane
    G::pairs(header, pairs);
    INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) {
      const uint8_t* xb = x + t * x_stride + b * kQ8_KBytes;
      // Q8_K's sixteen 16-value sums, as eight 32-bit pairs; with one scale per 32 values, the sums
      // of sub-blocks 2i and 2i + 1 (bsums 4i..4i + 3 added in pairs) as four
      const __m256i bsums = load256(xb + kQ8_KBsums);
      __m256i off = _mm256_setzero_si256();
      if constexpr (G::kScales == 16) {
        INFER_PLAN_UNROLL for (int i = 0; i < 8; ++i)
          off = _mm256_dpwssd_epi32(off, pairs[i], _mm256_permutevar8x32_epi32(bsums, _mm256_set1_epi32(i)));
      } else {
        const __m128i sums = _mm_hadd_epi16(_mm256_castsi256_si128(bsums), _mm256_extracti128_si256(bsums, 1));
        off = _mm256_dpwssd_epi32(off, pairs[0], _mm256_broadcastd_epi32(sums));
        off = _mm256_dpwssd_epi32(off, pairs[1], _mm256_broadcastd_epi32(_mm_srli_si128(sums, 4)));
        off = _mm256_dpwssd_epi32(off, pairs[2], _mm256_broadcastd_epi32(_mm_srli_si128(sums, 8)));
        off = _mm256_dpwssd_epi32(off, pairs[3], _mm256_broadcastd_epi32(_mm_srli_si128(sums, 12)));
      }
      const __m256 block = G::finish(header, isum[t], off);
      acc[t] = _mm256_fmadd_ps(_mm256_broadcast_ss(reinterpret_cast<const float*>(xb + kQ8_KD)), block, acc[t]);
    }
  }
  INFER_PLAN_UNROLL for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + t * y_stride, acc[t]);
}

template <class G>
constexpr GroupTileFn kKVnniTiles[kInterleavedTokens] = {k_vnni_tile<G, 1>, k_vnni_tile<G, 2>, k_vnni_tile<G, 3>,
                                                         k_vnni_tile<G, 4>};

// --- every type: register blocks over the rows, token groups over the tokens ------------------

// Rows in register blocks of K::kRows[T], leftover rows one at a time.
template <class K, int T>
INFER_PLAN_AVX2 void rows_in_blocks(const uint8_t* w, uint64_t w_stride, uint64_t rows, const uint8_t* x,
                                    uint64_t x_stride, uint64_t cols, float* y, uint64_t y_stride) {
  constexpr int R = K::kRows[T];
  uint64_t r = 0;
  for (; r + R <= rows; r += R) K::template tile<R, T>(w + r * w_stride, w_stride, x, x_stride, cols, y + r, y_stride);
  for (; r < rows; ++r) K::template tile<1, T>(w + r * w_stride, w_stride, x, x_stride, cols, y + r, y_stride);
}

using GroupFn = void (*)(const uint8_t*, uint64_t, uint64_t, const uint8_t*, uint64_t, uint64_t, float*, uint64_t);

template <class K, size_t... I>
constexpr std::array<GroupFn, sizeof...(I)> group_table(std::index_sequence<I...>) {
  return {rows_in_blocks<K, static_cast<int>(I) + 1>...};
}

// A RowsDotFn: tokens in groups of at most K::kMaxTokens, each group over every row.
template <class K>
INFER_PLAN_AVX2 void blocked_product(const uint8_t* w, uint64_t w_stride, uint64_t rows, const uint8_t* x,
                                     uint64_t x_stride, uint64_t tokens, uint64_t cols, float* y, uint64_t y_stride) {
  static constexpr std::array<GroupFn, K::kMaxTokens> kGroups = group_table<K>(std::make_index_sequence<K::kMaxTokens>());
  for (uint64_t t = 0; t < tokens; t += K::kMaxTokens) {
    const uint64_t size = std::min(K::kMaxTokens, tokens - t);
    kGroups[size - 1](w, w_stride, rows, x + t * x_stride, x_stride, cols, y + t * y_stride, y_stride);
  }
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

RowsDotFn avx2_rows_dot(GgmlType weight_type, bool avx512) {
  if (!cpu_able()) return nullptr;
  if (weight_type == GgmlType::Q2_K && avx512 && avx512_vnni_able()) return blocked_product<Q2KVnniKernel>;
  if (weight_type == GgmlType::BF16 && avx512 && avx512_bf16_able()) return blocked_product<BF16DotKernel>;
  switch (weight_type) {
    case GgmlType::F32: return blocked_product<FloatKernel<F32Values>>;
    case GgmlType::F16: return blocked_product<FloatKernel<F16Values>>;
    case GgmlType::BF16: return blocked_product<FloatKernel<BF16Values>>;
    case GgmlType::Q8_0: return blocked_product<Q0Kernel<Q8_0Codes>>;
    case GgmlType::Q4_0: return blocked_product<Q0Kernel<Q4_0Codes>>;
    case GgmlType::Q5_0: return blocked_product<Q0Kernel<Q5_0Codes>>;
    case GgmlType::Q4_1: return blocked_product<Q0Kernel<Q4_1Codes>>;
    case GgmlType::Q5_1: return blocked_product<Q0Kernel<Q5_1Codes>>;
    case GgmlType::Q2_K: return blocked_product<Q2KKernel>;
    case GgmlType::Q3_K: return blocked_product<Q3KKernel>;
    case GgmlType::Q4_K: return blocked_product<KScaleMinKernel<4>>;
    case GgmlType::Q5_K: return blocked_product<KScaleMinKernel<5>>;
    case GgmlType::Q6_K: return blocked_product<Q6KKernel>;
    case GgmlType::IQ4_NL: return blocked_product<Q0Kernel<IQ4_NLCodes>>;
    case GgmlType::IQ4_XS: return blocked_product<IQ4XSKernel>;
    case GgmlType::MXFP4: return blocked_product<Q0Kernel<MXFP4Codes>>;
    default: return nullptr;
  }
}

bool avx512_vnni_able() {
  static const bool able = cpu_able() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
  return able;
}

bool avx512_bf16_able() {
  static const bool able = cpu_able() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
  return able;
}

GroupsDotFn avx2_interleaved_dot(GgmlType weight_type, bool avx512_vnni) {
  if (!cpu_able()) return nullptr;
  const bool vnni = avx512_vnni && avx512_vnni_able();
  switch (weight_type) {
    case GgmlType::Q4_0:
      return vnni ? interleaved_groups<kVnniTiles<Q4_0Group>, kGroupBlockBytes>
                  : interleaved_groups<kAvx2GroupTiles, kGroupBlockBytes>;
    case GgmlType::IQ4_NL:
      return vnni ? interleaved_groups<kVnniTiles<IQ4_NLGroup>, kInterleavedRows * kIQ4_NLBytes> : nullptr;
    case GgmlType::MXFP4:
      return vnni ? interleaved_groups<kVnniTiles<MXFP4Group>, kInterleavedRows * kMXFP4Bytes> : nullptr;
    case GgmlType::Q5_0:
      return vnni ? interleaved_groups<kVnniTiles<Q5_0Group>, kInterleavedRows * kQ5_0Bytes> : nullptr;
    case GgmlType::Q4_1:
      return vnni ? interleaved_groups<kVnniTiles<Q4_1Group>, kInterleavedRows * kQ4_1Bytes> : nullptr;
    case GgmlType::Q5_1:
      return vnni ? interleaved_groups<kVnniTiles<Q5_1Group>, kInterleavedRows * kQ5_1Bytes> : nullptr;
    case GgmlType::Q4_K:
      return vnni ? interleaved_groups<kKVnniTiles<Q4KGroup>, kInterleavedRows * kQ4_KBytes, kQ4_KValues> : nullptr;
    case GgmlType::Q5_K:
      return vnni ? interleaved_groups<kKVnniTiles<Q5KGroup>, kInterleavedRows * kQ5_KBytes, kQ5_KValues> : nullptr;
    case GgmlType::IQ4_XS:
      return vnni ? interleaved_groups<kKVnniTiles<IQ4XSGroup>, kInterleavedRows * kIQ4_XSBytes, kIQ4_XSValues>
                  : nullptr;
    case GgmlType::Q6_K:
      return vnni ? interleaved_groups<kKVnniTiles<Q6KGroup>, kInterleavedRows * kQ6_KBytes, kQ6_KValues> : nullptr;
    case GgmlType::Q3_K:
      return vnni ? interleaved_groups<kKVnniTiles<Q3KGroup>, kInterleavedRows * kQ3_KBytes, kQ3_KValues> : nullptr;
    default: return nullptr;
  }
}

#else

RowsDotFn avx2_rows_dot(GgmlType, bool) { return nullptr; }
bool avx512_vnni_able() { return false; }
bool avx512_bf16_able() { return false; }
GroupsDotFn avx2_interleaved_dot(GgmlType, bool) { return nullptr; }

#endif

}  // namespace infer_plan::kernels
