// The speed of light of a memory-bound kernel on the CPU: a read-only sweep that sums 64-bit
// words (STREAM-like). The probe's read bandwidth and bench_gemv's reference both use it, so the
// fraction of bandwidth a GEMV reaches means the same thing everywhere.
#pragma once
#include <cstdint>

namespace infer_plan::kernels {

// Sum of p[0..n) (wrapping), read with 32-byte loads where the CPU has AVX2 (as the GEMV kernels
// load; with 8-byte loads one core issues too few reads to reach the memory's bandwidth).
uint64_t read_sum(const uint64_t* p, uint64_t n);

}  // namespace infer_plan::kernels
