// The GGML tensor types llama.cpp uses for weights and KV caches, with their block layouts
// (ggml/src/ggml-common.h): values per block, bytes per block, and how those bytes split into
// quantized codes and metadata (scales, mins, super-block d/dmin, Q8_K's block sums).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace infer_plan {

// Values are GGML's enum ggml_type ids, as stored in GGUF tensor infos.
enum class GgmlType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15, BF16 = 30,
};

struct GgmlTypeInfo {
  GgmlType type;
  std::string_view name;        // "Q4_0"
  uint32_t block_values;        // values per block (QK)
  uint32_t block_bytes;         // sizeof the block struct, packed with no padding
  uint32_t code_bytes;          // bytes holding the quantized values (or the floats themselves)
  uint32_t meta_bytes;          // bytes of scales, mins and other per-block metadata
  std::string_view layout;      // the block struct, field by field

  double bits_per_value() const { return 8.0 * block_bytes / block_values; }
  double meta_fraction() const { return static_cast<double>(meta_bytes) / block_bytes; }
  bool quantized() const { return block_values > 1; }
};

// All types, in ggml id order.
std::span<const GgmlTypeInfo> ggml_types();
const GgmlTypeInfo& ggml_type_info(GgmlType type);
// Case-insensitive ("q8_0", "Q8_0", "bf16"); throws InputError listing the known names.
const GgmlTypeInfo& ggml_type_by_name(std::string_view name, std::string_view what);
std::string ggml_type_names();  // "F32, F16, ..." for messages
// Case-insensitive lookup; nullptr when the name is not a GGML type.
const GgmlTypeInfo* find_ggml_type(std::string_view name);
// Type and file-type names compare case-insensitively ("q8_0" == "Q8_0").
bool type_name_equal(std::string_view a, std::string_view b);

// Bytes of a row of `values` values; throws InputError when values is not a whole number of
// blocks (`what` names the tensor or cache for the message).
uint64_t ggml_row_bytes(GgmlType type, uint64_t values, std::string_view what);

}  // namespace infer_plan
