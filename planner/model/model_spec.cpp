// Reads the config.json keys that shape the tensors. Unknown architectures are refused rather
// than guessed: a wrong shape would give a silently wrong size.
#include "planner/model/model_spec.hpp"

#include <algorithm>
#include <array>
#include <fmt/format.h>

#include "planner/core/input_error.hpp"
#include "planner/model/tensor_inventory.hpp"

namespace infer_plan {
namespace {

struct Architecture {
  std::string_view model_type;
  std::string_view gguf_arch;
  bool qk_norm;
  bool qkv_bias;
  bool moe;
};

constexpr std::array kArchitectures{
    Architecture{"qwen3", "qwen3", true, false, false},
    Architecture{"qwen3_moe", "qwen3moe", true, false, true},
    Architecture{"llama", "llama", false, false, false},
    Architecture{"mistral", "llama", false, false, false},  // llama.cpp converts Mistral as llama
    Architecture{"qwen2", "qwen2", false, true, false},
};

uint64_t require_positive(const Json& c, std::string_view key, std::string_view where) {
  uint64_t v = require_uint(c, key, where);
  if (v == 0) throw InputError(fmt::format("{}: field '{}' is 0; expected a positive integer", where, key));
  return v;
}

}  // namespace

bool ModelSpec::layer_is_moe(uint64_t layer) const {
  if (!is_moe()) return false;
  if (std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) != mlp_only_layers.end())
    return false;
  return (layer + 1) % decoder_sparse_step == 0;
}

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
  if (s.head_dim == 0 || s.head_dim % 2 != 0)
    throw InputError(fmt::format("{}: head_dim = {}; expected a positive even integer", where, s.head_dim));
  s.intermediate = require_positive(c, "intermediate_size", where);
  s.vocab = require_positive(c, "vocab_size", where);
  s.tied_embeddings = optional_bool(c, "tie_word_embeddings", where).value_or(false);
  s.max_context = optional_uint(c, "max_position_embeddings", where).value_or(0);
  s.rope_theta = optional_number(c, "rope_theta", where).value_or(10000.0);
  s.rms_norm_eps = optional_number(c, "rms_norm_eps", where).value_or(1e-6);
  if (optional_bool(c, "use_sliding_window", where).value_or(s.model_type == "mistral"))
    s.sliding_window = optional_uint(c, "sliding_window", where).value_or(0);
  if (auto it = c.find("rope_scaling"); it != c.end() && it->is_object()) {
    auto type = optional_string(*it, "rope_type", where + ": rope_scaling");
    if (!type) type = optional_string(*it, "type", where + ": rope_scaling");
    s.rope_freqs_tensor = type && *type == "llama3";
  }

  if (arch->moe) {
    s.experts = require_positive(c, "num_experts", where);
    s.experts_active = require_positive(c, "num_experts_per_tok", where);
    if (s.experts_active > s.experts)
      throw InputError(fmt::format("{}: num_experts_per_tok = {} exceeds num_experts = {}", where,
                                   s.experts_active, s.experts));
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
