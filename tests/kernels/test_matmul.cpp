// matmul_rows (AVX2 and scalar paths) against matmul_rows_reference for every weight type on
// seeded random matrices, hand-checked products, row ranges, and the activation conversion.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/dot_avx2.hpp"
#include "kernels/cpu/matmul.hpp"
#include "kernels/cpu/quantize.hpp"
#include "planner/core/input_error.hpp"
#include "tests/kernels/matmul_tolerance.hpp"

using namespace infer_plan;
using namespace infer_plan::kernels;
using infer_plan::kernels::test::relative_tolerance;
using infer_plan::kernels::test::term_magnitudes;

namespace {

constexpr GgmlType kWeightTypes[] = {GgmlType::F32, GgmlType::F16, GgmlType::BF16,
                                     GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                                     GgmlType::Q2_K,
                                     GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
                                     GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::MXFP4};

// Uniform in [-1, 1) from the top 24 bits of mt19937 (whose output is fixed by the standard,
// unlike std::uniform_real_distribution's).
std::vector<float> random_values(uint64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<float> v(n);
  for (float& f : v) f = static_cast<float>(gen() >> 8) * 0x1p-23f - 1.0f;
  return v;
}

std::vector<uint8_t> quantize_matrix(GgmlType type, const std::vector<float>& w, uint64_t rows, uint64_t cols) {
  const uint64_t row_bytes = ggml_row_bytes(type, cols, "test");
  std::vector<uint8_t> out(rows * row_bytes);
  for (uint64_t r = 0; r < rows; ++r) {
    quantize_row(type, std::span<const float>(w.data() + r * cols, cols),
                 std::span<uint8_t>(out.data() + r * row_bytes, row_bytes), "test");
  }
  return out;
}

void check_against_reference(GgmlType type, uint64_t rows, uint64_t cols, uint64_t batch, uint32_t seed) {
  CAPTURE(ggml_type_info(type).name);
  CAPTURE(rows);
  CAPTURE(cols);
  CAPTURE(batch);
  const std::vector<uint8_t> w = quantize_matrix(type, random_values(rows * cols, seed), rows, cols);
  const std::vector<float> xf = random_values(batch * cols, seed + 1);
  Activations x;
  convert_activations(type, xf.data(), batch, cols, x);

  std::vector<float> want(batch * rows);
  matmul_rows_reference(type, w.data(), rows, x, 0, rows, want.data());
  const std::vector<double> magnitude = term_magnitudes(type, w, rows, x);
  const double rtol = relative_tolerance(type, cols);

  for (bool scalar : {false, true}) {
    matmul_force_scalar(scalar);
    CAPTURE(matmul_implementation());
    std::vector<float> got(batch * rows, std::numeric_limits<float>::quiet_NaN());
    matmul_rows(type, w.data(), rows, x, 0, rows, got.data());
    int mismatches = 0;
    for (uint64_t i = 0; i < got.size(); ++i) {
      const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
      if (!(err <= rtol * magnitude[i]) && ++mismatches <= 5) {  // the first few, not thousands
        CAPTURE(i);
        CAPTURE(magnitude[i]);
        CHECK(got[i] == doctest::Approx(want[i]).epsilon(0));
      }
    }
    CHECK(mismatches == 0);
  }
  matmul_force_scalar(false);
}

}  // namespace

TEST_CASE("matmul_rows matches the double-precision reference for every weight type, both paths") {
  uint32_t seed = 11;
  for (GgmlType type : kWeightTypes) {
    for (uint64_t batch : {1, 3, 8}) {
      check_against_reference(type, 48, 512, batch, seed++);
      check_against_reference(type, 256, 1024, batch, seed++);
    }
  }
}

TEST_CASE("float weights with a column count that is not a multiple of 8 take the scalar tail") {
  for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::BF16}) check_against_reference(type, 5, 77, 2, 3);
}

