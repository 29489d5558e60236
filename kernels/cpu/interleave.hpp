// The CPU's row order for a weight matrix: groups of eight rows whose blocks lie side by side, so
// one AVX2 register holds the same four values of eight rows and a block's eight dot products sum
// in one register's lanes (kernels/cpu/dot_avx2's interleaved product), where GGML's order (one
// row after another) sums each row across a register and then reduces it. A group holds exactly
// the bytes of its eight GGML rows, rearranged, so sizes and memory accounting do not change.
// Q4_0 (its GGML-order product was compute-bound: bench_gemv, 1 GiB, two threads, about 30 GB/s
// where a plain read ran at 50; interleaved, 38 to 46 GB/s, level with F32's), and IQ4_NL and MXFP4,
// the same nibbles behind a table (interleaved on CPUs with AVX-512 VNNI only).
//
// Per group and block b (the eight rows' blocks b): the eight rows' scale fields (Q4_0's and
// IQ4_NL's fp16 d, 16 bytes; MXFP4's exponent bytes, 8), then for k = 0..3, row r = 0..7,
// i = 0..3 the byte (k, r, i) = code(r, 8k + i) | code(r, 8k + 4 + i) << 4, codes 0..15 (Q4_0:
// value = d * (code - 8); IQ4_NL and MXFP4: the table's entry). A 32-byte load k thus holds values
// 8k..8k+3 of all eight rows in its low nibbles and 8k+4..8k+7 in its high ones.
// Q5_0, Q4_1 and Q5_1 (where the CPU has AVX-512 VNNI) likewise, the rows' fp16 minimums (16 bytes)
// after the scales for Q4_1 and Q5_1, and 32 bytes of fifth bits after the codes for Q5_0 and Q5_1,
// as Q5_K's below (byte 4r + i: value 8k + i's in bit k, 8k + 4 + i's in bit 4 + k): 176, 160 and
// 192 bytes per group block.
//
// Q4_K and Q5_K (where the CPU has AVX-512 VNNI): per group and 256-value block b, 1152 bytes: the eight
// rows' fp16 d (16 bytes), their fp16 dmin (16), the rows' twelve scale bytes as three 32-byte
// words w = 0..2 (row r's bytes 4w..4w+3 at 32w + 4r: one load holds a word of every row, so the
// 6-bit scales and mins of the eight rows unpack in 32-bit lanes), then for each 32-value sub-block
// j the 128 bytes of a Q4_0 group's codes (values 32j + 8k + i and 32j + 8k + 4 + i of row r in
// byte 32k + 4r + i): their low four bits. Q5_K (1408 bytes) adds for each sub-block j 32 bytes of
// fifth bits: byte 4r + i holds value 32j + 8k + i's in bit k and 32j + 8k + 4 + i's in bit 4 + k.
// IQ4_XS (the same CPUs): per group and block, 1088 bytes: the rows' fp16 d (16 bytes), their
// 16-bit scales_h (16), their four scales_l bytes (32: row r's at 4r), then each sub-block's codes as
// Q4_K's.
// Q6_K (the same CPUs): per group and block, 1680 bytes: the rows' fp16 d (16 bytes), their sixteen
// int8 scales as four 32-byte words w = 0..3 (row r's scales 4w..4w+3 at 16 + 32w + 4r), then each
// sub-block j's low four bits as Q4_K's (at 144 + 128j), then its top two bits as two words h = 0, 1
// (at 1168 + 64j + 32h): byte 4r + i holds those of values 32j + 16h + i, + 4 + i, + 8 + i and
// + 12 + i of row r in bits 0-1, 2-3, 4-5 and 6-7 (loads k = 2h and 2h + 1's low and high nibbles).
// Q3_K (the same CPUs): per group and block, 880 bytes: the rows' fp16 d (16 bytes), their twelve
// scale bytes as three words as Q4_K's (at 16), then each sub-block j's low two bits as two words (at
// 112 + 64j): word 0's byte 4r + i holds value 32j + 8k + i's in bits 2k..2k + 1, word 1's value
// 32j + 8k + 4 + i's; then each sub-block's third bits as Q5_K's fifth bits (at 624 + 32j).
#pragma once
#include <cstdint>

#include "planner/core/ggml_type.hpp"

namespace infer_plan::kernels {

inline constexpr uint64_t kInterleavedRows = 8;
// Q4_K's and Q5_K's group block, as above
inline constexpr uint64_t kKGroupD = 0, kKGroupDmin = 16, kKGroupScales = 32, kKGroupCodes = 128, kKGroupFifths = 1152;
// IQ4_XS's group block, as above
inline constexpr uint64_t kXSGroupD = 0, kXSGroupScalesH = 16, kXSGroupScalesL = 32, kXSGroupCodes = 64;

// Q6_K's and Q3_K's group blocks, as above
inline constexpr uint64_t kQ6GroupD = 0, kQ6GroupScales = 16, kQ6GroupCodes = 144, kQ6GroupHigh = 1168;
inline constexpr uint64_t kQ3GroupD = 0, kQ3GroupScales = 16, kQ3GroupLow = 112, kQ3GroupHigh = 624;

// How a weight matrix's rows lie in memory: GGML's order, or interleaved as above.
enum class RowOrder { ggml, interleaved };

// True when `type` has an interleaved order and the matrix's rows (per matrix: per expert, for
// stacked experts) are whole groups.
bool can_interleave(GgmlType type, uint64_t rows);
// True when this CPU multiplies `type` faster interleaved (it has the AVX2 product) and
// can_interleave holds: the order the runtime stores such weights in.
bool prefers_interleaved(GgmlType type, uint64_t rows);

// `rows` GGML rows of `cols` values at `data`, rearranged in place into interleaved groups;
// can_interleave(type, rows) must hold.
void interleave_rows(GgmlType type, uint8_t* data, uint64_t rows, uint64_t cols);
// The same for groups [begin, end) of such a matrix only (each group's eight rows in place): disjoint
// ranges may run on different threads.
void interleave_groups(GgmlType type, uint8_t* data, uint64_t cols, uint64_t begin, uint64_t end);
// Group `group` of an interleaved matrix back to its eight GGML rows, written to `out`
// (kInterleavedRows rows of row bytes each).
void deinterleave_group(GgmlType type, const uint8_t* data, uint64_t cols, uint64_t group, uint8_t* out);
// The whole matrix back in GGML order, in place.
void deinterleave_rows(GgmlType type, uint8_t* data, uint64_t rows, uint64_t cols);

}  // namespace infer_plan::kernels
