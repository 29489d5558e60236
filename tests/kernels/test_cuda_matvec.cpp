// kernels/cuda/matvec against a double-precision reference built from kernels/cpu's dequantizers,
// for every weight type, odd shapes and 1..8 tokens. The argument checks run everywhere (they
// throw before any CUDA call); the products need a device, and without one the test prints why
// and exits 77, which CTest reports as skipped.
//
// Tolerance: |got - ref| <= atol + rtol * S, S = sum_c m_c |x_c|. Each lane sums its share of the
// row in F32 (at most cols / 32 block steps, a few terms deep each), then 5 shuffle levels add the
// lanes; any summation tree of depth D over exact terms errs by at most D * u * sum|term|
// (u = 2^-24, Higham's gamma_D). D <= cols / 32 + 32 here, and rtol doubles it for margin. The
// terms are exact products except Q2_K's, which the kernel forms as dl * sum(q x) - ml * sum(x):
// their rounding scales with |dl q| + |ml| <= |w| + 2 |ml|, so for Q2_K m_c = |w_c| + 2 |ml_c|
// (ml read from the block); m_c = |w_c| for the others (the K-quants from Q3_K on, the i-quants,
// MXFP4, Q4_1, Q5_0 and Q5_1 decode each value whole, as the CPU does, and multiply it). A wrong
// block, a lost lane or a swapped nibble changes the sum by about one block's worth, ~sqrt(32) |w x|,
// far above this bound for every shape below (e.g. 11008 cols: rtol * S ~ 2e-5 S, one block ~ 5e-4 S).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/half.hpp"
#include "kernels/cpu/quantize.hpp"
#include "kernels/cuda/device_query.hpp"
#include "kernels/cuda/matvec.hpp"
#include "runtime/model_weights.hpp"
#include "tests/kernels/cuda_test_support.hpp"

using namespace infer_plan;
namespace cuda = infer_plan::kernels::cuda;

using infer_plan::cuda_test::failures;
using infer_plan::cuda_test::expect_throw;

