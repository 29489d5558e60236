// Softmax: sums to 1, does not change when every logit moves by the same amount, survives huge
// logits, and matches the double reference.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/softmax.hpp"

using namespace infer_plan::kernels;

namespace {
// Multiples of 1/8 in [-16, 16): exact in float, and still exact after adding 64.
std::vector<float> eighths(uint64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<float> x(n);
  for (float& v : x) v = static_cast<float>(static_cast<int>(gen() % 256) - 128) / 8.0f;
  return x;
}
}  // namespace

TEST_CASE("softmax sums to 1 and is invariant to a shift of all logits") {
  std::vector<float> x = eighths(1000, 3);
  std::vector<float> shifted = x;
  for (float& v : shifted) v += 64.0f;  // exact: the shift leaves every x - max unchanged
  softmax(x.data(), x.size());
  softmax(shifted.data(), shifted.size());
  double sum = 0.0;
  for (const float p : x) sum += p;
  // The kernel sums in double; each probability then carries its float exp and product rounding
  // (a few 2^-24 relative), so the total is within ~3e-7 of 1.
  CHECK(std::fabs(sum - 1.0) < 1e-6);
  for (size_t i = 0; i < x.size(); ++i) REQUIRE(x[i] == shifted[i]);  // bit-identical
}

TEST_CASE("softmax of huge logits does not overflow") {
  // exp(1e30) would be inf; after subtracting the max the terms are e^0 = 1, e^-1e24 = 0 and
  // e^-2e30 = 0, so the result is exactly [1, 0, 0].
  float x[] = {1e30f, 1e30f - 1e24f, -1e30f};
  softmax(x, 3);
  CHECK(x[0] == 1.0f);
  CHECK(x[1] == 0.0f);
  CHECK(x[2] == 0.0f);
  float same[] = {3e38f, 3e38f};
  softmax(same, 2);
  CHECK(same[0] == 0.5f);
  CHECK(same[1] == 0.5f);
  float near[] = {1000.0f, 999.0f, -std::numeric_limits<float>::infinity()};
  softmax(near, 3);
  CHECK(near[0] == doctest::Approx(1.0 / (1.0 + std::exp(-1.0))).epsilon(1e-6));
  CHECK(near[1] == doctest::Approx(std::exp(-1.0) / (1.0 + std::exp(-1.0))).epsilon(1e-6));
  CHECK(near[2] == 0.0f);  // a masked (-inf) logit
}

TEST_CASE("softmax matches the double reference") {
  // Float exp (~1 ulp), the subtraction and the final product: a few 2^-24 relative, so rtol 1e-6
  // (the largest seen is 1.2e-7); atol 1e-12 only for the smallest probabilities (~1e-10 here).
  std::mt19937 gen(8);
  std::vector<float> got(4096);
  for (float& v : got) v = static_cast<float>(gen() >> 8) * 0x1p-20f - 8.0f;
  std::vector<float> ref = got;
  softmax(got.data(), got.size());
  softmax_reference(ref.data(), ref.size());
  int mismatches = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::fabs(got[i] - ref[i]) <= 1e-12 + 1e-6 * ref[i]) continue;
    if (mismatches++ < 5) MESSAGE("[" << i << "] got " << got[i] << ", want " << ref[i]);
  }
  CHECK(mismatches == 0);
}