TEST_CASE("Q8_0 by hand: ones and halves times integer activations") {
  // Two rows of 64 values, built from blocks {fp16 d, 32 int8 codes}:
  //   row 0: d = 1 (0x3C00), codes 1        -> 1.0 everywhere
  //   row 1: block 0 d = 0.5 (0x3800) codes 2 -> 1.0; block 1 d = 0.5 codes -1 -> -0.5
  // Activations: block 0 = 127, 1, 2, ..., 31 (sum 127 + 496 = 623), block 1 = -127 x 32 (sum
  // -4064); each block's max magnitude is 127, so Q8_0 stores d = 1 and the codes are the values.
  // y0 = 623 - 4064 = -3441; y1 = 623 + (-0.5)(-4064) = 623 + 2032 = 2655. Every step is exact.
  std::vector<uint8_t> w(2 * 2 * 34, 0);
  auto set_block = [&](size_t row, size_t block, uint16_t d, int8_t code) {
    uint8_t* p = w.data() + (row * 2 + block) * 34;
    p[0] = static_cast<uint8_t>(d & 0xFF);
    p[1] = static_cast<uint8_t>(d >> 8);
    for (size_t j = 0; j < 32; ++j) p[2 + j] = static_cast<uint8_t>(code);
  };
  set_block(0, 0, 0x3C00, 1);
  set_block(0, 1, 0x3C00, 1);
  set_block(1, 0, 0x3800, 2);
  set_block(1, 1, 0x3800, -1);
  std::vector<float> xf(64, -127.0f);
  xf[0] = 127.0f;
  for (size_t j = 1; j < 32; ++j) xf[j] = static_cast<float>(j);
  Activations x;
  convert_activations(GgmlType::Q8_0, xf.data(), 1, 64, x);
  for (bool scalar : {false, true}) {
    matmul_force_scalar(scalar);
    CAPTURE(matmul_implementation());
    std::vector<float> y(2);
    matmul_rows(GgmlType::Q8_0, w.data(), 2, x, 0, 2, y.data());
    CHECK(y[0] == -3441.0f);
    CHECK(y[1] == 2655.0f);
  }
  matmul_force_scalar(false);
}

TEST_CASE("Q2_K by hand: scale and min parts, codes 2 with scale 1 and min 1 are weights of 1") {
  // One block: d = dmin = 1 (0x3C00), every sub-block's scale byte 0x11 (scale 1, min 1), every
  // code 2 (qs bytes 0xAA): weights 1 * 2 - 1 * 1 = 1. Activations: -127 then 255 ones, so Q8_K
  // has iscale = 1, d = 1 and codes equal to the values: y = -127 + 255 = 128. The kernel gets it
  // as d_x d * sum(scale * code . x) - d_x dmin * sum(min * bsums) = 2 * 128 - 128.
  // A second row doubles the scales (0x12, weights 2 * 2 - 1 = 3): y = 3 * 128 = 384.
  std::vector<uint8_t> w(2 * 84, 0);
  for (size_t row = 0; row < 2; ++row) {
    uint8_t* p = w.data() + row * 84;
    for (size_t j = 0; j < 16; ++j) p[j] = row == 0 ? 0x11 : 0x12;
    for (size_t j = 0; j < 64; ++j) p[16 + j] = 0xAA;
    p[80] = 0x00; p[81] = 0x3C; p[82] = 0x00; p[83] = 0x3C;
  }
  std::vector<float> xf(256, 1.0f);
  xf[0] = -127.0f;
  Activations x;
  convert_activations(GgmlType::Q2_K, xf.data(), 1, 256, x);
  for (bool scalar : {false, true}) {
    matmul_force_scalar(scalar);
    CAPTURE(matmul_implementation());
    std::vector<float> y(2);
    matmul_rows(GgmlType::Q2_K, w.data(), 2, x, 0, 2, y.data());
    CHECK(y[0] == 128.0f);
    CHECK(y[1] == 384.0f);
  }
  matmul_force_scalar(false);
}

TEST_CASE("a row range writes only its rows, and split ranges equal one call") {
  constexpr uint64_t rows = 40, cols = 256, batch = 3;
  const std::vector<uint8_t> w = quantize_matrix(GgmlType::Q4_0, random_values(rows * cols, 7), rows, cols);
  const std::vector<float> xf = random_values(batch * cols, 8);
  Activations x;
  convert_activations(GgmlType::Q4_0, xf.data(), batch, cols, x);
  std::vector<float> whole(batch * rows), split(batch * rows, std::numeric_limits<float>::quiet_NaN());
  matmul_rows(GgmlType::Q4_0, w.data(), rows, x, 0, rows, whole.data());
  matmul_rows(GgmlType::Q4_0, w.data(), rows, x, 0, 17, split.data());
  for (uint64_t b = 0; b < batch; ++b) {
    for (uint64_t r = 17; r < rows; ++r) CHECK(std::isnan(split[b * rows + r]));
  }
  matmul_rows(GgmlType::Q4_0, w.data(), rows, x, 17, rows, split.data());
  CHECK(split == whole);  // the same dot per element, whichever call computes it
}

