// The interleaved row order (kernels/cpu/interleave) and its products: the layout against a hand
// reading, the round trip, the activations' offsets against hand sums, and matmul_rows on
// interleaved weights against the GGML-order reference, both paths, bit for bit across batches.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/block_layout.hpp"
#include "kernels/cpu/dot_avx2.hpp"
#include "kernels/cpu/interleave.hpp"
#include "kernels/cpu/matmul.hpp"
#include "kernels/cpu/quantize.hpp"
#include "tests/kernels/matmul_tolerance.hpp"

using namespace infer_plan;
using namespace infer_plan::kernels;

namespace {

std::vector<float> uniform_values(uint64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<float> v(n);
  for (float& f : v) f = static_cast<float>(gen() >> 8) * 0x1p-23f - 1.0f;
  return v;
}

std::vector<uint8_t> quantized_matrix(GgmlType type, uint64_t rows, uint64_t cols, uint32_t seed) {
  const std::vector<float> values = uniform_values(rows * cols, seed);
  const uint64_t row_bytes = ggml_row_bytes(type, cols, "test");
  std::vector<uint8_t> out(rows * row_bytes);
  for (uint64_t r = 0; r < rows; ++r)
    quantize_row(type, std::span<const float>(values.data() + r * cols, cols),
                 std::span<uint8_t>(out.data() + r * row_bytes, row_bytes), "test");
  return out;
}

std::vector<uint8_t> q4_0_matrix(uint64_t rows, uint64_t cols, uint32_t seed) {
  return quantized_matrix(GgmlType::Q4_0, rows, cols, seed);
}

// Value j's code of a GGML Q4_0 block, read as block_layout.hpp documents it.
int code_of(const uint8_t* block, int j) {
  return j < 16 ? block[kQ4_0Qs + j] & 0x0F : block[kQ4_0Qs + j - 16] >> 4;
}

}  // namespace

TEST_CASE("interleaved Q4_0: eight rows' blocks side by side, the same bytes, and back") {
  CHECK(can_interleave(GgmlType::Q4_0, 16));
  CHECK_FALSE(can_interleave(GgmlType::Q4_0, 12));  // not whole groups
  CHECK_FALSE(can_interleave(GgmlType::Q4_0, 0));
  CHECK_FALSE(can_interleave(GgmlType::Q8_0, 16));  // no interleaved order
  constexpr uint64_t rows = 16, cols = 96;          // two groups of three blocks
  const std::vector<uint8_t> plain = q4_0_matrix(rows, cols, 3);
  std::vector<uint8_t> mixed = plain;
  interleave_rows(GgmlType::Q4_0, mixed.data(), rows, cols);
  CHECK(mixed.size() == plain.size());
  CHECK(mixed != plain);
  const uint64_t row_bytes = ggml_row_bytes(GgmlType::Q4_0, cols, "test");
  // Group 1, block 2: scales first (row r's at bytes 2r), then load k's byte (row r, i) holds
  // codes 8k + i (low nibble) and 8k + 4 + i (high nibble) of row r.
  const uint8_t* group_block = mixed.data() + 8 * row_bytes + 2 * 144;
  for (int r = 0; r < 8; ++r) {
    const uint8_t* block = plain.data() + (8 + r) * row_bytes + 2 * kQ4_0Bytes;
    CHECK(group_block[2 * r] == block[0]);
    CHECK(group_block[2 * r + 1] == block[1]);
    for (int k = 0; k < 4; ++k) {
      for (int i = 0; i < 4; ++i) {
        const uint8_t byte = group_block[16 + 32 * k + 4 * r + i];
        CHECK((byte & 0x0F) == code_of(block, 8 * k + i));
        CHECK((byte >> 4) == code_of(block, 8 * k + 4 + i));
      }
    }
  }
  std::vector<uint8_t> group(8 * row_bytes);
  deinterleave_group(GgmlType::Q4_0, mixed.data(), cols, 1, group.data());
  CHECK(std::vector<uint8_t>(plain.begin() + 8 * row_bytes, plain.end()) == group);
  deinterleave_rows(GgmlType::Q4_0, mixed.data(), rows, cols);
  CHECK(mixed == plain);
}

