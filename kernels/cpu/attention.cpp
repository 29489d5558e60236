// Decode attention in two passes over the cache. Pass 1 reads each K row once (all KV heads of one
// token), turns it into floats and scores it against every query head of each KV head's group;
// then each score becomes exp(score - that head's max); pass 2 reads each V row once and adds it,
// so weighted, into every query head of the group; the end divides by each head's sum of weights.
// So each KV byte is read once per call whatever the group size, and the scratch is
// n_tokens * n_head scores (token-major: one token's heads side by side, so neither pass strides
// through memory) plus four rows of floats.
// q.K dequantizes K to float (ggml's CPU flash attention instead converts q to K's vec_dot type,
// Q8_0 for Q8_0/Q4_0 K): beyond the cache's own quantization the only error is fp32 sum order.
// Two paths, picked once at run time: portable (quantize.hpp's dequantize_row, plain loops,
// std::exp) and AVX2+FMA+F16C (row conversions bit-identical to dequantize_row, 8-wide dots and
// axpys over a group's heads, an 8-wide exp within 1 ulp). At 4096 tokens x 8 KV heads x 128 with
// 32 query heads it reads ~4 GB/s of BF16 KV on one EPYC core (bench/bench_attention, best run);
// most of that time is float arithmetic (4 FMAs per KV value), not memory: the same work on 256
// cache-resident tokens, scaled to 4096, takes ~70% of it.
#include "kernels/cpu/attention.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "kernels/activation.hpp"
#include "kernels/block_layout.hpp"
#include "kernels/cpu/half.hpp"
#include "kernels/cpu/quantize.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define INFER_PLAN_ATTENTION_AVX2 1
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace infer_plan::kernels {
namespace {

// What differs between the paths: one cache row to floats, the two inner loops over the query
// heads j < group of one KV head's group (q_j and out_j at j * head_dim, their scores and weights
// side by side), and the exponentials.
struct RowKernels {
  void (*row_to_float)(const KvRowsView& view, uint64_t token, uint64_t values, float* out);
  // scores[j] = scale * dot(q_j, k)
  void (*score_group)(const float* q, const float* k, uint64_t group, uint64_t head_dim, float scale,
                      float* scores);
  // out_j += sum over i < tile of weights[i * weight_stride + j] * v_i, v_i at v + i * v_stride
  void (*accumulate_group)(const float* weights, uint64_t weight_stride, const float* v, uint64_t v_stride,
                           uint64_t tile, uint64_t group, uint64_t head_dim, float* out);
  // scores[t * n_head + h] = exp(scores[t * n_head + h] - max_score[h]); sums[h] += each of them
  void (*exponentiate)(float* scores, uint64_t n_tokens, uint64_t n_head, const float* max_score, float* sums);
};

void row_to_float_portable(const KvRowsView& view, uint64_t token, uint64_t values, float* out) {
  dequantize_row(view.type, {view.row(token), view.row_bytes}, {out, values}, "KV cache row");
}

void score_group_portable(const float* q, const float* k, uint64_t group, uint64_t head_dim, float scale,
                          float* scores) {
  constexpr uint64_t kLanes = 8;  // partial sums the compiler can keep in one or two vectors
  for (uint64_t j = 0; j < group; ++j) {
    const float* qj = q + j * head_dim;
    float lanes[kLanes] = {};
    uint64_t d = 0;
    for (; d + kLanes <= head_dim; d += kLanes)
      for (uint64_t l = 0; l < kLanes; ++l) lanes[l] += qj[d + l] * k[d + l];
    for (; d < head_dim; ++d) lanes[0] += qj[d] * k[d];
    float dot = 0.0f;
    for (uint64_t l = 0; l < kLanes; ++l) dot += lanes[l];
    scores[j] = scale * dot;
  }
}

void accumulate_group_portable(const float* weights, uint64_t weight_stride, const float* v, uint64_t v_stride,
                               uint64_t tile, uint64_t group, uint64_t head_dim, float* out) {
  for (uint64_t i = 0; i < tile; ++i)
    for (uint64_t j = 0; j < group; ++j)
      for (uint64_t d = 0; d < head_dim; ++d) out[j * head_dim + d] += weights[i * weight_stride + j] * v[i * v_stride + d];
}

void exponentiate_portable(float* scores, uint64_t n_tokens, uint64_t n_head, const float* max_score,
                           float* sums) {
  for (uint64_t t = 0; t < n_tokens; ++t)
    for (uint64_t h = 0; h < n_head; ++h) {
      float& s = scores[t * n_head + h];
      s = std::exp(s - max_score[h]);
      sums[h] += s;
    }
}

constexpr RowKernels kPortable{row_to_float_portable, score_group_portable, accumulate_group_portable,
                                exponentiate_portable};

#ifdef INFER_PLAN_ATTENTION_AVX2
#define INFER_PLAN_AVX2 __attribute__((target("avx2,fma,f16c")))

uint16_t load_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

INFER_PLAN_AVX2 void bf16_to_float_avx2(const uint8_t* src, uint64_t values, float* out) {
  uint64_t i = 0;
  for (; i + 8 <= values; i += 8) {
    const __m128i halves = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i));
    const __m256i words = _mm256_slli_epi32(_mm256_cvtepu16_epi32(halves), 16);
    _mm256_storeu_ps(out + i, _mm256_castsi256_ps(words));
  }
  for (; i < values; ++i) out[i] = bf16_to_fp32(load_u16(src + 2 * i));
}

