// kernels/cuda/gemm (cuBLAS prefill products) against a double-precision reference, for every weight
// type, a few shapes and 1..130 tokens. The argument checks (Gemm::check_multiply, which multiply
// runs first) and scratch_bf16 run everywhere; the products need a device, and without one the test
// prints why and exits 77, which CTest reports as skipped.
//
// Reference: the weights dequantized by kernels/cpu (bit-identical to ggml) and x, both rounded to
// BF16 to nearest even (kernels::fp32_to_bf16) as the kernel rounds them before cuBLAS; products of
// two BF16 values are exact in double and the double sum errs by ~cols * 2^-53, nothing here.
// So the only error left is cuBLAS's FP32 accumulation.
//
// Tolerance: |got - ref| <= atol + rtol * S, S = sum_c |w_c x_c| (BF16-rounded). Whatever tree the
// tensor cores and any split-K use, it is at most cols additions deep, each erring by at most
// 2^-23 of the magnitudes it adds (one ulp: tensor cores may truncate rather than round, so u is
// doubled to 2^-23), hence rtol = cols * 2^-23 (Higham's gamma_D bound with D = cols). Had the
// reference used the unrounded weights and x, rtol would need another 2 * 2^-9 (half a BF16 ulp on
// each factor), which would hide a wrong element; rounding both sides the same keeps it out. A
// wrong layout (a transposed W, a token's x taken from another) errs by ~S / sqrt(cols) (3% of S at
// 1024 cols, against rtol = 1.2e-4), and one wrong element by ~2 S / cols (0.4% at 512 cols, against
// 6e-5). atol = 1e-30 only keeps exact zeros exact.
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
#include "kernels/cuda/cublas_loader.hpp"
#include "kernels/cuda/gemm.hpp"
#include "kernels/cuda/row_types.hpp"
#include "runtime/model_weights.hpp"
#include "tests/kernels/cuda_test_support.hpp"

using namespace infer_plan;
namespace cuda = infer_plan::kernels::cuda;

using infer_plan::cuda_test::failures;
using infer_plan::cuda_test::expect_throw;