TEST_CASE("Q4_0 activations carry 8 x their code sums by position mod 4, for the codes' offset") {
  // 64 values: block 0 all 1.0 (codes all 127, d = 1/127), block 1 +1 at j % 4 in {0, 1} and -1
  // at {2, 3} (codes +-127). Block 0: both halves 8 * 16 * 127 = 16256; block 1: 16256 and -16256.
  std::vector<float> x(64, 1.0f);
  for (int j = 0; j < 32; ++j) x[32 + j] = j % 4 < 2 ? 1.0f : -1.0f;
  for (bool scalar : {false, true}) {
    matmul_force_scalar(scalar);
    Activations a;
    convert_activations(GgmlType::Q4_0, x.data(), 1, 64, a);
    REQUIRE(a.offsets.size() == 2);
    CHECK(a.offsets[0] == (16256u | 16256u << 16));
    CHECK(a.offsets[1] == (16256u | static_cast<uint32_t>(static_cast<uint16_t>(-16256)) << 16));
    convert_activations(GgmlType::Q8_0, x.data(), 1, 64, a);
    CHECK(a.offsets.empty());  // Q8_0 weights need none
    for (const GgmlType type : {GgmlType::Q5_0, GgmlType::Q4_1, GgmlType::Q5_1}) {  // the blocks' sums
      convert_activations(type, x.data(), 1, 64, a);
      REQUIRE(a.offsets.size() == 2);
      CHECK(a.offsets[0] == 32u * 127u);
      CHECK(a.offsets[1] == 0u);  // 16 x 127 - 16 x 127
    }
  }
  matmul_force_scalar(false);
}

TEST_CASE("interleaved IQ4_NL and MXFP4: the scale fields first, the same bytes, and back") {
  for (const GgmlType type : {GgmlType::IQ4_NL, GgmlType::MXFP4}) {
    CAPTURE(ggml_type_info(type).name);
    constexpr uint64_t rows = 16, cols = 64;
    CHECK(can_interleave(type, rows));
    CHECK_FALSE(can_interleave(type, 12));
    const std::vector<uint8_t> plain = quantized_matrix(type, rows, cols, 30);
    std::vector<uint8_t> mixed = plain;
    interleave_rows(type, mixed.data(), rows, cols);
    CHECK(mixed != plain);
    const uint64_t row_bytes = ggml_row_bytes(type, cols, "test"), block = ggml_type_info(type).block_bytes;
    const uint64_t scale = type == GgmlType::MXFP4 ? 1 : 2;
    // Group 1, block 1 starts with its eight rows' scale fields, rows 8..15's block 1 (GGML: offset 0).
    for (uint64_t r = 0; r < 8; ++r)
      for (uint64_t i = 0; i < scale; ++i)
        CHECK(mixed[8 * row_bytes + 8 * block + scale * r + i] == plain[(8 + r) * row_bytes + block + i]);
    // Byte (k = 1, r = 2, i = 3) of group 0, block 0: values 11 (low nibble) and 15 (high) of row 2.
    const uint8_t* row2 = plain.data() + 2 * row_bytes + scale;
    CHECK(mixed[8 * scale + 32 + 4 * 2 + 3] == ((row2[11] & 0x0F) | (row2[15] & 0x0F) << 4));
    deinterleave_rows(type, mixed.data(), rows, cols);
    CHECK(mixed == plain);
  }
}

