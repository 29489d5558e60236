// GGML's quantized block layouts, the one place they are written down for the kernels (as
// ggml-common.h is for ggml): the CPU kernels, the CUDA kernels (nvcc compiles this header as
// C++17, so it holds only <cstdint>/<cstddef>, plain structs, constants and a few field readers
// marked for both; kernels/block_decode.hpp builds the device's decoders on them) and the synthetic
// weight writer (runtime/model_weights) all index blocks through the names below. No kernel casts
// a byte pointer to these structs: blocks sit at any 2-byte boundary, so fields are read through
// byte offsets (load_fp16(block + kQ2_KD)). The structs are there to give those offsets: each
// constant is the compiler's sizeof/offsetof of the struct, and static_asserts pin them to GGML's
// bytes, so a field added or reordered here fails the build instead of misreading a GGUF file.
//
// Names: k<type><what>, with <type> GGML's type name (Q8_0, Q2_K) and <what> one of Values (values
// per block), Bytes (bytes per block) or a field's name (its byte offset in the block). All are
// uint32_t, which CUDA index arithmetic keeps in 32 bits; they widen as needed in 64-bit sums.
// planner/core/ggml_type has the same sizes in its type table; tests/kernels/test_quantize checks
// that the two agree.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/host_device.hpp"  // the helpers below (a packed scale's field, a 5-bit code) run on both

