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
// (Mixtral's experts are intermediate_size wide, every layer MoE).
enum class Moe { none, qwen, mixtral, deepseek };

struct Architecture {
  std::string_view model_type;
  std::string_view gguf_arch;
  bool qk_norm;
  bool qkv_bias;
  Moe moe;
};

constexpr std::array kArchitectures{
    Architecture{"qwen3", "qwen3", true, false, Moe::none},
    Architecture{"qwen3_moe", "qwen3moe", true, false, Moe::qwen},
    Architecture{"llama", "llama", false, false, Moe::none},
    Architecture{"mistral", "llama", false, false, Moe::none},  // llama.cpp converts Mistral as llama
    Architecture{"mixtral", "llama", false, false, Moe::mixtral},  // ... and Mixtral, with expert tensors
    Architecture{"qwen2", "qwen2", false, true, Moe::none},
    // Multi-head latent attention, shared and routed experts; llama.cpp's deepseek2 for both.
    Architecture{"deepseek_v2", "deepseek2", false, false, Moe::deepseek},
    Architecture{"deepseek_v3", "deepseek2", false, false, Moe::deepseek},
};

// Keys that change a model's shape under the architectures that use them. One the model_type does
// not read would be ignored in silence (a Mixtral config relabelled mistral counted 7.24 B
// parameters of its 46.7 B): refused, naming the key and what it means.
void refuse_unread_shape_keys(const Json& c, const Architecture& arch, const std::string& where) {
  struct Key {
    std::string_view key, meaning;
    Moe read_by;  // none: no supported model_type reads it
  };
  static constexpr std::array kKeys{
      Key{"num_experts", "routed experts (Qwen MoE)", Moe::qwen},
      Key{"moe_intermediate_size", "the experts' FFN width (Qwen MoE)", Moe::qwen},
      Key{"num_local_experts", "routed experts (Mixtral)", Moe::mixtral},
      Key{"n_routed_experts", "routed experts (DeepSeek)", Moe::deepseek},
      Key{"n_shared_experts", "shared experts (DeepSeek)", Moe::deepseek},
      Key{"kv_lora_rank", "multi-head latent attention (DeepSeek)", Moe::deepseek},
      Key{"q_lora_rank", "multi-head latent attention (DeepSeek)", Moe::deepseek},
      Key{"sliding_window_pattern", "alternating sliding-window layers (Gemma)", Moe::none},
  };
  for (const Key& k : kKeys) {
    const auto it = c.find(k.key);
    if (it == c.end() || it->is_null() || (it->is_number() && it->get<double>() == 0)) continue;
    if (k.read_by != Moe::none && k.read_by == arch.moe) continue;
    if (arch.moe == Moe::deepseek && k.key == "moe_intermediate_size") continue;  // DeepSeek's expert width too
    throw InputError(fmt::format("{}: field '{}' ({}) is not part of model_type '{}', so the shape would be wrong; "
                                 "{}", where, k.key, k.meaning, arch.model_type,
                                 k.read_by == Moe::mixtral    ? "use model_type 'mixtral'"
                                 : k.read_by == Moe::qwen     ? "use model_type 'qwen3_moe'"
                                 : k.read_by == Moe::deepseek ? "use model_type 'deepseek_v3' (or deepseek_v2)"
                                                              : "this architecture is not supported yet"));
  }
  // Sliding-window layers among full ones (transformers' layer_types) are not modelled yet.
  if (const auto it = c.find("layer_types"); it != c.end() && it->is_array())
    for (const Json& t : *it)
      if (!t.is_string() || t.get<std::string>() != "full_attention")
        throw InputError(fmt::format("{}: field 'layer_types' holds {}; only full_attention layers are supported yet",
                                     where, t.dump()));
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

// config.json's key for each ModelSpec member.
std::string hf_field_name(const Json& c, std::string_view member) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 15> kKeys{{
      {"hidden", "hidden_size"}, {"layers", "num_hidden_layers"}, {"heads", "num_attention_heads"},
      {"kv_heads", "num_key_value_heads"}, {"head_dim", "head_dim"},
      {"intermediate", "intermediate_size"}, {"vocab", "vocab_size"}, {"experts", "num_experts"},
      {"experts_active", "num_experts_per_tok"}, {"moe_intermediate", "moe_intermediate_size"},
      {"decoder_sparse_step", "decoder_sparse_step"}, {"max_context", "max_position_embeddings"},
      {"sliding_window", "sliding_window"}, {"rope_theta", "rope_theta"},
      {"rms_norm_eps", "rms_norm_eps"}}};
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
    if (!(rs.high_freq_factor > rs.low_freq_factor))
      throw InputError(fmt::format("{}: high_freq_factor {} must exceed low_freq_factor {}", at, rs.high_freq_factor,
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
  s.tied_embeddings = optional_bool(c, "tie_word_embeddings", where).value_or(false);
  s.max_context = optional_uint(c, "max_position_embeddings", where).value_or(0);
  s.rope_theta = optional_number(c, "rope_theta", where).value_or(10000.0);
  s.rms_norm_eps = optional_number(c, "rms_norm_eps", where).value_or(1e-6);
  if (optional_bool(c, "use_sliding_window", where).value_or(s.model_type == "mistral" || s.model_type == "mixtral"))
    s.sliding_window = optional_uint(c, "sliding_window", where).value_or(0);
  if (auto it = c.find("rope_scaling"); it != c.end() && it->is_object())
    s.rope_scaling = rope_scaling_from_hf(*it, s.max_context, where);
  s.rope_freqs_tensor = s.rope_scaling.type == "llama3";
  // The context a scaled model serves, as vLLM derives it: YaRN the original times the factor,
  // linear (and dynamic) max_position_embeddings times it; llama3's is max_position_embeddings.
  const RopeScaling& rs = s.rope_scaling;
  if (rs.factor > 1.0 && (rs.type == "yarn" || rs.type == "linear" || rs.type == "dynamic")) {
    const double base = static_cast<double>(rs.type == "yarn" && rs.original_context ? rs.original_context : s.max_context);
    s.max_context = static_cast<uint64_t>(std::min(base * rs.factor, 1e12));
  }
  if (auto f = optional_number(c, "partial_rotary_factor", where)) {
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
  if (arch->moe == Moe::deepseek) {
    s.kv_lora_rank = require_positive(c, "kv_lora_rank", where);
    s.q_lora_rank = optional_uint(c, "q_lora_rank", where).value_or(0);  // null: a plain q projection
    s.qk_rope_dim = require_positive(c, "qk_rope_head_dim", where);
    s.qk_nope_dim = require_positive(c, "qk_nope_head_dim", where);
    s.v_head_dim = require_positive(c, "v_head_dim", where);
    s.head_dim = s.qk_nope_dim + s.qk_rope_dim;  // the query/key head, not hidden / heads
    s.kv_heads = s.heads;                        // every head reads the shared latent
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
  validate_model_shape(s, [&](std::string_view member) { return hf_field_name(c, member); }, where);
  return s;
}

ParameterCount parameter_count(const ModelSpec& spec) {
  ParameterCount p;
  for (const TensorInfo& t : tensor_inventory(spec)) {
    if (t.role == TensorRole::rope_freqs) continue;
    const uint64_t n = t.elements();
    p.total += n;
    if (t.role == TensorRole::token_embd || t.role == TensorRole::output) p.embedding += n;
    if (t.is_expert())
      p.active += n / spec.experts * spec.experts_active;  // routed: only the chosen experts
    else
      p.active += n;
  }
  return p;
}

}  // namespace infer_plan
