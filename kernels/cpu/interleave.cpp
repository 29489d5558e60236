#include "kernels/cpu/interleave.hpp"

#include <cassert>
#include <cstring>
#include <vector>

#include "kernels/block_layout.hpp"
#include "kernels/cpu/dot_avx2.hpp"

namespace infer_plan::kernels {
namespace {

// The types with an interleaved order: 32 values, one scale field at the block's start (Q4_0's
// and IQ4_NL's fp16 d, MXFP4's E8M0 exponent byte), then Q4_0's 16 nibble bytes.
struct NibbleBlock {
  uint32_t bytes;        // per block
  uint32_t scale_bytes;  // the scale field's, at offset 0
};
static_assert(kQ4_0D == 0 && kQ4_0Qs == 2 && kIQ4_NLD == 0 && kIQ4_NLQs == 2 && kMXFP4E == 0 && kMXFP4Qs == 1,
              "a scale field at the block's start, then the nibbles");
static_assert(kQ4_0Bytes * kInterleavedRows == 2 * kInterleavedRows + 128, "a group's block: 8 scales, 128 code bytes");

NibbleBlock nibble_block(GgmlType type) {
  return type == GgmlType::MXFP4 ? NibbleBlock{kMXFP4Bytes, 1} : NibbleBlock{kQ4_0Bytes, 2};
}

// Value j's code (0..15) of a block: byte j's low nibble, or byte j - 16's high one.
uint8_t nibble_code(const uint8_t* block, NibbleBlock nb, uint32_t j) {
  const uint8_t* qs = block + nb.scale_bytes;
  return j < kQ4_0Values / 2 ? qs[j] & 0x0F : qs[j - kQ4_0Values / 2] >> 4;
}

// One group: eight GGML rows at `rows` (row_bytes apart) into interleaved order at `out`.
void interleave_group(NibbleBlock nb, const uint8_t* rows, uint64_t row_bytes, uint64_t blocks, uint8_t* out) {
  const uint64_t codes = static_cast<uint64_t>(nb.scale_bytes) * kInterleavedRows;
  for (uint64_t b = 0; b < blocks; ++b, out += kInterleavedRows * nb.bytes) {
    for (uint64_t r = 0; r < kInterleavedRows; ++r) {
      const uint8_t* block = rows + r * row_bytes + b * nb.bytes;
      std::memcpy(out + nb.scale_bytes * r, block, nb.scale_bytes);
      for (uint32_t k = 0; k < 4; ++k)
        for (uint32_t i = 0; i < 4; ++i)
          out[codes + 32 * k + 4 * r + i] =
              static_cast<uint8_t>(nibble_code(block, nb, 8 * k + i) | nibble_code(block, nb, 8 * k + 4 + i) << 4);
    }
  }
}

void deinterleave_group_rows(NibbleBlock nb, const uint8_t* group, uint64_t row_bytes, uint64_t blocks,
                             uint8_t* rows) {
  const uint64_t codes_at = static_cast<uint64_t>(nb.scale_bytes) * kInterleavedRows;
  for (uint64_t b = 0; b < blocks; ++b, group += kInterleavedRows * nb.bytes) {
    for (uint64_t r = 0; r < kInterleavedRows; ++r) {
      uint8_t* block = rows + r * row_bytes + b * nb.bytes;
      std::memcpy(block, group + nb.scale_bytes * r, nb.scale_bytes);
      uint8_t codes[kQ4_0Values];
      for (uint32_t k = 0; k < 4; ++k) {
        for (uint32_t i = 0; i < 4; ++i) {
          const uint8_t byte = group[codes_at + 32 * k + 4 * r + i];
          codes[8 * k + i] = byte & 0x0F;
          codes[8 * k + 4 + i] = byte >> 4;
        }
      }
      for (uint32_t j = 0; j < kQ4_0Values / 2; ++j)
        block[nb.scale_bytes + j] = static_cast<uint8_t>(codes[j] | codes[j + kQ4_0Values / 2] << 4);
    }
  }
}

}  // namespace

bool can_interleave(GgmlType type, uint64_t rows) {
  const bool nibbles = type == GgmlType::Q4_0 || type == GgmlType::IQ4_NL || type == GgmlType::MXFP4;
  return nibbles && rows > 0 && rows % kInterleavedRows == 0;
}

bool prefers_interleaved(GgmlType type, uint64_t rows) {
  return can_interleave(type, rows) && avx2_interleaved_dot(type) != nullptr;
}

void interleave_rows(GgmlType type, uint8_t* data, uint64_t rows, uint64_t cols) {
  assert(can_interleave(type, rows));
  const uint64_t row_bytes = ggml_row_bytes(type, cols, "interleave");
  std::vector<uint8_t> plain(kInterleavedRows * row_bytes);
  for (uint64_t g = 0; g < rows / kInterleavedRows; ++g) {
    uint8_t* group = data + g * plain.size();
    std::memcpy(plain.data(), group, plain.size());
    interleave_group(nibble_block(type), plain.data(), row_bytes, cols / kQ4_0Values, group);
  }
}

void deinterleave_group(GgmlType type, const uint8_t* data, uint64_t cols, uint64_t group, uint8_t* out) {
  assert(can_interleave(type, kInterleavedRows));
  const uint64_t row_bytes = ggml_row_bytes(type, cols, "interleave");
  deinterleave_group_rows(nibble_block(type), data + group * kInterleavedRows * row_bytes, row_bytes,
                          cols / kQ4_0Values, out);
}

void deinterleave_rows(GgmlType type, uint8_t* data, uint64_t rows, uint64_t cols) {
  assert(can_interleave(type, rows));
  const uint64_t row_bytes = ggml_row_bytes(type, cols, "interleave");
  std::vector<uint8_t> plain(kInterleavedRows * row_bytes);
  for (uint64_t g = 0; g < rows / kInterleavedRows; ++g) {
    deinterleave_group(type, data, cols, g, plain.data());
    std::memcpy(data + g * plain.size(), plain.data(), plain.size());
  }
}

}  // namespace infer_plan::kernels