namespace {



// --- argument checks (no device needed) ---------------------------------------------------------


void check_arguments() {
  // Fake, aligned, never dereferenced: every call below must throw before reaching CUDA.
  alignas(16) static float storage[64];
  const void* w = storage;
  const float* x = storage;
  float* y = storage;
  const auto q8 = GgmlType::Q8_0;
  expect_throw("tokens = 0", [&] { cuda::matvec(q8, w, 4, 32, x, 0, y, nullptr); });
  expect_throw("tokens = 9", [&] { cuda::matvec(q8, w, 4, 32, x, cuda::kMatvecTokensMax + 1, y, nullptr); });
  expect_throw("cols = 48 for Q8_0", [&] { cuda::matvec(q8, w, 4, 48, x, 1, y, nullptr); });
  expect_throw("cols = 128 for Q2_K", [&] { cuda::matvec(GgmlType::Q2_K, w, 4, 128, x, 1, y, nullptr); });
  expect_throw("cols = 96 for Q4_K", [&] { cuda::matvec(GgmlType::Q4_K, w, 4, 96, x, 1, y, nullptr); });
  expect_throw("IQ2_XS weights", [&] { cuda::matvec(GgmlType::IQ2_XS, w, 4, 256, x, 1, y, nullptr); });
  expect_throw("rows = 0", [&] { cuda::matvec(q8, w, 0, 32, x, 1, y, nullptr); });
  expect_throw("F16 weights", [&] { cuda::matvec(GgmlType::F16, w, 4, 32, x, 1, y, nullptr); });
  expect_throw("null weights", [&] { cuda::matvec(q8, nullptr, 4, 32, x, 1, y, nullptr); });
  expect_throw("x 4-byte aligned", [&] { cuda::matvec(q8, w, 4, 32, x + 1, 1, y, nullptr); });
  expect_throw("Q8_0 weights 1-byte aligned",
               [&] { cuda::matvec(q8, static_cast<const uint8_t*>(w) + 1, 4, 32, x, 1, y, nullptr); });
  expect_throw("Q2_K weights 2-byte aligned",
               [&] { cuda::matvec(GgmlType::Q2_K, static_cast<const uint8_t*>(w) + 2, 4, 256, x, 1, y, nullptr); });
}

// --- products on the device --------------------------------------------------------------------

struct Case {
  GgmlType type;
  uint64_t rows;
  uint64_t cols;
  uint64_t weights_offset;  // bytes past a 256-byte-aligned allocation: 2 tests 2-byte-aligned rows
};

// The Q2_K sub-block min dmin * (scale >> 4) of value c of a row (layout in kernels/cpu/quantize.cpp:
// scales[16] at byte 0, value c of a block in sub-block c / 16; dmin fp16 at byte 82).
double q2_k_min(const uint8_t* row, uint64_t c) {
  const uint8_t* block = row + (c / 256) * 84;
  return kernels::load_fp16(block + 82) * static_cast<double>(block[(c % 256) / 16] >> 4);
}

void run_case(const Case& k, uint64_t seed) {
  const GgmlTypeInfo& info = ggml_type_info(k.type);
  const uint64_t row_bytes = ggml_row_bytes(k.type, k.cols, "test row");
  std::vector<uint8_t> w(k.rows * row_bytes);
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  // Even seeds: runtime's synthetic blocks (random codes and scales); odd: the real quantizer
  // on random floats (Q2_K then has zero mins and uneven scales, other code statistics).
  for (uint64_t r = 0; r < k.rows; ++r) {
    uint8_t* row = w.data() + r * row_bytes;
    if (seed % 2 == 0) {
      runtime::fill_synthetic_row(k.type, k.cols, 1.0f, seed * 1000 + r, row);
    } else {
      std::vector<float> values(k.cols);
      for (float& v : values) v = uniform(rng);
      kernels::quantize_row(k.type, values, {row, row_bytes}, "test row");
    }
  }
  // The reference's weights: the CPU dequantizer (bit-identical to ggml's), one row at a time.
  std::vector<float> w_ref(k.rows * k.cols);
  for (uint64_t r = 0; r < k.rows; ++r)
    kernels::dequantize_row(k.type, {w.data() + r * row_bytes, row_bytes}, {w_ref.data() + r * k.cols, k.cols},
                            "test row");

  const uint32_t tokens_max = cuda::kMatvecTokensMax;
  std::vector<float> x(tokens_max * k.cols);
  for (float& v : x) v = uniform(rng);

  uint8_t* d_w = nullptr;
  float* d_x = nullptr;
  float* d_y = nullptr;
  constexpr uint64_t kGuard = 64;  // floats after y that must stay untouched
  const uint64_t y_floats = tokens_max * k.rows + kGuard;
  CHECK_CUDA(cudaMalloc(&d_w, w.size() + k.weights_offset));
  CHECK_CUDA(cudaMalloc(&d_x, x.size() * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&d_y, y_floats * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(d_w + k.weights_offset, w.data(), w.size(), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(d_x, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));

  const double u = std::ldexp(1.0, -24);
  const double rtol = 2.0 * static_cast<double>(k.cols / 32 + 32) * u;
  const double atol = 1e-30;  // S = 0 only when every term is 0, and then so is the F32 sum
  for (uint32_t tokens = 1; tokens <= tokens_max; ++tokens) {
    // 0xFF bytes are NaNs: an unwritten y shows as a mismatch, a stray write as a changed guard.
    CHECK_CUDA(cudaMemset(d_y, 0xFF, y_floats * sizeof(float)));
    cuda::matvec(k.type, d_w + k.weights_offset, k.rows, k.cols, d_x, tokens, d_y, nullptr);
    CHECK_CUDA(cudaDeviceSynchronize());
    std::vector<float> y(y_floats);
    CHECK_CUDA(cudaMemcpy(y.data(), d_y, y.size() * sizeof(float), cudaMemcpyDeviceToHost));

    int printed = 0;
    int bad = 0;
    for (uint32_t t = 0; t < tokens; ++t) {
      for (uint64_t r = 0; r < k.rows; ++r) {
        const float* wr = w_ref.data() + r * k.cols;
        const float* xt = x.data() + t * k.cols;
        double ref = 0, magnitude = 0;
        for (uint64_t c = 0; c < k.cols; ++c) {
          ref += static_cast<double>(wr[c]) * xt[c];
          double m = std::fabs(static_cast<double>(wr[c]));
          if (k.type == GgmlType::Q2_K) m += 2 * q2_k_min(w.data() + r * row_bytes, c);
          magnitude += m * std::fabs(static_cast<double>(xt[c]));
        }
        const double got = y[t * k.rows + r];
        const double bound = atol + rtol * magnitude;
        if (!(std::fabs(got - ref) <= bound)) {
          ++bad;
          if (printed++ < 5)
            std::printf("  mismatch %s %llux%llu tokens=%u: y[%u][%llu] = %.9g, ref %.9g, |diff| %.3g > %.3g\n",
                        std::string(info.name).c_str(), static_cast<unsigned long long>(k.rows),
                        static_cast<unsigned long long>(k.cols), tokens, t, static_cast<unsigned long long>(r), got,
                        ref, std::fabs(got - ref), bound);
        }
      }
    }
    uint64_t guard_changed = 0;
    for (uint64_t i = tokens * k.rows; i < y_floats; ++i) {
      uint32_t bits = 0;
      std::memcpy(&bits, &y[i], sizeof bits);
      guard_changed += bits != 0xFFFFFFFFu;
    }
    if (guard_changed != 0)
      std::printf("  %llu floats past y[%u][%llu] were written\n", static_cast<unsigned long long>(guard_changed),
                  tokens - 1, static_cast<unsigned long long>(k.rows - 1));
    if (bad != 0 || guard_changed != 0) {
      std::printf("FAILED: %s %llux%llu (offset %llu) tokens=%u: %d mismatches\n", std::string(info.name).c_str(),
                  static_cast<unsigned long long>(k.rows), static_cast<unsigned long long>(k.cols),
                  static_cast<unsigned long long>(k.weights_offset), tokens, bad);
      ++failures;
    }
  }
  std::printf("checked %s %llux%llu (offset %llu), tokens 1..%u\n", std::string(info.name).c_str(),
              static_cast<unsigned long long>(k.rows), static_cast<unsigned long long>(k.cols),
              static_cast<unsigned long long>(k.weights_offset), tokens_max);
  CHECK_CUDA(cudaFree(d_w));
  CHECK_CUDA(cudaFree(d_x));
  CHECK_CUDA(cudaFree(d_y));
}

}  // namespace

int main() {
  try {
    check_arguments();
    if (failures != 0) return 1;
    if (cuda::devices().empty()) {
      std::printf("SKIPPED: no CUDA device visible (argument checks passed)\n");
      return 77;
    }
    // Rows: 1, and counts that are not multiples of the 4..16 rows a thread block covers.
    // Cols: one block, a few blocks (fewer than a warp's lanes cover), and many (Qwen3-8B's 4096 and
    // 12288; Llama's 11008 = 43 Q2_K blocks, an odd count).
    std::vector<Case> cases;
    for (const GgmlType type : {GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q2_K, GgmlType::Q5_0,
                                GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_NL,
                                GgmlType::IQ4_XS, GgmlType::MXFP4, GgmlType::Q4_1, GgmlType::Q5_1}) {
      const uint64_t block = ggml_type_info(type).block_values;
      const uint64_t one = type == GgmlType::BF16 ? 32 : block;  // BF16's "block" is one value
      cases.push_back({type, 1, one, 0});
      cases.push_back({type, 7, one, 0});
      cases.push_back({type, 13, 3 * one, 0});
      cases.push_back({type, 37, 4096, 0});
      cases.push_back({type, 66, 11008, 0});
      cases.push_back({type, 5, 12288, 0});
    }
    // BF16's 16-bit path: cols not a multiple of 8, and rows only 2-byte aligned.
    cases.push_back({GgmlType::BF16, 9, 37, 0});
    cases.push_back({GgmlType::BF16, 11, 4096, 2});
    // Q8_0 and Q4_0 from a 2-byte-aligned start (as a row inside a larger tensor can be).
    cases.push_back({GgmlType::Q8_0, 10, 4096, 2});
    cases.push_back({GgmlType::Q4_0, 10, 4096, 2});
    // The decoded types read bytes: rows at any address (MXFP4's 17-byte blocks, Q3_K's 110).
    cases.push_back({GgmlType::MXFP4, 10, 4096, 1});
    cases.push_back({GgmlType::Q3_K, 10, 4096, 1});
    cases.push_back({GgmlType::Q6_K, 10, 4096, 3});
    for (size_t i = 0; i < cases.size(); ++i) run_case(cases[i], 2024 + i);
  } catch (const std::exception& e) {
    std::printf("FAILED: %s\n", e.what());
    return 1;
  }
  if (failures != 0) {
    std::printf("FAILED: %d checks\n", failures);
    return 1;
  }
  std::printf("PASSED\n");
  return 0;
}