INFER_PLAN_AVX2 void f16_to_float_avx2(const uint8_t* src, uint64_t values, float* out) {
  uint64_t i = 0;
  for (; i + 8 <= values; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i))));
  for (; i < values; ++i) out[i] = fp16_to_fp32(load_u16(src + 2 * i));
}

// code * d in float, as ggml's dequantize_row_q8_0: int8 -> float is exact, one rounding.
INFER_PLAN_AVX2 void q8_0_to_float_avx2(const uint8_t* src, uint64_t values, float* out) {
  for (uint64_t b = 0; b < values / kQ8_0Values; ++b) {
    const uint8_t* block = src + b * kQ8_0Bytes;
    const __m256 d = _mm256_set1_ps(_cvtsh_ss(load_u16(block)));
    for (uint64_t j = 0; j < 4; ++j) {
      const __m128i codes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + kQ8_0Qs + 8 * j));
      const __m256 f = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(codes));
      _mm256_storeu_ps(out + b * kQ8_0Values + 8 * j, _mm256_mul_ps(f, d));
    }
  }
}

// (nibble - 8) * d; low nibbles are values 0..15 of the block, high nibbles 16..31 (ggml's layout).
INFER_PLAN_AVX2 void q4_0_to_float_avx2(const uint8_t* src, uint64_t values, float* out) {
  const __m128i low_mask = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
  for (uint64_t b = 0; b < values / kQ4_0Values; ++b) {
    const uint8_t* block = src + b * kQ4_0Bytes;
    const __m256 d = _mm256_set1_ps(_cvtsh_ss(load_u16(block)));
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + kQ4_0Qs));
    const __m128i low = _mm_sub_epi8(_mm_and_si128(packed, low_mask), eight);
    const __m128i high = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(packed, 4), low_mask), eight);
    const __m128i quarters[4] = {low, _mm_srli_si128(low, 8), high, _mm_srli_si128(high, 8)};
    for (uint64_t j = 0; j < 4; ++j) {
      const __m256 f = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(quarters[j]));
      _mm256_storeu_ps(out + b * kQ4_0Values + 8 * j, _mm256_mul_ps(f, d));
    }
  }
}

INFER_PLAN_AVX2 void row_to_float_avx2(const KvRowsView& view, uint64_t token, uint64_t values, float* out) {
  const uint8_t* src = view.row(token);
  switch (view.type) {
    case GgmlType::F32: std::memcpy(out, src, values * sizeof(float)); return;
    case GgmlType::BF16: bf16_to_float_avx2(src, values, out); return;
    case GgmlType::F16: f16_to_float_avx2(src, values, out); return;
    case GgmlType::Q8_0: q8_0_to_float_avx2(src, values, out); return;
    case GgmlType::Q4_0: q4_0_to_float_avx2(src, values, out); return;
    default: row_to_float_portable(view, token, values, out); return;
  }
}