TEST_CASE("a product does not depend on the tokens computed beside it: a batch equals its tokens one by one") {
  // A verify pass over m tokens must give the bits of the m decode steps it replaces (greedy
  // speculative output equals plain greedy). Every type goes through register blocks of several
  // rows by several tokens: the float types up to six tokens (13 tokens are groups of 6, 6 and 1;
  // 4 rows at one token, 2 at two or three), Q8_0 and Q4_0 up to four (4, 4, 4, 1; 4 rows at one
  // token, 3 at two, 2 at three or four), Q2_K up to four by one row. 21 rows leave a row over
  // from each block size, and the split at row 5 starts a block mid-way; 1000 columns end in a
  // lone 8-value group and 77 in a scalar tail; Q4_0's 16 blocks end after its 3-block prefetch
  // steps.
  struct Shape {
    GgmlType type;
    uint64_t cols;
  };
  const Shape shapes[] = {{GgmlType::F32, 1000}, {GgmlType::F32, 77},   {GgmlType::F16, 1000},
                          {GgmlType::F16, 77},   {GgmlType::BF16, 1000}, {GgmlType::Q8_0, 512},
                          {GgmlType::Q4_0, 512}, {GgmlType::Q2_K, 512}, {GgmlType::Q4_K, 512},
                          {GgmlType::Q5_K, 512}, {GgmlType::Q6_K, 512}, {GgmlType::Q3_K, 512},
                          {GgmlType::IQ4_NL, 512}, {GgmlType::IQ4_XS, 512}, {GgmlType::MXFP4, 512},
                          {GgmlType::Q5_0, 512}, {GgmlType::Q4_1, 512}, {GgmlType::Q5_1, 512}};
  constexpr uint64_t rows = 21, batch = 13;
  uint32_t seed = 90;
  for (const Shape& shape : shapes) {
    CAPTURE(ggml_type_info(shape.type).name);
    CAPTURE(shape.cols);
    const std::vector<uint8_t> w = quantize_matrix(shape.type, random_values(rows * shape.cols, seed), rows, shape.cols);
    const std::vector<float> xf = random_values(batch * shape.cols, seed + 1);
    seed += 2;
    for (bool scalar : {false, true}) {
      matmul_force_scalar(scalar);
      CAPTURE(matmul_implementation());
      Activations x;
      convert_activations(shape.type, xf.data(), batch, shape.cols, x);
      std::vector<float> together(batch * rows);
      matmul_rows(shape.type, w.data(), rows, x, 0, 5, together.data());  // and in two row ranges
      matmul_rows(shape.type, w.data(), rows, x, 5, rows, together.data());
      for (uint64_t b = 0; b < batch; ++b) {
        Activations one;
        convert_activations(shape.type, xf.data() + b * shape.cols, 1, shape.cols, one);
        std::vector<float> alone(rows);
        matmul_rows(shape.type, w.data(), rows, one, 0, rows, alone.data());
        CAPTURE(b);
        CHECK(std::vector<float>(together.begin() + static_cast<std::ptrdiff_t>(b * rows),
                                 together.begin() + static_cast<std::ptrdiff_t>((b + 1) * rows)) == alone);
      }
    }
  }
  matmul_force_scalar(false);
}

TEST_CASE("activations are converted to ggml's vec_dot types") {
  CHECK(activation_type(GgmlType::F32) == GgmlType::F32);
  CHECK(activation_type(GgmlType::F16) == GgmlType::F16);
  CHECK(activation_type(GgmlType::BF16) == GgmlType::BF16);
  CHECK(activation_type(GgmlType::Q8_0) == GgmlType::Q8_0);
  CHECK(activation_type(GgmlType::Q4_0) == GgmlType::Q8_0);
  CHECK(activation_type(GgmlType::Q2_K) == GgmlType::Q8_K);
  CHECK(activation_type(GgmlType::Q3_K) == GgmlType::Q8_K);
  CHECK(activation_type(GgmlType::IQ4_NL) == GgmlType::Q8_0);
  CHECK(activation_type(GgmlType::Q5_0) == GgmlType::Q8_0);
  CHECK(activation_type(GgmlType::Q4_1) == GgmlType::Q8_0);
  CHECK(activation_type(GgmlType::Q5_1) == GgmlType::Q8_0);
  CHECK(activation_type(GgmlType::IQ4_XS) == GgmlType::Q8_K);
  CHECK(activation_type(GgmlType::MXFP4) == GgmlType::Q8_0);
  CHECK(activation_type(GgmlType::Q4_K) == GgmlType::Q8_K);
  CHECK(activation_type(GgmlType::Q5_K) == GgmlType::Q8_K);
  CHECK(activation_type(GgmlType::Q6_K) == GgmlType::Q8_K);

  // Q2_K weights: each activation row is exactly quantize_row_q8_k's bytes.
  constexpr uint64_t cols = 512, batch = 2;
  const std::vector<float> xf = random_values(batch * cols, 21);
  Activations x;
  convert_activations(GgmlType::Q2_K, xf.data(), batch, cols, x);
  CHECK(x.type == GgmlType::Q8_K);
  CHECK(x.row_bytes == 2 * 292);
  REQUIRE(x.data.size() == batch * 2 * 292);
  for (uint64_t b = 0; b < batch; ++b) {
    std::vector<uint8_t> want(2 * 292);
    quantize_row_q8_k(std::span<const float>(xf.data() + b * cols, cols), want);
    CHECK(std::vector<uint8_t>(x.row(b), x.row(b) + x.row_bytes) == want);
  }
}

