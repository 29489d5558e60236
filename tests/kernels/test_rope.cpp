// RoPE: position 0 is the identity, a head_dim-4 case by hand in both layouts, the documented
// relation between the layouts, norm preservation, and the kernel against the double reference;
// linear and YaRN scaling (a head_dim-8 case by hand, a Qwen3-sized one against the reference) and
// partial RoPE.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/rope.hpp"

using namespace infer_plan::kernels;

namespace {
RopeParams plain(uint64_t head_dim, float theta, RopeLayout layout, const float* factors = nullptr) {
  return {.head_dim = head_dim, .theta_base = theta, .layout = layout, .freq_factors = factors};
}

std::vector<float> random_heads(uint64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<float> x(n);
  for (float& v : x) v = static_cast<float>(gen() >> 8) * 0x1p-23f - 1.0f;  // [-1, 1)
  return x;
}
}  // namespace

TEST_CASE("rope at position 0 is the identity") {
  // cos 0 = 1 and sin 0 = 0 exactly: x0 * 1 - x1 * 0 = x0, bit for bit.
  for (const RopeLayout layout : {RopeLayout::normal, RopeLayout::neox}) {
    const std::vector<float> x = random_heads(3 * 64, 1);
    std::vector<float> y = x;
    rope(y.data(), 3, 0, plain(64, 10000.0f, layout));
    for (size_t i = 0; i < x.size(); ++i) REQUIRE(y[i] == x[i]);
  }
}

TEST_CASE("rope by hand: head_dim 4 at position 1, theta 10000") {
  // Pair 0 turns by 1 * 10000^(-0/4) = 1 rad, pair 1 by 10000^(-2/4) = 0.01 rad. x = [1, 2, 3, 4].
  // normal pairs (x0, x1) and (x2, x3); neox pairs (x0, x2) and (x1, x3). A rotation by a of
  // (u, v) is (u cos a - v sin a, u sin a + v cos a). Float rounding of values <= 5: atol 2e-6.
  const double c1 = std::cos(1.0), s1 = std::sin(1.0), c2 = std::cos(0.01), s2 = std::sin(0.01);
  float normal[] = {1, 2, 3, 4};
  rope(normal, 1, 1, plain(4, 10000.0f, RopeLayout::normal));
  const double want_normal[] = {1 * c1 - 2 * s1, 1 * s1 + 2 * c1, 3 * c2 - 4 * s2, 3 * s2 + 4 * c2};
  float neox[] = {1, 2, 3, 4};
  rope(neox, 1, 1, plain(4, 10000.0f, RopeLayout::neox));
  const double want_neox[] = {1 * c1 - 3 * s1, 2 * c2 - 4 * s2, 1 * s1 + 3 * c1, 2 * s2 + 4 * c2};
  for (int i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(std::fabs(normal[i] - want_normal[i]) <= 2e-6);
    CHECK(std::fabs(neox[i] - want_neox[i]) <= 2e-6);
  }
}

TEST_CASE("neox is normal applied to the de-interleaved head") {
  // As documented: neox rotates (x[i], x[i + d/2]), normal rotates (x[2i], x[2i+1]), by the same
  // angle for pair i. So placing x[i] at 2i and x[i + d/2] at 2i + 1, rotating with normal and
  // putting the values back gives neox exactly (the same float operations on the same values).
  const uint64_t d = 64;
  const std::vector<float> x = random_heads(2 * d, 2);
  std::vector<float> neox = x, interleaved(2 * d);
  for (uint64_t h = 0; h < 2; ++h)
    for (uint64_t i = 0; i < d / 2; ++i) {
      interleaved[h * d + 2 * i] = x[h * d + i];
      interleaved[h * d + 2 * i + 1] = x[h * d + i + d / 2];
    }
  rope(neox.data(), 2, 37, plain(d, 1e6f, RopeLayout::neox));
  rope(interleaved.data(), 2, 37, plain(d, 1e6f, RopeLayout::normal));
  bool differs_from_normal_in_place = false;
  std::vector<float> normal = x;
  rope(normal.data(), 2, 37, plain(d, 1e6f, RopeLayout::normal));
  for (uint64_t h = 0; h < 2; ++h)
    for (uint64_t i = 0; i < d / 2; ++i) {
      REQUIRE(neox[h * d + i] == interleaved[h * d + 2 * i]);
      REQUIRE(neox[h * d + i + d / 2] == interleaved[h * d + 2 * i + 1]);
    }
  for (uint64_t i = 0; i < 2 * d; ++i) differs_from_normal_in_place |= normal[i] != neox[i];
  CHECK(differs_from_normal_in_place);
}