namespace {



// --- argument checks and scratch sizes (no device needed) -----------------------------------------


void expect_equal(const char* what, uint64_t got, uint64_t want) {
  if (got == want) {
    std::printf("ok: %s = %llu\n", what, static_cast<unsigned long long>(got));
    return;
  }
  std::printf("FAILED: %s = %llu, expected %llu\n", what, static_cast<unsigned long long>(got),
              static_cast<unsigned long long>(want));
  ++failures;
}

void check_arguments() {
  // Fake, 256-byte aligned, never dereferenced: every call below must throw before reaching CUDA.
  alignas(256) static float storage[256];
  const void* w = storage;
  const float* x = storage;
  const float* y = storage;
  const void* s = storage;
  const auto validate = cuda::Gemm::check_multiply;
  const auto q8 = GgmlType::Q8_0;
  validate(q8, w, 4, 64, x, 3, y, s);  // the valid call the others vary: must not throw
  expect_throw("F16 weights", [&] { validate(GgmlType::F16, w, 4, 64, x, 3, y, s); });
  expect_throw("IQ2_XS weights", [&] { validate(GgmlType::IQ2_XS, w, 4, 256, x, 3, y, s); });
  expect_throw("null weights", [&] { validate(q8, nullptr, 4, 64, x, 3, y, s); });
  expect_throw("null x", [&] { validate(q8, w, 4, 64, nullptr, 3, y, s); });
  expect_throw("null y", [&] { validate(q8, w, 4, 64, x, 3, nullptr, s); });
  expect_throw("null scratch", [&] { validate(q8, w, 4, 64, x, 3, y, nullptr); });
  expect_throw("tokens = 0", [&] { validate(q8, w, 4, 64, x, 0, y, s); });
  expect_throw("rows = 0", [&] { validate(q8, w, 0, 64, x, 3, y, s); });
  expect_throw("rows = 2^31", [&] { validate(q8, w, uint64_t{1} << 31, 64, x, 3, y, s); });
  expect_throw("cols = 48 for Q4_0", [&] { validate(GgmlType::Q4_0, w, 4, 48, x, 3, y, s); });
  expect_throw("cols = 640 for Q2_K", [&] { validate(GgmlType::Q2_K, w, 4, 640, x, 3, y, s); });
  expect_throw("weights 1-byte aligned", [&] { validate(q8, static_cast<const uint8_t*>(w) + 1, 4, 64, x, 3, y, s); });
  expect_throw("x 2-byte aligned",
               [&] { validate(q8, w, 4, 64, reinterpret_cast<const float*>(static_cast<const uint8_t*>(s) + 2), 3, y, s); });
  expect_throw("scratch 16-byte aligned", [&] { validate(q8, w, 4, 64, x, 3, y, static_cast<const uint8_t*>(s) + 16); });
  // scratch_bf16: x is tokens x cols; W adds rows x cols unless it is BF16 already.
  expect_equal("scratch_bf16(BF16, 4096, 1024, 9)", cuda::Gemm::scratch_bf16(GgmlType::BF16, 4096, 1024, 9), 9 * 1024);
  expect_equal("scratch_bf16(Q8_0, 4096, 1024, 9)", cuda::Gemm::scratch_bf16(q8, 4096, 1024, 9),
               9 * 1024 + 4096 * 1024);
  expect_equal("scratch_bf16(Q2_K, 256, 512, 130)", cuda::Gemm::scratch_bf16(GgmlType::Q2_K, 256, 512, 130),
               130 * 512 + 256 * 512);
}

// --- products on the device --------------------------------------------------------------------

constexpr uint32_t kTokenCounts[] = {1, 9, 64, 130};
constexpr uint32_t kTokensMax = 130;
constexpr uint64_t kGuard = 64;  // floats after y that must stay untouched

struct Case {
  GgmlType type;
  uint64_t rows;
  uint64_t cols;
  uint64_t weights_offset;  // bytes past a 256-byte-aligned allocation: 2 tests 2-byte-aligned rows
};

double bf16_round(float v) { return kernels::bf16_to_fp32(kernels::fp32_to_bf16(v)); }

void run_case(cuda::Gemm& gemm, cudaStream_t stream, const Case& k, uint32_t seed) {
  const std::string name(ggml_type_info(k.type).name);
  const uint64_t row_bytes = ggml_row_bytes(k.type, k.cols, "test row");
  std::vector<uint8_t> w(k.rows * row_bytes);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  // Even seeds: runtime's synthetic blocks (random codes and scales); odd: the real quantizer on
  // random floats.
  for (uint64_t r = 0; r < k.rows; ++r) {
    uint8_t* row = w.data() + r * row_bytes;
    if (seed % 2 == 0) {
      runtime::fill_synthetic_row(k.type, k.cols, 1.0f, uint64_t{seed} * 1000 + r, row);
    } else {
      std::vector<float> values(k.cols);
      for (float& v : values) v = uniform(rng);
      kernels::quantize_row(k.type, values, {row, row_bytes}, "test row");
    }
  }
  std::vector<float> x(kTokensMax * k.cols);
  for (float& v : x) v = uniform(rng);

  // The reference for all kTokensMax tokens once; a call with fewer tokens uses x's first rows.
  std::vector<double> w_ref(k.rows * k.cols), x_ref(x.size());
  std::vector<float> row_values(k.cols);
  for (uint64_t r = 0; r < k.rows; ++r) {
    kernels::dequantize_row(k.type, {w.data() + r * row_bytes, row_bytes}, row_values, "test row");
    for (uint64_t c = 0; c < k.cols; ++c) w_ref[r * k.cols + c] = bf16_round(row_values[c]);
  }
  for (size_t i = 0; i < x.size(); ++i) x_ref[i] = bf16_round(x[i]);
  std::vector<double> ref(kTokensMax * k.rows), magnitude(kTokensMax * k.rows);
  for (uint64_t t = 0; t < kTokensMax; ++t) {
    for (uint64_t r = 0; r < k.rows; ++r) {
      const double* wr = w_ref.data() + r * k.cols;
      const double* xt = x_ref.data() + t * k.cols;
      double sum = 0, abs_sum = 0;
      for (uint64_t c = 0; c < k.cols; ++c) {
        sum += wr[c] * xt[c];
        abs_sum += std::fabs(wr[c] * xt[c]);
      }
      ref[t * k.rows + r] = sum;
      magnitude[t * k.rows + r] = abs_sum;
    }
  }

  uint8_t* d_w = nullptr;
  float* d_x = nullptr;
  float* d_y = nullptr;
  void* d_scratch = nullptr;
  const uint64_t y_floats = kTokensMax * k.rows + kGuard;
  CHECK_CUDA(cudaMalloc(&d_w, w.size() + k.weights_offset));
  CHECK_CUDA(cudaMalloc(&d_x, x.size() * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&d_y, y_floats * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&d_scratch, cuda::Gemm::scratch_bf16(k.type, k.rows, k.cols, kTokensMax) * 2));
  CHECK_CUDA(cudaMemcpy(d_w + k.weights_offset, w.data(), w.size(), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(d_x, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));

  const double rtol = static_cast<double>(k.cols) * std::ldexp(1.0, -23);
  const double atol = 1e-30;
  for (const uint32_t tokens : kTokenCounts) {
    // 0xFF bytes are NaNs: an unwritten y shows as a mismatch, a stray write as a changed guard.
    CHECK_CUDA(cudaMemsetAsync(d_y, 0xFF, y_floats * sizeof(float), stream));
    gemm.multiply(k.type, d_w + k.weights_offset, k.rows, k.cols, d_x, tokens, d_y, d_scratch);
    CHECK_CUDA(cudaStreamSynchronize(stream));
    std::vector<float> y(y_floats);
    CHECK_CUDA(cudaMemcpy(y.data(), d_y, y.size() * sizeof(float), cudaMemcpyDeviceToHost));

    int printed = 0;
    int bad = 0;
    for (uint64_t t = 0; t < tokens; ++t) {
      for (uint64_t r = 0; r < k.rows; ++r) {
        const double got = y[t * k.rows + r], want = ref[t * k.rows + r];
        const double bound = atol + rtol * magnitude[t * k.rows + r];
        if (!(std::fabs(got - want) <= bound)) {
          ++bad;
          if (printed++ < 5)
            std::printf("  mismatch %s %llux%llu tokens=%u: y[%llu][%llu] = %.9g, ref %.9g, |diff| %.3g > %.3g\n",
                        name.c_str(), static_cast<unsigned long long>(k.rows), static_cast<unsigned long long>(k.cols),
                        tokens, static_cast<unsigned long long>(t), static_cast<unsigned long long>(r), got, want,
                        std::fabs(got - want), bound);
        }
      }
    }
    uint64_t guard_changed = 0;
    for (uint64_t i = uint64_t{tokens} * k.rows; i < y_floats; ++i) {
      uint32_t bits = 0;
      std::memcpy(&bits, &y[i], sizeof bits);
      guard_changed += bits != 0xFFFFFFFFu;
    }
    if (guard_changed != 0)
      std::printf("  %llu floats past y[%u][%llu] were written\n", static_cast<unsigned long long>(guard_changed),
                  tokens - 1, static_cast<unsigned long long>(k.rows - 1));
    if (bad != 0 || guard_changed != 0) {
      std::printf("FAILED: %s %llux%llu (offset %llu) tokens=%u: %d mismatches\n", name.c_str(),
                  static_cast<unsigned long long>(k.rows), static_cast<unsigned long long>(k.cols),
                  static_cast<unsigned long long>(k.weights_offset), tokens, bad);
      ++failures;
    }
  }
  std::printf("checked %s %llux%llu (offset %llu, seed %u), tokens 1, 9, 64, 130\n", name.c_str(),
              static_cast<unsigned long long>(k.rows), static_cast<unsigned long long>(k.cols),
              static_cast<unsigned long long>(k.weights_offset), seed);
  CHECK_CUDA(cudaFree(d_w));
  CHECK_CUDA(cudaFree(d_x));
  CHECK_CUDA(cudaFree(d_y));
  CHECK_CUDA(cudaFree(d_scratch));
}

}  // namespace

int main() {
  try {
    check_arguments();
    if (failures != 0) return 1;
    // cuBLAS is opened on first use (kernels/cuda/cublas_loader), not linked: it must be found
    // from this binary, device or not.
    const cuda::CublasApi& api = cuda::cublas();
    if (!api.create || !api.gemm_ex || !api.status_name) {
      std::printf("FAILED: cuBLAS opened without its functions\n");
      return 1;
    }
    std::printf("ok: cuBLAS opened on first use (%s)\n", api.status_name(CUBLAS_STATUS_SUCCESS));
    if (cuda::devices().empty()) {
      std::printf("SKIPPED: no CUDA device visible (argument checks passed)\n");
      return 77;
    }
    // Shapes: 256x512 (small: one wrong element shows), 4096x1024 (a projection's width), and 37
    // rows (no multiple of any tile). Seeds alternate synthetic blocks (even) and quantized floats (odd).
    std::vector<Case> cases;
    for (const cuda::CudaRowType& t : cuda::kCudaRowTypes) {  // every matrix type the kernels read
      if (!t.matrix) continue;
      const GgmlType type = t.type;
      cases.push_back({type, 256, 512, 0});
      cases.push_back({type, 4096, 1024, 0});
      cases.push_back({type, 37, 768, 0});
    }
    // 2-byte-aligned weights: cuBLAS reading BF16 directly, and the Q8_0 conversion.
    cases.push_back({GgmlType::BF16, 256, 512, 2});
    cases.push_back({GgmlType::Q8_0, 256, 512, 2});
    cases.push_back({GgmlType::MXFP4, 256, 512, 1});  // read as bytes: any address
    cudaStream_t stream = nullptr;
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    {
      cuda::Gemm gemm(stream);
      for (size_t i = 0; i < cases.size(); ++i) run_case(gemm, stream, cases[i], static_cast<uint32_t>(2024 + i));
    }
    CHECK_CUDA(cudaStreamDestroy(stream));
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