TEST_CASE("interleaved Q5_0, Q4_1 and Q5_1: scales, the rows' minimums, the codes, the fifth bits, and back") {
  struct Case {
    GgmlType type;
    uint64_t m, qh, qs;  // GGML offsets (kernels/block_layout.hpp); m, qh 0 if none
  };
  for (const Case c : {Case{GgmlType::Q5_0, 0, 2, 6}, Case{GgmlType::Q4_1, 2, 0, 4}, Case{GgmlType::Q5_1, 2, 4, 8}}) {
    const GgmlType type = c.type;
    CAPTURE(ggml_type_info(type).name);
    constexpr uint64_t rows = 16, cols = 64;
    CHECK(can_interleave(type, rows));
    CHECK_FALSE(can_interleave(type, 12));
    const std::vector<uint8_t> plain = quantized_matrix(type, rows, cols, 36);
    std::vector<uint8_t> mixed = plain;
    interleave_rows(type, mixed.data(), rows, cols);
    CHECK(mixed != plain);
    const uint64_t block = ggml_type_info(type).block_bytes, row_bytes = 2 * block;
    const uint64_t codes = c.m ? 32 : 16;  // after the rows' d (and minimums)
    // Group 1, block 1, row 3 (GGML row 11, block 1): its d at 2 x 3, its minimum at 16 + 2 x 3.
    const uint8_t* group_block = mixed.data() + 8 * row_bytes + 8 * block;
    const uint8_t* row11 = plain.data() + 11 * row_bytes + block;
    for (int i = 0; i < 2; ++i) {
      CHECK(group_block[2 * 3 + i] == row11[i]);
      if (c.m) CHECK(group_block[16 + 2 * 3 + i] == row11[c.m + i]);
    }
    // Byte (k = 1, r = 3, i = 2): values 10 (low nibble of GGML byte 10) and 14 (byte 14's).
    CHECK(group_block[codes + 32 + 4 * 3 + 2] == ((row11[c.qs + 10] & 0x0F) | (row11[c.qs + 14] & 0x0F) << 4));
    if (c.qh) {  // fifth-bit byte 4r + i = 14: bit k = 1 value 10's, bit 4 + k value 14's
      const uint8_t fifth = group_block[codes + 128 + 4 * 3 + 2];
      CHECK(((fifth >> 1) & 1) == ((row11[c.qh + 1] >> 2) & 1));  // value 10: bit 10 of the word
      CHECK(((fifth >> 5) & 1) == ((row11[c.qh + 1] >> 6) & 1));  // value 14
      uint64_t set = 0;  // some fifth bit set, or these prove little
      for (uint64_t g = 0; g < 2 * 2; ++g)
        for (uint64_t i = 0; i < 32; ++i) set += mixed[g * 8 * block + codes + 128 + i] != 0;
      CHECK(set > 0);
    }
    deinterleave_rows(type, mixed.data(), rows, cols);
    CHECK(mixed == plain);
  }
}

TEST_CASE("interleaved Q4_K: the rows' d, dmin and scale words first, then each sub-block as Q4_0's, and back") {
  constexpr uint64_t rows = 16, cols = 512;
  CHECK(can_interleave(GgmlType::Q4_K, rows));
  CHECK_FALSE(can_interleave(GgmlType::Q4_K, 12));
  const std::vector<uint8_t> plain = quantized_matrix(GgmlType::Q4_K, rows, cols, 31);
  std::vector<uint8_t> mixed = plain;
  interleave_rows(GgmlType::Q4_K, mixed.data(), rows, cols);
  CHECK(mixed != plain);
  const uint64_t row_bytes = ggml_row_bytes(GgmlType::Q4_K, cols, "test");
  REQUIRE(row_bytes == 2 * 144);
  // Group 1, block 1 (at 8 rows x 288 bytes + 8 x 144): row 3's d, dmin and scale bytes 4..7 (word 1).
  const uint8_t* group1_block1 = mixed.data() + 8 * row_bytes + 8 * 144;
  const uint8_t* row11_block1 = plain.data() + 11 * row_bytes + 144;  // GGML: d 0, dmin 2, scales 4..15
  for (int i = 0; i < 2; ++i) {
    CHECK(group1_block1[2 * 3 + i] == row11_block1[i]);
    CHECK(group1_block1[16 + 2 * 3 + i] == row11_block1[2 + i]);
  }
  for (int i = 0; i < 4; ++i) CHECK(group1_block1[32 + 32 * 1 + 4 * 3 + i] == row11_block1[4 + 4 + i]);
  // Sub-block 3 (values 96..127: chunk 1's high nibbles, GGML bytes 16 + 32 + 0..31), k = 2, row 5,
  // i = 1: values 96 + 17 (low nibble) and 96 + 21 (high) of row 5, block 0 of group 0.
  const uint8_t* row5 = plain.data() + 5 * row_bytes;
  const int v113 = row5[16 + 32 + 17] >> 4, v117 = row5[16 + 32 + 21] >> 4;
  CHECK(mixed[128 + 128 * 3 + 32 * 2 + 4 * 5 + 1] == (v113 | v117 << 4));
  // Sub-block 0 holds chunk 0's low nibbles: value 2 (k = 0, i = 2) of row 0.
  CHECK((mixed[128 + 2] & 0x0F) == (plain[16 + 2] & 0x0F));
  deinterleave_rows(GgmlType::Q4_K, mixed.data(), rows, cols);
  CHECK(mixed == plain);
}