// Query heads four at a time: each 8-float chunk of k is loaded once for four FMA chains (which
// also hides the FMA latency), then the four sums come out of one horizontal-add tree.
INFER_PLAN_AVX2 void score_group_avx2(const float* q, const float* k, uint64_t group, uint64_t head_dim,
                                      float scale, float* scores) {
  const uint64_t vector_end = head_dim - head_dim % 8;
  uint64_t j = 0;
  for (; j + 4 <= group; j += 4) {
    const float* q0 = q + j * head_dim;
    const float* q1 = q0 + head_dim;
    const float* q2 = q1 + head_dim;
    const float* q3 = q2 + head_dim;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    for (uint64_t d = 0; d < vector_end; d += 8) {
      const __m256 kv = _mm256_loadu_ps(k + d);
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q0 + d), kv, a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q1 + d), kv, a1);
      a2 = _mm256_fmadd_ps(_mm256_loadu_ps(q2 + d), kv, a2);
      a3 = _mm256_fmadd_ps(_mm256_loadu_ps(q3 + d), kv, a3);
    }
    // hadd(hadd(a0, a1), hadd(a2, a3)) holds each head's low-lane sum in lanes 0-3 and its
    // high-lane sum in lanes 4-7.
    const __m256 sums = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    float dots[4];
    _mm_storeu_ps(dots, _mm_add_ps(_mm256_castps256_ps128(sums), _mm256_extractf128_ps(sums, 1)));
    for (uint64_t h = 0; h < 4; ++h) {
      for (uint64_t d = vector_end; d < head_dim; ++d) dots[h] += q[(j + h) * head_dim + d] * k[d];
      scores[j + h] = scale * dots[h];
    }
  }
  for (; j < group; ++j) {
    const float* qj = q + j * head_dim;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();  // two chains against the FMA latency
    uint64_t d = 0;
    for (; d + 16 <= vector_end; d += 16) {
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(qj + d), _mm256_loadu_ps(k + d), a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(qj + d + 8), _mm256_loadu_ps(k + d + 8), a1);
    }
    for (; d < vector_end; d += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(qj + d), _mm256_loadu_ps(k + d), a0);
    const __m256 a = _mm256_add_ps(a0, a1);
    __m128 sum4 = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    sum4 = _mm_hadd_ps(sum4, sum4);
    float dot = _mm_cvtss_f32(_mm_hadd_ps(sum4, sum4));
    for (; d < head_dim; ++d) dot += qj[d] * k[d];
    scores[j] = scale * dot;
  }
}