namespace infer_plan::kernels {

// --- Q8_0: 32 values, each d * q -------------------------------------------------------------

inline constexpr uint32_t kQ8_0Values = 32;

struct BlockQ8_0 {
  uint16_t d;              // the scale, as fp16 bits
  int8_t qs[kQ8_0Values];  // the codes, in value order
};
static_assert(sizeof(BlockQ8_0) == 34, "Q8_0 block is 2 + 32 bytes");
static_assert(offsetof(BlockQ8_0, d) == 0, "kernels read d at the block's start");
static_assert(offsetof(BlockQ8_0, qs) == 2, "codes follow d");

inline constexpr uint32_t kQ8_0Bytes = sizeof(BlockQ8_0);
inline constexpr uint32_t kQ8_0D = offsetof(BlockQ8_0, d);
inline constexpr uint32_t kQ8_0Qs = offsetof(BlockQ8_0, qs);

// --- Q4_0: 32 values, each d * (q - 8) with q a 4-bit code -------------------------------------

inline constexpr uint32_t kQ4_0Values = 32;

struct BlockQ4_0 {
  uint16_t d;                   // the scale, as fp16 bits
  uint8_t qs[kQ4_0Values / 2];  // byte j: value j's code in the low nibble, value j + 16's in the high
};
static_assert(sizeof(BlockQ4_0) == 18, "Q4_0 block is 2 + 16 bytes");
static_assert(offsetof(BlockQ4_0, d) == 0, "kernels read d at the block's start");
static_assert(offsetof(BlockQ4_0, qs) == 2, "codes follow d");

inline constexpr uint32_t kQ4_0Bytes = sizeof(BlockQ4_0);
inline constexpr uint32_t kQ4_0D = offsetof(BlockQ4_0, d);
inline constexpr uint32_t kQ4_0Qs = offsetof(BlockQ4_0, qs);

// --- Q5_0: 32 values, each d * (q - 16) with q a 5-bit code: its low 4 bits as Q4_0's nibbles, its
// 5th bit in qh (value j's at bit j of the little-endian 32-bit word) ----------------------------

inline constexpr uint32_t kQ5_0Values = 32;

struct BlockQ5_0 {
  uint16_t d;                   // the scale, as fp16 bits
  uint8_t qh[4];                // bit j: value j's 5th bit
  uint8_t qs[kQ5_0Values / 2];  // as Q4_0: value j's low bits in byte j's low nibble, j + 16's in the high
};
static_assert(sizeof(BlockQ5_0) == 22, "Q5_0 block is 2 + 4 + 16 bytes");
static_assert(offsetof(BlockQ5_0, qh) == 2 && offsetof(BlockQ5_0, qs) == 6, "d, then the 5th bits, then the nibbles");

inline constexpr uint32_t kQ5_0Bytes = sizeof(BlockQ5_0);
inline constexpr uint32_t kQ5_0D = offsetof(BlockQ5_0, d);
inline constexpr uint32_t kQ5_0Qh = offsetof(BlockQ5_0, qh);
inline constexpr uint32_t kQ5_0Qs = offsetof(BlockQ5_0, qs);

// Value j's 5-bit code (0..31) of a 32-value run: its low bits in the 16 bytes qs as Q4_0's, its 5th
// bit at bit j of the 4 bytes qh (a little-endian word). Q5_0's and Q5_1's codes.
INFER_PLAN_HOST_DEVICE inline uint32_t q5_code(const uint8_t* qh, const uint8_t* qs, uint32_t j) {
  const uint32_t high = qh[0] | (qh[1] << 8) | (qh[2] << 16) | (static_cast<uint32_t>(qh[3]) << 24);
  const uint32_t nibble = j < 16 ? qs[j] & 0x0F : qs[j - 16] >> 4;
  return nibble | (((high >> j) & 1u) << 4);
}

// Value j's 5-bit code (0..31) of a Q5_0 block.
INFER_PLAN_HOST_DEVICE inline uint32_t q5_0_code(const uint8_t* block, uint32_t j) {
  return q5_code(block + kQ5_0Qh, block + kQ5_0Qs, j);
}

// --- Q4_1 and Q5_1: 32 values, each d * q + m with q a 4-bit (Q4_1) or 5-bit (Q5_1) code ------

inline constexpr uint32_t kQ4_1Values = 32;

struct BlockQ4_1 {
  uint16_t d;                   // the scale, as fp16 bits
  uint16_t m;                   // the minimum (the value of code 0), as fp16 bits
  uint8_t qs[kQ4_1Values / 2];  // as Q4_0: value j in byte j's low nibble, j + 16 in its high
};
static_assert(sizeof(BlockQ4_1) == 20, "Q4_1 block is 2 + 2 + 16 bytes");
static_assert(offsetof(BlockQ4_1, m) == 2 && offsetof(BlockQ4_1, qs) == 4, "d, m, then the codes");

inline constexpr uint32_t kQ4_1Bytes = sizeof(BlockQ4_1);
inline constexpr uint32_t kQ4_1D = offsetof(BlockQ4_1, d);
inline constexpr uint32_t kQ4_1M = offsetof(BlockQ4_1, m);
inline constexpr uint32_t kQ4_1Qs = offsetof(BlockQ4_1, qs);

inline constexpr uint32_t kQ5_1Values = 32;

struct BlockQ5_1 {
  uint16_t d;                   // as Q4_1
  uint16_t m;
  uint8_t qh[4];                // as Q5_0: bit j is value j's 5th bit
  uint8_t qs[kQ5_1Values / 2];  // the low 4 bits, as Q4_0's nibbles
};
static_assert(sizeof(BlockQ5_1) == 24, "Q5_1 block is 2 + 2 + 4 + 16 bytes");
static_assert(offsetof(BlockQ5_1, qh) == 4 && offsetof(BlockQ5_1, qs) == 8, "d, m, the 5th bits, the nibbles");

inline constexpr uint32_t kQ5_1Bytes = sizeof(BlockQ5_1);
inline constexpr uint32_t kQ5_1D = offsetof(BlockQ5_1, d);
inline constexpr uint32_t kQ5_1M = offsetof(BlockQ5_1, m);
inline constexpr uint32_t kQ5_1Qh = offsetof(BlockQ5_1, qh);
inline constexpr uint32_t kQ5_1Qs = offsetof(BlockQ5_1, qs);

// --- Q2_K: a 256-value super-block of 16 sub-blocks of 16 values; in sub-block j each value is
// d * scale_j * q - dmin * min_j, with q a 2-bit code and scale_j, min_j 4-bit codes ------------

inline constexpr uint32_t kQ2_KValues = 256;
inline constexpr uint32_t kQ2_KSubValues = 16;  // values per sub-block (one scale and min each)

struct BlockQ2_K {
  uint8_t scales[kQ2_KValues / kQ2_KSubValues];  // byte j: sub-block j's scale (low nibble), min (high)
  uint8_t qs[kQ2_KValues / 4];  // four 2-bit codes a byte: each 128-value half owns 32 bytes, and
                                // bits 2s..2s+1 of its byte l hold value 32 s + l of that half
  uint16_t d;                   // the scales' scale, as fp16 bits
  uint16_t dmin;                // the mins' scale, as fp16 bits
};
static_assert(sizeof(BlockQ2_K) == 84, "Q2_K block is 16 + 64 + 2 + 2 bytes");
static_assert(offsetof(BlockQ2_K, scales) == 0, "kernels read the scales at the block's start");
static_assert(offsetof(BlockQ2_K, qs) == 16, "codes follow the scales");
static_assert(offsetof(BlockQ2_K, d) == 80 && offsetof(BlockQ2_K, dmin) == 82, "d, dmin end the block");

inline constexpr uint32_t kQ2_KBytes = sizeof(BlockQ2_K);
inline constexpr uint32_t kQ2_KScales = offsetof(BlockQ2_K, scales);
inline constexpr uint32_t kQ2_KQs = offsetof(BlockQ2_K, qs);
inline constexpr uint32_t kQ2_KD = offsetof(BlockQ2_K, d);
inline constexpr uint32_t kQ2_KDmin = offsetof(BlockQ2_K, dmin);

// --- Q3_K: a 256-value super-block of 16 sub-blocks of 16 values, each d * (scale_j - 32) * q with q
// a 3-bit code -4..3 (two low bits in qs, the third in hmask, set for q >= 0) and scale_j a 6-bit code

inline constexpr uint32_t kQ3_KValues = 256;
inline constexpr uint32_t kQ3_KSubValues = 16;

struct BlockQ3_K {
  uint8_t hmask[kQ3_KValues / 8];  // value 32 s + l (s < 8, l < 32): bit s of byte l
  uint8_t qs[kQ3_KValues / 4];     // low two bits, placed as Q2_K's codes
  uint8_t scales[12];              // scale j's low nibble: byte j (j < 8) or byte j - 8's high nibble;
                                   // its top two bits: bits 2 (j / 4) of byte 8 + j % 4
  uint16_t d;                      // the scales' scale, as fp16 bits
};
static_assert(sizeof(BlockQ3_K) == 110, "Q3_K block is 32 + 64 + 12 + 2 bytes");
static_assert(offsetof(BlockQ3_K, qs) == 32 && offsetof(BlockQ3_K, scales) == 96 && offsetof(BlockQ3_K, d) == 108,
              "high bits, low bits, scales, d");

inline constexpr uint32_t kQ3_KBytes = sizeof(BlockQ3_K);
inline constexpr uint32_t kQ3_KHmask = offsetof(BlockQ3_K, hmask);
inline constexpr uint32_t kQ3_KQs = offsetof(BlockQ3_K, qs);
inline constexpr uint32_t kQ3_KScales = offsetof(BlockQ3_K, scales);
inline constexpr uint32_t kQ3_KD = offsetof(BlockQ3_K, d);

// Sub-block j's scale of a Q3_K block's 12 scale bytes, less its offset of 32: -32..31.
INFER_PLAN_HOST_DEVICE inline int q3_k_scale(uint32_t j, const uint8_t* q) {
  const int low = j < 8 ? q[j] & 0xF : q[j - 8] >> 4;
  return (low | (((q[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
}

// --- Q4_K and Q5_K: a 256-value super-block of 8 sub-blocks of 32 values; in sub-block j each value
// is d * scale_j * q - dmin * min_j, with q a 4-bit (Q4_K) or 5-bit (Q5_K) code and scale_j, min_j
// 6-bit codes packed in 12 bytes (kernels read them through k_scale_min) -----------------------

inline constexpr uint32_t kQ4_KValues = 256;
inline constexpr uint32_t kQ4_KSubValues = 32;  // values per sub-block (one scale and min each)
inline constexpr uint32_t kKScaleBytes = 12;    // ggml's K_SCALE_SIZE: 8 scales and 8 mins of 6 bits

struct BlockQ4_K {
  uint16_t d;                       // the scales' scale, as fp16 bits
  uint16_t dmin;                    // the mins' scale, as fp16 bits
  uint8_t scales[kKScaleBytes];     // bytes 0-3: scales 0-3 (low 6 bits), 4-7: mins 0-3 (low 6
                                    // bits); 8-11: scale (low nibble) and min (high) of 4-7, whose
                                    // top 2 bits ride in the top bits of bytes 0-3 and 4-7
  uint8_t qs[kQ4_KValues / 2];      // each 64 values own 32 bytes: value l of them in byte l's low
                                    // nibble, value 32 + l in its high nibble
};
static_assert(sizeof(BlockQ4_K) == 144, "Q4_K block is 2 + 2 + 12 + 128 bytes");
static_assert(offsetof(BlockQ4_K, d) == 0 && offsetof(BlockQ4_K, dmin) == 2, "d, dmin start the block");
static_assert(offsetof(BlockQ4_K, scales) == 4 && offsetof(BlockQ4_K, qs) == 16, "scales, then codes");

inline constexpr uint32_t kQ4_KBytes = sizeof(BlockQ4_K);
inline constexpr uint32_t kQ4_KD = offsetof(BlockQ4_K, d);
inline constexpr uint32_t kQ4_KDmin = offsetof(BlockQ4_K, dmin);
inline constexpr uint32_t kQ4_KScales = offsetof(BlockQ4_K, scales);
inline constexpr uint32_t kQ4_KQs = offsetof(BlockQ4_K, qs);

inline constexpr uint32_t kQ5_KValues = 256;

struct BlockQ5_K {
  uint16_t d;                    // as Q4_K
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];  // as Q4_K
  uint8_t qh[kQ5_KValues / 8];   // the codes' fifth bits: value 64 p + l (l < 32) in bit 2p of byte
                                 // l, value 64 p + 32 + l in bit 2p + 1
  uint8_t qs[kQ5_KValues / 2];   // the low 4 bits, placed as Q4_K's codes
};
static_assert(sizeof(BlockQ5_K) == 176, "Q5_K block is 2 + 2 + 12 + 32 + 128 bytes");
static_assert(offsetof(BlockQ5_K, scales) == 4 && offsetof(BlockQ5_K, qh) == 16 && offsetof(BlockQ5_K, qs) == 48,
              "scales, high bits, low bits");

inline constexpr uint32_t kQ5_KBytes = sizeof(BlockQ5_K);
inline constexpr uint32_t kQ5_KD = offsetof(BlockQ5_K, d);
inline constexpr uint32_t kQ5_KDmin = offsetof(BlockQ5_K, dmin);
inline constexpr uint32_t kQ5_KScales = offsetof(BlockQ5_K, scales);
inline constexpr uint32_t kQ5_KQh = offsetof(BlockQ5_K, qh);
inline constexpr uint32_t kQ5_KQs = offsetof(BlockQ5_K, qs);

// Sub-block j's 6-bit scale and min of a Q4_K or Q5_K block's 12 scale bytes (ggml's get_scale_min_k4).
struct KScaleMin {
  uint8_t scale;
  uint8_t min;
};
INFER_PLAN_HOST_DEVICE inline KScaleMin k_scale_min(uint32_t j, const uint8_t* q) {
  if (j < 4) return {static_cast<uint8_t>(q[j] & 63), static_cast<uint8_t>(q[j + 4] & 63)};
  return {static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4)),
          static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4))};
}

// --- Q6_K: a 256-value super-block of 16 sub-blocks of 16 values, each d * scale_j * (q - 32) with q
// a 6-bit code and scale_j a signed 8-bit code --------------------------------------------------

inline constexpr uint32_t kQ6_KValues = 256;
inline constexpr uint32_t kQ6_KSubValues = 16;

struct BlockQ6_K {
  uint8_t ql[kQ6_KValues / 2];  // low 4 bits: each 128 values own 64 bytes; value l (l < 32) in byte
                                // l's low nibble, 32 + l in byte 32 + l's low, 64 + l in byte l's
                                // high, 96 + l in byte 32 + l's high
  uint8_t qh[kQ6_KValues / 4];  // high 2 bits: each 128 values own 32 bytes; byte l holds values l,
                                // 32 + l, 64 + l, 96 + l in bits 0-1, 2-3, 4-5, 6-7
  int8_t scales[kQ6_KValues / kQ6_KSubValues];
  uint16_t d;  // the scales' scale, as fp16 bits
};
static_assert(sizeof(BlockQ6_K) == 210, "Q6_K block is 128 + 64 + 16 + 2 bytes");
static_assert(offsetof(BlockQ6_K, qh) == 128 && offsetof(BlockQ6_K, scales) == 192 && offsetof(BlockQ6_K, d) == 208,
              "low bits, high bits, scales, d");

inline constexpr uint32_t kQ6_KBytes = sizeof(BlockQ6_K);
inline constexpr uint32_t kQ6_KQl = offsetof(BlockQ6_K, ql);
inline constexpr uint32_t kQ6_KQh = offsetof(BlockQ6_K, qh);
inline constexpr uint32_t kQ6_KScales = offsetof(BlockQ6_K, scales);
inline constexpr uint32_t kQ6_KD = offsetof(BlockQ6_K, d);

// --- IQ4_NL and IQ4_XS: 4-bit indices into one non-linear table of 16 values (ggml's kvalues_iq4nl),
// times a scale: IQ4_NL per block of 32 (an fp16 d), IQ4_XS per sub-block of 32 of a 256-value block
// (d * (6-bit scale - 32)) ---------------------------------------------------------------------

inline constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

inline constexpr uint32_t kIQ4_NLValues = 32;

struct BlockIQ4_NL {
  uint16_t d;                       // the scale, as fp16 bits
  uint8_t qs[kIQ4_NLValues / 2];    // as Q4_0: value j in byte j's low nibble, j + 16 in its high
};
static_assert(sizeof(BlockIQ4_NL) == 18, "IQ4_NL block is 2 + 16 bytes");
static_assert(offsetof(BlockIQ4_NL, qs) == 2, "indices follow d");

inline constexpr uint32_t kIQ4_NLBytes = sizeof(BlockIQ4_NL);
inline constexpr uint32_t kIQ4_NLD = offsetof(BlockIQ4_NL, d);
inline constexpr uint32_t kIQ4_NLQs = offsetof(BlockIQ4_NL, qs);

inline constexpr uint32_t kIQ4_XSValues = 256;
inline constexpr uint32_t kIQ4_XSSubValues = 32;

struct BlockIQ4_XS {
  uint16_t d;                       // the scales' scale, as fp16 bits
  uint16_t scales_h;                // sub-block j's scale's top two bits at bits 2j, 2j + 1
  uint8_t scales_l[kIQ4_XSValues / 64];  // its low nibble: byte j / 2, nibble j % 2
  uint8_t qs[kIQ4_XSValues / 2];    // each sub-block's 16 bytes as an IQ4_NL block's
};
static_assert(sizeof(BlockIQ4_XS) == 136, "IQ4_XS block is 2 + 2 + 4 + 128 bytes");
static_assert(offsetof(BlockIQ4_XS, scales_h) == 2 && offsetof(BlockIQ4_XS, scales_l) == 4 && offsetof(BlockIQ4_XS, qs) == 8,
              "d, high bits, low nibbles, indices");

inline constexpr uint32_t kIQ4_XSBytes = sizeof(BlockIQ4_XS);
inline constexpr uint32_t kIQ4_XSD = offsetof(BlockIQ4_XS, d);
inline constexpr uint32_t kIQ4_XSScalesH = offsetof(BlockIQ4_XS, scales_h);
inline constexpr uint32_t kIQ4_XSScalesL = offsetof(BlockIQ4_XS, scales_l);
inline constexpr uint32_t kIQ4_XSQs = offsetof(BlockIQ4_XS, qs);

// Sub-block j's scale of an IQ4_XS block, less its offset of 32: -32..31.
INFER_PLAN_HOST_DEVICE inline int iq4_xs_scale(uint32_t j, const uint8_t* block) {
  const int high = ((block[kIQ4_XSScalesH] | (block[kIQ4_XSScalesH + 1] << 8)) >> (2 * j)) & 3;
  return (((block[kIQ4_XSScalesL + j / 2] >> (4 * (j % 2))) & 0xF) | (high << 4)) - 32;
}

// --- MXFP4: 32 values, each 2^(e - 127) times an E2M1 value; ggml keeps the E2M1 values doubled
// (kMxfp4Values) and the scale halved (mxfp4_scale) --------------------------------------------

inline constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

inline constexpr uint32_t kMXFP4Values = 32;

struct BlockMXFP4 {
  uint8_t e;                      // the scale's exponent, E8M0
  uint8_t qs[kMXFP4Values / 2];   // as Q4_0: value j in byte j's low nibble, j + 16 in its high
};
static_assert(sizeof(BlockMXFP4) == 17, "MXFP4 block is 1 + 16 bytes");

inline constexpr uint32_t kMXFP4Bytes = sizeof(BlockMXFP4);
inline constexpr uint32_t kMXFP4E = offsetof(BlockMXFP4, e);
inline constexpr uint32_t kMXFP4Qs = offsetof(BlockMXFP4, qs);

// Half of 2^(e - 127), the scale of the doubled values (ggml's ggml_e8m0_to_fp32_half): a float
// with exponent field e - 1, or for e < 2 the subnormals 2^-128 and 2^-127.
INFER_PLAN_HOST_DEVICE inline float mxfp4_scale(uint8_t e) {
  const uint32_t bits = e < 2 ? uint32_t{0x00200000} << e : static_cast<uint32_t>(e - 1) << 23;
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
#endif
}

// --- Q8_K: 256 values, each d * q; what activations become for a dot with K-quant weights ------

inline constexpr uint32_t kQ8_KValues = 256;
inline constexpr uint32_t kQ8_KSumValues = 16;  // codes per bsums entry (a K-quant sub-block)

struct BlockQ8_K {
  float d;                                      // the scale, a full float (not fp16)
  int8_t qs[kQ8_KValues];                       // the codes, in value order
  int16_t bsums[kQ8_KValues / kQ8_KSumValues];  // entry j: the sum of codes 16 j .. 16 j + 15
};
static_assert(sizeof(BlockQ8_K) == 292, "Q8_K block is 4 + 256 + 32 bytes");
static_assert(offsetof(BlockQ8_K, d) == 0, "kernels read d at the block's start");
static_assert(offsetof(BlockQ8_K, qs) == 4, "codes follow d");
static_assert(offsetof(BlockQ8_K, bsums) == 260, "the sums end the block");

inline constexpr uint32_t kQ8_KBytes = sizeof(BlockQ8_K);
inline constexpr uint32_t kQ8_KD = offsetof(BlockQ8_K, d);
inline constexpr uint32_t kQ8_KQs = offsetof(BlockQ8_K, qs);
inline constexpr uint32_t kQ8_KBsums = offsetof(BlockQ8_K, bsums);

}  // namespace infer_plan::kernels
