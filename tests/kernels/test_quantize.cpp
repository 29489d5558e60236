// Q8_0 / Q4_0 / Q2_K / Q8_K quantizers: hand-checked blocks, byte layout, edge cases, round-trip error
// within one quantization step, and bit-identity with ggml's own reference code on seeded inputs.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "kernels/block_layout.hpp"
#include "kernels/cpu/half.hpp"
#include "kernels/cpu/quantize.hpp"
#include "kernels/cpu/quantize_avx2.hpp"
#include "planner/core/ggml_type.hpp"
#include "planner/core/input_error.hpp"

using namespace infer_plan;
using namespace infer_plan::kernels;

namespace {

std::vector<uint8_t> quantize(GgmlType type, const std::vector<float>& x) {
  std::vector<uint8_t> out(ggml_row_bytes(type, x.size(), "test"));
  quantize_row(type, x, out, "test");
  return out;
}

std::vector<float> dequantize(GgmlType type, const std::vector<uint8_t>& blocks, size_t values) {
  std::vector<float> out(values);
  dequantize_row(type, blocks, out, "test");
  return out;
}

uint16_t u16(const std::vector<uint8_t>& b, size_t at) {
  return static_cast<uint16_t>(b[at] | (b[at + 1] << 8));
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<float> read_f32(const std::string& path) {
  const std::vector<uint8_t> b = read_bytes(path);
  std::vector<float> v(b.size() / 4);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = std::bit_cast<float>(static_cast<uint32_t>(b[4 * i] | (b[4 * i + 1] << 8) | (b[4 * i + 2] << 16) |
                                                      (static_cast<uint32_t>(b[4 * i + 3]) << 24)));
  return v;
}

// Q2_K: the step of value v's sub-block, as the dequantizer reads it, and the block's min step.
float q2k_step(const std::vector<uint8_t>& b, size_t v) {
  const size_t block = v / 256, sub = (v % 256) / 16;
  return fp16_to_fp32(u16(b, block * 84 + 80)) * static_cast<float>(b[block * 84 + sub] & 0xF);
}
float q2k_min_step(const std::vector<uint8_t>& b, size_t v) { return fp16_to_fp32(u16(b, v / 256 * 84 + 82)); }

float f32_at(const std::vector<uint8_t>& b, size_t at) {
  float f;
  std::memcpy(&f, &b[at], 4);  // little-endian host, as the quantizer assumes
  return f;
}
int16_t i16_at(const std::vector<uint8_t>& b, size_t at) { return static_cast<int16_t>(u16(b, at)); }

}  // namespace

TEST_CASE("nearest_int rounds half to even, like ggml's magic-number trick") {
  CHECK(nearest_int(2.5f) == 2);
  CHECK(nearest_int(3.5f) == 4);
  CHECK(nearest_int(-2.5f) == -2);
  CHECK(nearest_int(-0.5f) == 0);
  CHECK(nearest_int(1.49f) == 1);
  CHECK(nearest_int(-7.6f) == -8);
  CHECK(nearest_int(4194303.f) == 4194303);  // the top of its exact range (2^22 - 1)
}

TEST_CASE("Q8_0 by hand: d = amax / 127, codes = roundf(x / d), half away from zero") {
  // amax 127 -> d = 1 exactly (fp16 0x3C00) and id = 1, so each code is roundf(x):
  // -127, 1.4 -> 1, -2.6 -> -3, 0.5 -> 1 and 2.5 -> 3 (away from zero, not to even), -0.5 -> -1.
  std::vector<float> x(32, 0.0f);
  x[0] = -127.0f; x[1] = 1.4f; x[2] = -2.6f; x[3] = 0.5f; x[4] = 2.5f; x[5] = -0.5f; x[31] = 100.0f;
  const std::vector<uint8_t> b = quantize(GgmlType::Q8_0, x);
  REQUIRE(b.size() == 34);  // fp16 d, then 32 int8 codes
  CHECK(u16(b, 0) == 0x3C00);
  CHECK(static_cast<int8_t>(b[2]) == -127);
  CHECK(static_cast<int8_t>(b[3]) == 1);
  CHECK(static_cast<int8_t>(b[4]) == -3);
  CHECK(static_cast<int8_t>(b[5]) == 1);
  CHECK(static_cast<int8_t>(b[6]) == 3);
  CHECK(static_cast<int8_t>(b[7]) == -1);
  CHECK(static_cast<int8_t>(b[8]) == 0);
  CHECK(static_cast<int8_t>(b[33]) == 100);
  const std::vector<float> y = dequantize(GgmlType::Q8_0, b, 32);
  CHECK(y[0] == -127.0f);
  CHECK(y[4] == 3.0f);
  CHECK(y[31] == 100.0f);
}

TEST_CASE("Q4_0 by hand: the signed max maps to code 0, +8.5 then truncate, clamp to 15") {
  // max = -8 (largest magnitude, first on the tie with +8) -> d = -8 / -8 = 1 (0x3C00), id = 1;
  // code = min(15, trunc(x + 8.5)): -8 -> 0, 7 -> 15, 8 -> 16 -> 15, 0.5 -> 9, -0.5 -> 8, 2.4 -> 10.
  std::vector<float> x(32, 0.0f);
  x[0] = -8.0f; x[1] = 7.0f; x[2] = 8.0f; x[3] = 0.5f; x[4] = -0.5f; x[16] = 2.4f;
  const std::vector<uint8_t> b = quantize(GgmlType::Q4_0, x);
  REQUIRE(b.size() == 18);  // fp16 d, then 16 bytes: value j low nibble, value j + 16 high nibble
  CHECK(u16(b, 0) == 0x3C00);
  CHECK(b[2] == (0x0 | (10 << 4)));  // x[0] -> 0, x[16] -> 10
  CHECK(b[3] == (15 | (8 << 4)));    // x[1] -> 15, x[17] = 0 -> 8
  CHECK(b[4] == (15 | (8 << 4)));    // x[2] = 8 clamped
  CHECK(b[5] == (9 | (8 << 4)));
  CHECK(b[6] == (8 | (8 << 4)));
  const std::vector<float> y = dequantize(GgmlType::Q4_0, b, 32);
  CHECK(y[0] == -8.0f);
  CHECK(y[2] == 7.0f);   // (15 - 8) * 1: the far side reaches only 7/8 of the max
  CHECK(y[16] == 2.0f);  // (10 - 8) * 1
}

TEST_CASE("Q4_0 negative scale when the largest magnitude is positive") {
  // max = +8 -> d = 8 / -8 = -1 (fp16 0xBC00); code = trunc(-x + 8.5): 8 -> 0, -8 -> 16 -> 15.
  std::vector<float> x(32, 1.0f);
  x[5] = 8.0f; x[6] = -8.0f;
  const std::vector<uint8_t> b = quantize(GgmlType::Q4_0, x);
  CHECK(u16(b, 0) == 0xBC00);
  CHECK((b[2 + 5] & 0xF) == 0);
  CHECK((b[2 + 6] & 0xF) == 15);
  CHECK((b[2 + 0] & 0xF) == 7);  // 1 -> trunc(7.5) = 7, dequantized (7 - 8) * -1 = 1
  const std::vector<float> y = dequantize(GgmlType::Q4_0, b, 32);
  CHECK(y[5] == 8.0f);
  CHECK(y[6] == -7.0f);
  CHECK(y[0] == 1.0f);
}

TEST_CASE("Q2_K byte layout: scales[16], qs[64], d, dmin; value order as the dequantizer reads it") {
  // A hand-made block: d = 1 (0x3C00), dmin = 0.5 (0x3800), sub-block s has scale s & 15 = s and
  // min code 1 (so each value is s * q - 0.5). Value v sits in half h = v / 128, byte
  // 32h + v % 32, bits 2 * ((v % 128) / 32).
  std::vector<uint8_t> b(84, 0);
  for (size_t s = 0; s < 16; ++s) b[s] = static_cast<uint8_t>(s | (1 << 4));
  b[80] = 0x00; b[81] = 0x3C; b[82] = 0x00; b[83] = 0x38;
  auto set_code = [&](size_t v, uint8_t q) {
    const size_t byte = 16 + 32 * (v / 128) + v % 32;
    const int shift = static_cast<int>(2 * ((v % 128) / 32));
    b[byte] = static_cast<uint8_t>(b[byte] | (q << shift));
  };
  set_code(0, 3);    // sub-block 0, scale 0: 0 * 3 - 0.5
  set_code(17, 2);   // sub-block 1: 1 * 2 - 0.5 = 1.5
  set_code(40, 3);   // sub-block 2 (values 32..47, bits 2-3 of byte 8): 2 * 3 - 0.5 = 5.5
  set_code(200, 1);  // sub-block 12 (second half, bits 4-5 of byte 32 + 8): 12 * 1 - 0.5 = 11.5
  set_code(255, 3);  // sub-block 15 (bits 6-7 of the last byte): 15 * 3 - 0.5 = 44.5
  const std::vector<float> y = dequantize(GgmlType::Q2_K, b, 256);
  CHECK(y[0] == -0.5f);
  CHECK(y[17] == 1.5f);
  CHECK(y[40] == 5.5f);
  CHECK(y[200] == 11.5f);
  CHECK(y[255] == 44.5f);
  CHECK(y[1] == -0.5f);     // code 0 in sub-block 0
  CHECK(y[254] == -0.5f);   // code 0 in sub-block 15
}

TEST_CASE("Q8_K by hand: iscale = -127 / max, codes = nearest_int (ties to even), d = 1 / iscale") {
  // Layout: float d at 0, int8 qs[256] at 4, int16 bsums[16] at 260 (292 bytes).
  // max = -127 (the signed value of largest magnitude) -> iscale = 1, d = 1 exactly, and each
  // code is nearest_int(x): 2.5 -> 2 and 3.5 -> 4 (to even, unlike Q8_0's roundf), -0.5 -> 0,
  // 1.4 -> 1, -7.6 -> -8. bsums[0] = -127 + 2 + 4 + 0 + 1 - 8 = -128; bsums[1] = 10 + 20 = 30;
  // bsums[15] = 100; the others 0.
  std::vector<float> x(256, 0.0f);
  x[0] = -127.0f; x[1] = 2.5f; x[2] = 3.5f; x[3] = -0.5f; x[4] = 1.4f; x[5] = -7.6f;
  x[16] = 10.0f; x[17] = 20.0f; x[255] = 100.0f;
  const std::vector<uint8_t> b = quantize(GgmlType::Q8_K, x);
  REQUIRE(b.size() == 292);
  CHECK(f32_at(b, 0) == 1.0f);
  const int want_codes[] = {-127, 2, 4, 0, 1, -8};
  for (size_t j = 0; j < 6; ++j) CHECK(static_cast<int8_t>(b[4 + j]) == want_codes[j]);
  CHECK(static_cast<int8_t>(b[4 + 16]) == 10);
  CHECK(static_cast<int8_t>(b[4 + 255]) == 100);
  CHECK(i16_at(b, 260) == -128);
  CHECK(i16_at(b, 262) == 30);
  CHECK(i16_at(b, 260 + 2 * 15) == 100);
  for (size_t j = 2; j < 15; ++j) CHECK(i16_at(b, 260 + 2 * j) == 0);
  const std::vector<float> y = dequantize(GgmlType::Q8_K, b, 256);
  CHECK(y[0] == -127.0f);
  CHECK(y[1] == 2.0f);
  CHECK(y[5] == -8.0f);
  CHECK(y[255] == 100.0f);
}

TEST_CASE("Q8_K: a positive max gives a negative d; the first of tied magnitudes wins") {
  // max = +254 (x[7], before its mirror -254 at x[8]) -> iscale = -127 / 254 = -0.5, d = -2:
  // 254 -> -127, -254 -> 127, 3 -> nearest_int(-1.5) = -2 (to even), 1 -> nearest_int(-0.5) = 0.
  std::vector<float> x(256, 0.0f);
  x[7] = 254.0f; x[8] = -254.0f; x[9] = 3.0f; x[10] = 1.0f;
  const std::vector<uint8_t> b = quantize(GgmlType::Q8_K, x);
  CHECK(f32_at(b, 0) == -2.0f);
  CHECK(static_cast<int8_t>(b[4 + 7]) == -127);
  CHECK(static_cast<int8_t>(b[4 + 8]) == 127);
  CHECK(static_cast<int8_t>(b[4 + 9]) == -2);
  CHECK(static_cast<int8_t>(b[4 + 10]) == 0);
  CHECK(i16_at(b, 260) == -127 + 127 - 2);
  const std::vector<float> y = dequantize(GgmlType::Q8_K, b, 256);
  CHECK(y[7] == 254.0f);
  CHECK(y[8] == -254.0f);
  CHECK(y[9] == 4.0f);  // 3 is 1.5 steps of 2: rounded to even, 2 steps: (-2) * (-2)
}

TEST_CASE("Q8_K: an all-zero block is all zero bytes, whatever the buffer held") {
  // ggml leaves bsums untouched here; we write zeros so the output depends on the input only.
  const std::vector<float> x(512, 0.0f);
  std::vector<uint8_t> b(2 * 292, 0xAB);
  quantize_row(GgmlType::Q8_K, x, b, "test");
  for (uint8_t byte : b) CHECK(byte == 0);
}

TEST_CASE("edge cases: zeros, one nonzero, huge and tiny values") {
  for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K,
                     GgmlType::Q6_K, GgmlType::Q8_K}) {
    CAPTURE(ggml_type_info(t).name);
    const std::vector<float> zeros(256, 0.0f);
    const std::vector<uint8_t> b = quantize(t, zeros);
    const std::vector<float> y = dequantize(t, b, 256);
    for (float v : y) CHECK(v == 0.0f);
    if (t != GgmlType::Q4_0) {  // Q4_0 stores zero as code 8: 0x88 bytes, d = 0
      for (uint8_t byte : b) CHECK(byte == 0);
    }
  }
  // one nonzero: Q8_0 d = 5 / 127, its code 127, the rest 0
  std::vector<float> one(32, 0.0f);
  one[9] = 5.0f;
  const std::vector<uint8_t> b8 = quantize(GgmlType::Q8_0, one);
  CHECK(static_cast<int8_t>(b8[2 + 9]) == 127);
  CHECK(b8[2] == 0);
  const float d8 = fp16_to_fp32(u16(b8, 0));
  CHECK(d8 == fp16_to_fp32(fp32_to_fp16(5.0f / 127)));
  CHECK(std::fabs(dequantize(GgmlType::Q8_0, b8, 32)[9] - 5.0f) <= d8);
  // huge: 1e6 / 127 = 7874.02 -> fp16 7876 (the nearest multiple of 4, fp16's step in 4096-8192);
  // 127 * 7876 = 1000252
  std::vector<float> huge(32, 0.0f);
  huge[0] = 1e6f;
  CHECK(dequantize(GgmlType::Q8_0, quantize(GgmlType::Q8_0, huge), 32)[0] == 1000252.0f);
  // beyond 65504 * 127 the fp16 scale overflows to inf, as in ggml: the block no longer decodes
  huge[0] = 1e9f;
  CHECK(u16(quantize(GgmlType::Q8_0, huge), 0) == 0x7C00);
  // tiny: 1e-30 / 127 underflows fp16 to 0 while the codes keep their float id: decodes to 0
  std::vector<float> tiny(32, 1e-30f);
  const std::vector<uint8_t> bt = quantize(GgmlType::Q8_0, tiny);
  CHECK(u16(bt, 0) == 0);
  CHECK(static_cast<int8_t>(bt[2]) == 127);
  CHECK(dequantize(GgmlType::Q8_0, bt, 32)[0] == 0.0f);
}