// Four tokens at a time: each 8-float chunk of out is loaded and stored once for four FMAs (one
// store per FMA would be the bottleneck), their weights held in registers.
INFER_PLAN_AVX2 void accumulate_group_avx2(const float* weights, uint64_t weight_stride, const float* v,
                                           uint64_t v_stride, uint64_t tile, uint64_t group, uint64_t head_dim,
                                           float* out) {
  const uint64_t vector_end = head_dim - head_dim % 8;
  for (uint64_t j = 0; j < group; ++j) {
    float* y = out + j * head_dim;
    uint64_t i = 0;
    for (; i + 4 <= tile; i += 4) {
      const float* w = weights + i * weight_stride + j;
      const __m256 w0 = _mm256_set1_ps(w[0]), w1 = _mm256_set1_ps(w[weight_stride]),
                   w2 = _mm256_set1_ps(w[2 * weight_stride]), w3 = _mm256_set1_ps(w[3 * weight_stride]);
      const float* v0 = v + i * v_stride;
      for (uint64_t d = 0; d < vector_end; d += 8) {
        __m256 acc = _mm256_loadu_ps(y + d);
        acc = _mm256_fmadd_ps(w0, _mm256_loadu_ps(v0 + d), acc);
        acc = _mm256_fmadd_ps(w1, _mm256_loadu_ps(v0 + v_stride + d), acc);
        acc = _mm256_fmadd_ps(w2, _mm256_loadu_ps(v0 + 2 * v_stride + d), acc);
        acc = _mm256_fmadd_ps(w3, _mm256_loadu_ps(v0 + 3 * v_stride + d), acc);
        _mm256_storeu_ps(y + d, acc);
      }
      for (uint64_t d = vector_end; d < head_dim; ++d)
        for (uint64_t r = 0; r < 4; ++r) y[d] += w[r * weight_stride] * v0[r * v_stride + d];
    }
    for (; i < tile; ++i) {
      const __m256 wi = _mm256_set1_ps(weights[i * weight_stride + j]);
      const float* vi = v + i * v_stride;
      for (uint64_t d = 0; d < vector_end; d += 8)
        _mm256_storeu_ps(y + d, _mm256_fmadd_ps(wi, _mm256_loadu_ps(vi + d), _mm256_loadu_ps(y + d)));
      for (uint64_t d = vector_end; d < head_dim; ++d) y[d] += weights[i * weight_stride + j] * vi[d];
    }
  }
}

// exp(x) for x <= 0 (a score minus its head's max), 8 at a time: x = n ln2 + r with |r| <= ln2/2,
// e^r by Cephes expf's polynomial (Moshier), times 2^n built in the exponent bits. Within 1 ulp of
// exp over (-87.3, 0] (checked against double exp on a 1-in-16 sample of floats); exp(0) is
// exactly 1; below -87.3 (where 2^n would leave the normal range) it gives 0.
INFER_PLAN_AVX2 __m256 exp_nonpositive_avx2(__m256 x) {
  const __m256 underflow = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3f), _CMP_LT_OQ);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // ln 2 in two parts (Cody-Waite) so that n * ln2_high is exact and r keeps its low bits.
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 e_r = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  const __m256i two_n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_andnot_ps(underflow, _mm256_mul_ps(e_r, _mm256_castsi256_ps(two_n)));
}

INFER_PLAN_AVX2 void exponentiate_avx2(float* scores, uint64_t n_tokens, uint64_t n_head, const float* max_score,
                                       float* sums) {
  const uint64_t vector_heads = n_head - n_head % 8;  // e.g. 14 heads: 8 here, 6 below
  for (uint64_t h = 0; h < vector_heads; h += 8) {
    const __m256 max = _mm256_loadu_ps(max_score + h);
    __m256 sum = _mm256_setzero_ps();
    for (uint64_t t = 0; t < n_tokens; ++t) {
      float* s = scores + t * n_head + h;
      const __m256 w = exp_nonpositive_avx2(_mm256_sub_ps(_mm256_loadu_ps(s), max));
      _mm256_storeu_ps(s, w);
      sum = _mm256_add_ps(sum, w);
    }
    _mm256_storeu_ps(sums + h, _mm256_add_ps(_mm256_loadu_ps(sums + h), sum));
  }
  for (uint64_t t = 0; t < n_tokens; ++t)
    for (uint64_t h = vector_heads; h < n_head; ++h) {
      float& s = scores[t * n_head + h];
      s = std::exp(s - max_score[h]);
      sums[h] += s;
    }
}

constexpr RowKernels kAvx2{row_to_float_avx2, score_group_avx2, accumulate_group_avx2, exponentiate_avx2};

bool cpu_runs_avx2() {
  static const bool runs = [] {
    __builtin_cpu_init();
    // F16C from CPUID leaf 1 directly: clang 14's __builtin_cpu_supports does not know "f16c".
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
  }();
  return runs;
}
#endif  // INFER_PLAN_ATTENTION_AVX2

const RowKernels& row_kernels(AttentionPath path) {
  assert(attention_path_available(path));
#ifdef INFER_PLAN_ATTENTION_AVX2
  if (path == AttentionPath::avx2) return kAvx2;
#endif
  return kPortable;
}