TEST_CASE("unsupported weight types and partial blocks are input errors") {
  CHECK(has_matmul(GgmlType::Q2_K));
  CHECK(has_matmul(GgmlType::Q4_K));
  CHECK_FALSE(has_matmul(GgmlType::IQ2_XS));
  Activations x;
  const std::vector<float> xf(300, 0.0f);
  CHECK_THROWS_WITH_AS(convert_activations(GgmlType::IQ2_XS, xf.data(), 1, 256, x),
                       doctest::Contains("no matmul for IQ2_XS; known: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4"), InputError);
  CHECK_THROWS_WITH_AS(convert_activations(GgmlType::Q2_K, xf.data(), 1, 288, x),
                       doctest::Contains("288 values are not a whole number of Q2_K blocks of 256"), InputError);
  CHECK_THROWS_AS(activation_type(GgmlType::IQ2_XS), InputError);
}

TEST_CASE("forcing the scalar path is visible in matmul_implementation") {
  matmul_force_scalar(true);
  CHECK(matmul_implementation() == "scalar");
  matmul_force_scalar(false);
  const std::string_view impl = matmul_implementation();
  CHECK((impl == "avx2" || impl == "avx2+avx512vnni" || impl == "avx2+avx512bf16" || impl == "avx2+avx512vnni+avx512bf16" ||
         impl == "scalar"));
}

TEST_CASE("the AVX-512 VNNI product of Q2_K gives the AVX2 product's bits") {
  const RowsDotFn avx2 = avx2_rows_dot(GgmlType::Q2_K, false);
  const RowsDotFn vnni = avx2_rows_dot(GgmlType::Q2_K, true);
  if (!avx512_vnni_able()) {
    CHECK((vnni == avx2));  // none here: the AVX2 product (or none at all) either way
    return;
  }
  REQUIRE((avx2 != nullptr));
  REQUIRE((vnni != avx2));
  // Random bytes for every scale, min and code (scales and codes up to 15 and 3), d = dmin = 1/16,
  // and activations whose Q8_K codes reach -127 and 127: the four-product sums near their +-1524.
  constexpr uint64_t rows = 5, cols = 768, row_bytes = cols / 256 * 84;
  std::mt19937 gen(95);
  std::vector<uint8_t> w(rows * row_bytes);
  for (uint8_t& byte : w) byte = static_cast<uint8_t>(gen());
  for (uint64_t b = 0; b < w.size(); b += 84) {
    w[b + 80] = w[b + 82] = 0x00;  // fp16 0x2C00 = 1/16, little-endian
    w[b + 81] = w[b + 83] = 0x2C;
  }
  for (uint64_t batch : {1, 3, 4, 7}) {
    CAPTURE(batch);
    std::vector<float> xf = random_values(batch * cols, 96 + static_cast<uint32_t>(batch));
    for (uint64_t i = 0; i < 32; ++i) xf[i] = -1.0f;  // 32 codes of -127 in a row
    Activations x;
    convert_activations(GgmlType::Q2_K, xf.data(), batch, cols, x);
    std::vector<float> a(batch * rows), b(batch * rows);
    avx2(w.data(), row_bytes, rows, x.row(0), x.row_bytes, batch, cols, a.data(), rows);
    vnni(w.data(), row_bytes, rows, x.row(0), x.row_bytes, batch, cols, b.data(), rows);
    CHECK(a == b);
  }
}