TEST_CASE("round trip error is within one quantization step") {
  // Tolerance, per value: Q8_0 and Q4_0 |x - x'| <= |d| (stored fp16 d: half a step of rounding
  // plus the fp16 rounding of d times at most 127, resp. 8, codes; Q4_0's far side clamps at 7 d
  // where the max is 8 |d|, i.e. exactly one step). Q2_K: <= the sub-block's step d * scale plus
  // one step of its min (dmin): 4 levels are fitted per sub-block and the min is then stored as a
  // 4-bit code of dmin, so a value at the bottom can be clamped by up to one min step.
  const std::vector<float> x = read_f32("tests/data/quant/inputs.f32");
  REQUIRE(x.size() == 2048);
  for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_0}) {
    const std::vector<uint8_t> b = quantize(t, x);
    const std::vector<float> y = dequantize(t, b, x.size());
    const size_t bytes = ggml_type_info(t).block_bytes;
    for (size_t i = 0; i < x.size(); ++i) {
      const float d = std::fabs(fp16_to_fp32(u16(b, i / 32 * bytes)));
      if (!(std::fabs(x[i] - y[i]) <= d * 1.0001f)) {
        CAPTURE(i);
        CHECK(std::fabs(x[i] - y[i]) <= d);
      }
    }
  }
  // Q8_K: <= half a step |d| (nearest rounding against a float d, not an fp16 one), plus the float
  // roundings of iscale * x and d * code: each under 2^-24 relative on at most 127 steps, i.e.
  // below 2e-5 of a step; 0.5001 |d| covers them.
  const std::vector<uint8_t> b8k = quantize(GgmlType::Q8_K, x);
  const std::vector<float> y8k = dequantize(GgmlType::Q8_K, b8k, x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float d = std::fabs(f32_at(b8k, i / 256 * 292));
    if (!(std::fabs(x[i] - y8k[i]) <= 0.5001f * d)) {
      CAPTURE(i);
      CHECK(std::fabs(x[i] - y8k[i]) <= 0.5001f * d);
    }
  }
  const std::vector<uint8_t> b = quantize(GgmlType::Q2_K, x);
  const std::vector<float> y = dequantize(GgmlType::Q2_K, b, x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    if (q2k_step(b, i) == 0.0f) continue;  // a sub-block whose scale quantized to 0 decodes to -min only
    const float step = q2k_step(b, i) + q2k_min_step(b, i);
    if (!(std::fabs(x[i] - y[i]) <= step * 1.0001f)) {
      CAPTURE(i);
      CHECK(std::fabs(x[i] - y[i]) <= step);
    }
  }
}