// Asks for a row's cache lines ahead of use: the rows of a page are contiguous but pages are not,
// and converting a row is too short for the hardware prefetcher to run ahead across page jumps.
void prefetch_row(const KvRowsView& view, uint64_t token) {
#if defined(__GNUC__) || defined(__clang__)
  const uint8_t* p = view.row(token);
  for (uint64_t offset = 0; offset < view.row_bytes; offset += 64) __builtin_prefetch(p + offset);
#else
  (void)view, (void)token;
#endif
}

void check_shape(const AttentionShape& shape, const KvRowsView& k, const KvRowsView& v) {
  assert(shape.n_kv_head > 0 && shape.n_head % shape.n_kv_head == 0);
  assert(k.row_bytes == ggml_row_bytes(k.type, shape.n_kv_head * shape.head_dim, "K cache row"));
  assert(v.row_bytes == ggml_row_bytes(v.type, shape.n_kv_head * shape.head_dim, "V cache row"));
  (void)shape, (void)k, (void)v;
}

}  // namespace

bool attention_path_available(AttentionPath path) {
  if (path == AttentionPath::portable) return true;
#ifdef INFER_PLAN_ATTENTION_AVX2
  return cpu_runs_avx2();
#else
  return false;
#endif
}

void attention_decode_on(AttentionPath path, const AttentionShape& shape, const float* q,
                         const KvRowsView& k, const KvRowsView& v, uint64_t n_tokens, float* out,
                         std::vector<float>& scratch) {
  check_shape(shape, k, v);
  const RowKernels& kernels = row_kernels(path);
  const uint64_t head_dim = shape.head_dim, row_values = shape.n_kv_head * head_dim;
  const uint64_t group = shape.n_head / shape.n_kv_head;  // query heads per KV head
  const uint64_t n_head = shape.n_head;
  constexpr uint64_t kTile = 4;  // V rows converted and accumulated together
  constexpr uint64_t kPrefetchTokens = 4;  // how far ahead rows are requested
  scratch.resize(n_tokens * n_head + 2 * n_head + kTile * row_values);
  float* scores = scratch.data();                 // [n_tokens][n_head], then exp(score - max)
  float* max_score = scores + n_tokens * n_head;  // per query head
  float* weight_sum = max_score + n_head;         // per query head: the softmax denominator
  float* row = weight_sum + n_head;               // kTile K or V rows as floats, all KV heads
  const float scale = shape.scale > 0.0f ? shape.scale : 1.0f / std::sqrt(static_cast<float>(head_dim));

  for (uint64_t t = 0; t < n_tokens; ++t) {
    if (t + kPrefetchTokens < n_tokens) prefetch_row(k, t + kPrefetchTokens);
    kernels.row_to_float(k, t, row_values, row);
    for (uint64_t g = 0; g < shape.n_kv_head; ++g)
      kernels.score_group(q + g * group * head_dim, row + g * head_dim, group, head_dim, scale,
                          scores + t * n_head + g * group);
  }
  if (shape.softcap > 0.0f) {  // as ggml: scale by 1 / cap, tanh, scale by the cap
    const float inv_cap = 1.0f / shape.softcap;
    for (uint64_t i = 0; i < n_tokens * n_head; ++i) scores[i] = act::softcap(scores[i], inv_cap, shape.softcap);
  }
  std::fill(max_score, max_score + n_head, -INFINITY);
  if (shape.sinks) std::copy_n(shape.sinks, n_head, max_score);  // as ggml: the sink counts toward the max
  for (uint64_t t = 0; t < n_tokens; ++t)
    for (uint64_t h = 0; h < n_head; ++h) max_score[h] = std::max(max_score[h], scores[t * n_head + h]);
  std::fill(weight_sum, weight_sum + n_head, 0.0f);
  if (shape.sinks)
    for (uint64_t h = 0; h < n_head; ++h) weight_sum[h] = std::exp(shape.sinks[h] - max_score[h]);
  kernels.exponentiate(scores, n_tokens, n_head, max_score, weight_sum);

  std::fill(out, out + n_head * head_dim, 0.0f);
  if (n_tokens == 0) return;  // nothing to attend to: zeros (a decode step always has its own token)
  for (uint64_t t = 0; t < n_tokens; t += kTile) {
    const uint64_t tile = std::min(kTile, n_tokens - t);
    for (uint64_t i = 0; i < tile; ++i) {
      if (t + i + kPrefetchTokens < n_tokens) prefetch_row(v, t + i + kPrefetchTokens);
      kernels.row_to_float(v, t + i, row_values, row + i * row_values);
    }
    for (uint64_t g = 0; g < shape.n_kv_head; ++g)
      kernels.accumulate_group(scores + t * n_head + g * group, n_head, row + g * head_dim, row_values, tile, group,
                               head_dim, out + g * group * head_dim);
  }
  // The largest weight of each head (or its sink's) is exp(0) = 1, so the sum is >= 1: no division by zero.
  for (uint64_t h = 0; h < n_head; ++h) {
    const float inv_sum = 1.0f / weight_sum[h];
    for (uint64_t d = 0; d < head_dim; ++d) out[h * head_dim + d] *= inv_sum;
  }
}

