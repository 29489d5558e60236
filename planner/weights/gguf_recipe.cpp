// The rules of llama.cpp's llama_tensor_get_type (src/llama-quant.cpp) for the file types
// llama-quantize makes without an importance matrix, one small function per tensor class.
// Only the branches that can fire for these file types and for our architectures (llama,
// qwen2, qwen3, qwen3moe, deepseek2, gemma2/3, gpt-oss, phi3) are kept; Falcon's are left out.
#include "planner/weights/gguf_recipe.hpp"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <vector>
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
  LlamaFileTypeInfo{F::IQ2_XXS, "IQ2_XXS", T::IQ2_XXS},
  LlamaFileTypeInfo{F::IQ2_XS,  "IQ2_XS",  T::IQ2_XS},
  LlamaFileTypeInfo{F::IQ2_S,   "IQ2_S",   T::IQ2_XS},   // sic: IQ2_S files default to IQ2_XS ...
  LlamaFileTypeInfo{F::IQ2_M,   "IQ2_M",   T::IQ2_S},    // ... and IQ2_M files to IQ2_S
  LlamaFileTypeInfo{F::IQ3_XXS, "IQ3_XXS", T::IQ3_XXS},
  LlamaFileTypeInfo{F::IQ3_XS,  "IQ3_XS",  T::IQ3_S},
  LlamaFileTypeInfo{F::IQ3_S,   "IQ3_S",   T::IQ3_S},
  LlamaFileTypeInfo{F::IQ3_M,   "IQ3_M",   T::IQ3_S},
  LlamaFileTypeInfo{F::IQ1_S,   "IQ1_S",   T::IQ1_S},
  LlamaFileTypeInfo{F::IQ1_M,   "IQ1_M",   T::IQ1_M},
  LlamaFileTypeInfo{F::IQ4_NL,  "IQ4_NL",  T::IQ4_NL},
  LlamaFileTypeInfo{F::IQ4_XS,  "IQ4_XS",  T::IQ4_XS},
  LlamaFileTypeInfo{F::TQ1_0,   "TQ1_0",   T::TQ1_0},
  LlamaFileTypeInfo{F::TQ2_0,   "TQ2_0",   T::TQ2_0},
  LlamaFileTypeInfo{F::MXFP4_MOE, "MXFP4_MOE", T::MXFP4},
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

// The tensor classes llama.cpp's rules tell apart, by name as it matches them (in this order):
// ffn_up_exps and ffn_up_shexp are ffn_up, and so on.
enum class Category { output, token_embd, qkv, attn_v, attn_k, attn_q, attn_output, ffn_up, ffn_gate, ffn_down, other };

Category category_of(const TensorInfo& t) {
  const std::string_view n = t.name;
  if (n == "output.weight") return Category::output;
  if (n == "token_embd.weight") return Category::token_embd;
  if (n.find("attn_qkv.weight") != n.npos || n.find("attn_kv_b.weight") != n.npos) return Category::qkv;
  if (n.find("attn_v.weight") != n.npos) return Category::attn_v;
  if (n.find("attn_k.weight") != n.npos) return Category::attn_k;
  if (n.find("attn_q.weight") != n.npos) return Category::attn_q;
  if (n.find("attn_output.weight") != n.npos) return Category::attn_output;
  if (n.find("ffn_up") != n.npos) return Category::ffn_up;
  if (n.find("ffn_gate") != n.npos) return Category::ffn_gate;
  if (n.find("ffn_down") != n.npos) return Category::ffn_down;
  return Category::other;
}

// attn_v's rules cover the fused attn_qkv and DeepSeek's attn_kv_b too (llama.cpp since March
// 2026; files made before gave attn_qkv its own, milder rule).
bool is_attn_v(Category c) { return c == Category::attn_v || c == Category::qkv; }

bool one_of(F f, std::initializer_list<F> fs) { return std::find(fs.begin(), fs.end(), f) != fs.end(); }

// The 1- and 2-bit i-quant files, whose rules share one branch.
bool very_low_bit(F f) { return one_of(f, {F::IQ2_XXS, F::IQ2_XS, F::IQ1_S, F::IQ2_S, F::IQ2_M, F::IQ1_M}); }

// llama-quantize walks the tensors in order, counting attn_v and ffn_down tensors as it goes;
// some rules read the count so far (MoE models read ffn_down's layer from its name instead).
struct Counters {
  uint64_t attn_v = 0, attn_v_total = 0, ffn_down = 0, ffn_gate = 0, ffn_up = 0;
};

