#include "kernels/cpu/interleave.hpp"

#include <cassert>
#include <cstring>
#include <vector>

#include "kernels/block_layout.hpp"
#include "kernels/cpu/dot_avx2.hpp"

namespace infer_plan::kernels {
namespace {

// The interleaving moves four values at a time: a 32-bit word of GGML bytes (byte i: values l + i,
// i = 0..3) gives the interleaved bytes 4r + i of the same values, each field taken and placed in
// every byte at once (the masks keep each byte's own bits). Little-endian, as the runtime assumes.
uint32_t word_at(const uint8_t* p) {
  uint32_t w;
  std::memcpy(&w, p, 4);
  return w;
}
void put_word(uint8_t* p, uint32_t w) { std::memcpy(p, &w, 4); }
void or_word(uint8_t* p, uint32_t w) { put_word(p, word_at(p) | w); }
constexpr uint32_t kBytes2 = 0x03030303, kBytes1 = 0x01010101, kBytes4 = 0x0F0F0F0F;

// The 32-value types with an interleaved order: a scale field at the block's start (Q4_0's, IQ4_NL's,
// Q5_0's, Q4_1's and Q5_1's fp16 d, MXFP4's E8M0 exponent byte), Q4_1's and Q5_1's fp16 minimum,
// Q5_0's and Q5_1's fifth bits (a little-endian word, bit j value j's), Q4_0's 16 nibble bytes.
struct NibbleBlock {
  uint32_t bytes;        // per block
  uint32_t scale_bytes;  // the scale field's, at offset 0
  uint32_t m, qh, qs;    // where the minimum, the fifth bits and the nibbles start (m, qh: 0 if none)
  // the group's block (interleave.hpp): the rows' scales, their minimums, the codes, the fifth bits
  uint64_t codes() const { return kInterleavedRows * (scale_bytes + (m ? 2 : 0)); }
  uint64_t fifths() const { return codes() + 128; }
};
static_assert(kQ4_0D == 0 && kIQ4_NLD == 0 && kMXFP4E == 0 && kQ5_0D == 0 && kQ4_1D == 0 && kQ5_1D == 0,
              "a scale field at the block's start");
static_assert(kQ4_0Bytes * kInterleavedRows == 2 * kInterleavedRows + 128, "a group's block: 8 scales, 128 code bytes");
static_assert(kKGroupCodes + 128 * kQ4_KValues / kQ4_KSubValues == kInterleavedRows * kQ4_KBytes &&
                  kKGroupFifths + 256 == kInterleavedRows * kQ5_KBytes,
              "a K group's block: 128 header bytes, 8 sub-blocks of 128 code bytes, Q5_K's 256 fifth-bit bytes");
static_assert(kXSGroupCodes + 128 * kIQ4_XSValues / kIQ4_XSSubValues == kInterleavedRows * kIQ4_XSBytes,
              "an IQ4_XS group's block: 64 header bytes, then 8 sub-blocks of 128 code bytes");

NibbleBlock nibble_block(GgmlType type) {
  switch (type) {
    case GgmlType::MXFP4: return {kMXFP4Bytes, 1, 0, 0, kMXFP4Qs};
    case GgmlType::Q5_0: return {kQ5_0Bytes, 2, 0, kQ5_0Qh, kQ5_0Qs};
    case GgmlType::Q4_1: return {kQ4_1Bytes, 2, kQ4_1M, 0, kQ4_1Qs};
    case GgmlType::Q5_1: return {kQ5_1Bytes, 2, kQ5_1M, kQ5_1Qh, kQ5_1Qs};
    default: return {kQ4_0Bytes, 2, 0, 0, kQ4_0Qs};  // Q4_0, IQ4_NL
  }
}
bool nibble_type(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_0: case GgmlType::IQ4_NL: case GgmlType::MXFP4:
    case GgmlType::Q5_0: case GgmlType::Q4_1: case GgmlType::Q5_1: return true;
    default: return false;
  }
}

// One group: eight GGML rows at `rows` (row_bytes apart) into interleaved order at `out`. Bytes
// 4r + i of code row k hold values 8k + i (low nibble) and 8k + 4 + i (high): for k = 0, 1 the low
// nibbles of GGML bytes 8k + i and 8k + 4 + i, for k = 2, 3 the high nibbles of bytes 8(k - 2) + i
// and 8(k - 2) + 4 + i, so that a word of four GGML bytes gives four interleaved ones at once.
void interleave_group(NibbleBlock nb, const uint8_t* rows, uint64_t row_bytes, uint64_t blocks, uint8_t* out) {
  const uint64_t codes = nb.codes(), fifths = nb.fifths();
  for (uint64_t b = 0; b < blocks; ++b, out += kInterleavedRows * nb.bytes) {
    for (uint64_t r = 0; r < kInterleavedRows; ++r) {
      const uint8_t* block = rows + r * row_bytes + b * nb.bytes;
      std::memcpy(out + nb.scale_bytes * r, block, nb.scale_bytes);
      if (nb.m) std::memcpy(out + kInterleavedRows * nb.scale_bytes + 2 * r, block + nb.m, 2);
      const uint8_t* qs = block + nb.qs;
      for (uint32_t k = 0; k < 4; ++k) {
        const uint32_t shift = k < 2 ? 0 : 4, at = 8 * (k % 2);
        put_word(out + codes + 32 * k + 4 * r,
                 ((word_at(qs + at) >> shift) & kBytes4) | ((word_at(qs + at + 4) >> shift) & kBytes4) << 4);
      }
      if (!nb.qh) continue;
      // bit j: value j's fifth bit; byte i of the group's takes bits i + 8k (k = 0..3) as its bits k
      // and bits i + 4 + 8k as its bits 4 + k. pack() gathers bits 0, 8, 16, 24 into bits 0..3: the
      // product puts bit 8a at 28 + a, and every other product term below 28 or beyond the word.
      const uint32_t high = word_at(block + nb.qh);
      const auto pack = [](uint32_t bits) { return (bits * 0x10204080u) >> 28; };
      for (uint32_t i = 0; i < 4; ++i)
        out[fifths + 4 * r + i] =
            static_cast<uint8_t>(pack((high >> i) & kBytes1) | pack((high >> (4 + i)) & kBytes1) << 4);
    }
  }
}

void deinterleave_group_rows(NibbleBlock nb, const uint8_t* group, uint64_t row_bytes, uint64_t blocks,
                             uint8_t* rows) {
  const uint64_t codes_at = nb.codes(), fifths = nb.fifths();
  for (uint64_t b = 0; b < blocks; ++b, group += kInterleavedRows * nb.bytes) {
    for (uint64_t r = 0; r < kInterleavedRows; ++r) {
      uint8_t* block = rows + r * row_bytes + b * nb.bytes;
      std::memcpy(block, group + nb.scale_bytes * r, nb.scale_bytes);
      if (nb.m) std::memcpy(block + nb.m, group + kInterleavedRows * nb.scale_bytes + 2 * r, 2);
      uint8_t codes[kQ4_0Values];
      for (uint32_t k = 0; k < 4; ++k) {
        for (uint32_t i = 0; i < 4; ++i) {
          const uint8_t byte = group[codes_at + 32 * k + 4 * r + i];
          const uint8_t fifth = nb.qh ? group[fifths + 4 * r + i] : 0;
          codes[8 * k + i] = static_cast<uint8_t>((byte & 0x0F) | ((fifth >> k) & 1) << 4);
          codes[8 * k + 4 + i] = static_cast<uint8_t>((byte >> 4) | ((fifth >> (4 + k)) & 1) << 4);
        }
      }
      uint32_t high = 0;
      for (uint32_t j = 0; j < kQ4_0Values; ++j) high |= static_cast<uint32_t>(codes[j] >> 4) << j;
      if (nb.qh) std::memcpy(block + nb.qh, &high, 4);
      for (uint32_t j = 0; j < kQ4_0Values / 2; ++j)
        block[nb.qs + j] = static_cast<uint8_t>((codes[j] & 0x0F) | (codes[j + kQ4_0Values / 2] & 0x0F) << 4);
    }
  }
}

// The 256-value types (Q4_K, Q5_K, IQ4_XS): each 32-value sub-block's codes go to a group's block
// as a Q4_0 group's do; these move one row's 32 codes (low four bits) between a plain array and
// that arrangement at `codes` (its row r already added).
void place_codes(const uint8_t (&c)[32], uint8_t* codes) {
  for (uint32_t k = 0; k < 4; ++k)
    for (uint32_t i = 0; i < 4; ++i) codes[32 * k + i] = static_cast<uint8_t>(c[8 * k + i] | c[8 * k + 4 + i] << 4);
}
void take_codes(const uint8_t* codes, uint8_t (&c)[32]) {
  for (uint32_t k = 0; k < 4; ++k) {
    for (uint32_t i = 0; i < 4; ++i) {
      c[8 * k + i] = codes[32 * k + i] & 0x0F;
      c[8 * k + 4 + i] = codes[32 * k + i] >> 4;
    }
  }
}

// Q4_K and Q5_K: where a block's fields lie (Q4_K has no fifth bits).
struct KBlock {
  uint32_t bytes, qs, qh;
  bool fifth;
};
KBlock k_block(GgmlType type) {
  return type == GgmlType::Q5_K ? KBlock{kQ5_KBytes, kQ5_KQs, kQ5_KQh, true} : KBlock{kQ4_KBytes, kQ4_KQs, 0, false};
}
static_assert(kQ4_KD == kQ5_KD && kQ4_KDmin == kQ5_KDmin && kQ4_KScales == kQ5_KScales, "one header for both");

// Q4_K's or Q5_K's eight GGML rows into one group (interleave.hpp describes the group's block), and
// back. Sub-block j of a GGML block: its codes' low four bits are the low (j even) or high nibbles
// of chunk j / 2's 32 bytes; Q5_K's fifth bit of its value m is bit j of qh byte m.
void interleave_k_group(KBlock kb, const uint8_t* rows, uint64_t row_bytes, uint64_t blocks, uint8_t* out) {
  for (uint64_t b = 0; b < blocks; ++b, out += kInterleavedRows * kb.bytes) {
    for (uint64_t r = 0; r < kInterleavedRows; ++r) {
      const uint8_t* block = rows + r * row_bytes + b * kb.bytes;
      std::memcpy(out + kKGroupD + 2 * r, block + kQ4_KD, 2);
      std::memcpy(out + kKGroupDmin + 2 * r, block + kQ4_KDmin, 2);
      for (uint32_t word = 0; word < 3; ++word)
        std::memcpy(out + kKGroupScales + 32 * word + 4 * r, block + kQ4_KScales + 4 * word, 4);
      for (uint32_t j = 0; j < kQ4_KValues / kQ4_KSubValues; ++j) {
        const uint8_t* chunk = block + kb.qs + 32 * (j / 2);
        uint8_t c[32];
        for (uint32_t m = 0; m < 32; ++m) c[m] = (chunk[m] >> (4 * (j % 2))) & 0x0F;
        place_codes(c, out + kKGroupCodes + 128 * j + 4 * r);
        if (!kb.fifth) continue;
        const uint8_t* qh = block + kb.qh;
        for (uint32_t i = 0; i < 4; ++i) {  // bit k: value 8k + i's, bit 4 + k: 8k + 4 + i's
          uint8_t byte = 0;
          for (uint32_t k = 0; k < 4; ++k)
            byte |= static_cast<uint8_t>(((qh[8 * k + i] >> j) & 1) << k | ((qh[8 * k + 4 + i] >> j) & 1) << (4 + k));
          out[kKGroupFifths + 32 * j + 4 * r + i] = byte;
        }
      }
    }
  }
}

void deinterleave_k_group(KBlock kb, const uint8_t* group, uint64_t row_bytes, uint64_t blocks, uint8_t* rows) {
  for (uint64_t b = 0; b < blocks; ++b, group += kInterleavedRows * kb.bytes) {
    for (uint64_t r = 0; r < kInterleavedRows; ++r) {
      uint8_t* block = rows + r * row_bytes + b * kb.bytes;
      std::memcpy(block + kQ4_KD, group + kKGroupD + 2 * r, 2);
      std::memcpy(block + kQ4_KDmin, group + kKGroupDmin + 2 * r, 2);
      for (uint32_t word = 0; word < 3; ++word)
        std::memcpy(block + kQ4_KScales + 4 * word, group + kKGroupScales + 32 * word + 4 * r, 4);
      if (kb.fifth) std::memset(block + kb.qh, 0, kQ5_KValues / 8);
      for (uint32_t j = 0; j < kQ4_KValues / kQ4_KSubValues; ++j) {
        uint8_t c[32];
        take_codes(group + kKGroupCodes + 128 * j + 4 * r, c);
        uint8_t* chunk = block + kb.qs + 32 * (j / 2);
        for (uint32_t m = 0; m < 32; ++m)  // the even sub-block writes the byte, the odd one its high nibble
          chunk[m] = j % 2 ? static_cast<uint8_t>((chunk[m] & 0x0F) | c[m] << 4) : c[m];
        if (!kb.fifth) continue;
        for (uint32_t k = 0; k < 4; ++k) {
          for (uint32_t i = 0; i < 4; ++i) {
            const uint8_t byte = group[kKGroupFifths + 32 * j + 4 * r + i];
            block[kb.qh + 8 * k + i] |= static_cast<uint8_t>(((byte >> k) & 1) << j);
            block[kb.qh + 8 * k + 4 + i] |= static_cast<uint8_t>(((byte >> (4 + k)) & 1) << j);
          }
        }
      }
    }
  }
}

bool k_quant(GgmlType type) { return type == GgmlType::Q4_K || type == GgmlType::Q5_K; }

// IQ4_XS: sub-block j's 16 code bytes as a Q4_0 block's (value m < 16 in byte m's low nibble,
// 16 + m in its high one), placed as Q4_K's sub-blocks after the header.
void interleave_xs_group(const uint8_t* rows, uint64_t row_bytes, uint64_t blocks, uint8_t* out) {
  for (uint64_t b = 0; b < blocks; ++b, out += kInterleavedRows * kIQ4_XSBytes) {
    for (uint64_t r = 0; r < kInterleavedRows; ++r) {
      const uint8_t* block = rows + r * row_bytes + b * kIQ4_XSBytes;
      std::memcpy(out + kXSGroupD + 2 * r, block + kIQ4_XSD, 2);
      std::memcpy(out + kXSGroupScalesH + 2 * r, block + kIQ4_XSScalesH, 2);
      std::memcpy(out + kXSGroupScalesL + 4 * r, block + kIQ4_XSScalesL, 4);
      for (uint32_t j = 0; j < kIQ4_XSValues / kIQ4_XSSubValues; ++j) {
        const uint8_t* qs = block + kIQ4_XSQs + 16 * j;
        uint8_t c[32];
        for (uint32_t m = 0; m < 16; ++m) {
          c[m] = qs[m] & 0x0F;
          c[16 + m] = qs[m] >> 4;
        }
        place_codes(c, out + kXSGroupCodes + 128 * j + 4 * r);
      }
    }
  }
}

void deinterleave_xs_group(const uint8_t* group, uint64_t row_bytes, uint64_t blocks, uint8_t* rows) {
  for (uint64_t b = 0; b < blocks; ++b, group += kInterleavedRows * kIQ4_XSBytes) {
    for (uint64_t r = 0; r < kInterleavedRows; ++r) {
      uint8_t* block = rows + r * row_bytes + b * kIQ4_XSBytes;
      std::memcpy(block + kIQ4_XSD, group + kXSGroupD + 2 * r, 2);
      std::memcpy(block + kIQ4_XSScalesH, group + kXSGroupScalesH + 2 * r, 2);
      std::memcpy(block + kIQ4_XSScalesL, group + kXSGroupScalesL + 4 * r, 4);
      for (uint32_t j = 0; j < kIQ4_XSValues / kIQ4_XSSubValues; ++j) {
        uint8_t c[32];
        take_codes(group + kXSGroupCodes + 128 * j + 4 * r, c);
        for (uint32_t m = 0; m < 16; ++m) block[kIQ4_XSQs + 16 * j + m] = static_cast<uint8_t>(c[m] | c[16 + m] << 4);
      }
    }
  }
}

// Row r's sub-block j of a GGML block into the group's block `out`, and back (the GGML block's code
// planes zeroed first: take ORs into them).
// Q6_K: value 128h + 32m + l (l < 32) has its low four bits in ql byte 64h + 32(m % 2) + l (the high
// nibble for m >= 2) and its top two in bits 2m of qh byte 32h + l; sub-block j is h = j / 4, m = j % 4.
void place_q6_k(const uint8_t* block, uint64_t j, uint64_t r, uint8_t* out) {
  const uint32_t h = static_cast<uint32_t>(j / 4), m = static_cast<uint32_t>(j % 4);
  const uint8_t *ql = block + kQ6_KQl + 64 * h + 32 * (m % 2), *qh = block + kQ6_KQh + 32 * h;
  const uint32_t nibble = 4 * (m / 2), top = 2 * m;
  for (uint32_t k = 0; k < 4; ++k)  // values 8k + i (low nibble) and 8k + 4 + i (high)
    put_word(out + kQ6GroupCodes + 128 * j + 32 * k + 4 * r,
             ((word_at(ql + 8 * k) >> nibble) & kBytes4) | ((word_at(ql + 8 * k + 4) >> nibble) & kBytes4) << 4);
  for (uint32_t half = 0; half < 2; ++half) {  // values 16 half + 4q + i in bits 2q
    uint32_t w = 0;
    for (uint32_t q = 0; q < 4; ++q) w |= ((word_at(qh + 16 * half + 4 * q) >> top) & kBytes2) << (2 * q);
    put_word(out + kQ6GroupHigh + 64 * j + 32 * half + 4 * r, w);
  }
}
void take_q6_k(const uint8_t* group, uint64_t j, uint64_t r, uint8_t* block) {
  const uint32_t h = static_cast<uint32_t>(j / 4), m = static_cast<uint32_t>(j % 4);
  uint8_t *ql = block + kQ6_KQl + 64 * h + 32 * (m % 2), *qh = block + kQ6_KQh + 32 * h;
  const uint32_t nibble = 4 * (m / 2), top = 2 * m;
  for (uint32_t k = 0; k < 4; ++k) {
    const uint32_t w = word_at(group + kQ6GroupCodes + 128 * j + 32 * k + 4 * r);
    or_word(ql + 8 * k, (w & kBytes4) << nibble);
    or_word(ql + 8 * k + 4, ((w >> 4) & kBytes4) << nibble);
  }
  for (uint32_t half = 0; half < 2; ++half) {
    const uint32_t w = word_at(group + kQ6GroupHigh + 64 * j + 32 * half + 4 * r);
    for (uint32_t q = 0; q < 4; ++q) or_word(qh + 16 * half + 4 * q, ((w >> (2 * q)) & kBytes2) << top);
  }
}
// Q3_K: value 128h + 32s + l has its low two bits in bits 2s of qs byte 32h + l (as Q2_K's codes)
// and its third in bit 4h + s of hmask byte l; sub-block j is h = j / 4, s = j % 4.
void place_q3_k(const uint8_t* block, uint64_t j, uint64_t r, uint8_t* out) {
  const uint32_t h = static_cast<uint32_t>(j / 4), s = static_cast<uint32_t>(j % 4);
  const uint8_t *qs = block + kQ3_KQs + 32 * h, *hmask = block + kQ3_KHmask;
  uint32_t low0 = 0, low1 = 0, third = 0;
  for (uint32_t k = 0; k < 4; ++k) {  // values 8k + i (word 0, bit k of the third) and 8k + 4 + i
    low0 |= ((word_at(qs + 8 * k) >> (2 * s)) & kBytes2) << (2 * k);
    low1 |= ((word_at(qs + 8 * k + 4) >> (2 * s)) & kBytes2) << (2 * k);
    third |= ((word_at(hmask + 8 * k) >> (4 * h + s)) & kBytes1) << k |
             ((word_at(hmask + 8 * k + 4) >> (4 * h + s)) & kBytes1) << (4 + k);
  }
  put_word(out + kQ3GroupLow + 64 * j + 4 * r, low0);
  put_word(out + kQ3GroupLow + 64 * j + 32 + 4 * r, low1);
  put_word(out + kQ3GroupHigh + 32 * j + 4 * r, third);
}
void take_q3_k(const uint8_t* group, uint64_t j, uint64_t r, uint8_t* block) {
  const uint32_t h = static_cast<uint32_t>(j / 4), s = static_cast<uint32_t>(j % 4);
  uint8_t *qs = block + kQ3_KQs + 32 * h, *hmask = block + kQ3_KHmask;
  const uint32_t low0 = word_at(group + kQ3GroupLow + 64 * j + 4 * r);
  const uint32_t low1 = word_at(group + kQ3GroupLow + 64 * j + 32 + 4 * r);
  const uint32_t third = word_at(group + kQ3GroupHigh + 32 * j + 4 * r);
  for (uint32_t k = 0; k < 4; ++k) {
    or_word(qs + 8 * k, ((low0 >> (2 * k)) & kBytes2) << (2 * s));
    or_word(qs + 8 * k + 4, ((low1 >> (2 * k)) & kBytes2) << (2 * s));
    or_word(hmask + 8 * k, ((third >> k) & kBytes1) << (4 * h + s));
    or_word(hmask + 8 * k + 4, ((third >> (4 + k)) & kBytes1) << (4 * h + s));
  }
}

// Where each type's fields lie, GGML's and the group's; the code planes (GGML) to zero before take.
struct SmallKBlock {
  uint32_t bytes, d, scales, scale_words;
  uint64_t group_scales;
  uint32_t planes, plane_bytes;
  void (*place)(const uint8_t*, uint64_t, uint64_t, uint8_t*);
  void (*take)(const uint8_t*, uint64_t, uint64_t, uint8_t*);
};
SmallKBlock small_k_block(GgmlType type) {
  return type == GgmlType::Q6_K
             ? SmallKBlock{kQ6_KBytes, kQ6_KD, kQ6_KScales, 4, kQ6GroupScales, kQ6_KQl, kQ6_KScales, place_q6_k, take_q6_k}
             : SmallKBlock{kQ3_KBytes, kQ3_KD, kQ3_KScales, 3, kQ3GroupScales, kQ3_KHmask, kQ3_KScales, place_q3_k, take_q3_k};
}
static_assert(kQ6_KQl == 0 && kQ6_KQh == 128 && kQ3_KHmask == 0 && kQ3_KQs == 32,
              "the code planes first: ql and qh; hmask and qs");
static_assert(kQ6GroupD == 0 && kQ3GroupD == 0, "the rows' d first");
static_assert(kQ6GroupHigh + 64 * 8 == kInterleavedRows * kQ6_KBytes && kQ6GroupCodes == kQ6GroupScales + 128 &&
                  kQ6GroupHigh == kQ6GroupCodes + 128 * 8,
              "a Q6_K group's block: d, 4 scale words, 8 x 128 nibble bytes, 8 x 64 top-bit bytes");
static_assert(kQ3GroupHigh + 32 * 8 == kInterleavedRows * kQ3_KBytes && kQ3GroupLow == kQ3GroupScales + 96 &&
                  kQ3GroupHigh == kQ3GroupLow + 64 * 8,
              "a Q3_K group's block: d, 3 scale words, 8 x 64 low-bit bytes, 8 x 32 third-bit bytes");

void interleave_small_k_group(GgmlType type, const uint8_t* rows, uint64_t row_bytes, uint64_t blocks, uint8_t* out) {
  const SmallKBlock kb = small_k_block(type);
  for (uint64_t b = 0; b < blocks; ++b, out += kInterleavedRows * kb.bytes) {
    for (uint64_t r = 0; r < kInterleavedRows; ++r) {
      const uint8_t* block = rows + r * row_bytes + b * kb.bytes;
      std::memcpy(out + 2 * r, block + kb.d, 2);
      for (uint32_t word = 0; word < kb.scale_words; ++word)
        std::memcpy(out + kb.group_scales + 32 * word + 4 * r, block + kb.scales + 4 * word, 4);
      for (uint64_t j = 0; j < 8; ++j) kb.place(block, j, r, out);
    }
  }
}

void deinterleave_small_k_group(GgmlType type, const uint8_t* group, uint64_t row_bytes, uint64_t blocks, uint8_t* rows) {
  const SmallKBlock kb = small_k_block(type);
  for (uint64_t b = 0; b < blocks; ++b, group += kInterleavedRows * kb.bytes) {
    for (uint64_t r = 0; r < kInterleavedRows; ++r) {
      uint8_t* block = rows + r * row_bytes + b * kb.bytes;
      std::memcpy(block + kb.d, group + 2 * r, 2);
      for (uint32_t word = 0; word < kb.scale_words; ++word)
        std::memcpy(block + kb.scales + 4 * word, group + kb.group_scales + 32 * word + 4 * r, 4);
      std::memset(block + kb.planes, 0, kb.plane_bytes);
      for (uint64_t j = 0; j < 8; ++j) kb.take(group, j, r, block);
    }
  }
}

bool small_k(GgmlType type) { return type == GgmlType::Q6_K || type == GgmlType::Q3_K; }

// Eight GGML rows of `type` (row_bytes apart, `cols` values) into one interleaved group.
void interleave_one(GgmlType type, const uint8_t* plain, uint64_t row_bytes, uint64_t cols, uint8_t* group) {
  if (k_quant(type)) return interleave_k_group(k_block(type), plain, row_bytes, cols / kQ4_KValues, group);
  if (type == GgmlType::IQ4_XS) return interleave_xs_group(plain, row_bytes, cols / kIQ4_XSValues, group);
  if (small_k(type)) return interleave_small_k_group(type, plain, row_bytes, cols / kQ6_KValues, group);
  interleave_group(nibble_block(type), plain, row_bytes, cols / kQ4_0Values, group);
}

}  // namespace

