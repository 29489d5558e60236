// kernels/block_decode.hpp, the decoders the CUDA kernels run, here on the host: every value of rows
// of each type must equal kernels/cpu/quantize.cpp's dequantizer bit for bit (the CPU is the
// reference; it is bit-identical with ggml by test_quantize's golden files), and matvec_lane run
// over its 32 lanes must give the product of the dequantized rows with x. Rows are both what our
// quantizers write and random bytes (every code, scale and high bit pattern), the latter with finite
// fp16 fields so that both sides see numbers (MXFP4's exponent bytes take every value).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <ios>
#include <random>
#include <string>
#include <vector>

#include "kernels/block_decode.hpp"
#include "kernels/cpu/half.hpp"
#include "kernels/cpu/quantize.hpp"
#include "planner/core/ggml_type.hpp"

using namespace infer_plan;
namespace decode = infer_plan::kernels::decode;

namespace {

// The byte offsets of a block's fp16 fields (block_layout.hpp), which random rows fill with finite values.
std::vector<uint32_t> fp16_fields(GgmlType type) {
  using namespace infer_plan::kernels;
  switch (type) {
    case GgmlType::Q5_0: return {kQ5_0D};
    case GgmlType::Q4_1: return {kQ4_1D, kQ4_1M};
    case GgmlType::Q5_1: return {kQ5_1D, kQ5_1M};
    case GgmlType::Q3_K: return {kQ3_KD};
    case GgmlType::Q4_K: return {kQ4_KD, kQ4_KDmin};
    case GgmlType::Q5_K: return {kQ5_KD, kQ5_KDmin};
    case GgmlType::Q6_K: return {kQ6_KD};
    case GgmlType::IQ4_NL: return {kIQ4_NLD};
    case GgmlType::IQ4_XS: return {kIQ4_XSD};
    default: return {};  // MXFP4's scale is an exponent byte: every value of it is finite
  }
}

// moderate: MXFP4 exponents within 2^+-8, so that products of a row stay finite (any exponent byte
// decodes, up to 2^127 x 6).
std::vector<uint8_t> random_row(GgmlType type, uint64_t cols, std::mt19937& rng, bool moderate = false) {
  const GgmlTypeInfo& info = ggml_type_info(type);
  std::vector<uint8_t> row(cols / info.block_values * info.block_bytes);
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& b : row) b = static_cast<uint8_t>(byte(rng));
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  for (uint64_t block = 0; block < row.size(); block += info.block_bytes)
    for (uint32_t field : fp16_fields(type)) kernels::store_fp16(row.data() + block + field, scale(rng));
  if (moderate && type == GgmlType::MXFP4)
    for (uint64_t block = 0; block < row.size(); block += info.block_bytes)
      row[block + kernels::kMXFP4E] = static_cast<uint8_t>(119 + byte(rng) % 17);
  return row;
}

std::vector<uint8_t> quantized_row(GgmlType type, uint64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> value(0.0f, 1.0f);
  std::vector<float> x(cols);
  for (float& v : x) v = value(rng);
  std::vector<uint8_t> row(ggml_row_bytes(type, cols, "test"));
  kernels::quantize_row(type, x, row, "test");
  return row;
}

std::vector<float> reference(GgmlType type, const std::vector<uint8_t>& row, uint64_t cols) {
  std::vector<float> out(cols);
  kernels::dequantize_row(type, row, out, "test");
  return out;
}

template <typename D>
std::vector<float> decoded(const std::vector<uint8_t>& row, uint64_t cols) {
  std::vector<float> out(cols);
  for (uint64_t v0 = 0; v0 < cols; v0 += 8) {
    float eight[8];
    D::decode8(row.data() + v0 / D::kValues * D::kBytes, static_cast<uint32_t>(v0 % D::kValues), eight);
    std::memcpy(out.data() + v0, eight, sizeof eight);
  }
  return out;
}

// Values that differ in any bit, counted (a NaN never occurs: every fp16 field is finite).
uint64_t bit_differences(const std::vector<float>& a, const std::vector<float>& b) {
  uint64_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return n;
}

