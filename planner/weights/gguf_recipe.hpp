// llama.cpp's file types (Q4_K_M, Q2_K, ...) and the per-tensor type each one picks, as
// `llama-quantize` does (src/llama-quant.cpp): a file type names a default GGML type plus rules
// that spend more bits where quantization hurts most (attn_v, ffn_down, the output head).
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "planner/core/ggml_type.hpp"
#include "planner/model/model_spec.hpp"
#include "planner/model/tensor_inventory.hpp"
#include "planner/weights/weights_size.hpp"

namespace infer_plan {

// Values are llama.cpp's enum llama_ftype, as stored in GGUF `general.file_type`.
enum class LlamaFileType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q8_0 = 7, Q5_0 = 8, Q5_1 = 9,
  Q2_K = 10, Q3_K_S = 11, Q3_K_M = 12, Q3_K_L = 13, Q4_K_S = 14, Q4_K_M = 15,
  Q5_K_S = 16, Q5_K_M = 17, Q6_K = 18, IQ2_XXS = 19, IQ2_XS = 20, Q2_K_S = 21, IQ3_XS = 22, IQ3_XXS = 23,
  IQ1_S = 24, IQ4_NL = 25, IQ3_S = 26, IQ3_M = 27, IQ2_S = 28, IQ2_M = 29, IQ4_XS = 30, IQ1_M = 31, BF16 = 32,
  TQ1_0 = 36, TQ2_0 = 37, MXFP4_MOE = 38,
};

struct LlamaFileTypeInfo {
  LlamaFileType ftype;
  std::string_view name;    // "Q4_K_M", as llama-quantize and file names spell it
  GgmlType default_type;    // the type of every tensor no rule moves
};

std::span<const LlamaFileTypeInfo> llama_file_types();
// Case-insensitive; nullopt when `name` is not a llama.cpp file type.
std::optional<LlamaFileTypeInfo> find_llama_file_type(std::string_view name);
const LlamaFileTypeInfo& llama_file_type_info(LlamaFileType ftype);
std::string llama_file_type_names();  // "F32, F16, Q4_0, ..." for messages

// The shape facts the rules read (llama.cpp takes them from the model's hparams).
struct RecipeContext {
  uint64_t layers = 0;         // n_layer: ffn_down and attn_v rules depend on the position
  uint64_t gqa_ratio = 1;      // n_head / n_head_kv
  uint64_t experts = 0;        // n_expert (Mixtral's 8 gets special treatment)
  bool tied_embeddings = false;// no output.weight: token_embd doubles as the output head
  bool llama_70b_class = false;// llama.cpp's LLM_TYPE_70B (80 layers, llama with GQA or qwen2)
  bool has_imatrix = false;    // quantized with an importance matrix (changes IQ3_XXS, IQ4_*, Q4_0, Q5_0)
};
RecipeContext recipe_context(const ModelSpec& spec);

// File types llama-quantize makes only with an importance matrix (it refuses without one).
bool requires_imatrix(LlamaFileType ftype);

// Every tensor of the model with the type llama-quantize stores it in, and its bytes; file_type
// is the name ("Q4_K_M", "IQ4_XS:imatrix"). `imatrix`: quantized with an importance matrix, as
// most published files are (implied for the types that require one). Throws InputError when
// llama.cpp itself would refuse (a row length with no fallback type).
WeightsLayout recipe_weights_layout(const ModelSpec& spec, LlamaFileType ftype, bool imatrix = false);

}  // namespace infer_plan