TEST_CASE("interleaved Q5_K: Q4_K's order for the low four bits, each sub-block's fifth bits after, and back") {
  constexpr uint64_t rows = 8, cols = 256;
  CHECK(can_interleave(GgmlType::Q5_K, rows));
  const std::vector<uint8_t> plain = quantized_matrix(GgmlType::Q5_K, rows, cols, 32);
  std::vector<uint8_t> mixed = plain;
  interleave_rows(GgmlType::Q5_K, mixed.data(), rows, cols);
  CHECK(mixed != plain);
  // Row 6's values 96 + 17 = 113 and 117 (sub-block 3, k = 2, i = 1), GGML: low bits in chunk 1's
  // high nibbles (qs at 48: byte 48 + 32 + 17), fifth bits in qh (at 16) byte 17 and 21, bit 2 * 1 + 1.
  const uint8_t* row6 = plain.data() + 6 * 176;
  const int v113 = (row6[48 + 32 + 17] >> 4) | ((row6[16 + 17] >> 3) & 1) << 4;
  const int v117 = (row6[48 + 32 + 21] >> 4) | ((row6[16 + 21] >> 3) & 1) << 4;
  CHECK(mixed[128 + 128 * 3 + 32 * 2 + 4 * 6 + 1] == ((v113 & 0x0F) | (v117 & 0x0F) << 4));
  const uint8_t fifths = mixed[1152 + 32 * 3 + 4 * 6 + 1];  // bit k = 2: value 113's, bit 4 + k: 117's
  CHECK(((fifths >> 2) & 1) == v113 >> 4);
  CHECK(((fifths >> 6) & 1) == v117 >> 4);
  // Some fifth bit is set somewhere, or the check above proves little.
  uint64_t set = 0;
  for (uint64_t i = 1152; i < 1408; ++i) set += mixed[i] != 0;
  CHECK(set > 0);
  deinterleave_rows(GgmlType::Q5_K, mixed.data(), rows, cols);
  CHECK(mixed == plain);
}

TEST_CASE("interleaved IQ4_XS: the rows' d, scales_h and scales_l first, then each sub-block as Q4_0's, and back") {
  constexpr uint64_t rows = 8, cols = 512;
  CHECK(can_interleave(GgmlType::IQ4_XS, rows));
  const std::vector<uint8_t> plain = quantized_matrix(GgmlType::IQ4_XS, rows, cols, 33);
  std::vector<uint8_t> mixed = plain;
  interleave_rows(GgmlType::IQ4_XS, mixed.data(), rows, cols);
  CHECK(mixed != plain);
  REQUIRE(ggml_row_bytes(GgmlType::IQ4_XS, cols, "test") == 2 * 136);
  // Block 1 of the group (at 8 x 136): row 4's d (GGML offset 0), scales_h (2) and scales_l (4..7).
  const uint8_t* block1 = mixed.data() + 8 * 136;
  const uint8_t* row4_block1 = plain.data() + 4 * 272 + 136;
  for (int i = 0; i < 2; ++i) {
    CHECK(block1[2 * 4 + i] == row4_block1[i]);
    CHECK(block1[16 + 2 * 4 + i] == row4_block1[2 + i]);
  }
  for (int i = 0; i < 4; ++i) CHECK(block1[32 + 4 * 4 + i] == row4_block1[4 + i]);
  // Sub-block 5 (GGML bytes 8 + 16 x 5 ..), k = 3, row 4, i = 2: values 26 (high nibble of byte 10)
  // and 30 (high nibble of byte 14) of the sub-block.
  const uint8_t* sub5 = row4_block1 + 8 + 16 * 5;
  CHECK(block1[64 + 128 * 5 + 32 * 3 + 4 * 4 + 2] == ((sub5[10] >> 4) | (sub5[14] >> 4) << 4));
  deinterleave_rows(GgmlType::IQ4_XS, mixed.data(), rows, cols);
  CHECK(mixed == plain);
}

