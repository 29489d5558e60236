// The size of a GGUF file as llama.cpp writes it: header (magic, version, counts, metadata KV,
// tensor infos) + padding to general.alignment + every tensor's data, each tensor's offset
// aligned. Tensor data is exact from the recipe; the metadata (mostly the tokenizer) is an
// estimate from the vocabulary unless the header is read from a real file.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "planner/model/model_spec.hpp"
#include "planner/model/tensor_inventory.hpp"
#include "planner/weights/weights_size.hpp"

namespace infer_plan {

inline constexpr uint64_t kGgufDefaultAlignment = 32;  // when general.alignment is absent

uint64_t gguf_align(uint64_t offset, uint64_t alignment);
// Bytes of one tensor info record: name (u64 length + bytes), u32 n_dims, u64 dims, u32 type,
// u64 offset.
uint64_t gguf_tensor_info_bytes(const TensorInfo& tensor);

// The tokenizer arrays the converter writes, sized from the vocabulary. Strings are u64 length
// + bytes; the average string lengths per family come from the tokenizer files (see .cpp).
struct TokenizerEstimate {
  std::string family;           // "gpt2 BPE (Qwen2/Qwen3)", "gpt2 BPE (Llama 3)", "SentencePiece"
  uint64_t tokens = 0;          // tokenizer.ggml.tokens entries (= vocab)
  uint64_t merges = 0;          // tokenizer.ggml.merges entries (0 for SentencePiece)
  uint64_t token_bytes = 0;     // the tokens array, lengths included
  uint64_t token_type_bytes = 0;// tokenizer.ggml.token_type (i32 each) and scores (f32 each, SPM)
  uint64_t merge_bytes = 0;     // the merges array, lengths included
  uint64_t bytes() const { return token_bytes + token_type_bytes + merge_bytes; }
};
TokenizerEstimate estimate_tokenizer(const ModelSpec& spec);

// Where the header figures came from.
enum class HeaderSource { estimated, file };

// One row of the breakdown by tensor class.
struct TensorClassSize {
  std::string name;             // "attention", "ffn experts", ...
  uint64_t tensors = 0;
  uint64_t bytes = 0;           // tensor data
  uint64_t code_and_float_bytes = 0;
  uint64_t meta_bytes = 0;
  std::string types;            // "Q2_K x 188, Q4_K x 94"
};

struct GgufFileSize {
  std::string file_type;        // "Q2_K", or "file" for a read header
  WeightsLayout layout;
  HeaderSource header_source = HeaderSource::estimated;
  uint64_t alignment = kGgufDefaultAlignment;
  uint64_t header_fixed_bytes = 0;    // magic, version, tensor count, KV count
  uint64_t metadata_kv_bytes = 0;     // all KV pairs
  uint64_t tokenizer_bytes = 0;       // ... of which the tokenizer (estimated; 0 when read)
  uint64_t tensor_info_bytes = 0;
  uint64_t header_bytes = 0;          // fixed + KV + tensor infos
  uint64_t padding_bytes = 0;         // after the header and between tensors
  uint64_t tensor_data_bytes = 0;     // = code_and_float_bytes + meta_bytes
  uint64_t code_and_float_bytes = 0;  // quantized codes plus unquantized floats
  uint64_t meta_bytes = 0;            // scales, mins, super-block d/dmin
  uint64_t file_bytes = 0;            // header + padding + tensor data
  uint64_t fallback_tensors = 0;
  TokenizerEstimate tokenizer;        // the estimate behind tokenizer_bytes
  std::vector<TensorClassSize> classes;
  std::vector<std::string> derivation;  // the arithmetic, numbers substituted
};

// Predicted file for `spec` at a llama.cpp file type (Q4_K_M, ...) or a GGML type throughout.
GgufFileSize gguf_file_size(const ModelSpec& spec, const std::string& type_name);
// The same sums for a known layout and known header figures (a file's; see gguf_reader).
// `other_class[i]` puts tensor i in class "other" (names outside our layouts).
GgufFileSize gguf_file_size_from(const WeightsLayout& layout, uint64_t header_bytes,
                                 uint64_t metadata_kv_bytes, uint64_t tensor_info_bytes,
                                 uint64_t alignment, const std::vector<bool>& other_class = {});

// The tensor class a role belongs to, for the breakdown.
std::string_view gguf_tensor_class(TensorRole role);

}  // namespace infer_plan
