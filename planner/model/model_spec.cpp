// Reads the config.json keys that shape the tensors. Unknown architectures are refused rather
// than guessed: a wrong shape would give a silently wrong size.
#include "planner/model/model_spec.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>

#include "planner/core/input_error.hpp"
#include "planner/core/limits.hpp"
#include "planner/model/tensor_inventory.hpp"

namespace infer_plan {
namespace {

// How each model_type names its MoE shape: the expert count's key, and the expert FFN width's
// (Mixtral's and GPT-OSS's experts are intermediate_size wide, every layer MoE). GLM-4.5 names its
// experts and router as DeepSeek does, with grouped-query attention in place of DeepSeek's latent.
// MiniMax-M2's experts are named as Mixtral's (intermediate_size wide, every layer), with a sigmoid
// router and its bias.
// Llama 4's experts are intermediate_size wide, each MoE layer (every interleave_moe_layer_step-th)
// with one shared expert as wide, a sigmoid top-k router; its dense layers intermediate_size_mlp wide.
enum class Moe { none, qwen, mixtral, deepseek, gpt_oss, glm, minimax, llama4 };

// Which layers a declared sliding_window applies to (transformers' layer_types overrides all).
enum class Windows {
  all_layers,   // Mistral, Mixtral: every layer, unless use_sliding_window is false
  qwen,         // Qwen2/3: only with use_sliding_window, layers from max_window_layers on
  every_other,  // Gemma 2, GPT-OSS: even layers slide, odd ones see everything
  pattern,      // Gemma 3: of each sliding_window_pattern layers, all but the last slide
  chunked,      // Llama 4: the layers that rotate (no_rope_layers 1; three of four) attend within
                // attention_chunk_size-token chunks, the others (no RoPE) to everything
  none,         // the architecture has no sliding window
};

// Linear-attention layers beside the attention ones (read_linear_attention): Qwen3-Next's GGUF
// projects the beta and alpha gates together (ssm_ba), Qwen3.5's apart (ssm_beta, ssm_alpha).
enum class Linear { none, qwen3_next, qwen3_5 };

struct Architecture {
  std::string_view model_type;
  std::string_view gguf_arch;
  bool qk_norm;
  bool qkv_bias;
  Moe moe;
  Windows windows;
  Linear linear = Linear::none;
  std::string_view text_model = {};  // a multimodal wrapper: the language model is its text_config, of this type
};

constexpr std::array kArchitectures{
    Architecture{"qwen3", "qwen3", true, false, Moe::none, Windows::qwen},
    Architecture{"qwen3_moe", "qwen3moe", true, false, Moe::qwen, Windows::qwen},
    Architecture{"llama", "llama", false, false, Moe::none, Windows::none},
    Architecture{"mistral", "llama", false, false, Moe::none, Windows::all_layers},  // llama.cpp converts Mistral as llama
    Architecture{"mixtral", "llama", false, false, Moe::mixtral, Windows::all_layers},  // ... and Mixtral, with expert tensors
    Architecture{"qwen2", "qwen2", false, true, Moe::none, Windows::qwen},
    // Multi-head latent attention, shared and routed experts; llama.cpp's deepseek2 for both.
    Architecture{"deepseek_v2", "deepseek2", false, false, Moe::deepseek, Windows::none},
    Architecture{"deepseek_v3", "deepseek2", false, false, Moe::deepseek, Windows::none},
    Architecture{"kimi_k2", "deepseek2", false, false, Moe::deepseek, Windows::none},  // DeepSeek-V3's shape
    // Gemma: head_dim 256 (2) or explicit, norms after attention and FFN, tied head; Gemma 2
    // soft-caps scores and logits, Gemma 3 normalizes q and k instead. gemma3 is the multimodal
    // wrapper whose text_config is read.
    Architecture{"gemma2", "gemma2", false, false, Moe::none, Windows::every_other},
    Architecture{"gemma3_text", "gemma3", true, false, Moe::none, Windows::pattern},
    Architecture{"gemma3", "gemma3", true, false, Moe::none, Windows::pattern, Linear::none, "gemma3_text"},
    // GPT-OSS: biases everywhere, attention sinks, experts of intermediate_size every layer.
    Architecture{"gpt_oss", "gpt-oss", false, true, Moe::gpt_oss, Windows::every_other},
    // Phi-3/Phi-4: fused attn_qkv and gate+up in llama.cpp's files.
    Architecture{"phi3", "phi3", false, false, Moe::none, Windows::all_layers},
    // GLM-4.5: DeepSeek's routed and shared experts after dense layers, a sigmoid router with its
    // bias; grouped-query attention with biases (attention_bias), half the head rotated, q/k norms
    // where use_qk_norm says.
    Architecture{"glm4_moe", "glm4moe", false, false, Moe::glm, Windows::none},
    // MiniMax-M2: q/k norms over the whole projections, rotary_dim of each head rotated.
    Architecture{"minimax_m2", "minimax-m2", true, false, Moe::minimax, Windows::none},
    // Qwen3-Next: three Gated DeltaNet layers to one gated attention layer, Qwen's experts with a
    // gated shared expert; llama.cpp's qwen3next.
    // Llama 4: chunked local attention in three of four layers, experts with a shared one.
    Architecture{"llama4_text", "llama4", false, false, Moe::llama4, Windows::chunked},
    Architecture{"llama4", "llama4", false, false, Moe::llama4, Windows::chunked, Linear::none, "llama4_text"},
    Architecture{"qwen3_next", "qwen3next", true, false, Moe::qwen, Windows::none, Linear::qwen3_next},
    // Qwen3.5: Qwen3-Next's layers, dense or with experts, behind a vision wrapper (text_config);
    // llama.cpp's qwen35 and qwen35moe.
    Architecture{"qwen3_5_text", "qwen35", true, false, Moe::none, Windows::none, Linear::qwen3_5},
    Architecture{"qwen3_5_moe_text", "qwen35moe", true, false, Moe::qwen, Windows::none, Linear::qwen3_5},
    Architecture{"qwen3_5", "qwen35", true, false, Moe::none, Windows::none, Linear::qwen3_5, "qwen3_5_text"},
    Architecture{"qwen3_5_moe", "qwen35moe", true, false, Moe::qwen, Windows::none, Linear::qwen3_5, "qwen3_5_moe_text"},
};

// Keys that change a model's shape under the architectures that use them. One the model_type does
// not read would be ignored in silence (a Mixtral config relabelled mistral counted 7.24 B
// parameters of its 46.7 B): refused, naming the key and what it means.
void refuse_unread_shape_keys(const Json& c, const Architecture& arch, const std::string& where) {
  struct Key {
    std::string_view key, meaning;
    std::array<Moe, 4> read_by;  // the MoE families that read it (none: no MoE family; see `windows`)
    Windows windows = Windows::none;  // a window key: read by this windowing
  };
  static constexpr std::array kKeys{
      Key{"num_experts", "routed experts (Qwen MoE)", {Moe::qwen}},
      Key{"moe_intermediate_size", "the experts' FFN width (Qwen MoE)", {Moe::qwen, Moe::deepseek, Moe::glm}},
      Key{"num_local_experts", "routed experts (Mixtral, GPT-OSS)", {Moe::mixtral, Moe::gpt_oss, Moe::minimax, Moe::llama4}},
      Key{"n_routed_experts", "routed experts (DeepSeek)", {Moe::deepseek, Moe::glm}},
      Key{"n_shared_experts", "shared experts (DeepSeek)", {Moe::deepseek, Moe::glm}},
      Key{"kv_lora_rank", "multi-head latent attention (DeepSeek)", {Moe::deepseek}},
      Key{"q_lora_rank", "multi-head latent attention (DeepSeek)", {Moe::deepseek}},
      Key{"sliding_window_pattern", "alternating sliding-window layers (Gemma 3)", {}, Windows::pattern},
      Key{"attention_chunk_size", "attention within chunks of tokens (Llama 4)", {}, Windows::chunked},
  };
  for (const Key& k : kKeys) {
    const auto it = c.find(k.key);
    if (it == c.end() || it->is_null() || (it->is_number() && it->get<double>() == 0)) continue;
    if (arch.moe != Moe::none && std::find(k.read_by.begin(), k.read_by.end(), arch.moe) != k.read_by.end()) continue;
    if (k.windows != Windows::none && k.windows == arch.windows) continue;
    throw InputError(fmt::format("{}: field '{}' ({}) is not part of model_type '{}', so the shape would be wrong; "
                                 "{}", where, k.key, k.meaning, arch.model_type,
                                 k.read_by[0] == Moe::mixtral    ? "use model_type 'mixtral' (or gpt_oss)"
                                 : k.read_by[0] == Moe::qwen     ? "use model_type 'qwen3_moe'"
                                 : k.read_by[0] == Moe::deepseek ? "use model_type 'deepseek_v3' (or deepseek_v2)"
                                 : k.windows == Windows::pattern ? "use model_type 'gemma3_text'"
                                 : k.windows == Windows::chunked ? "use model_type 'llama4_text'"
                                                                 : "this architecture is not supported yet"));
  }
}

uint64_t require_positive(const Json& c, std::string_view key, std::string_view where) {
  uint64_t v = require_uint(c, key, where);
  if (v == 0) throw InputError(fmt::format("{}: field '{}' is 0; expected a positive integer", where, key));
  return v;
}

// The routed experts, under the model_type's key, and how many each token uses.
void read_experts(const Json& c, ModelSpec& s, std::string_view experts_key, const std::string& where) {
  s.experts = require_positive(c, experts_key, where);
  s.experts_active = require_positive(c, "num_experts_per_tok", where);
  if (s.experts_active > s.experts)
    throw InputError(fmt::format("{}: num_experts_per_tok = {} exceeds {} = {}", where, s.experts_active, experts_key,
                                 s.experts));
}

// DeepSeek's routed and shared experts, the dense layers before them, and the router: its bias
// (noaux_tc), scoring, scale and expert groups.
void read_deepseek_moe(const Json& c, ModelSpec& s, const std::string& where) {
  read_experts(c, s, "n_routed_experts", where);
  s.moe_intermediate = require_positive(c, "moe_intermediate_size", where);
  s.shared_experts = optional_uint(c, "n_shared_experts", where).value_or(0);
  s.first_dense_layers = optional_uint(c, "first_k_dense_replace", where).value_or(0);
  if (s.first_dense_layers > s.layers)
    throw InputError(fmt::format("{}: field 'first_k_dense_replace' is {}, beyond the {} layers", where,
                                 s.first_dense_layers, s.layers));
  if (const auto freq = optional_uint(c, "moe_layer_freq", where); freq && *freq != 1)
    throw InputError(fmt::format("{}: field 'moe_layer_freq' is {}; only 1 (every layer after the dense ones) "
                                 "is supported", where, *freq));
  s.expert_score_bias = optional_string(c, "topk_method", where).value_or("") == "noaux_tc";
  s.moe_norm_top_k = optional_bool(c, "norm_topk_prob", where).value_or(false);
  const std::string scoring = optional_string(c, "scoring_func", where).value_or("softmax");
  if (scoring != "softmax" && scoring != "sigmoid")
    throw InputError(fmt::format("{}: field 'scoring_func' is '{}'; expected softmax or sigmoid", where, scoring));
  s.sigmoid_routing = scoring == "sigmoid";
  s.expert_weights_scale = optional_number(c, "routed_scaling_factor", where).value_or(1.0);
  if (!(s.expert_weights_scale > 0.0 && s.expert_weights_scale < 1e6))
    throw InputError(fmt::format("{}: field 'routed_scaling_factor' is {}; expected a positive factor", where,
                                 s.expert_weights_scale));
  s.expert_groups = optional_uint(c, "n_group", where).value_or(1);
  s.expert_groups_used = optional_uint(c, "topk_group", where).value_or(s.expert_groups);
  if (s.expert_groups == 0 || s.experts % s.expert_groups != 0 || s.expert_groups_used == 0 ||
      s.expert_groups_used > s.expert_groups ||
      (s.expert_groups > 1 && s.experts / s.expert_groups * s.expert_groups_used < s.experts_active))
    throw InputError(fmt::format("{}: fields 'n_group' {} and 'topk_group' {} do not split the {} routed experts into "
                                 "groups whose chosen ones hold the {} a token takes", where, s.expert_groups,
                                 s.expert_groups_used, s.experts, s.experts_active));
}

// The sliding window and the layers it applies to: transformers' layer_types when given, else
// the architecture's placement. A window of 0 or null, or use_sliding_window false, is none.
void read_windows(const Json& c, ModelSpec& s, const Architecture& arch, const std::string& where) {
  const bool enabled = optional_bool(c, "use_sliding_window", where).value_or(arch.windows != Windows::qwen);
  const uint64_t window = optional_uint(c, "sliding_window", where).value_or(0);
  if (const auto it = c.find("layer_types"); it != c.end() && !it->is_null()) {
    if (!it->is_array() || it->size() != s.layers)
      throw InputError(fmt::format("{}: field 'layer_types' must list one type per layer ({} layers)", where, s.layers));
    std::vector<bool> sliding;
    for (const Json& t : *it) {
      const std::string type = t.is_string() ? t.get<std::string>() : t.dump();
      const bool linear = arch.linear != Linear::none && type == "linear_attention";  // read_linear_attention's
      if (type != "full_attention" && type != "sliding_attention" && !linear)
        throw InputError(fmt::format("{}: field 'layer_types' holds \"{}\"; supported: full_attention, "
                                     "sliding_attention{}", where, type, arch.linear != Linear::none ? ", linear_attention" : ""));
      sliding.push_back(type == "sliding_attention");
    }
    if (std::find(sliding.begin(), sliding.end(), true) == sliding.end()) return;
    if (window == 0)
      throw InputError(fmt::format("{}: field 'layer_types' lists sliding_attention layers but 'sliding_window' "
                                   "is not a positive number of tokens", where));
    s.sliding_window = window;
    s.window_layers = std::move(sliding);
    return;
  }
  if (arch.windows == Windows::chunked) {  // a chunk: what a layer attends to and caches at most
    const uint64_t chunk = optional_uint(c, "attention_chunk_size", where).value_or(0);
    if (chunk == 0) return;
    s.sliding_window = chunk;
    s.chunked_windows = true;
    if (const auto it = c.find("no_rope_layers"); it != c.end() && it->is_array() && !it->empty()) {
      if (it->size() != s.layers)
        throw InputError(fmt::format("{}: field 'no_rope_layers' must list one flag per layer ({} layers)", where, s.layers));
      for (const Json& f : *it) s.window_layers.push_back(f != 0);  // 1: rotates, and attends within its chunk
    } else {
      for (uint64_t l = 0; l < s.layers; ++l) s.window_layers.push_back((l + 1) % 4 != 0);
    }
    return;
  }
  if (!enabled || window == 0 || arch.windows == Windows::none) return;
  s.sliding_window = window;
  switch (arch.windows) {
    case Windows::all_layers: break;  // window_layers empty: every layer
    case Windows::qwen: {
      const uint64_t first = optional_uint(c, "max_window_layers", where).value_or(0);
      for (uint64_t l = 0; l < s.layers; ++l) s.window_layers.push_back(l >= first);
      break;
    }
    case Windows::every_other:
      for (uint64_t l = 0; l < s.layers; ++l) s.window_layers.push_back(l % 2 == 0);
      break;
    case Windows::pattern: {
      const uint64_t n = optional_uint(c, "sliding_window_pattern", where).value_or(6);
      if (n == 0 || n > kMaxModelLayers)
        throw InputError(fmt::format("{}: field 'sliding_window_pattern' is {}; expected 1 to {} (one full layer in "
                                     "every that many)", where, n, kMaxModelLayers));
      for (uint64_t l = 0; l < s.layers; ++l) s.window_layers.push_back((l + 1) % n != 0);
      break;
    }
    case Windows::none: case Windows::chunked: break;
  }
  if (std::find(s.window_layers.begin(), s.window_layers.end(), true) == s.window_layers.end() &&
      !s.window_layers.empty()) {
    s.window_layers.clear();
    s.sliding_window = 0;
  }
}

// Gated DeltaNet layers: layer_types' linear_attention entries when given, else all but every
// full_attention_interval-th layer (transformers' default 4); their heads and the convolution's width.
void read_linear_attention(const Json& c, ModelSpec& s, Linear linear, const std::string& where) {
  if (const auto it = c.find("layer_types"); it != c.end() && it->is_array()) {  // read_windows checked its length
    for (const Json& t : *it) s.linear_layers.push_back(t == "linear_attention");
  } else {
    const uint64_t interval = optional_uint(c, "full_attention_interval", where).value_or(4);
    if (interval == 0 || interval > kMaxModelLayers)
      throw InputError(fmt::format("{}: field 'full_attention_interval' is {}; expected 1 to {} (one attention layer in "
                                   "every that many)", where, interval, kMaxModelLayers));
    for (uint64_t l = 0; l < s.layers; ++l) s.linear_layers.push_back((l + 1) % interval != 0);
  }
  ModelSpec::LinearAttention& a = s.linear;
  a.key_heads = require_positive(c, "linear_num_key_heads", where);
  a.value_heads = require_positive(c, "linear_num_value_heads", where);
  a.key_head_dim = require_positive(c, "linear_key_head_dim", where);
  a.value_head_dim = require_positive(c, "linear_value_head_dim", where);
  a.conv_kernel = require_positive(c, "linear_conv_kernel_dim", where);
  a.state_f32 = optional_string(c, "mamba_ssm_dtype", where).value_or("") == "float32";
  a.fused_beta_alpha = linear == Linear::qwen3_next;
  s.attn_output_gate = optional_bool(c, "attn_output_gate", where).value_or(true);
  if (const auto shared = optional_uint(c, "shared_expert_intermediate_size", where); shared && *shared && s.is_moe()) {
    s.shared_experts = 1;
    s.shared_intermediate = *shared;
    s.shared_expert_gate = true;
  }
}

// config.json's key for each ModelSpec member.
std::string hf_field_name(const Json& c, std::string_view member) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 20> kKeys{{
      {"hidden", "hidden_size"}, {"layers", "num_hidden_layers"}, {"heads", "num_attention_heads"},
      {"kv_heads", "num_key_value_heads"}, {"head_dim", "head_dim"},
      {"intermediate", "intermediate_size"}, {"vocab", "vocab_size"}, {"experts", "num_experts"},
      {"experts_active", "num_experts_per_tok"}, {"moe_intermediate", "moe_intermediate_size"},
      {"decoder_sparse_step", "decoder_sparse_step"}, {"max_context", "max_position_embeddings"},
      {"sliding_window", "sliding_window"}, {"rope_theta", "rope_theta"},
      {"rms_norm_eps", "rms_norm_eps"}, {"linear.key_heads", "linear_num_key_heads"},
      {"linear.value_heads", "linear_num_value_heads"}, {"linear.key_head_dim", "linear_key_head_dim"},
      {"linear.value_head_dim", "linear_value_head_dim"}, {"linear.conv_kernel", "linear_conv_kernel_dim"}}};
  if (member == "head_dim" && !c.contains("head_dim"))
    return "head_dim (hidden_size / num_attention_heads, no 'head_dim' given)";
  for (const auto& [m, key] : kKeys)
    if (m == member) return fmt::format("field '{}'", key);
  return std::string(member);
}

}  // namespace