TEST_CASE("rope preserves each head's norm and matches the double reference") {
  // A rotation keeps |x|; float rounding of cos, sin and two products per value: rtol 1e-5 on the
  // norm, atol 1e-6 per value (|x| < 1; the largest gap seen is 1.2e-7). Large positions check
  // that the angle is formed in double: a float angle at 131071 would be off by up to 0.004 rad.
  for (const RopeLayout layout : {RopeLayout::normal, RopeLayout::neox})
    for (const uint64_t position : {1u, 17u, 4096u, 131071u}) {
      const uint64_t n_heads = 4, d = 128;
      const std::vector<float> x = random_heads(n_heads * d, static_cast<uint32_t>(position));
      std::vector<float> got = x, ref = x;
      rope(got.data(), n_heads, position, plain(d, 1e6f, layout));
      rope_reference(ref.data(), n_heads, position, plain(d, 1e6f, layout));
      for (uint64_t h = 0; h < n_heads; ++h) {
        double before = 0.0, after = 0.0;
        for (uint64_t i = 0; i < d; ++i) {
          before += static_cast<double>(x[h * d + i]) * x[h * d + i];
          after += static_cast<double>(got[h * d + i]) * got[h * d + i];
        }
        CHECK(std::sqrt(after) == doctest::Approx(std::sqrt(before)).epsilon(1e-5));
      }
      int mismatches = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        if (std::fabs(got[i] - ref[i]) <= 1e-6) continue;
        if (mismatches++ < 5) MESSAGE("position " << position << " [" << i << "]: got " << got[i] << ", want " << ref[i]);
      }
      CHECK(mismatches == 0);
    }
}

TEST_CASE("rope_freqs divide each pair's angle, as llama.cpp applies Llama 3.1's factors") {
  // Factor f on pair i turns it by pos * base^(-2i/d) / f. So factors of 2 at position 2p turn
  // every pair by exactly the angle of position p without factors (scaling by 2 is exact in
  // double, so the angles, and then every float, are bit-identical); factors of 1 change nothing.
  // A Llama-3.1-like ramp of factors against the double reference (values within [-1.5, 1.5]:
  // the float rotation's rounding stays under 2e-6, as in the cases above).
  const uint64_t d = 64, heads = 3;
  const std::vector<float> x = random_heads(heads * d, 5);
  for (const RopeLayout layout : {RopeLayout::normal, RopeLayout::neox}) {
    const std::vector<float> twos(d / 2, 2.0f), ones(d / 2, 1.0f);
    std::vector<float> scaled = x, unfactored = x, unit = x, none = x;
    rope(scaled.data(), heads, 2 * 1234, plain(d, 500000.0f, layout, twos.data()));
    rope(unfactored.data(), heads, 1234, plain(d, 500000.0f, layout));
    CHECK(scaled == unfactored);
    rope(unit.data(), heads, 777, plain(d, 500000.0f, layout, ones.data()));
    rope(none.data(), heads, 777, plain(d, 500000.0f, layout));
    CHECK(unit == none);

    // Llama 3.1's shape: high frequencies kept (1), low ones slowed (8), a ramp between.
    std::vector<float> llama3(d / 2);
    for (uint64_t i = 0; i < d / 2; ++i) llama3[i] = i < 8 ? 1.0f : i < 20 ? 1.0f + 0.5f * static_cast<float>(i - 8) : 8.0f;
    std::vector<float> fast = x, ref = x;
    rope(fast.data(), heads, 100000, plain(d, 500000.0f, layout, llama3.data()));
    rope_reference(ref.data(), heads, 100000, plain(d, 500000.0f, layout, llama3.data()));
    for (size_t i = 0; i < x.size(); ++i) REQUIRE(std::fabs(fast[i] - ref[i]) <= 2e-6);
    std::vector<float> unscaled = x;
    rope(unscaled.data(), heads, 100000, plain(d, 500000.0f, layout));
    CHECK(unscaled != fast);  // the factors are applied
  }
}

TEST_CASE("linear scaling by 2 at position 2p turns every pair as plain RoPE at p") {
  // angle = freq_scale * (2p * base^(-2i/d)): halving a double is exact, so bit for bit.
  const uint64_t d = 64, heads = 2;
  const std::vector<float> x = random_heads(heads * d, 7);
  for (const RopeLayout layout : {RopeLayout::normal, RopeLayout::neox}) {
    RopeParams linear = plain(d, 1e6f, layout);
    linear.freq_scale = 0.5f;
    std::vector<float> scaled = x, unscaled = x;
    rope(scaled.data(), heads, 2 * 3001, linear);
    rope(unscaled.data(), heads, 3001, plain(d, 1e6f, layout));
    CHECK(scaled == unscaled);
  }
}

