// SwiGLU: silu's hand values (0 at 0, identity for large gates, 0 for very negative ones) and the
// float kernel against the double reference; Gemma's GEGLU against the tanh formula.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "kernels/cpu/swiglu.hpp"

using namespace infer_plan::kernels;

TEST_CASE("silu by hand: silu(0) = 0, silu(g) ~ g for large g, ~0 for very negative g") {
  const float gate[] = {0.0f, 20.0f, 1.0f, -1000.0f, -20.0f}, up[] = {5.0f, 1.0f, 2.0f, 3.0f, 1.0f};
  float out[5];
  swiglu(gate, up, 5, out);
  CHECK(out[0] == 0.0f);
  CHECK(out[1] == doctest::Approx(20.0).epsilon(1e-7));  // 20 / (1 + e^-20): 20 * (1 - 2e-9)
  CHECK(out[2] == doctest::Approx(2.0 / (1.0 + std::exp(-1.0))).epsilon(1e-6));  // 2 * silu(1)
  CHECK(out[3] == 0.0f);  // e^1000 overflows to inf: -1000 / inf = -0, not NaN
  CHECK(std::fabs(out[4]) < 1e-7f);  // -20 * e^-20 = -4.1e-8
}

TEST_CASE("swiglu matches the double reference, also with out aliasing gate") {
  // Float exp (a few ulp), one division, two products: rtol 1e-6 of the output (1.7e-7 seen).
  std::mt19937 gen(11);
  const uint64_t n = 1000;
  std::vector<float> gate(n), up(n), got(n), ref(n);
  for (uint64_t i = 0; i < n; ++i) {
    gate[i] = static_cast<float>(gen() >> 8) * 0x1p-20f - 8.0f;  // [-8, 8)
    up[i] = static_cast<float>(gen() >> 8) * 0x1p-22f - 2.0f;    // [-2, 2)
  }
  swiglu(gate.data(), up.data(), n, got.data());
  swiglu_reference(gate.data(), up.data(), n, ref.data());
  int mismatches = 0;
  for (uint64_t i = 0; i < n; ++i) {
    if (std::fabs(got[i] - ref[i]) <= 1e-6 * std::fabs(ref[i])) continue;
    if (mismatches++ < 5) MESSAGE("[" << i << "] got " << got[i] << ", want " << ref[i]);
  }
  CHECK(mismatches == 0);
  swiglu(gate.data(), up.data(), n, gate.data());
  for (uint64_t i = 0; i < n; ++i) REQUIRE(gate[i] == got[i]);
}

TEST_CASE("geglu: gelu (tanh) of the gate times up, through fp16 as ggml's table, 0 and identity past +-10") {
  // gelu(x) = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), by hand in double: the kernel rounds the
  // gate to fp16 (2^-11 relative) and its result to fp16 (2^-11 more): within 2^-9 of the formula,
  // where the derivative's factor at these gates stays below 1.2
  const auto gelu = [](double x) { return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x))); };
  const float gate[] = {0.0f, 1.0f, -1.0f, 2.5f, -3.0f, 9.99f, 10.0f, 12.0f, -10.0f, -50.0f};
  const float up[] = {3.0f, 1.0f, 1.0f, 2.0f, 1.0f, 1.0f, 0.5f, 1.0f, 4.0f, 4.0f};
  float out[10];
  geglu(gate, up, 10, out);
  CHECK(out[0] == 0.0f);
  for (int i = 1; i < 6; ++i) {
    CAPTURE(gate[i]);
    CHECK(out[i] == doctest::Approx(gelu(gate[i]) * up[i]).epsilon(0x1p-9));
  }
  CHECK(out[6] == 5.0f);   // at 10 the identity: 10 x 0.5
  CHECK(out[7] == 12.0f);
  CHECK(out[8] == 0.0f);   // at -10 and below: 0
  CHECK(out[9] == 0.0f);
  // 0.841192 = gelu(1) by the formula; the table's fp16 result is the nearest of 0.8408 and 0.8413
  CHECK(std::fabs(out[1] - 0.841192f) <= 0x1p-11f);
}

TEST_CASE("swiglu_oai: GPT-OSS's clamped gate and up, sigmoid(1.702 x), times up + 1") {
  // By hand in double with limit 7: x = min(gate, 7), y = clamp(up, -7, 7), x sigmoid(1.702 x) (y + 1).
  const auto want = [](double g, double u) {
    const double x = std::min(g, 7.0), y = std::clamp(u, -7.0, 7.0);
    return x / (1.0 + std::exp(-1.702 * x)) * (y + 1.0);
  };
  std::vector<float> gate = {0.0f, 1.0f, -2.0f, 7.0f, 30.0f, -40.0f, 3.0f, 3.0f};
  const std::vector<float> up = {5.0f, 0.0f, 1.5f, 2.0f, 2.0f, 1.0f, 9.0f, -9.0f};
  std::vector<float> out(8);
  swiglu_oai(gate.data(), up.data(), 8, 7.0f, out.data());
  CHECK(out[0] == 0.0f);
  CHECK(out[1] == doctest::Approx(1.0 / (1.0 + std::exp(-1.702))).epsilon(1e-6));  // up 0 still passes the gate
  for (int i = 2; i < 8; ++i) {
    CAPTURE(i);
    CHECK(out[i] == doctest::Approx(want(gate[i], up[i])).epsilon(1e-6));
  }
  CHECK(out[4] == out[3]);                        // a gate above the limit acts as the limit
  CHECK(out[6] == doctest::Approx(3 / (1 + std::exp(-1.702 * 3)) * 8).epsilon(1e-6));   // up clamped at +7
  CHECK(out[7] == doctest::Approx(3 / (1 + std::exp(-1.702 * 3)) * -6).epsilon(1e-6));  // and at -7
  swiglu_oai(gate.data(), up.data(), 8, 7.0f, gate.data());  // out aliasing gate
  for (int i = 0; i < 8; ++i) CHECK(gate[i] == out[i]);
}
