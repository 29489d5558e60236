// kernels/cuda/rope against kernels/cpu's double-precision rope_reference, both layouts, positions
// up to 30000, theta 1e4 (Llama) and 1e6 (Qwen3), with llama3's factors, YaRN and partial RoPE. The argument checks run everywhere; without a
// device the test exits 77 (CTest: skipped).
//
// Tolerance for each rotated pair (x0, x1) -> (y0, y1), u = 2^-24:
// |got - ref| <= 4 u (|x0| + |x1|). The kernel's cos and sin come from double (pow and sincos
// within a few double ulps: ~1e-11 rad at angle 3e4, 1e-4 u) rounded to float (u each); each
// product then errs by <= 2 u |x| and the float difference adds u (|x0| + |x1|); the reference's
// cast to float adds 0.5 u |ref| <= 0.5 u (|x0| + |x1|): 3.5 u in all. A pair turned by a wrong
// angle (a wrong i, head_dim or position) is off by ~|x| times the angle's error, far above.
// The kernel also does kernels/cpu/rope's float arithmetic (same roundings, no FMA): the count of
// values bit-identical to it is printed (a double cos/sin that rounds to another float differs).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/rope.hpp"
#include "kernels/cuda/device_query.hpp"
#include "kernels/cuda/rope.hpp"
#include "tests/kernels/cuda_test_support.hpp"

namespace cuda = infer_plan::kernels::cuda;
namespace cpu = infer_plan::kernels;

using infer_plan::cuda_test::failures;

namespace {


const double kU = std::ldexp(1.0, -24);

void expect_throw(const char* what, const std::string& value, const std::function<void()>& call) {
  try {
    call();
  } catch (const std::invalid_argument& e) {
    if (std::string(e.what()).find(value) == std::string::npos) {
      std::printf("FAILED: %s: message \"%s\" does not name %s\n", what, e.what(), value.c_str());
      ++failures;
      return;
    }
    std::printf("ok: %s -> %s\n", what, e.what());
    return;
  }
  std::printf("FAILED: %s did not throw std::invalid_argument\n", what);
  ++failures;
}

void check_arguments() {
  alignas(16) static float x[16];  // never dereferenced: each call throws first
  static const uint32_t positions[1] = {0};
  const auto normal = cpu::RopeLayout::normal;
  const auto params = [&](uint64_t head_dim, float theta) {
    return cpu::RopeParams{.head_dim = head_dim, .theta_base = theta, .layout = normal};
  };
  cpu::RopeParams wide = params(8, 1e4f), unscaled = params(8, 1e4f);
  wide.dims = 10;
  unscaled.freq_scale = 0.0f;
  expect_throw("rope head_dim 7", "7", [&] { cuda::rope(x, 1, 1, positions, params(7, 1e4f), nullptr); });
  expect_throw("rope head_dim 0", "head_dim = 0", [&] { cuda::rope(x, 1, 1, positions, params(0, 1e4f), nullptr); });
  expect_throw("rope dims beyond head_dim", "dims = 10", [&] { cuda::rope(x, 1, 1, positions, wide, nullptr); });
  expect_throw("rope freq_scale 0", "freq_scale", [&] { cuda::rope(x, 1, 1, positions, unscaled, nullptr); });
  expect_throw("rope tokens 0", "tokens = 0", [&] { cuda::rope(x, 0, 1, positions, params(8, 1e4f), nullptr); });
  expect_throw("rope n_heads 0", "n_heads = 0", [&] { cuda::rope(x, 1, 0, positions, params(8, 1e4f), nullptr); });
  expect_throw("rope null x", "x", [&] { cuda::rope(nullptr, 1, 1, positions, params(8, 1e4f), nullptr); });
  expect_throw("rope null positions", "positions", [&] { cuda::rope(x, 1, 1, nullptr, params(8, 1e4f), nullptr); });
  expect_throw("rope theta 0", "theta_base", [&] { cuda::rope(x, 1, 1, positions, params(8, 0.0f), nullptr); });
  // YaRN's ramp ends: finite, and ordered (equal ends make a step, and are allowed).
  cpu::RopeParams reversed = params(8, 1e4f), endless = params(8, 1e4f);
  reversed.ext_factor = endless.ext_factor = 1.0f;
  reversed.corr_low = 3.0f;
  reversed.corr_high = 1.0f;
  endless.corr_high = INFINITY;
  expect_throw("rope YaRN ramp reversed", "corr_low = 3.000000, corr_high = 1.000000",
               [&] { cuda::rope(x, 1, 1, positions, reversed, nullptr); });
  expect_throw("rope YaRN ramp not finite", "corr_high = inf",
               [&] { cuda::rope(x, 1, 1, positions, endless, nullptr); });
}

// llama3: Llama 3.1's rope_freqs shape (1 for the high frequencies, 8 for the low, a ramp
// between), applied on both sides; yarn: factor 4 over an original context of 4096 (magnitude
// 1.139, so the bound grows by it); partial: half of each head rotated, the rest left bit for bit.
enum class Variant { plain, llama3, yarn, partial };

void run_case(uint32_t n_heads, uint32_t head_dim, float theta, cpu::RopeLayout layout, uint32_t seed,
              Variant variant = Variant::plain) {
  const bool llama3 = variant == Variant::llama3;
  // Positions: 0 (the identity), small ones, and up to 30000 where the angle needs double.
  const std::vector<uint32_t> positions = {0, 1, 2, 17, 255, 1000, 4097, 12345, 29999, 30000};
  const auto tokens = static_cast<uint32_t>(positions.size());
  const uint64_t per_token = static_cast<uint64_t>(n_heads) * head_dim;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-4.0f, 4.0f);
  std::vector<float> x(tokens * per_token);
  for (float& v : x) v = uniform(rng);