// tests/data/quant/: inputs.f32 is 2048 little-endian floats from Python's random.Random(5), eight
// blocks of 256 in different regimes (N(0,1), N(0,1e-3), N(0,200), |N(0.5,1)|, -|N(0,3)|, 5%
// N(0,50) outliers in N(0,0.1), 70% zeros else U(-2,2), multiples of 0.25 in -1.75..1.75).
// TYPE.bin are the bytes of ggml's quantize_row_TYPE_ref (iq4_nl and iq4_xs: quantize_iq4_nl and
// quantize_iq4_xs with no importance matrix, as llama-quantize calls them) and TYPE.f32 those bytes
// through ggml's dequantize_row_TYPE, from ggml-org/ggml d99724f2 (ggml-base built outside this repo
// with GGML_NATIVE=OFF and -ffp-contract=off, linked by a 20-line C driver); q5_0 from ggml de3ff81
// (the llama.cpp node-llama-cpp 3.22.1 bundles), its ggml-quants.c compiled the same way; q4_1 and
// q5_1 from the same de3ff81.
TEST_CASE("bit-identical to ggml's reference quantizers and dequantizers") {
  const std::vector<float> x = read_f32("tests/data/quant/inputs.f32");
  REQUIRE(x.size() == 2048);
  const struct {
    GgmlType type;
    const char* name;
  } cases[] = {{GgmlType::Q8_0, "q8_0"}, {GgmlType::Q4_0, "q4_0"}, {GgmlType::Q5_0, "q5_0"}, {GgmlType::Q2_K, "q2_k"},
               {GgmlType::Q4_1, "q4_1"}, {GgmlType::Q5_1, "q5_1"},
               {GgmlType::Q3_K, "q3_k"}, {GgmlType::Q4_K, "q4_k"}, {GgmlType::Q5_K, "q5_k"},
               {GgmlType::Q6_K, "q6_k"}, {GgmlType::IQ4_NL, "iq4_nl"}, {GgmlType::IQ4_XS, "iq4_xs"},
               {GgmlType::MXFP4, "mxfp4"}};
  for (const auto& c : cases) {
    CAPTURE(c.name);
    const std::vector<uint8_t> want = read_bytes(std::string("tests/data/quant/") + c.name + ".bin");
    const std::vector<uint8_t> got = quantize(c.type, x);
    REQUIRE(got.size() == want.size());
    size_t mismatches = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i] != want[i] && ++mismatches <= 5) {  // print the first few, not thousands
        CAPTURE(i);
        CHECK(static_cast<int>(got[i]) == static_cast<int>(want[i]));
      }
    }
    CHECK(mismatches == 0);

    const std::vector<float> want_f = read_f32(std::string("tests/data/quant/") + c.name + ".f32");
    const std::vector<float> got_f = dequantize(c.type, want, x.size());
    REQUIRE(got_f.size() == want_f.size());
    size_t f_mismatches = 0;
    for (size_t i = 0; i < got_f.size(); ++i) {
      if (std::bit_cast<uint32_t>(got_f[i]) != std::bit_cast<uint32_t>(want_f[i]) && ++f_mismatches <= 5) {
        CAPTURE(i);
        CHECK(got_f[i] == want_f[i]);
      }
    }
    CHECK(f_mismatches == 0);
  }
}