template <typename D>
void check_type(GgmlType type) {
  CAPTURE(ggml_type_info(type).name);
  REQUIRE(D::kValues == ggml_type_info(type).block_values);
  REQUIRE(D::kBytes == ggml_type_info(type).block_bytes);
  std::mt19937 rng(20261206);
  const uint64_t cols = 4 * 256 + (D::kValues == 32 ? 96 : 0);  // odd block counts for the 32-value types
  for (int round = 0; round < 8; ++round) {
    const std::vector<uint8_t> row = round % 2 == 0 ? random_row(type, cols, rng) : quantized_row(type, cols, rng);
    const std::vector<float> want = reference(type, row, cols);
    CHECK(bit_differences(decoded<D>(row, cols), want) == 0);
  }

  // matvec_lane over 32 lanes (as a warp runs it) against a double-precision product of the
  // dequantized rows. Bound: each lane sums at most cols / 256 groups of 8 products, then 32 lanes
  // are added: a summation tree of depth <= cols / 8 / 32 + 8 + 32 over exact-in-double terms, so
  // |error| <= depth * 2^-24 * sum |w x| (Higham's gamma); twice that for margin. A misplaced group
  // or lost lane moves the sum by about one group, ~sqrt(8) |w x|, far above it.
  constexpr int R = 3, T = 2;
  const uint32_t n = static_cast<uint32_t>(cols);
  std::vector<std::vector<uint8_t>> rows;
  for (int r = 0; r < R; ++r) rows.push_back(random_row(type, cols, rng, true));
  std::normal_distribution<float> xs(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(T) * n);
  for (float& v : x) v = xs(rng);
  const uint8_t* wr[R] = {rows[0].data(), rows[1].data(), rows[2].data()};
  float acc[R][T] = {};
  for (uint32_t lane = 0; lane < 32; ++lane) {
    float part[R][T] = {};
    decode::matvec_lane<D, R, T>(wr, n, x.data(), lane, 32, part);
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) acc[r][t] += part[r][t];
  }
  const double depth = n / 8.0 / 32.0 + 8 + 32;
  for (int r = 0; r < R; ++r) {
    const std::vector<float> w = reference(type, rows[r], cols);
    for (int t = 0; t < T; ++t) {
      double want = 0, magnitude = 0;
      for (uint32_t c = 0; c < n; ++c) {
        want += static_cast<double>(w[c]) * x[static_cast<size_t>(t) * n + c];
        magnitude += std::fabs(static_cast<double>(w[c]) * x[static_cast<size_t>(t) * n + c]);
      }
      CAPTURE(r);
      CAPTURE(t);
      CHECK(std::fabs(acc[r][t] - want) <= 2 * depth * 0x1p-24 * magnitude);
      CHECK(magnitude > 0);
    }
  }
}

}  // namespace

TEST_CASE("the CUDA kernels' decoders give the CPU dequantizers' values and products") {
  check_type<decode::Q5_0>(GgmlType::Q5_0);
  check_type<decode::Q4_1>(GgmlType::Q4_1);
  check_type<decode::Q5_1>(GgmlType::Q5_1);
  check_type<decode::Q3_K>(GgmlType::Q3_K);
  check_type<decode::Q4_K>(GgmlType::Q4_K);
  check_type<decode::Q5_K>(GgmlType::Q5_K);
  check_type<decode::Q6_K>(GgmlType::Q6_K);
  check_type<decode::IQ4_NL>(GgmlType::IQ4_NL);
  check_type<decode::IQ4_XS>(GgmlType::IQ4_XS);
  check_type<decode::MXFP4>(GgmlType::MXFP4);
}

TEST_CASE("the decoders' fp16 widening is exact for every fp16 value") {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint8_t bytes[2] = {static_cast<uint8_t>(h & 0xFF), static_cast<uint8_t>(h >> 8)};
    const float got = decode::load_fp16(bytes), want = kernels::fp16_to_fp32(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      CHECK(std::isnan(got));
    } else if (std::memcmp(&got, &want, sizeof got) != 0) {
      FAIL_CHECK("fp16 0x" << std::hex << h << ": " << got << " vs " << want);
    }
  }
}