void attention_decode(const AttentionShape& shape, const float* q, const KvRowsView& k,
                      const KvRowsView& v, uint64_t n_tokens, float* out, std::vector<float>& scratch) {
  const AttentionPath path =
      attention_path_available(AttentionPath::avx2) ? AttentionPath::avx2 : AttentionPath::portable;
  attention_decode_on(path, shape, q, k, v, n_tokens, out, scratch);
}

void attention_decode_reference(const AttentionShape& shape, const float* q, const KvRowsView& k,
                                const KvRowsView& v, uint64_t n_tokens, float* out) {
  check_shape(shape, k, v);
  const uint64_t head_dim = shape.head_dim, row_values = shape.n_kv_head * head_dim;
  const uint64_t group = shape.n_head / shape.n_kv_head;
  std::vector<float> k_rows(n_tokens * row_values), v_rows(n_tokens * row_values);
  for (uint64_t t = 0; t < n_tokens; ++t) {
    dequantize_row(k.type, {k.row(t), k.row_bytes}, {&k_rows[t * row_values], row_values}, "K cache row");
    dequantize_row(v.type, {v.row(t), v.row_bytes}, {&v_rows[t * row_values], row_values}, "V cache row");
  }
  std::vector<double> weights(n_tokens);
  for (uint64_t h = 0; h < shape.n_head; ++h) {
    const uint64_t kv_offset = (h / group) * head_dim;
    double max_score = -INFINITY;
    for (uint64_t t = 0; t < n_tokens; ++t) {
      double dot = 0.0;
      for (uint64_t d = 0; d < head_dim; ++d)
        dot += static_cast<double>(q[h * head_dim + d]) * k_rows[t * row_values + kv_offset + d];
      weights[t] = shape.scale > 0.0f ? dot * shape.scale : dot / std::sqrt(static_cast<double>(head_dim));
      if (shape.softcap > 0.0f) weights[t] = shape.softcap * std::tanh(weights[t] / shape.softcap);
      max_score = std::max(max_score, weights[t]);
    }
    const double sink = shape.sinks ? static_cast<double>(shape.sinks[h]) : -INFINITY;
    max_score = std::max(max_score, sink);
    double sum = shape.sinks ? std::exp(sink - max_score) : 0.0;
    for (uint64_t t = 0; t < n_tokens; ++t) {
      weights[t] = std::exp(weights[t] - max_score);
      sum += weights[t];
    }
    for (uint64_t d = 0; d < head_dim; ++d) {
      double acc = 0.0;
      for (uint64_t t = 0; t < n_tokens; ++t) acc += weights[t] * v_rows[t * row_values + kv_offset + d];
      out[h * head_dim + d] = n_tokens == 0 ? 0.0f : static_cast<float>(acc / sum);
    }
  }
}

}  // namespace infer_plan::kernels
