// kernels/cuda/rmsnorm and kernels/cuda/swiglu against kernels/cpu's double-precision references,
// in place and out of place; GEGLU and SwiGLU-OAI against kernels/cpu's own (check_glu). Argument
// checks run everywhere; without a device the test exits 77 (CTest: skipped).
//
// Tolerances, |got - ref| <= atol + rtol * |ref| (u = 2^-24):
// - RMSNorm: the sum of squares goes through at most n / 256 sequential adds per thread, 5 shuffle
//   levels and 8 warp sums, so its relative error is <= (n / 256 + 16) u; the square root halves
//   that, the mean, eps, sqrt, division and the two final products add ~6 u, and the reference's
//   cast to float 0.5 u: rtol = (n / 256 + 32) u covers it with margin.
// - SwiGLU: expf is within 2 ulp (CUDA's accurate expf); the relative error of 1 + exp(-g) is then
//   <= 3 u, and the division, the product and the reference's cast add 2.5 u: rtol = 16 u.
// atol = 1e-30 only keeps exact zeros exact (both sides give 0 or -0 there).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/rmsnorm.hpp"
#include "kernels/cpu/swiglu.hpp"
#include "kernels/cuda/device_query.hpp"
#include "kernels/cuda/rmsnorm.hpp"
#include "kernels/cuda/swiglu.hpp"
#include "tests/kernels/cuda_test_support.hpp"

namespace cuda = infer_plan::kernels::cuda;
namespace cpu = infer_plan::kernels;

using infer_plan::cuda_test::failures;
using infer_plan::cuda_test::DeviceArray;
using infer_plan::cuda_test::expect_throw;

namespace {

constexpr double kU = 1.0 / (1 << 24);
constexpr double kAtol = 1e-30;

// Device buffer of floats, copied from and back to the host.

void compare(const std::string& what, const std::vector<float>& got, const std::vector<float>& ref, double rtol) {
  int bad = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double bound = kAtol + rtol * std::fabs(static_cast<double>(ref[i]));
    if (!(std::fabs(static_cast<double>(got[i]) - ref[i]) <= bound) && bad++ < 5)
      std::printf("  mismatch %s [%zu]: got %.9g, ref %.9g, bound %.3g\n", what.c_str(), i,
                  static_cast<double>(got[i]), static_cast<double>(ref[i]), bound);
  }
  if (bad != 0) {
    std::printf("FAILED: %s: %d mismatches\n", what.c_str(), bad);
    ++failures;
  } else {
    std::printf("checked %s\n", what.c_str());
  }
}

void check_rmsnorm(uint32_t rows, uint32_t n, bool in_place, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  std::vector<float> x(static_cast<size_t>(rows) * n), weight(n);
  for (float& v : x) v = uniform(rng);
  for (float& v : weight) v = uniform(rng);
  std::vector<float> ref(x.size());
  for (uint32_t r = 0; r < rows; ++r)
    cpu::rmsnorm_reference(x.data() + static_cast<size_t>(r) * n, weight.data(), n, 1e-6f,
                           ref.data() + static_cast<size_t>(r) * n);
  DeviceArray<float> d_x(x), d_weight(weight), d_out(std::vector<float>(x.size(), NAN));
  float* out = in_place ? d_x.data : d_out.data;
  cuda::rmsnorm(d_x.data, d_weight.data, rows, n, 1e-6f, out, nullptr);
  CHECK_CUDA(cudaDeviceSynchronize());
  const std::vector<float> got = (in_place ? d_x : d_out).to_host(x.size());
  compare("rmsnorm " + std::to_string(rows) + "x" + std::to_string(n) + (in_place ? " in place" : ""), got, ref,
          (n / 256 + 32) * kU);
}

void check_swiglu(uint64_t n, bool in_place, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-12.0f, 12.0f);  // reaches both tails of silu
  std::vector<float> gate(n), up(n);
  for (float& v : gate) v = uniform(rng);
  for (float& v : up) v = uniform(rng);
  gate[0] = -200.0f;  // exp(200) overflows: silu must give -0, not NaN
  gate[n - 1] = 0.0f;
  std::vector<float> ref(n);
  cpu::swiglu_reference(gate.data(), up.data(), n, ref.data());
  DeviceArray<float> d_gate(gate), d_up(up), d_out(std::vector<float>(n, NAN));
  float* out = in_place ? d_gate.data : d_out.data;
  cuda::swiglu(d_gate.data, d_up.data, n, out, nullptr);
  CHECK_CUDA(cudaDeviceSynchronize());
  compare("swiglu " + std::to_string(n) + (in_place ? " in place" : ""), (in_place ? d_gate : d_out).to_host(n), ref,
          16 * kU);
}