// llama_tensor_get_type_impl, for a quantized file type: the first rule that matches wins. nt is
// the file type's default type.
GgmlType rule_type(const RecipeContext& c, const TensorInfo& t, F f, GgmlType nt, Counters& k) {
  const Category cat = category_of(t);
  const uint64_t n = c.layers;
  // ffn_down/gate/up's position: the tensor's own layer in a MoE model, the running count otherwise.
  const auto position = [&](uint64_t counter) { return c.experts > 1 && t.layer >= 0 ? static_cast<uint64_t>(t.layer) : counter; };
  if (cat == Category::output || (c.tied_embeddings && cat == Category::token_embd)) {
    // The head is the tensor most sensitive to quantization.
    if (f == F::MXFP4_MOE || t.row_length() % block_values(nt) != 0) return T::Q8_0;
    if (very_low_bit(f) || f == F::IQ3_XXS) return T::Q5_K;
    return nt == T::Q8_0 ? nt : T::Q6_K;
  }
  if (f == F::MXFP4_MOE)  // experts (3-D) in MXFP4, every other weight Q8_0
    return t.shape.size() > 2 && t.shape[2] > 1 ? T::MXFP4 : T::Q8_0;
  if (cat == Category::token_embd) {  // untied: only looked up, one row per token
    if (one_of(f, {F::IQ2_XXS, F::IQ2_XS, F::IQ1_S, F::IQ1_M})) return T::Q2_K;
    if (one_of(f, {F::IQ2_S, F::IQ2_M, F::IQ3_XXS})) return T::IQ3_S;
    if (one_of(f, {F::TQ1_0, F::TQ2_0})) return T::Q4_K;
    return nt;
  }
  if (very_low_bit(f)) {
    if (is_attn_v(cat)) {
      ++k.attn_v;
      return c.gqa_ratio >= 4 || c.experts >= 4 ? T::Q4_K : one_of(f, {F::IQ2_S, F::IQ2_M}) ? T::IQ3_S : T::Q2_K;
    }
    if (c.experts == 8 && cat == Category::attn_k) return T::Q4_K;
    if (cat == Category::ffn_down) {
      const bool first_eighth = k.ffn_down++ < n / 8;  // the plain count, even for MoE
      return first_eighth ? (one_of(f, {F::IQ2_S, F::IQ2_M}) ? T::IQ3_S : T::Q2_K) : nt;
    }
    if (cat == Category::attn_output) {
      if (c.experts == 8) return T::Q5_K;
      if (one_of(f, {F::IQ1_S, F::IQ1_M})) return T::IQ2_XXS;
      if (one_of(f, {F::IQ2_S, F::IQ2_M})) return T::IQ3_S;
    }
    return nt;
  }
  if (is_attn_v(cat)) {
    // attn_v is small under GQA (n_kv_heads rows) and its error is shared by n_gqa query heads,
    // so llama.cpp spends bits on it: by GQA ratio, or by position for Q3_K_M..Q5_K_M.
    const uint64_t i = k.attn_v++;
    GgmlType type = nt;
    const bool gqa4 = c.gqa_ratio >= 4;
    if (f == F::Q2_K) type = gqa4 ? T::Q4_K : T::Q3_K;
    else if (f == F::Q2_K_S && gqa4) type = T::Q4_K;
    else if (f == F::IQ3_XXS) type = gqa4 ? T::Q4_K : c.has_imatrix ? T::IQ3_XXS : T::IQ3_S;
    else if (one_of(f, {F::IQ3_XS, F::IQ3_S}) && gqa4) type = T::Q4_K;
    else if (f == F::IQ3_M) type = T::Q4_K;
    else if (f == F::Q3_K_M) type = i < 2 ? T::Q5_K : T::Q4_K;
    else if (f == F::Q3_K_L) type = T::Q5_K;
    else if (one_of(f, {F::IQ4_NL, F::IQ4_XS}) && gqa4) type = T::Q5_K;
    else if (one_of(f, {F::Q4_K_M, F::Q5_K_M}) && use_more_bits(i, k.attn_v_total)) type = T::Q6_K;
    else if (f == F::Q4_K_S && i < 4) type = T::Q5_K;
    // 70B: 8 query heads share each attn_v row block, so more bits cost almost nothing.
    if (c.llama_70b_class && (type == T::Q3_K || type == T::Q4_K)) type = T::Q5_K;
    // Mixtral-style 8-expert models: attention is a small share of the file.
    if (c.experts == 8) type = T::Q8_0;
    return type;
  }
  if (cat == Category::attn_k) {
    if (c.experts == 8) return T::Q8_0;
    return f == F::IQ3_XS ? T::IQ3_XXS : f == F::IQ3_XXS ? T::IQ2_S : nt;
  }
  if (cat == Category::attn_q) return f == F::IQ3_XS ? T::IQ3_XXS : f == F::IQ3_XXS ? T::IQ2_S : nt;
  if (cat == Category::ffn_down) {
    const uint64_t i = position(k.ffn_down++);
    switch (f) {
      case F::Q2_K: return T::Q3_K;
      case F::Q2_K_S: return i < n / 8 ? T::Q4_K : nt;
      case F::Q3_K_M: return i < n / 16 ? T::Q5_K : T::Q4_K;  // Q3_K stays only for Falcon
      case F::Q3_K_L: return T::Q5_K;
      case F::Q4_K_M: return use_more_bits(i, n) ? T::Q6_K : nt;
      case F::Q5_K_M: return use_more_bits(i, n) ? T::Q6_K : nt;
      case F::Q4_K_S: return i < n / 8 ? T::Q5_K : nt;
      case F::IQ3_XXS: return c.has_imatrix ? nt : i < n / 8 ? T::Q4_K : T::Q3_K;
      case F::IQ3_M: return i < n / 8 || (c.experts == 8 && use_more_bits(i, n)) ? T::Q4_K : nt;
      case F::IQ4_NL: case F::IQ4_XS: return !c.has_imatrix && i < n / 8 ? T::Q5_K : nt;
      case F::Q4_0: return c.has_imatrix && i < n / 8 ? T::Q4_1 : nt;
      case F::Q5_0: return c.has_imatrix && i < n / 8 ? T::Q5_1 : nt;
      default: return nt;
    }
  }
  if (cat == Category::attn_output) {
    if (c.experts == 8)
      return one_of(f, {F::Q2_K, F::IQ3_XS, F::IQ3_XXS, F::Q3_K_S, F::Q3_K_M, F::IQ4_NL, F::Q4_K_S, F::Q4_K_M, F::IQ3_S,
                        F::IQ3_M, F::IQ4_XS})
                 ? T::Q5_K
                 : nt;
    switch (f) {
      case F::Q2_K: return T::Q3_K;
      case F::IQ3_XXS: return T::IQ3_S;
      case F::Q3_K_M: case F::IQ3_M: return T::Q4_K;
      case F::Q3_K_L: return T::Q5_K;
      default: return nt;
    }
  }
  if (cat == Category::ffn_gate || cat == Category::ffn_up) {  // IQ3_XS: the middle layers one step down
    const uint64_t i = position(cat == Category::ffn_gate ? k.ffn_gate++ : k.ffn_up++);
    return f == F::IQ3_XS && i >= n / 8 && i < 7 * n / 8 ? T::IQ3_XXS : nt;
  }
  return nt;
}

