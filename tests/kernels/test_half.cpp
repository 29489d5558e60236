// fp16/bf16 conversions: exhaustive round trip over all 65536 halves, and rounding at ties
// (round-to-nearest-even, the IEEE default that ggml's conversions use).
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>

#include "kernels/cpu/half.hpp"

using namespace infer_plan::kernels;

TEST_CASE("every half round-trips through float") {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = fp16_to_fp32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      CHECK(std::isnan(fp16_to_fp32(fp32_to_fp16(f))));
      continue;
    }
    if (fp32_to_fp16(f) != h) {
      CAPTURE(h);
      CHECK(fp32_to_fp16(f) == h);
    }
  }
}

TEST_CASE("half: known values, ties to even, overflow, subnormals") {
  CHECK(fp32_to_fp16(1.0f) == 0x3C00);
  CHECK(fp32_to_fp16(-2.0f) == 0xC000);
  CHECK(fp32_to_fp16(65504.0f) == 0x7BFF);
  CHECK(fp32_to_fp16(65520.0f) == 0x7C00);  // halfway above max: rounds to even = inf
  CHECK(fp32_to_fp16(1.0f + 1.0f / 2048) == 0x3C00);   // tie between 0x3C00 and 0x3C01 -> even
  CHECK(fp32_to_fp16(1.0f + 3.0f / 2048) == 0x3C02);   // tie between 0x3C01 and 0x3C02 -> even
  CHECK(fp32_to_fp16(std::ldexp(1.0f, -24)) == 0x0001);  // smallest subnormal
  CHECK(fp32_to_fp16(std::ldexp(1.0f, -25)) == 0x0000);  // tie with zero -> even (zero)
  CHECK(fp32_to_fp16(std::ldexp(1.5f, -25)) == 0x0001);
  CHECK(fp16_to_fp32(0x0001) == std::ldexp(1.0f, -24));
  CHECK(std::isinf(fp16_to_fp32(0x7C00)));
}

TEST_CASE("bf16: truncation with round to nearest even") {
  CHECK(fp32_to_bf16(1.0f) == 0x3F80);
  CHECK(bf16_to_fp32(0x3F80) == 1.0f);
  // 1 + 2^-8 is halfway between bf16 1.0 (0x3F80) and 1 + 2^-7 (0x3F81): ties to even
  CHECK(fp32_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3F80);
  CHECK(fp32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3F82);
  CHECK(std::isnan(bf16_to_fp32(fp32_to_bf16(std::nanf("")))));
  for (uint32_t b = 0; b < 65536; b += 7) {
    const float f = bf16_to_fp32(static_cast<uint16_t>(b));
    if (!std::isnan(f)) CHECK(fp32_to_bf16(f) == b);
  }
}