TEST_CASE("sizes that are not whole blocks are input errors naming the input") {
  std::vector<float> x(33, 0.0f);
  std::vector<uint8_t> b(36);
  CHECK_THROWS_WITH_AS(quantize_row(GgmlType::Q8_0, x, b, "--quantize in.f32"),
                       doctest::Contains("--quantize in.f32: 33 values are not a whole number of Q8_0 blocks of 32"),
                       InputError);
  std::vector<float> y(32);
  std::vector<uint8_t> short_blocks(33);
  CHECK_THROWS_WITH_AS(dequantize_row(GgmlType::Q8_0, short_blocks, y, "x"),
                       doctest::Contains("need 34 bytes, got 33"), InputError);
  CHECK_THROWS_AS(quantize_row(GgmlType::Q4_K, y, b, "x"), InputError);  // 32 values: not a block of 256
  CHECK(has_quantizer(GgmlType::Q2_K));
  CHECK(has_quantizer(GgmlType::F16));
  CHECK(has_quantizer(GgmlType::Q8_K));
  CHECK(has_quantizer(GgmlType::Q6_K));
  CHECK(has_quantizer(GgmlType::Q3_K));
  CHECK(has_quantizer(GgmlType::IQ4_XS));
  CHECK_FALSE(has_quantizer(GgmlType::IQ2_XS));
  std::vector<float> block(256);
  std::vector<uint8_t> iq2(74);
  CHECK_THROWS_WITH_AS(quantize_row(GgmlType::IQ2_XS, block, iq2, "x"), doctest::Contains("x: no quantizer for IQ2_XS"), InputError);
}