TEST_CASE("interleaved Q6_K: the rows' d and scale words, the low nibbles as Q4_K's, two words of top bits, and back") {
  constexpr uint64_t rows = 8, cols = 512;
  CHECK(can_interleave(GgmlType::Q6_K, rows));
  CHECK_FALSE(can_interleave(GgmlType::Q6_K, 12));
  const std::vector<uint8_t> plain = quantized_matrix(GgmlType::Q6_K, rows, cols, 34);
  std::vector<uint8_t> mixed = plain;
  interleave_rows(GgmlType::Q6_K, mixed.data(), rows, cols);
  CHECK(mixed != plain);
  REQUIRE(ggml_row_bytes(GgmlType::Q6_K, cols, "test") == 2 * 210);
  // Block 1 of the group (at 8 x 210): row 5's d (GGML offset 208) and its scales 8..11 (192 + 8..11:
  // word 2).
  const uint8_t* block1 = mixed.data() + 8 * 210;
  const uint8_t* row5 = plain.data() + 5 * 420 + 210;
  for (int i = 0; i < 2; ++i) CHECK(block1[2 * 5 + i] == row5[208 + i]);
  for (int i = 0; i < 4; ++i) CHECK(block1[16 + 32 * 2 + 4 * 5 + i] == row5[192 + 8 + i]);
  // Value 128 + 64 + 9 = 201 of row 5 (the second 128's third 32, l = 9): low four bits the high
  // nibble of ql byte 64 + 9, top two bits bits 4-5 of qh byte 128 + 32 + 9. It is sub-block 6's value
  // 9: load k = 1, i = 1, the low nibble; top bits in word h = 0 (value 16h + 8 + i: bits 4-5).
  const int v201 = (row5[64 + 9] >> 4) | ((row5[128 + 32 + 9] >> 4) & 3) << 4;
  // and its neighbour in the byte, value 201 + 4 = 205 (l = 13, the high nibble; word 0, bits 6-7)
  const int v205 = (row5[64 + 13] >> 4) | ((row5[128 + 32 + 13] >> 4) & 3) << 4;
  CHECK(block1[144 + 128 * 6 + 32 * 1 + 4 * 5 + 1] == ((v201 & 0x0F) | (v205 & 0x0F) << 4));
  const uint8_t top = block1[1168 + 64 * 6 + 32 * 0 + 4 * 5 + 1];
  CHECK(((top >> 4) & 3) == v201 >> 4);
  CHECK(((top >> 6) & 3) == v205 >> 4);
  uint64_t set = 0;  // some top bits are set, or the checks above prove little
  for (uint64_t i = 1168; i < 1680; ++i) set += mixed[8 * 210 + i] != 0;
  CHECK(set > 0);
  deinterleave_rows(GgmlType::Q6_K, mixed.data(), rows, cols);
  CHECK(mixed == plain);
}

TEST_CASE("interleaved Q3_K: the rows' d and scale words, two words of low bits, the third bits as Q5_K's fifth, and back") {
  constexpr uint64_t rows = 16, cols = 256;
  CHECK(can_interleave(GgmlType::Q3_K, rows));
  const std::vector<uint8_t> plain = quantized_matrix(GgmlType::Q3_K, rows, cols, 35);
  std::vector<uint8_t> mixed = plain;
  interleave_rows(GgmlType::Q3_K, mixed.data(), rows, cols);
  CHECK(mixed != plain);
  REQUIRE(ggml_row_bytes(GgmlType::Q3_K, cols, "test") == 110);
  // Group 1 (at 8 x 110), row 2 (GGML row 10): d (GGML offset 108), scale bytes 8..11 (96 + 8: word 2).
  const uint8_t* group1 = mixed.data() + 8 * 110;
  const uint8_t* row10 = plain.data() + 10 * 110;
  for (int i = 0; i < 2; ++i) CHECK(group1[2 * 2 + i] == row10[108 + i]);
  for (int i = 0; i < 4; ++i) CHECK(group1[16 + 32 * 2 + 4 * 2 + i] == row10[96 + 8 + i]);
  // Value 160 + 19 = 179 (sub-block 5, k = 2, i = 3): low bits in qs (at 32) byte 32 + 19, bits 2 x 1
  // (the second 128's second 32); third bit: hmask byte 19, bit 5. And value 183 (k = 2, i = 3, the
  // high half): qs byte 32 + 23, hmask byte 23.
  const int v179 = ((row10[32 + 32 + 19] >> 2) & 3) | ((row10[19] >> 5) & 1) << 2;
  const int v183 = ((row10[32 + 32 + 23] >> 2) & 3) | ((row10[23] >> 5) & 1) << 2;
  CHECK(((group1[112 + 64 * 5 + 4 * 2 + 3] >> 4) & 3) == (v179 & 3));  // word 0, bits 2k
  CHECK(((group1[112 + 64 * 5 + 32 + 4 * 2 + 3] >> 4) & 3) == (v183 & 3));  // word 1
  const uint8_t third = group1[624 + 32 * 5 + 4 * 2 + 3];
  CHECK(((third >> 2) & 1) == v179 >> 2);
  CHECK(((third >> 6) & 1) == v183 >> 2);
  deinterleave_rows(GgmlType::Q3_K, mixed.data(), rows, cols);
  CHECK(mixed == plain);
}