TEST_CASE("YaRN by hand: head_dim 8, theta 10000, original context 64, factor 4, position 10") {
  // Correction range: dim(r) = 8 ln(64 / (2 pi r)) / (2 ln 10000); dim(32) = -0.497 -> floor -1
  // -> 0 (low); dim(1) = 1.008 -> ceil 2 (high). Ramp y = i / 2 gives the trained angle's share
  // 1, 0.5, 0, 0 for pairs 0..3. Trained angles 10 * 10000^(-i/4) = 10, 1, 0.1, 0.01; interpolated
  // a quarter of that. So 10, 0.5 * 0.25 + 0.5 * 1 = 0.625, 0.025, 0.0025; magnitude 0.1 ln 4 + 1.
  const YarnRange range = yarn_correction_range(8, 64, 10000.0, 32.0, 1.0);
  CHECK(range.low == 0.0f);
  CHECK(range.high == 2.0f);
  const double angles[] = {10.0, 0.625, 0.025, 0.0025};
  const double m = 0.1 * std::log(4.0) + 1.0;
  RopeParams yarn = plain(8, 10000.0f, RopeLayout::neox);
  yarn.freq_scale = 0.25f;
  yarn.ext_factor = 1.0f;
  yarn.corr_low = range.low;
  yarn.corr_high = range.high;
  yarn.magnitude = static_cast<float>(m);
  const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};  // neox pairs (x[i], x[i + 4])
  float got[8], ref[8];
  std::copy(x, x + 8, got);
  std::copy(x, x + 8, ref);
  rope(got, 1, 10, yarn);
  rope_reference(ref, 1, 10, yarn);
  for (int i = 0; i < 4; ++i) {
    CAPTURE(i);
    const double c = std::cos(angles[i]) * m, s = std::sin(angles[i]) * m;
    const double want0 = x[i] * c - x[i + 4] * s, want1 = x[i] * s + x[i + 4] * c;
    // Values <= 10 in float: a few ulps of 10 (1e-6 each).
    CHECK(std::fabs(got[i] - want0) <= 4e-6);
    CHECK(std::fabs(got[i + 4] - want1) <= 4e-6);
    CHECK(std::fabs(ref[i] - want0) <= 4e-6);
    CHECK(std::fabs(ref[i + 4] - want1) <= 4e-6);
  }
}

TEST_CASE("YaRN at Qwen3's shape matches the reference and differs from plain RoPE") {
  // head_dim 128, theta 1e6, original context 32768, factor 4 (Qwen3's published YaRN setting),
  // beta 32 / 1. The kernel blends angles (ggml's form), the reference blends inverse frequencies
  // (transformers'): the same value in exact arithmetic; in double they differ by ~1e-16 relative,
  // far below the float rotation's 2e-6 (|x| < 1, times the magnitude 1.139).
  const uint64_t d = 128, heads = 4;
  const YarnRange range = yarn_correction_range(d, 32768, 1e6, 32.0, 1.0);
  CHECK(range.low > 0.0f);
  CHECK(range.high > range.low);
  CHECK(range.high < 63.0f);
  RopeParams yarn = plain(d, 1e6f, RopeLayout::neox);
  yarn.freq_scale = 0.25f;
  yarn.ext_factor = 1.0f;
  yarn.corr_low = range.low;
  yarn.corr_high = range.high;
  yarn.magnitude = static_cast<float>(0.1 * std::log(4.0) + 1.0);
  for (const uint64_t position : {1u, 100u, 40000u, 131071u}) {
    const std::vector<float> x = random_heads(heads * d, static_cast<uint32_t>(position) + 11);
    std::vector<float> got = x, ref = x, unscaled = x;
    rope(got.data(), heads, position, yarn);
    rope_reference(ref.data(), heads, position, yarn);
    rope(unscaled.data(), heads, position, plain(d, 1e6f, RopeLayout::neox));
    for (size_t i = 0; i < x.size(); ++i) REQUIRE(std::fabs(got[i] - ref[i]) <= 3e-6);
    CHECK(got != unscaled);
  }
}

TEST_CASE("partial RoPE rotates the first dims values and leaves the rest") {
  // dims 32 of head_dim 64: the first 32 values of each head turn exactly as a head_dim-32 head
  // (angles use n = 32), the other 32 are untouched, bit for bit.
  const uint64_t d = 64, n = 32, heads = 3;
  const std::vector<float> x = random_heads(heads * d, 9);
  for (const RopeLayout layout : {RopeLayout::normal, RopeLayout::neox}) {
    RopeParams partial = plain(d, 10000.0f, layout);
    partial.dims = n;
    std::vector<float> got = x, narrow(heads * n);
    for (uint64_t h = 0; h < heads; ++h) std::copy_n(&x[h * d], n, &narrow[h * n]);
    rope(got.data(), heads, 500, partial);
    rope(narrow.data(), heads, 500, plain(n, 10000.0f, layout));
    for (uint64_t h = 0; h < heads; ++h)
      for (uint64_t i = 0; i < d; ++i) REQUIRE(got[h * d + i] == (i < n ? narrow[h * n + i] : x[h * d + i]));
  }
}
