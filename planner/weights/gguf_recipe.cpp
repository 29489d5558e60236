// The rules of llama.cpp's llama_tensor_get_type (src/llama-quant.cpp) for the file types
// llama-quantize makes without an importance matrix, one small function per tensor class.
// Only the branches that can fire for these file types and for our architectures (llama,
// qwen2, qwen3, qwen3moe, deepseek2, gemma2/3, gpt-oss, phi3) are kept; the IQ*/TQ*/MXFP4 types and Falcon's rules are left out.
#include "planner/weights/gguf_recipe.hpp"

#include <array>
#include <cctype>
#include <fmt/format.h>

#include "planner/core/input_error.hpp"

namespace infer_plan {
namespace {

using F = LlamaFileType;
using T = GgmlType;

// clang-format off
constexpr std::array kFileTypes{
  LlamaFileTypeInfo{F::F32,    "F32",    T::F32},
  LlamaFileTypeInfo{F::F16,    "F16",    T::F16},
  LlamaFileTypeInfo{F::BF16,   "BF16",   T::BF16},
  LlamaFileTypeInfo{F::Q4_0,   "Q4_0",   T::Q4_0},
  LlamaFileTypeInfo{F::Q4_1,   "Q4_1",   T::Q4_1},
  LlamaFileTypeInfo{F::Q5_0,   "Q5_0",   T::Q5_0},
  LlamaFileTypeInfo{F::Q5_1,   "Q5_1",   T::Q5_1},
  LlamaFileTypeInfo{F::Q8_0,   "Q8_0",   T::Q8_0},
  LlamaFileTypeInfo{F::Q2_K,   "Q2_K",   T::Q2_K},
  LlamaFileTypeInfo{F::Q2_K_S, "Q2_K_S", T::Q2_K},
  LlamaFileTypeInfo{F::Q3_K_S, "Q3_K_S", T::Q3_K},
  LlamaFileTypeInfo{F::Q3_K_M, "Q3_K_M", T::Q3_K},
  LlamaFileTypeInfo{F::Q3_K_L, "Q3_K_L", T::Q3_K},
  LlamaFileTypeInfo{F::Q4_K_S, "Q4_K_S", T::Q4_K},
  LlamaFileTypeInfo{F::Q4_K_M, "Q4_K_M", T::Q4_K},
  LlamaFileTypeInfo{F::Q5_K_S, "Q5_K_S", T::Q5_K},
  LlamaFileTypeInfo{F::Q5_K_M, "Q5_K_M", T::Q5_K},
  LlamaFileTypeInfo{F::Q6_K,   "Q6_K",   T::Q6_K},
};
// clang-format on


uint32_t block_values(GgmlType t) { return ggml_type_info(t).block_values; }

// llama.cpp quantizes only 2-D and 3-D tensors named *.weight, and of those never the MoE router
// (ffn_gate_inp): it is tiny and routing is sensitive. The converter wrote them F32.
bool quantizable(const TensorInfo& t) { return !t.kept_f32(); }

// "Use more bits" for the first and last eighth of the layers and every third layer between:
// llama.cpp's heuristic for where attn_v and ffn_down errors hurt perplexity most.
bool use_more_bits(uint64_t layer, uint64_t layers) {
  const uint64_t eighth = layers / 8;
  return layer < eighth || layer >= 7 * layers / 8 || (layer - eighth) % 3 == 2;
}

// The output head (and token_embd when tied to it) is the tensor most sensitive to
// quantization: Q6_K unless the file is Q8_0 already; Q8_0 when rows are not whole K-blocks.
GgmlType output_head_type(const TensorInfo& t, GgmlType default_type) {
  if (t.row_length() % block_values(default_type) != 0) return T::Q8_0;
  return default_type == T::Q8_0 ? T::Q8_0 : T::Q6_K;
}

// attn_v is small under GQA (n_kv_heads rows) and its error is shared by n_gqa query heads, so
// llama.cpp spends bits on it: by GQA ratio for Q2_K, by layer position for Q3_K_M..Q5_K_M.
GgmlType attn_v_type(const RecipeContext& c, uint64_t layer, F ftype, GgmlType type) {
  switch (ftype) {
    case F::Q2_K: type = c.gqa_ratio >= 4 ? T::Q4_K : T::Q3_K; break;
    case F::Q2_K_S: if (c.gqa_ratio >= 4) type = T::Q4_K; break;
    case F::Q3_K_M: type = layer < 2 ? T::Q5_K : T::Q4_K; break;
    case F::Q3_K_L: type = T::Q5_K; break;
    case F::Q4_K_M:
    case F::Q5_K_M: if (use_more_bits(layer, c.layers)) type = T::Q6_K; break;
    case F::Q4_K_S: if (layer < 4) type = T::Q5_K; break;
    default: break;
  }
  // 70B: 8 query heads share each attn_v row block, so it is 8x smaller than attn_q; more bits
  // cost almost nothing there.
  if (c.llama_70b_class && (type == T::Q3_K || type == T::Q4_K)) type = T::Q5_K;
  // Mixtral-style 8-expert models: attention is a small share of the file, Q8_0 costs ~128 MB.
  if (c.experts == 8) type = T::Q8_0;
  return type;
}

GgmlType attn_k_type(const RecipeContext& c, GgmlType type) {
  return c.experts == 8 ? T::Q8_0 : type;  // same 8-expert bump as attn_v
}

// ffn_down (dense, or the stacked experts' ffn_down_exps) by layer position.
GgmlType ffn_down_type(const RecipeContext& c, uint64_t layer, F ftype, GgmlType type) {
  const uint64_t n = c.layers;
  switch (ftype) {
    case F::Q2_K: return T::Q3_K;
    case F::Q2_K_S: return layer < n / 8 ? T::Q4_K : type;
    case F::Q3_K_M: return layer < n / 16 ? T::Q5_K : T::Q4_K;  // Q3_K stays only for Falcon
    case F::Q3_K_L: return T::Q5_K;
    case F::Q4_K_M:
    case F::Q5_K_M: return use_more_bits(layer, n) ? T::Q6_K : type;
    case F::Q4_K_S: return layer < n / 8 ? T::Q5_K : type;
    // Q4_0/Q5_0 move the first eighth to Q4_1/Q5_1 only with an importance matrix: not modelled.
    default: return type;
  }
}

// Phi's fused q, k, v projection: a bit more than the file's type for the K-quant mixes.
GgmlType attn_qkv_type(F ftype, GgmlType type) {
  switch (ftype) {
    case F::Q3_K_M: case F::Q3_K_L: return T::Q4_K;
    case F::Q4_K_M: return T::Q5_K;
    case F::Q5_K_M: return T::Q6_K;
    default: return type;
  }
}

GgmlType attn_output_type(const RecipeContext& c, F ftype, GgmlType type) {
  if (c.experts == 8) {
    switch (ftype) {
      case F::Q2_K: case F::Q3_K_S: case F::Q3_K_M: case F::Q4_K_S: case F::Q4_K_M: return T::Q5_K;
      default: return type;
    }
  }
  switch (ftype) {
    case F::Q2_K: return T::Q3_K;
    case F::Q3_K_M: return T::Q4_K;
    case F::Q3_K_L: return T::Q5_K;
    default: return type;
  }
}

// A row (ne[0]) must hold whole blocks. llama.cpp falls back from a K-quant (256 values) to a
// 32-value type of similar size, and to F16 when even 32 does not divide the row.
GgmlType shape_fallback(const TensorInfo& t, GgmlType type, uint64_t& fallbacks) {
  const uint64_t row = t.row_length();
  if (row % block_values(type) == 0) return type;
  ++fallbacks;
  GgmlType fallback;
  switch (type) {
    case T::Q2_K: case T::Q3_K: fallback = T::Q4_0; break;
    case T::Q4_K: fallback = T::Q5_0; break;
    case T::Q5_K: fallback = T::Q5_1; break;
    case T::Q6_K: fallback = T::Q8_0; break;
    default:
      throw InputError(fmt::format(
          "{}: row length {} is not a multiple of {}'s block of {} and llama.cpp has no fallback "
          "type for {}", t.name, row, ggml_type_info(type).name, block_values(type), ggml_type_info(type).name));
  }
  return row % block_values(fallback) == 0 ? fallback : T::F16;
}

GgmlType rule_type(const RecipeContext& c, const TensorInfo& t, F ftype, GgmlType type) {
  const uint64_t layer = t.layer < 0 ? 0 : static_cast<uint64_t>(t.layer);
  switch (t.role) {
    case TensorRole::output: return output_head_type(t, type);
    case TensorRole::token_embd: return c.tied_embeddings ? output_head_type(t, type) : type;
    case TensorRole::attn_v: return attn_v_type(c, layer, ftype, type);
    case TensorRole::attn_k: return attn_k_type(c, type);
    case TensorRole::attn_output: return attn_output_type(c, ftype, type);
    case TensorRole::attn_qkv: return attn_qkv_type(ftype, type);
    case TensorRole::ffn_down:
    case TensorRole::ffn_down_shexp:  // llama.cpp matches "ffn_down" anywhere in the name
    case TensorRole::ffn_down_exps: return ffn_down_type(c, layer, ftype, type);
    default: return type;  // attn_q, ffn_gate, ffn_up (and their _exps): rules only for IQ types
  }
}

}  // namespace

std::span<const LlamaFileTypeInfo> llama_file_types() { return kFileTypes; }

std::optional<LlamaFileTypeInfo> find_llama_file_type(std::string_view name) {
  for (const auto& f : kFileTypes)
    if (type_name_equal(f.name, name)) return f;
  return std::nullopt;
}

const LlamaFileTypeInfo& llama_file_type_info(LlamaFileType ftype) {
  for (const auto& f : kFileTypes)
    if (f.ftype == ftype) return f;
  throw InputError(fmt::format("unknown llama.cpp file type id {}", static_cast<uint32_t>(ftype)));
}

std::string llama_file_type_names() {
  std::string out;
  for (const auto& f : kFileTypes) out += (out.empty() ? "" : ", ") + std::string(f.name);
  return out;
}

RecipeContext recipe_context(const ModelSpec& s) {
  RecipeContext c;
  c.layers = s.layers;
  c.gqa_ratio = s.kv_heads == 0 ? 1 : s.heads / s.kv_heads;
  c.experts = s.experts;
  c.tied_embeddings = s.tied_embeddings;
  // llama.cpp's model-size class: llama with 80 layers is 70B when it uses GQA (65B otherwise);
  // qwen2 with 80 layers is 70B. Only this class changes a rule.
  c.llama_70b_class = s.layers == 80 && ((s.gguf_arch == "llama" && s.heads != s.kv_heads) ||
                                          s.gguf_arch == "qwen2");
  return c;
}

GgmlType recipe_tensor_type(const RecipeContext& c, const TensorInfo& t, LlamaFileType ftype) {
  uint64_t fallbacks = 0;
  const GgmlType default_type = llama_file_type_info(ftype).default_type;
  if (!quantizable(t)) return T::F32;
  // F32/F16/BF16 files: every weight matrix at that type, no rules, no fallback.
  if (!ggml_type_info(default_type).quantized()) return default_type;
  return shape_fallback(t, rule_type(c, t, ftype, default_type), fallbacks);
}

WeightsLayout recipe_weights_layout(const ModelSpec& spec, LlamaFileType ftype) {
  const RecipeContext c = recipe_context(spec);
  const LlamaFileTypeInfo& f = llama_file_type_info(ftype);
  const bool quantized = ggml_type_info(f.default_type).quantized();
  WeightsLayout layout;
  layout.file_type = std::string(f.name);
  for (const TensorInfo& t : tensor_inventory(spec)) {
    GgmlType type = T::F32;
    if (quantizable(t))
      type = quantized ? shape_fallback(t, rule_type(c, t, ftype, f.default_type), layout.fallback_tensors)
                       : f.default_type;
    layout.tensors.push_back({t, type, ggml_tensor_bytes(type, t.shape, t.name)});
  }
  return layout;
}

}  // namespace infer_plan