TEST_CASE("interleaved products (the 32-value types, Q4_K, Q5_K, IQ4_XS, Q6_K, Q3_K) match the GGML-order reference, both paths, batch = tokens") {
  struct Shape {
    uint64_t rows, cols;
  };
  uint32_t seed = 40;
  struct Case {
    GgmlType type;
    Shape shape;
  };
  std::vector<Case> cases;
  for (const GgmlType type : {GgmlType::Q4_0, GgmlType::IQ4_NL, GgmlType::MXFP4, GgmlType::Q5_0, GgmlType::Q4_1, GgmlType::Q5_1})
    for (const Shape shape : {Shape{8, 32}, Shape{24, 256}, Shape{64, 4096}}) cases.push_back({type, shape});
  for (const GgmlType type : {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::IQ4_XS, GgmlType::Q6_K, GgmlType::Q3_K})
    for (const Shape shape : {Shape{8, 256}, Shape{24, 512}, Shape{64, 4096}}) cases.push_back({type, shape});
  for (const Case& c : cases) {
    const GgmlType type = c.type;  // not a structured binding: CAPTURE's lambda takes it (clang 14)
    const Shape shape = c.shape;
    CAPTURE(ggml_type_info(type).name);
    CAPTURE(shape.rows);
    CAPTURE(shape.cols);
    const std::vector<uint8_t> plain = quantized_matrix(type, shape.rows, shape.cols, seed);
    std::vector<uint8_t> mixed = plain;
    interleave_rows(type, mixed.data(), shape.rows, shape.cols);
    constexpr uint64_t batch = 13;  // token groups of 4, 4, 4 and 1
    const std::vector<float> xf = uniform_values(batch * shape.cols, seed + 1);
    seed += 2;
    Activations x;
    convert_activations(type, xf.data(), batch, shape.cols, x);
    std::vector<float> want(batch * shape.rows), want_mixed(batch * shape.rows);
    matmul_rows_reference(type, plain.data(), shape.rows, x, 0, shape.rows, want.data());
    matmul_rows_reference(type, mixed.data(), shape.rows, x, 0, shape.rows, want_mixed.data(),
                          RowOrder::interleaved);
    CHECK(want_mixed == want);  // the reference reads the interleaved order back exactly
    // Tolerance as test_matmul's: (blocks + 8) roundings of 2^-24 of the sum of |terms| (Q4_K's
    // scale and min parts counted apart).
    const double rtol = test::relative_tolerance(type, shape.cols);
    const std::vector<double> magnitude = test::term_magnitudes(type, plain, shape.rows, x);
    for (bool scalar : {false, true}) {
      matmul_force_scalar(scalar);
      CAPTURE(matmul_implementation());
      std::vector<float> got(batch * shape.rows, std::numeric_limits<float>::quiet_NaN());
      const uint64_t mid = shape.rows > 8 ? 8 : shape.rows;  // two calls, split at a group
      matmul_rows(type, mixed.data(), shape.rows, x, 0, mid, got.data(), RowOrder::interleaved);
      matmul_rows(type, mixed.data(), shape.rows, x, mid, shape.rows, got.data(), RowOrder::interleaved);
      int mismatches = 0;
      for (uint64_t i = 0; i < got.size(); ++i) {
        const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
        if (!(err <= rtol * magnitude[i]) && ++mismatches <= 5) {
          CAPTURE(i);
          CHECK(got[i] == doctest::Approx(want[i]).epsilon(0));
        }
      }
      CHECK(mismatches == 0);
      // A verify pass gives the bits of the decode steps it replaces.
      for (uint64_t b = 0; b < batch; ++b) {
        Activations one;
        convert_activations(type, xf.data() + b * shape.cols, 1, shape.cols, one);
        std::vector<float> alone(shape.rows);
        matmul_rows(type, mixed.data(), shape.rows, one, 0, shape.rows, alone.data(), RowOrder::interleaved);
        CAPTURE(b);
        CHECK(std::vector<float>(got.begin() + static_cast<std::ptrdiff_t>(b * shape.rows),
                                 got.begin() + static_cast<std::ptrdiff_t>((b + 1) * shape.rows)) == alone);
      }
    }
  }
  matmul_force_scalar(false);
}