TEST_CASE("float rows: F16 and BF16 rows round to nearest even, little-endian; F32 is a copy") {
  // 1 + 2^-11 lies halfway between two halves (1 and 1 + 2^-10): ties to even gives 1.0 = 0x3C00.
  // 1 + 2^-8 lies halfway between two bfloat16s (1 and 1 + 2^-7): ties to even gives 0x3F80.
  const std::vector<float> x{1.0f + 0x1p-11f, -2.0f, 1.0f + 0x1p-8f, 0.0f};
  std::vector<uint8_t> h(8), b(8), f(16);
  quantize_row(GgmlType::F16, x, h, "x");
  quantize_row(GgmlType::BF16, x, b, "x");
  quantize_row(GgmlType::F32, x, f, "x");
  CHECK(h[0] == 0x00); CHECK(h[1] == 0x3C);  // 1.0
  CHECK(h[2] == 0x00); CHECK(h[3] == 0xC0);  // -2.0 = 0xC000
  CHECK(b[0] == 0x80); CHECK(b[1] == 0x3F);  // 1.0 = 0x3F80
  CHECK(b[4] == 0x80); CHECK(b[5] == 0x3F);  // the tie rounds down to 1.0
  std::vector<float> back(4);
  dequantize_row(GgmlType::F32, f, back, "x");
  CHECK(back == x);
  dequantize_row(GgmlType::BF16, b, back, "x");
  CHECK(back[1] == -2.0f);
  CHECK(back[2] == 1.0f);
}