bool can_interleave(GgmlType type, uint64_t rows) {
  const bool ordered = nibble_type(type) || k_quant(type) || type == GgmlType::IQ4_XS || small_k(type);
  return ordered && rows > 0 && rows % kInterleavedRows == 0;
}

bool prefers_interleaved(GgmlType type, uint64_t rows) {
  return can_interleave(type, rows) && avx2_interleaved_dot(type) != nullptr;
}

void interleave_groups(GgmlType type, uint8_t* data, uint64_t cols, uint64_t begin, uint64_t end) {
  assert(can_interleave(type, kInterleavedRows));
  const uint64_t row_bytes = ggml_row_bytes(type, cols, "interleave");
  std::vector<uint8_t> plain(kInterleavedRows * row_bytes);
  for (uint64_t g = begin; g < end; ++g) {
    uint8_t* group = data + g * plain.size();
    std::memcpy(plain.data(), group, plain.size());
    interleave_one(type, plain.data(), row_bytes, cols, group);
  }
}

void interleave_rows(GgmlType type, uint8_t* data, uint64_t rows, uint64_t cols) {
  assert(can_interleave(type, rows));
  interleave_groups(type, data, cols, 0, rows / kInterleavedRows);
}

void deinterleave_group(GgmlType type, const uint8_t* data, uint64_t cols, uint64_t group, uint8_t* out) {
  assert(can_interleave(type, kInterleavedRows));
  const uint64_t row_bytes = ggml_row_bytes(type, cols, "interleave");
  const uint8_t* at = data + group * kInterleavedRows * row_bytes;
  if (k_quant(type)) return deinterleave_k_group(k_block(type), at, row_bytes, cols / kQ4_KValues, out);
  if (type == GgmlType::IQ4_XS) return deinterleave_xs_group(at, row_bytes, cols / kIQ4_XSValues, out);
  if (small_k(type)) return deinterleave_small_k_group(type, at, row_bytes, cols / kQ6_KValues, out);
  deinterleave_group_rows(nibble_block(type), at, row_bytes, cols / kQ4_0Values, out);
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
