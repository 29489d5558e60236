// The GGML tensor types llama.cpp uses for weights and KV caches, with their block layouts
// (ggml/src/ggml-common.h): values per block, bytes per block, and how those bytes split into
// quantized codes and metadata (scales, mins, super-block d/dmin, Q8_K's block sums).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace infer_plan {

// Values are GGML's enum ggml_type ids, as stored in GGUF tensor infos. From 1000: the checkpoint
// formats vLLM serves (FP8, INT8 W8A8, AWQ, GPTQ, NVFP4), which no GGUF holds.
enum class GgmlType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22, IQ4_XS = 23,
  IQ1_M = 29, BF16 = 30, TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39,
  FP8 = 1000, FP8_CHANNEL = 1001, FP8_BLOCK128 = 1002, INT8_W8A8 = 1003, AWQ_INT4_G128 = 1004,
  GPTQ_INT4_G128 = 1005, NVFP4 = 1006,
};

// What a checkpoint format stores per weight matrix beside its blocks (K = ne[0], the input
// width the groups run along; N = ne[1], the output rows; a 3-D expert stack has one per expert).
enum class ScaleScope : uint8_t {
  none,          // GGML types: everything is in the blocks
  tensor,        // scale_bytes per matrix (FP8 per-tensor; NVFP4's two global scales)
  row,           // scale_bytes per output row (per-channel FP8 and INT8)
  tile128,       // scale_bytes per 128 x 128 tile, edges rounded up (DeepSeek-V3's FP8)
  group_zeros,   // AWQ: a 4-bit zero per group and output row, packed 8 to an int32 along N
  group_zeros_gidx,  // GPTQ: the same, plus g_idx, one int32 per input column
};

struct GgmlTypeInfo {
  GgmlType type;
  std::string_view name;        // "Q4_0"
  uint32_t block_values;        // values per block (QK)
  uint32_t block_bytes;         // sizeof the block struct, packed with no padding
  uint32_t code_bytes;          // bytes holding the quantized values (or the floats themselves)
  uint32_t meta_bytes;          // bytes of scales, mins and other per-block metadata
  std::string_view layout;      // the block struct, field by field
  bool gguf = true;             // a GGML type (GGUF files, llama.cpp); false: a checkpoint format
  std::string_view precision = "";  // the matmul's compute precision where the device has it
                                    // ("fp8", "int8", "fp4"); "": the device's 16-bit rate
  ScaleScope scope = ScaleScope::none;
  uint32_t scale_bytes = 0;     // per scope unit

  double bits_per_value() const { return 8.0 * block_bytes / block_values; }
  double meta_fraction() const { return static_cast<double>(meta_bytes) / block_bytes; }
  bool quantized() const { return block_values > 1 || code_bytes < 2; }
};

// Bytes of one tensor of `shape` (GGUF order) in `type`: its blocks along ne[0], plus a checkpoint
// format's scales and zeros per matrix. Throws InputError naming `what` when ne[0] is not a whole
// number of blocks.
uint64_t ggml_tensor_bytes(GgmlType type, std::span<const uint64_t> shape, std::string_view what);

// All types, in ggml id order.
std::span<const GgmlTypeInfo> ggml_types();
const GgmlTypeInfo& ggml_type_info(GgmlType type);
// Case-insensitive ("q8_0", "Q8_0", "bf16"); throws InputError listing the known names.
const GgmlTypeInfo& ggml_type_by_name(std::string_view name, std::string_view what);
std::string ggml_type_names(bool gguf_only = false);  // "F32, F16, ..." for messages
// Case-insensitive lookup; nullptr when the name is not a GGML type.
const GgmlTypeInfo* find_ggml_type(std::string_view name);
// Type and file-type names compare case-insensitively ("q8_0" == "Q8_0").
bool type_name_equal(std::string_view a, std::string_view b);

// Bytes of a row of `values` values; throws InputError when values is not a whole number of
// blocks (`what` names the tensor or cache for the message).
uint64_t ggml_row_bytes(GgmlType type, uint64_t values, std::string_view what);

}  // namespace infer_plan