TEST_CASE("kernels/block_layout.hpp's blocks agree with the planner's GGML type table") {
  // The kernels index blocks by the header's offsets, the planner sizes rows and files by its
  // table: both must describe the same bytes. qs is each block's codes (the table's code_bytes).
  struct Layout {
    GgmlType type;
    uint32_t values, bytes;
    size_t code_bytes;
  };
  for (const Layout& l : {Layout{GgmlType::Q8_0, kQ8_0Values, kQ8_0Bytes, sizeof(BlockQ8_0::qs)},
                          Layout{GgmlType::Q4_0, kQ4_0Values, kQ4_0Bytes, sizeof(BlockQ4_0::qs)},
                          Layout{GgmlType::Q5_0, kQ5_0Values, kQ5_0Bytes, sizeof(BlockQ5_0::qs) + sizeof(BlockQ5_0::qh)},
                          Layout{GgmlType::Q4_1, kQ4_1Values, kQ4_1Bytes, sizeof(BlockQ4_1::qs)},
                          Layout{GgmlType::Q5_1, kQ5_1Values, kQ5_1Bytes, sizeof(BlockQ5_1::qs) + sizeof(BlockQ5_1::qh)},
                          Layout{GgmlType::Q2_K, kQ2_KValues, kQ2_KBytes, sizeof(BlockQ2_K::qs)},
                          Layout{GgmlType::Q3_K, kQ3_KValues, kQ3_KBytes, sizeof(BlockQ3_K::qs) + sizeof(BlockQ3_K::hmask)},
                          Layout{GgmlType::Q4_K, kQ4_KValues, kQ4_KBytes, sizeof(BlockQ4_K::qs)},
                          Layout{GgmlType::IQ4_NL, kIQ4_NLValues, kIQ4_NLBytes, sizeof(BlockIQ4_NL::qs)},
                          Layout{GgmlType::IQ4_XS, kIQ4_XSValues, kIQ4_XSBytes, sizeof(BlockIQ4_XS::qs)},
                          Layout{GgmlType::MXFP4, kMXFP4Values, kMXFP4Bytes, sizeof(BlockMXFP4::qs)},
                          Layout{GgmlType::Q5_K, kQ5_KValues, kQ5_KBytes, sizeof(BlockQ5_K::qs) + sizeof(BlockQ5_K::qh)},
                          Layout{GgmlType::Q6_K, kQ6_KValues, kQ6_KBytes, sizeof(BlockQ6_K::ql) + sizeof(BlockQ6_K::qh)},
                          Layout{GgmlType::Q8_K, kQ8_KValues, kQ8_KBytes, sizeof(BlockQ8_K::qs)}}) {
    const GgmlTypeInfo& info = ggml_type_info(l.type);
    CAPTURE(info.name);
    CHECK(info.block_values == l.values);
    CHECK(info.block_bytes == l.bytes);
    CHECK(info.code_bytes == l.code_bytes);
    CHECK(info.code_bytes + info.meta_bytes == l.bytes);
  }
}