// Gemma's GEGLU and GPT-OSS's clamped SwiGLU against kernels/cpu's own (the CPU decoder's), gates
// past both ends of GEGLU's table (+-10) and of GPT-OSS's limit (7). GEGLU: the device computes
// GELU of the fp16 gate with CUDA's tanhf, the CPU's table holds it from std::tanh, both rounded to
// fp16: at most one fp16 step apart (2^-10 of the value, or 2^-24 absolute among fp16's
// subnormals), then one float product: |got - ref| <= (2^-10 + 2 u) |ref| + 2^-24 |up|.
// SwiGLU-OAI: as SwiGLU (expf within 2 ulp), rtol = 16 u.
void check_glu(bool gelu, uint64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-12.0f, 12.0f);
  std::vector<float> gate(n), up(n);
  for (float& v : gate) v = uniform(rng);
  for (float& v : up) v = uniform(rng);
  constexpr float kLimit = 7.0f;
  std::vector<float> ref(n);
  if (gelu) cpu::geglu(gate.data(), up.data(), n, ref.data());
  else cpu::swiglu_oai(gate.data(), up.data(), n, kLimit, ref.data());
  DeviceArray<float> d_gate(gate), d_up(up), d_out(std::vector<float>(n, NAN));
  if (gelu) cuda::geglu(d_gate.data, d_up.data, n, d_out.data, nullptr);
  else cuda::swiglu_oai(d_gate.data, d_up.data, n, kLimit, d_out.data, nullptr);
  CHECK_CUDA(cudaDeviceSynchronize());
  const std::vector<float> got = d_out.to_host(n);
  int bad = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const double r = ref[i];
    const double bound = gelu ? (0x1p-10 + 2 * kU) * std::fabs(r) + 0x1p-24 * std::fabs(up[i]) + kAtol
                              : 16 * kU * std::fabs(r) + kAtol;
    if (!(std::fabs(got[i] - r) <= bound) && bad++ < 5)
      std::printf("  mismatch %s [%llu]: gate %.9g up %.9g: got %.9g, ref %.9g\n", gelu ? "geglu" : "swiglu_oai",
                  static_cast<unsigned long long>(i), gate[i], up[i], got[i], r);
  }
  if (bad != 0) {
    std::printf("FAILED: %s %llu: %d mismatches\n", gelu ? "geglu" : "swiglu_oai",
                static_cast<unsigned long long>(n), bad);
    ++failures;
  } else {
    std::printf("checked %s %llu\n", gelu ? "geglu" : "swiglu_oai", static_cast<unsigned long long>(n));
  }
}

}  // namespace

int main() {
  try {
    alignas(16) static float fake[4];  // never dereferenced: each call throws first
    expect_throw("rmsnorm rows = 0", [&] { cuda::rmsnorm(fake, fake, 0, 4, 1e-6f, fake, nullptr); });
    expect_throw("rmsnorm n = 0", [&] { cuda::rmsnorm(fake, fake, 1, 0, 1e-6f, fake, nullptr); });
    expect_throw("rmsnorm null x", [&] { cuda::rmsnorm(nullptr, fake, 1, 4, 1e-6f, fake, nullptr); });
    expect_throw("swiglu n = 0", [&] { cuda::swiglu(fake, fake, 0, fake, nullptr); });
    expect_throw("swiglu null up", [&] { cuda::swiglu(fake, nullptr, 4, fake, nullptr); });
    expect_throw("geglu n = 0", [&] { cuda::geglu(fake, fake, 0, fake, nullptr); });
    expect_throw("swiglu_oai limit 0", [&] { cuda::swiglu_oai(fake, fake, 4, 0.0f, fake, nullptr); });
    expect_throw("swiglu_oai null gate", [&] { cuda::swiglu_oai(nullptr, fake, 4, 7.0f, fake, nullptr); });
    if (failures != 0) return 1;
    if (cuda::devices().empty()) {
      std::printf("SKIPPED: no CUDA device visible (argument checks passed)\n");
      return 77;
    }
    // Row lengths: below a warp, Qwen3's head_dim, not a multiple of the block, Qwen3-8B's hidden.
    check_rmsnorm(1, 5, false, 1);
    check_rmsnorm(32, 128, false, 2);
    check_rmsnorm(3, 1000, true, 3);
    check_rmsnorm(8, 4096, false, 4);
    check_rmsnorm(2, 12288, true, 5);
    check_swiglu(1, false, 6);
    check_swiglu(1000, true, 7);
    check_swiglu(8 * 12288 + 3, false, 8);
    check_swiglu(3u << 20, false, 9);  // more values than the grid has threads: the stride loop
    check_glu(true, 100000, 10);
    check_glu(false, 100000, 11);
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
