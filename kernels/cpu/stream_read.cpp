#include "kernels/cpu/stream_read.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

namespace infer_plan::kernels {
namespace {

// The read bench: sum 64-bit words with four independent accumulators, so the loop is bound by
// loads from memory, not by the add latency. 32-byte loads where the CPU has AVX2, as the GEMV
// kernels use: with 8-byte loads one core issues too few reads to reach the memory's bandwidth.
uint64_t read_sum_plain(const uint64_t* p, uint64_t n) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  uint64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a += p[i];
    b += p[i + 1];
    c += p[i + 2];
    d += p[i + 3];
  }
  for (; i < n; ++i) a += p[i];
  return a + b + c + d;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx2"))) uint64_t read_sum_avx2(const uint64_t* p, uint64_t n) {
  __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
  uint64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    a = _mm256_add_epi64(a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
    b = _mm256_add_epi64(b, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 4)));
    c = _mm256_add_epi64(c, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 8)));
    d = _mm256_add_epi64(d, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 12)));
  }
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d)));
  return lanes[0] + lanes[1] + lanes[2] + lanes[3] + read_sum_plain(p + i, n - i);
}
}  // namespace

uint64_t read_sum(const uint64_t* p, uint64_t n) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2 ? read_sum_avx2(p, n) : read_sum_plain(p, n);
}
#else
}  // namespace

uint64_t read_sum(const uint64_t* p, uint64_t n) { return read_sum_plain(p, n); }
#endif

}  // namespace infer_plan::kernels
