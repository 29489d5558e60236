// Reads a GGUF file's header (ggml docs/gguf.md, versions 2 and 3): metadata key-values and
// tensor infos, never the tensor data unless asked for one tensor. Every count, length, type,
// offset and size is checked against the file before use; a bad file throws InputError naming
// the field and its byte offset. Split files (-00001-of-0000N.gguf) read as one model.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "planner/core/ggml_type.hpp"
#include "planner/weights/gguf_size.hpp"
#include "planner/model/model_spec.hpp"
#include "planner/weights/weights_size.hpp"

namespace infer_plan {

// GGUF metadata value types (gguf_metadata_value_type).
enum class GgufType : uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7, string = 8,
  array = 9, u64 = 10, i64 = 11, f64 = 12,
};
std::string_view gguf_type_name(GgufType type);

// One metadata value. Scalars use one of u64 / i64 / f64 / str; arrays keep their elements
// compactly: strings in `strings`, numbers as little-endian bytes in `raw`, arrays in `nested`.
struct GgufValue {
  GgufType type = GgufType::u32;
  uint64_t u64 = 0;  // u8, u16, u32, u64, bool
  int64_t i64 = 0;   // i8, i16, i32, i64
  double f64 = 0;    // f32, f64
  std::string str;
  GgufType element_type = GgufType::u8;  // arrays
  uint64_t count = 0;                    // array elements
  std::vector<std::string> strings;
  std::vector<uint8_t> raw;
  std::vector<GgufValue> nested;

  static GgufValue of_u32(uint32_t v);
  static GgufValue of_u64(uint64_t v);
  static GgufValue of_i32(int32_t v);
  static GgufValue of_f32(float v);
  static GgufValue of_bool(bool v);
  static GgufValue of_string(std::string v);
  static GgufValue of_strings(std::vector<std::string> v);
  static GgufValue of_i32s(const std::vector<int32_t>& v);
  static GgufValue of_f32s(const std::vector<float>& v);
};
struct GgufKeyValue {
  std::string key;
  GgufValue value;
};
std::string gguf_value_text(const GgufValue& value);  // "151936 strings", "qwen3", "1e+06"

struct GgufTensorInfo {
  std::string name;
  std::vector<uint64_t> shape;  // ne[0] first
  GgmlType type;
  uint64_t offset = 0;          // relative to its file's data section
  uint64_t bytes = 0;
  uint32_t file = 0;            // index into GgufModel::paths
};

struct GgufModel {
  std::vector<std::string> paths;        // one, or every split part in order
  uint32_t version = 0;
  uint64_t alignment = kGgufDefaultAlignment;
  std::vector<GgufKeyValue> metadata;    // the first part's keys
  std::vector<GgufTensorInfo> tensors;   // all parts
  std::vector<uint64_t> file_bytes;      // per part
  std::vector<uint64_t> header_bytes;    // per part: magic .. last tensor info
  std::vector<uint64_t> data_offset;     // per part: start of the aligned data section

  const GgufValue* find(std::string_view key) const;
};

// Reads one file, or all parts of a split model when `path` names one part.
GgufModel read_gguf_model(const std::string& path);
// Reads one file only (a split part on its own).
GgufModel read_gguf_file(const std::string& path);
// The bytes of one tensor (for round trips and the runtime).
std::vector<uint8_t> read_gguf_tensor_data(const GgufModel& model, size_t tensor_index);

// The model spec from the architecture keys (qwen3, qwen3moe, llama, qwen2) and tensor shapes.
ModelSpec model_spec_from_gguf(const GgufModel& model);
// The file's own tensor types as a layout, in the inventory's roles; file_type "file".
WeightsLayout gguf_weights_layout(const GgufModel& model);
// Sizes as the file has them (header, padding and data measured, not estimated).
GgufFileSize gguf_file_size_of(const GgufModel& model);

bool is_gguf_path(std::string_view path);  // ends with .gguf

}  // namespace infer_plan