TEST_CASE("the AVX-512 VNNI product of interleaved Q4_0 gives the AVX2 product's bits") {
  const GroupsDotFn avx2 = avx2_interleaved_dot(GgmlType::Q4_0, false);
  const GroupsDotFn vnni = avx2_interleaved_dot(GgmlType::Q4_0, true);
  if (!avx512_vnni_able()) {
    CHECK((vnni == avx2));  // none here: the AVX2 product (or none at all) either way
    return;
  }
  REQUIRE((avx2 != nullptr));
  REQUIRE((vnni != avx2));
  constexpr uint64_t rows = 24, cols = 512;
  for (uint64_t batch : {1, 3, 4, 9}) {
    CAPTURE(batch);
    std::vector<uint8_t> w = q4_0_matrix(rows, cols, 70 + static_cast<uint32_t>(batch));
    interleave_rows(GgmlType::Q4_0, w.data(), rows, cols);
    // Activation codes up to +-127 with large sums (all ones and all minus ones in places), so the
    // 16-bit sums of the AVX2 product come near their bound.
    std::vector<float> xf = uniform_values(batch * cols, 80);
    for (uint64_t i = 0; i < 64; ++i) xf[i] = 1.0f;
    for (uint64_t i = 64; i < 128; ++i) xf[i] = -1.0f;
    Activations x;
    convert_activations(GgmlType::Q4_0, xf.data(), batch, cols, x);
    std::vector<float> a(batch * rows), b(batch * rows);
    avx2(w.data(), rows / 8, x.row(0), x.row_bytes, x.offsets.data(), batch, cols, a.data(), rows);
    vnni(w.data(), rows / 8, x.row(0), x.row_bytes, x.offsets.data(), batch, cols, b.data(), rows);
    CHECK(a == b);
  }
}

TEST_CASE("interleaved MXFP4: every kind of exponent byte scales as mxfp4_scale (subnormal 2^-128 and 2^-127 too)") {
  // Eight rows, one block each, exponents 0 and 1 (the subnormal scales), 2 (the smallest normal) and
  // larger; the product (AVX-512 VNNI where the CPU has it) against the reference on the same bytes.
  constexpr uint64_t rows = 8, cols = 32;
  std::vector<uint8_t> w = quantized_matrix(GgmlType::MXFP4, rows, cols, 90);
  const uint8_t exponents[rows] = {0, 1, 2, 100, 127, 128, 130, 150};
  for (uint64_t r = 0; r < rows; ++r) w[r * kMXFP4Bytes + kMXFP4E] = exponents[r];
  const std::vector<float> xf = uniform_values(cols, 91);
  Activations x;
  convert_activations(GgmlType::MXFP4, xf.data(), 1, cols, x);
  std::vector<float> want(rows), got(rows);
  matmul_rows_reference(GgmlType::MXFP4, w.data(), rows, x, 0, rows, want.data());
  interleave_rows(GgmlType::MXFP4, w.data(), rows, cols);
  matmul_rows(GgmlType::MXFP4, w.data(), rows, x, 0, rows, got.data(), RowOrder::interleaved);
  for (uint64_t r = 0; r < rows; ++r) {
    CAPTURE(r);
    CHECK(want[r] != 0.0f);
    CHECK(std::fabs(got[r] - want[r]) <= 1e-6f * std::fabs(want[r]));  // relative: row 0 is ~1e-38
  }
}