  std::vector<float> factors(head_dim / 2, 1.0f);
  for (uint32_t i = 0; i < head_dim / 2; ++i)
    factors[i] = 4 * i < head_dim / 2 ? 1.0f : 2 * i < head_dim / 2 ? 1.0f + 7.0f * (4.0f * i / head_dim - 0.5f) : 8.0f;
  cpu::RopeParams p{.head_dim = head_dim, .theta_base = theta, .layout = layout,
                    .freq_factors = llama3 ? factors.data() : nullptr};
  if (variant == Variant::partial) p.dims = head_dim / 2;  // even for the head_dim 64 it is run with
  if (variant == Variant::yarn) {
    const cpu::YarnRange range = cpu::yarn_correction_range(head_dim, 4096, theta, 32.0, 1.0);
    p.freq_scale = 0.25f;
    p.ext_factor = 1.0f;
    p.corr_low = range.low;
    p.corr_high = range.high;
    p.magnitude = static_cast<float>(0.1 * std::log(4.0) + 1.0);
  }
  const uint32_t n = static_cast<uint32_t>(p.rotated());
  std::vector<float> ref = x, fast = x;
  for (uint32_t t = 0; t < tokens; ++t) {
    cpu::rope_reference(&ref[t * per_token], n_heads, positions[t], p);
    cpu::rope(&fast[t * per_token], n_heads, positions[t], p);
  }

  float* d_x = nullptr;
  uint32_t* d_positions = nullptr;
  float* d_factors = nullptr;
  CHECK_CUDA(cudaMalloc(&d_factors, factors.size() * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(d_factors, factors.data(), factors.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMalloc(&d_x, x.size() * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&d_positions, positions.size() * sizeof(uint32_t)));
  CHECK_CUDA(cudaMemcpy(d_x, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(d_positions, positions.data(), positions.size() * sizeof(uint32_t), cudaMemcpyHostToDevice));
  cpu::RopeParams on_device = p;
  on_device.freq_factors = llama3 ? d_factors : nullptr;
  cuda::rope(d_x, tokens, n_heads, d_positions, on_device, nullptr);
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<float> got(x.size());
  CHECK_CUDA(cudaMemcpy(got.data(), d_x, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaFree(d_x));
  CHECK_CUDA(cudaFree(d_positions));
  CHECK_CUDA(cudaFree(d_factors));

  const bool neox = layout == cpu::RopeLayout::neox;
  const std::string name = std::to_string(n_heads) + " x " + std::to_string(head_dim) + ", theta " +
                           std::to_string(static_cast<double>(theta)) + (neox ? ", neox" : ", normal") +
                           (llama3 ? ", llama3 factors" : "") + (variant == Variant::yarn ? ", YaRN x4" : "") +
                           (variant == Variant::partial ? ", partial " + std::to_string(n) : "");
  int bad = 0;
  uint64_t identical = 0;
  for (uint32_t t = 0; t < tokens; ++t)
    for (uint32_t h = 0; h < n_heads; ++h)
      for (uint32_t i = 0; i < head_dim / 2; ++i) {
        const uint64_t head = t * per_token + static_cast<uint64_t>(h) * head_dim;
        if (i >= n / 2) {  // partial RoPE: the values past the rotated ones are untouched
          for (const uint64_t j : {head + n + 2 * (i - n / 2), head + n + 2 * (i - n / 2) + 1})
            if (j < head + head_dim && got[j] != x[j] && bad++ < 5)
              std::printf("  mismatch rope %s: value %llu past the rotated ones changed\n", name.c_str(),
                          static_cast<unsigned long long>(j - head));
          continue;
        }
        const uint64_t a = head + (neox ? i : 2 * i), b = head + (neox ? i + n / 2 : 2 * i + 1);
        const double bound = 4 * kU * static_cast<double>(p.magnitude) *
                             (std::fabs(static_cast<double>(x[a])) + std::fabs(static_cast<double>(x[b])));
        for (const uint64_t j : {a, b}) {
          identical += got[j] == fast[j];
          const double diff = std::fabs(static_cast<double>(got[j]) - ref[j]);
          if (!(diff <= bound) && bad++ < 5)
            std::printf("  mismatch rope %s: position %u head %u pair %u: got %.9g, ref %.9g, |diff| %.3g > %.3g\n",
                        name.c_str(), positions[t], h, i, static_cast<double>(got[j]), static_cast<double>(ref[j]),
                        diff, bound);
        }
      }
  if (bad != 0) {
    std::printf("FAILED: rope %s: %d mismatches\n", name.c_str(), bad);
    ++failures;
  } else {
    std::printf("checked rope %s (%llu of %zu values bit-identical to kernels/cpu/rope)\n", name.c_str(),
                static_cast<unsigned long long>(identical), got.size());
  }
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
    uint32_t seed = 31;
    for (const cpu::RopeLayout layout : {cpu::RopeLayout::normal, cpu::RopeLayout::neox}) {
      run_case(32, 128, 1e4f, layout, seed++);  // Llama's query heads
      run_case(8, 128, 1e6f, layout, seed++);   // Qwen3's key heads
      run_case(5, 64, 1e4f, layout, seed++);    // heads not a multiple of the 8 a block takes
      run_case(3, 6, 1e4f, layout, seed++);     // 3 pairs: most of the warp idle
      run_case(2, 600, 1e6f, layout, seed++);   // 300 pairs: more than a block's 256 threads
      run_case(32, 128, 5e5f, layout, seed++, Variant::llama3);  // Llama 3.1: rope_freqs divide the angles
      run_case(8, 128, 1e6f, layout, seed++, Variant::yarn);     // Qwen3 with YaRN
      run_case(4, 64, 1e4f, layout, seed++, Variant::partial);   // 32 of 64 rotated
    }
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