void validate_model_shape(const ModelSpec& s, const ShapeFieldName& name_of, std::string_view where) {
  auto in_range = [&](std::string_view member, uint64_t v, uint64_t lo, uint64_t hi) {
    if (v < lo || v > hi)
      throw InputError(fmt::format("{}: {} is {}; expected {} to {}", where, name_of(member), v, lo, hi));
  };
  in_range("hidden", s.hidden, 1, kMaxModelWidth);
  in_range("layers", s.layers, 1, kMaxModelLayers);
  in_range("heads", s.heads, 1, kMaxAttentionHeads);
  in_range("kv_heads", s.kv_heads, 1, s.heads);
  if (s.heads % s.kv_heads != 0)
    throw InputError(fmt::format("{}: {} is {}; expected a divisor of {} = {}", where, name_of("kv_heads"),
                                 s.kv_heads, name_of("heads"), s.heads));
  in_range("head_dim", s.head_dim, 2, kMaxHeadDim);
  if (s.head_dim % 2 != 0)
    throw InputError(fmt::format("{}: {} is {}; expected an even number (RoPE rotates pairs)", where,
                                 name_of("head_dim"), s.head_dim));
  in_range("vocab", s.vocab, 1, kMaxVocab);
  in_range("max_context", s.max_context, 0, kMaxContextTokens);
  in_range("sliding_window", s.sliding_window, 0, kMaxContextTokens);
  if (!s.window_layers.empty() && s.window_layers.size() != s.layers)
    throw InputError(fmt::format("{}: {} window flags for {} layers", where, s.window_layers.size(), s.layers));
  if (s.is_hybrid()) {
    if (s.linear_layers.size() != s.layers)
      throw InputError(fmt::format("{}: {} linear-attention flags for {} layers", where, s.linear_layers.size(), s.layers));
    if (s.attention_layers() == 0)
      throw InputError(fmt::format("{}: every layer is a linear-attention layer; a model without one attention layer "
                                   "(a pure state-space model) is not modelled", where));
    in_range("linear.key_heads", s.linear.key_heads, 1, kMaxAttentionHeads);
    in_range("linear.value_heads", s.linear.value_heads, 1, kMaxAttentionHeads);
    in_range("linear.key_head_dim", s.linear.key_head_dim, 1, kMaxHeadDim);
    in_range("linear.value_head_dim", s.linear.value_head_dim, 1, kMaxHeadDim);
    in_range("linear.conv_kernel", s.linear.conv_kernel, 2, 64);
    if (s.linear.value_heads % s.linear.key_heads != 0)
      throw InputError(fmt::format("{}: {} is {}; expected a multiple of {} = {} (value heads share key heads)", where,
                                   name_of("linear.value_heads"), s.linear.value_heads, name_of("linear.key_heads"),
                                   s.linear.key_heads));
  }
  if (s.is_moe()) {
    in_range("experts", s.experts, 1, kMaxExperts);
    in_range("experts_active", s.experts_active, 1, s.experts);
    in_range("moe_intermediate", s.moe_intermediate, 1, kMaxFfnWidth);
    in_range("decoder_sparse_step", s.decoder_sparse_step, 1, s.layers);
  }
  bool has_dense_layer = false;
  for (uint64_t l = 0; l < s.layers && !has_dense_layer; ++l) has_dense_layer = !s.layer_is_moe(l);
  in_range("intermediate", s.intermediate, has_dense_layer ? 1 : 0, kMaxFfnWidth);
  auto positive_finite = [&](std::string_view member, double v, double hi) {
    if (!(v > 0.0 && v <= hi))
      throw InputError(fmt::format("{}: {} is {}; expected a number above 0 and at most {}", where,
                                   name_of(member), v, hi));
  };
  positive_finite("rope_theta", s.rope_theta, 1e12);
  positive_finite("rms_norm_eps", s.rms_norm_eps, 1.0);
  // Within the bounds above each tensor holds < 2^50 elements and all of them < 2^63.
  const uint64_t total = parameter_count(s).total;
  if (total > kMaxParameters)
    throw InputError(fmt::format("{}: the shape holds {:.3g} parameters; at most {:.3g} (2^44) "
                                 "expected: check {}, {} and the FFN widths", where,
                                 static_cast<double>(total), static_cast<double>(kMaxParameters),
                                 name_of("hidden"), name_of("layers")));
}

