#include "kernels/cpu/interleave.hpp"

#include <cassert>
#include <cstring>
#include <vector>

#include "kernels/block_layout.hpp"
#include "kernels/cpu/dot_avx2.hpp"

namespace infer_plan::kernels {
namespace {

static_assert(kQ4_0Bytes * kInterleavedRows == 2 * kInterleavedRows + 128, "a group's block: 8 scales, 128 code bytes");

// Value j's code (0..15) of a GGML Q4_0 block: byte j's low nibble, or byte j - 16's high one.
uint8_t q4_0_code(const uint8_t* block, uint32_t j) {
  return j < kQ4_0Values / 2 ? block[kQ4_0Qs + j] & 0x0F : block[kQ4_0Qs + j - kQ4_0Values / 2] >> 4;
}

// One group: eight GGML rows at `rows` (row_bytes apart) into interleaved order at `out`.
void interleave_group_q4_0(const uint8_t* rows, uint64_t row_bytes, uint64_t blocks, uint8_t* out) {
  for (uint64_t b = 0; b < blocks; ++b, out += kInterleavedRows * kQ4_0Bytes) {
    for (uint64_t r = 0; r < kInterleavedRows; ++r) {
      const uint8_t* block = rows + r * row_bytes + b * kQ4_0Bytes;
      std::memcpy(out + 2 * r, block + kQ4_0D, 2);
      for (uint32_t k = 0; k < 4; ++k)
        for (uint32_t i = 0; i < 4; ++i)
          out[2 * kInterleavedRows + 32 * k + 4 * r + i] =
              static_cast<uint8_t>(q4_0_code(block, 8 * k + i) | q4_0_code(block, 8 * k + 4 + i) << 4);
    }
  }
}

void deinterleave_group_q4_0(const uint8_t* group, uint64_t row_bytes, uint64_t blocks, uint8_t* rows) {
  for (uint64_t b = 0; b < blocks; ++b, group += kInterleavedRows * kQ4_0Bytes) {
    for (uint64_t r = 0; r < kInterleavedRows; ++r) {
      uint8_t* block = rows + r * row_bytes + b * kQ4_0Bytes;
      std::memcpy(block + kQ4_0D, group + 2 * r, 2);
      uint8_t codes[kQ4_0Values];
      for (uint32_t k = 0; k < 4; ++k) {
        for (uint32_t i = 0; i < 4; ++i) {
          const uint8_t byte = group[2 * kInterleavedRows + 32 * k + 4 * r + i];
          codes[8 * k + i] = byte & 0x0F;
          codes[8 * k + 4 + i] = byte >> 4;
        }
      }
      for (uint32_t j = 0; j < kQ4_0Values / 2; ++j)
        block[kQ4_0Qs + j] = static_cast<uint8_t>(codes[j] | codes[j + kQ4_0Values / 2] << 4);
    }
  }
}

}  // namespace

bool can_interleave(GgmlType type, uint64_t rows) {
  return type == GgmlType::Q4_0 && rows > 0 && rows % kInterleavedRows == 0;
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
    interleave_group_q4_0(plain.data(), row_bytes, cols / kQ4_0Values, group);
  }
}

void deinterleave_group(GgmlType type, const uint8_t* data, uint64_t cols, uint64_t group, uint8_t* out) {
  assert(type == GgmlType::Q4_0);
  const uint64_t row_bytes = ggml_row_bytes(type, cols, "interleave");
  deinterleave_group_q4_0(data + group * kInterleavedRows * row_bytes, row_bytes, cols / kQ4_0Values, out);
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