TEST_CASE("the AVX2 activation quantizers write the reference's bytes, ties and edge blocks included") {
  // matmul's convert_activations uses them for Q8_0 (Q8_0 and Q4_0 weights) and Q8_K (Q2_K): a
  // different byte would change every product from what ggml computes.
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q8_K}) {
    CAPTURE(ggml_type_info(type).name);
    const QuantizeRowFn fast = avx2_quantize_row(type);
    if (fast == nullptr) {
      MESSAGE("no AVX2 on this CPU: only the reference quantizer runs");
      continue;
    }
    const uint64_t block = ggml_type_info(type).block_values;
    std::vector<std::vector<float>> cases;
    // Seeded values over many magnitudes.
    uint32_t state = 12345;
    auto next = [&] {
      state = state * 1664525u + 1013904223u;
      return static_cast<float>(state >> 8) * 0x1p-24f;
    };
    for (float scale : {1e-30f, 1e-3f, 1.0f, 3.7f, 1e4f, 1e30f}) {
      std::vector<float> x(4 * block);
      for (float& v : x) v = (2 * next() - 1) * scale;
      cases.push_back(x);
    }
    // Ties: with amax = 127 the reciprocal scale is 1 (Q8_0) or -1 (Q8_K, a positive max), so
    // k + 0.5 lands exactly half-way: Q8_0 rounds away from zero, Q8_K to even.
    std::vector<float> ties(block);
    for (uint64_t i = 0; i < block; ++i) ties[i] = static_cast<float>(static_cast<int>(i % 64) - 32) + 0.5f;
    ties[block - 1] = 127.0f;
    cases.push_back(ties);
    // Zeros, one value, negative and positive largest magnitudes tied, infinities and NaNs
    // (those blocks take the reference's own path), a zero block beside a nonzero one.
    std::vector<float> edge(4 * block, 0.0f);
    edge[block + 3] = -2.5f;
    edge[2 * block] = 7.0f;
    edge[2 * block + 5] = -7.0f;
    edge[3 * block + 1] = std::numeric_limits<float>::infinity();
    edge[3 * block + 2] = std::numeric_limits<float>::quiet_NaN();
    cases.push_back(edge);
    for (const std::vector<float>& x : cases) {
      const std::vector<uint8_t> want = quantize(type, x);
      std::vector<uint8_t> got(want.size(), 0xA5);
      fast(x.data(), x.size(), got.data());
      CHECK(got == want);
    }
  }
}