// A row (ne[0]) must hold whole blocks. llama.cpp falls back to a 32-value type of similar size
// (IQ4_NL for the i-quants), and to F16 when even 32 does not divide the row.
GgmlType shape_fallback(const TensorInfo& t, GgmlType type, uint64_t& fallbacks) {
  const uint64_t row = t.row_length();
  if (row % block_values(type) == 0) return type;
  ++fallbacks;
  GgmlType fallback;
  switch (type) {
    case T::IQ1_S: case T::IQ1_M: case T::IQ2_XXS: case T::IQ2_XS: case T::IQ2_S: case T::IQ3_XXS: case T::IQ3_S:
    case T::IQ4_XS: fallback = T::IQ4_NL; break;
    case T::Q2_K: case T::Q3_K: case T::TQ1_0: case T::TQ2_0: fallback = T::Q4_0; break;
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

WeightsLayout recipe_weights_layout(const ModelSpec& spec, LlamaFileType ftype, bool imatrix) {
  RecipeContext c = recipe_context(spec);
  // The 1- and 2-bit i-quants (and IQ3_XXS, IQ3_XS) are refused by llama-quantize without an
  // importance matrix: such files always have one.
  c.has_imatrix = imatrix || requires_imatrix(ftype);
  const LlamaFileTypeInfo& f = llama_file_type_info(ftype);
  const bool quantized = ggml_type_info(f.default_type).quantized();
  const std::vector<TensorInfo> inventory = tensor_inventory(spec);
  // llama-quantize's order: the global tensors, then block by block with names in byte order.
  std::vector<size_t> order(inventory.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const TensorInfo &x = inventory[a], &y = inventory[b];
    if (x.layer != y.layer) return x.layer < y.layer;
    return x.layer >= 0 && x.name < y.name;
  });
  Counters counters;
  for (const TensorInfo& t : inventory) counters.attn_v_total += is_attn_v(category_of(t)) && quantizable(t);
  std::vector<GgmlType> types(inventory.size(), T::F32);
  WeightsLayout layout;
  layout.file_type = std::string(f.name) + (imatrix ? ":imatrix" : "");
  for (size_t i : order) {
    const TensorInfo& t = inventory[i];
    if (quantizable(t))
      types[i] = quantized ? shape_fallback(t, rule_type(c, t, ftype, f.default_type, counters), layout.fallback_tensors)
                           : f.default_type;
  }
  for (size_t i = 0; i < inventory.size(); ++i)
    layout.tensors.push_back({inventory[i], types[i], ggml_tensor_bytes(types[i], inventory[i].shape, inventory[i].name)});
  return layout;
}

bool requires_imatrix(LlamaFileType f) {
  return one_of(f, {F::IQ1_S, F::IQ1_M, F::IQ2_XXS, F::IQ2_XS, F::IQ2_S, F::IQ2_M, F::IQ3_XXS, F::IQ3_XS, F::Q2_K_S});
}

}  // namespace infer_plan