uint64_t ModelSpec::window_layer_count() const {
  if (!sliding_window) return 0;
  if (window_layers.empty()) return layers;
  return static_cast<uint64_t>(std::count(window_layers.begin(), window_layers.end(), true));
}

uint64_t ModelSpec::linear_layer_count() const {
  return static_cast<uint64_t>(std::count(linear_layers.begin(), linear_layers.end(), true));
}

double ModelSpec::moe_layer_units() const {
  return static_cast<double>(moe_layer_count()) * static_cast<double>(8 + experts_active) / 12.0;
}

uint64_t ModelSpec::moe_layer_count() const {
  uint64_t n = 0;
  for (uint64_t l = 0; l < layers; ++l) n += layer_is_moe(l) ? 1 : 0;
  return n;
}

bool ModelSpec::layer_is_moe(uint64_t layer) const {
  if (!is_moe()) return false;
  if (std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) != mlp_only_layers.end())
    return false;
  if (layer < first_dense_layers) return false;
  return (layer + 1) % decoder_sparse_step == 0;
}

namespace {

// rope_scaling's fields by type (transformers' rope_utils names). A field the type would use but
// the runtime does not (DeepSeek's mscale) is refused by name rather than ignored.
RopeScaling rope_scaling_from_hf(const Json& r, uint64_t max_context, const std::string& where) {
  const std::string at = where + ": rope_scaling";
  RopeScaling rs;
  auto type = optional_string(r, "rope_type", at);
  rs.key = at + ".rope_type";
  if (!type) {
    type = optional_string(r, "type", at);
    rs.key = at + ".type";
  }
  rs.type = type.value_or("");
  if (!rs.applies()) return rs;
  const auto positive = [&](std::string_view field, double fallback) {
    const double v = optional_number(r, field, at).value_or(fallback);
    if (!(v > 0.0) || !std::isfinite(v) || v > 1e6)
      throw InputError(fmt::format("{}: field '{}' is {}; expected a positive number", at, field, v));
    return v;
  };
  if (rs.type == "linear" || rs.type == "yarn" || rs.type == "llama3" || rs.type == "dynamic") {
    if (!r.contains("factor"))
      throw InputError(fmt::format("{}: type '{}' needs field 'factor' (the context extension)", at, rs.type));
    rs.factor = positive("factor", 1.0);
  }
  if (rs.type == "yarn" || rs.type == "llama3")
    rs.original_context = optional_uint(r, "original_max_position_embeddings", at).value_or(max_context);
  if (rs.type == "yarn") {
    rs.beta_fast = positive("beta_fast", 32.0);
    rs.beta_slow = positive("beta_slow", 1.0);
    if (r.contains("attention_factor")) rs.attention_factor = positive("attention_factor", 1.0);
    if (r.contains("mscale")) rs.mscale = positive("mscale", 1.0);  // DeepSeek's magnitude terms
    if (r.contains("mscale_all_dim")) rs.mscale_all_dim = positive("mscale_all_dim", 1.0);
    if (rs.original_context == 0)
      throw InputError(fmt::format("{}: YaRN needs 'original_max_position_embeddings' (or max_position_embeddings)", at));
  }
  if (rs.type == "llama3") {
    rs.low_freq_factor = positive("low_freq_factor", 1.0);
    rs.high_freq_factor = positive("high_freq_factor", 4.0);
    if (!(rs.high_freq_factor >= rs.low_freq_factor))  // equal: no band between kept and slowed (Llama 4 Scout)
      throw InputError(fmt::format("{}: high_freq_factor {} must be at least low_freq_factor {}", at, rs.high_freq_factor,
                                   rs.low_freq_factor));
  }
  return rs;
}
}  // namespace

