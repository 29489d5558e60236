// GGML's quantized block layouts, the one place they are written down for the kernels (as
// ggml-common.h is for ggml): the CPU kernels, the CUDA kernels (nvcc compiles this header as
// C++17, so it holds only <cstdint>/<cstddef>, plain structs and constants) and the synthetic
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
