// RMSNorm: a hand case and the float kernel against the double reference.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/rmsnorm.hpp"

using namespace infer_plan::kernels;

TEST_CASE("rmsnorm by hand: [3, 4] -> [3, 4] / sqrt(12.5)") {
  // mean of squares (9 + 16) / 2 = 12.5; weight 1, eps 0. A few float roundings: rtol 1e-6.
  const float x[] = {3.0f, 4.0f}, weight[] = {1.0f, 1.0f};
  float out[2];
  rmsnorm(x, weight, 2, 0.0f, out);
  CHECK(out[0] == doctest::Approx(3.0 / std::sqrt(12.5)).epsilon(1e-6));
  CHECK(out[1] == doctest::Approx(4.0 / std::sqrt(12.5)).epsilon(1e-6));
  // eps joins the mean of squares: [3, 4] with eps 1 -> [3, 4] / sqrt(13.5); weight scales.
  const float weight2[] = {2.0f, 0.5f};
  rmsnorm(x, weight2, 2, 1.0f, out);
  CHECK(out[0] == doctest::Approx(6.0 / std::sqrt(13.5)).epsilon(1e-6));
  CHECK(out[1] == doctest::Approx(2.0 / std::sqrt(13.5)).epsilon(1e-6));
}

TEST_CASE("rmsnorm matches the double reference, also in place") {
  // A float sum of 4096 squares in 8 lanes (512 terms each) has relative error <= ~512 * 2^-24
  // = 3e-5 in the worst case, halved by the sqrt; then two float products. rtol 2e-5 (the largest
  // seen is 1.4e-7).
  constexpr double kRtol = 2e-5;
  for (const uint64_t n : {1u, 7u, 128u, 4096u, 4099u}) {
    std::mt19937 gen(static_cast<uint32_t>(n));
    std::vector<float> x(n), weight(n);
    for (uint64_t i = 0; i < n; ++i) {
      x[i] = static_cast<float>(gen() >> 8) * 0x1p-20f - 8.0f;  // [-8, 8)
      weight[i] = static_cast<float>(gen() >> 8) * 0x1p-23f;     // [0, 2)
    }
    std::vector<float> got(n), ref(n);
    rmsnorm(x.data(), weight.data(), n, 1e-6f, got.data());
    rmsnorm_reference(x.data(), weight.data(), n, 1e-6f, ref.data());
    int mismatches = 0;
    for (uint64_t i = 0; i < n; ++i) {
      if (std::fabs(got[i] - ref[i]) <= kRtol * std::fabs(ref[i])) continue;
      if (mismatches++ < 5) MESSAGE("n " << n << " [" << i << "]: got " << got[i] << ", want " << ref[i]);
    }
    CHECK(mismatches == 0);
    rmsnorm(x.data(), weight.data(), n, 1e-6f, x.data());  // out == x
    for (uint64_t i = 0; i < n; ++i) REQUIRE(x[i] == got[i]);
  }
}