ModelSpec model_spec_from_hf_config(const Json& c, const std::string& name, const std::string& where) {
  if (!c.is_object())
    throw InputError(fmt::format("{}: expected a config.json object, found {}", where, c.type_name()));
  ModelSpec s;
  s.name = name;
  s.source = where;
  for (const char* key : {"_hf_id", "_name_or_path"})
    if (const auto it = c.find(key); s.hf_id.empty() && it != c.end() && it->is_string()) s.hf_id = it->get<std::string>();
  if (const auto it = c.find("_hf_weights"); it != c.end() && it->is_string()) s.hf_weights = it->get<std::string>();
  s.model_type = require_string(c, "model_type", where);
  const Architecture* arch = nullptr;
  for (const auto& a : kArchitectures)
    if (a.model_type == s.model_type) arch = &a;
  if (!arch) {
    std::string known;
    for (const auto& a : kArchitectures) known += (known.empty() ? "" : ", ") + std::string(a.model_type);
    throw InputError(fmt::format("{}: field 'model_type' is \"{}\"; supported: {}", where,
                                 s.model_type, known));
  }
  if (!arch->text_model.empty()) {  // a multimodal wrapper: the language model is its text_config
    Json text = require_object(c, "text_config", where);
    text["model_type"] = std::string(arch->text_model);
    for (const char* key : {"_hf_id", "_name_or_path", "_hf_weights", "tie_word_embeddings"})  // the wrapper's own
      if (c.contains(key) && !text.contains(key)) text[key] = c[key];
    ModelSpec spec = model_spec_from_hf_config(text, name, where + ": text_config");
    spec.source = where;
    return spec;
  }
  refuse_unread_shape_keys(c, *arch, where);
  s.gguf_arch = arch->gguf_arch;
  s.qk_norm = arch->qk_norm;
  s.qkv_bias = arch->qkv_bias || optional_bool(c, "attention_bias", where).value_or(false);

  s.hidden = require_positive(c, "hidden_size", where);
  s.layers = require_positive(c, "num_hidden_layers", where);
  s.heads = require_positive(c, "num_attention_heads", where);
  s.kv_heads = optional_uint(c, "num_key_value_heads", where).value_or(s.heads);
  if (s.kv_heads == 0 || s.heads % s.kv_heads != 0)
    throw InputError(fmt::format("{}: num_key_value_heads = {} must be positive and divide "
                                 "num_attention_heads = {}", where, s.kv_heads, s.heads));
  if (auto hd = optional_uint(c, "head_dim", where)) {
    s.head_dim = *hd;
  } else {
    if (s.hidden % s.heads != 0)
      throw InputError(fmt::format("{}: no 'head_dim', and hidden_size {} is not a multiple of "
                                   "num_attention_heads {}", where, s.hidden, s.heads));
    s.head_dim = s.hidden / s.heads;
  }
  s.intermediate = require_positive(c, "intermediate_size", where);
  s.vocab = require_positive(c, "vocab_size", where);
  const bool gemma = s.gguf_arch == "gemma2" || s.gguf_arch == "gemma3";
  s.tied_embeddings = optional_bool(c, "tie_word_embeddings", where).value_or(gemma);  // transformers' defaults
  s.max_context = optional_uint(c, "max_position_embeddings", where).value_or(0);
  // transformers' newer rope_parameters hold the base and the rotated fraction (Qwen3.5)
  const Json* rope = c.contains("rope_parameters") && c["rope_parameters"].is_object() ? &c["rope_parameters"] : nullptr;
  const std::string rope_where = where + ": rope_parameters";
  s.rope_theta = optional_number(c, "rope_theta", where)
                     .value_or(rope ? optional_number(*rope, "rope_theta", rope_where).value_or(10000.0) : 10000.0);
  if (rope && rope->contains("mrope_section")) {  // multimodal RoPE: text positions rotate every section alike
    const Json& sections = (*rope)["mrope_section"];
    if (!sections.is_array() || sections.size() > 4)
      throw InputError(fmt::format("{}: field 'mrope_section' must list at most 4 counts of rotated pairs", rope_where));
    for (const Json& n : sections) {
      if (!n.is_number_unsigned())
        throw InputError(fmt::format("{}: field 'mrope_section' holds {}; expected counts of rotated pairs", rope_where,
                                     n.dump()));
      s.rope_sections.push_back(n.get<uint64_t>());
    }
  }
  s.rms_norm_eps = optional_number(c, "rms_norm_eps", where).value_or(1e-6);
  read_windows(c, s, *arch, where);
  if (gemma) {
    s.post_norms = true;
    s.embedding_scale = true;
    s.gelu_ffn = true;
    s.query_pre_attn_scalar = optional_number(c, "query_pre_attn_scalar", where).value_or(0.0);
    if (s.query_pre_attn_scalar < 0)
      throw InputError(fmt::format("{}: field 'query_pre_attn_scalar' is {}; expected a positive number", where,
                                   s.query_pre_attn_scalar));
    if (s.gguf_arch == "gemma3")  // transformers' default, and llama.cpp's fixed base for these layers
      s.rope_local_theta = optional_number(c, "rope_local_base_freq", where).value_or(10000.0);
    s.attn_softcap = optional_number(c, "attn_logit_softcapping", where).value_or(0.0);
    s.final_softcap = optional_number(c, "final_logit_softcapping", where).value_or(0.0);
    if (s.attn_softcap < 0 || s.final_softcap < 0)
      throw InputError(fmt::format("{}: the soft-capping fields must be positive (or null)", where));
  }
  s.fused_qkv = s.gguf_arch == "phi3";
  if (auto it = c.find("rope_scaling"); it != c.end() && it->is_object())
    s.rope_scaling = rope_scaling_from_hf(*it, s.max_context, where);
  s.rope_freqs_tensor = s.rope_scaling.type == "llama3";
  // The context a scaled model serves, as vLLM derives it: YaRN the original times the factor,
  // linear (and dynamic) max_position_embeddings times it; llama3's is max_position_embeddings.
  const RopeScaling& rs = s.rope_scaling;
  // Gemma 3's max_position_embeddings is the scaled context already (vLLM skips it too).
  if (rs.factor > 1.0 && (rs.type == "yarn" || rs.type == "linear" || rs.type == "dynamic") && s.gguf_arch != "gemma3") {
    const double base = static_cast<double>(rs.type == "yarn" && rs.original_context ? rs.original_context : s.max_context);
    s.max_context = static_cast<uint64_t>(std::min(base * rs.factor, 1e12));
  }
  std::optional<double> partial = optional_number(c, "partial_rotary_factor", where);
  if (!partial && rope) partial = optional_number(*rope, "partial_rotary_factor", rope_where);
  if (auto f = partial) {
    if (!(*f > 0.0 && *f <= 1.0))
      throw InputError(fmt::format("{}: field 'partial_rotary_factor' is {}; expected a fraction in (0, 1]", where, *f));
    const auto dims = static_cast<uint64_t>(static_cast<double>(s.head_dim) * *f) / 2 * 2;
    s.rope_dims = dims == s.head_dim ? 0 : dims;
    if (dims == 0)
      throw InputError(fmt::format("{}: field 'partial_rotary_factor' {} rotates no value of head_dim {}", where, *f, s.head_dim));
  }

  if (arch->moe == Moe::mixtral) {  // every layer's FFN is intermediate_size-wide experts
    read_experts(c, s, "num_local_experts", where);
    s.moe_intermediate = s.intermediate;
  }
  if (arch->moe == Moe::gpt_oss) {  // experts of intermediate_size every layer, biases on all of them
    read_experts(c, s, "num_local_experts", where);
    s.moe_intermediate = s.intermediate;
    s.expert_bias = true;
    s.attn_sinks = true;
    s.attn_output_bias = s.qkv_bias;
    s.swiglu_limit = optional_number(c, "swiglu_limit", where).value_or(7.0);
    if (!(s.swiglu_limit > 0.0))
      throw InputError(fmt::format("{}: field 'swiglu_limit' is {}; expected a positive clamp", where, s.swiglu_limit));
  }
  if (arch->moe == Moe::deepseek) {
    s.kv_lora_rank = require_positive(c, "kv_lora_rank", where);
    s.q_lora_rank = optional_uint(c, "q_lora_rank", where).value_or(0);  // null: a plain q projection
    s.qk_rope_dim = require_positive(c, "qk_rope_head_dim", where);
    s.qk_nope_dim = require_positive(c, "qk_nope_head_dim", where);
    s.v_head_dim = require_positive(c, "v_head_dim", where);
    s.head_dim = s.qk_nope_dim + s.qk_rope_dim;  // the query/key head, not hidden / heads
    s.kv_heads = s.heads;                        // every head reads the shared latent
    read_deepseek_moe(c, s, where);
  }
  if (arch->moe == Moe::minimax) {  // every layer's FFN intermediate_size-wide experts, no shared one
    read_experts(c, s, "num_local_experts", where);
    s.moe_intermediate = s.intermediate;
    s.expert_score_bias = optional_bool(c, "use_routing_bias", where).value_or(true);
    const std::string scoring = optional_string(c, "scoring_func", where).value_or("sigmoid");
    if (scoring != "softmax" && scoring != "sigmoid")
      throw InputError(fmt::format("{}: field 'scoring_func' is '{}'; expected softmax or sigmoid", where, scoring));
    s.sigmoid_routing = scoring == "sigmoid";
    s.qk_norm = optional_bool(c, "use_qk_norm", where).value_or(true);
    s.qk_norm_whole = s.qk_norm;
    if (const auto rotary = optional_uint(c, "rotary_dim", where)) {
      if (*rotary == 0 || *rotary > s.head_dim || *rotary % 2 != 0)
        throw InputError(fmt::format("{}: field 'rotary_dim' is {}; expected an even count up to head_dim {}", where,
                                     *rotary, s.head_dim));
      s.rope_dims = *rotary == s.head_dim ? 0 : *rotary;
    }
  }
  if (arch->moe == Moe::llama4) {
    read_experts(c, s, "num_local_experts", where);
    s.moe_intermediate = s.intermediate;
    s.intermediate = optional_uint(c, "intermediate_size_mlp", where).value_or(s.intermediate);  // the dense layers'
    s.decoder_sparse_step = optional_uint(c, "interleave_moe_layer_step", where).value_or(1);
    if (s.decoder_sparse_step == 0)
      throw InputError(fmt::format("{}: field 'interleave_moe_layer_step' is 0; expected >= 1", where));
    s.shared_experts = 1;
    s.sigmoid_routing = true;
  }
  if (arch->moe == Moe::glm) {  // transformers' Glm4Moe: always a sigmoid router with its bias
    read_deepseek_moe(c, s, where);
    s.expert_score_bias = true;
    s.sigmoid_routing = true;
    s.qk_norm = optional_bool(c, "use_qk_norm", where).value_or(false);
  }
  if (arch->moe == Moe::qwen) {
    read_experts(c, s, "num_experts", where);
    s.moe_intermediate = require_positive(c, "moe_intermediate_size", where);
    s.decoder_sparse_step = optional_uint(c, "decoder_sparse_step", where).value_or(1);
    if (s.decoder_sparse_step == 0)
      throw InputError(fmt::format("{}: field 'decoder_sparse_step' is 0; expected >= 1", where));
    if (auto it = c.find("mlp_only_layers"); it != c.end() && !it->is_null()) {
      if (!it->is_array())
        throw InputError(fmt::format("{}: field 'mlp_only_layers' must be an array of layer indices", where));
      for (const auto& l : *it) {
        if (!l.is_number_unsigned() || l.get<uint64_t>() >= s.layers)
          throw InputError(fmt::format("{}: field 'mlp_only_layers' holds {}; expected layer "
                                       "indices below {}", where, l.dump(), s.layers));
        s.mlp_only_layers.push_back(l.get<uint64_t>());
      }
    }
  }
  if (arch->linear != Linear::none) read_linear_attention(c, s, arch->linear, where);
  validate_model_shape(s, [&](std::string_view member) { return hf_field_name(c, member); }, where);
  return s;
}

std::vector<std::string> gguf_architectures() {
  std::vector<std::string> out;
  for (const Architecture& a : kArchitectures)
    if (std::find(out.begin(), out.end(), a.gguf_arch) == out.end()) out.emplace_back(a.gguf_arch);
  return out;
}

std::optional<std::string> model_type_of_gguf_arch(std::string_view gguf_arch) {
  for (const Architecture& a : kArchitectures)
    if (a.gguf_arch == gguf_arch) return std::string(a.model_type);
  return std::nullopt;
}

ParameterCount parameter_count(const ModelSpec& spec) {
  ParameterCount p;
  for (const TensorInfo& t : tensor_inventory(spec)) {
    if (t.role == TensorRole::rope_freqs) continue;
    const uint64_t n = t.elements();
    p.total += n;
    if (t.role == TensorRole::token_embd || t.role == TensorRole::output) p.embedding += n;
    if (t.role == TensorRole::token_embd) p.input_embedding += n;
    if (t.is_expert())
      p.active += n / spec.experts * spec.experts_active;  // routed: only the chosen experts
    else
      p.active += n;
  }
  return p;
}

}  // namespace infer_plan
