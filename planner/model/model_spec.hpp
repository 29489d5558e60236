// A decoder-only transformer described by a Hugging Face config.json: the shapes every size,
// KV and latency formula needs. Dense and MoE (Qwen3-MoE style), GQA, explicit head_dim.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "planner/core/json_fields.hpp"

namespace infer_plan {

// RoPE scaling as the source declares it (config.json rope_scaling, GGUF {arch}.rope.scaling.*).
// The runtime applies none, llama3 (rope_freqs), linear and YaRN, and refuses any other type,
// naming `key`; the planner's figures do not depend on it.
struct RopeScaling {
  std::string type;                 // "" (none), "none", "default", "llama3", "linear", "yarn", ...
  std::string key;                  // where the type was declared, for messages
  double factor = 1.0;              // context extension: linear divides positions by it
  uint64_t original_context = 0;    // YaRN/llama3: the trained context (0: max_context)
  double beta_fast = 32.0;          // YaRN: pairs turning more often than this over the original
  double beta_slow = 1.0;           //   context keep their angle, fewer than beta_slow interpolate
  double attention_factor = 0.0;    // YaRN: cos and sin times this; 0: 0.1 ln(factor) + 1
  double mscale = 0.0, mscale_all_dim = 0.0;  // DeepSeek's YaRN magnitude terms (0: absent; not applied)
  double low_freq_factor = 1.0;     // llama3 (config.json): the ramp between kept and slowed
  double high_freq_factor = 4.0;    //   frequencies, for the synthetic rope_freqs

  bool applies() const { return !type.empty() && type != "none" && type != "default"; }
};

struct ModelSpec {
  std::string name;          // "qwen3-8b", or the file stem for a path
  std::string source;        // where it was read from ("built-in", or a path)
  std::string hf_id;         // its Hugging Face repository ("Qwen/Qwen3-8B": a built-in's _hf_id, a config's
                             // _name_or_path); empty: not known
  std::string hf_weights = "BF16";  // the weights format that repository holds (_hf_weights: DeepSeek-V3's FP8_BLOCK128)
  std::string model_type;    // HF model_type: qwen3, qwen3_moe, llama, mistral, qwen2
  std::string gguf_arch;     // llama.cpp architecture: qwen3, qwen3moe, llama, qwen2

  uint64_t hidden = 0;             // n_embd
  uint64_t layers = 0;             // n_layer
  uint64_t heads = 0;              // n_head (query heads)
  uint64_t kv_heads = 0;           // n_head_kv (GQA); == heads for MHA
  uint64_t head_dim = 0;           // explicit in Qwen3; hidden / heads otherwise
  uint64_t intermediate = 0;       // dense FFN width (n_ff)
  uint64_t vocab = 0;
  bool tied_embeddings = false;    // output head shares token_embd
  bool qk_norm = false;            // Qwen3: RMSNorm on q and k per head
  bool qk_norm_whole = false;      // MiniMax-M2: over the whole q and k projections, not per head
  bool qkv_bias = false;           // Qwen2: biases on q, k, v projections
  bool rope_freqs_tensor = false;  // Llama 3.1 "llama3" rope scaling: GGUF stores rope_freqs
  bool attn_output_bias = false;   // GPT-OSS: a bias on attn_output too
  bool attn_sinks = false;         // GPT-OSS: a learned sink logit per head in every softmax
  bool post_norms = false;         // Gemma 2/3: RMSNorm after attention and after the FFN as well
  bool embedding_scale = false;    // Gemma 2/3: the input embedding times sqrt(hidden)
  bool gelu_ffn = false;           // Gemma 2/3: the gated FFN through GELU (tanh) instead of SiLU
  bool fused_qkv = false;          // Phi-3/4: one attn_qkv and one ffn_up (gate and up) per layer in GGUF
  bool expert_bias = false;        // GPT-OSS: biases on the router and on every expert's projections
  double attn_softcap = 0.0;       // Gemma 2: scores capped as c tanh(s / c); 0: none
  double final_softcap = 0.0;      // Gemma 2: the logits likewise
  double swiglu_limit = 0.0;       // GPT-OSS: the experts' gate clamped above at it and up within +-it, then
                                   // gate sigmoid(1.702 gate) (up + 1); 0: plain SwiGLU
  RopeScaling rope_scaling;
  uint64_t rope_dims = 0;          // rotated values per head (0: all of head_dim; fewer: partial RoPE)
  std::vector<uint64_t> rope_sections;  // Qwen3.5's multimodal RoPE sections (a text position rotates all alike)

  // MoE (zero experts = dense).
  uint64_t experts = 0;              // num_experts (routed)
  uint64_t experts_active = 0;       // num_experts_per_tok
  uint64_t moe_intermediate = 0;     // per-expert FFN width
  uint64_t decoder_sparse_step = 1;  // layer l is MoE when (l + 1) % step == 0 ...
  std::vector<uint64_t> mlp_only_layers;  // ... and l is not listed here ...
  uint64_t first_dense_layers = 0;   // ... and l >= this (DeepSeek's first_k_dense_replace)
  uint64_t shared_experts = 0;       // DeepSeek: experts every token runs, moe_intermediate wide each
  uint64_t shared_intermediate = 0;  // Qwen3-Next: the shared experts' width together (0: moe_intermediate each)
  bool shared_expert_gate = false;   // Qwen3-Next: the shared expert's output times sigmoid(a row . x)
  bool expert_score_bias = false;    // DeepSeek-V3: a per-expert routing bias (exp_probs_b)
  bool moe_norm_top_k = true;        // the top k's routing weights renormalised to sum to 1 (DeepSeek's
                                     // norm_topk_prob: V2 false, V3 true; the other families always)
  // DeepSeek-V3: experts scored by sigmoid (not softmax), chosen within the expert_groups_used best
  // of expert_groups groups (a group's score: its two best biased scores), weights times
  // expert_weights_scale (routed_scaling_factor)
  bool sigmoid_routing = false;
  uint64_t expert_groups = 1, expert_groups_used = 1;
  double expert_weights_scale = 1.0;

  // Multi-head latent attention (DeepSeek-V2/V3; kv_lora_rank 0: none). Queries through a rank
  // q_lora_rank bottleneck (0: a plain projection), keys and values from one latent of
  // kv_lora_rank values plus qk_rope_dim RoPE'd key values shared by all heads: what the cache
  // holds per token and layer (vLLM's and llama.cpp's MLA caches). head_dim is the query/key
  // head width (nope + rope), v_head_dim the value head width.
  uint64_t q_lora_rank = 0, kv_lora_rank = 0, qk_rope_dim = 0, qk_nope_dim = 0, v_head_dim = 0;

  // Hybrid linear attention (Qwen3-Next, Qwen3.5): linear_layers marks the layers that run Gated
  // DeltaNet instead of softmax attention. Such a layer caches nothing per token: each sequence keeps
  // a fixed state, the last conv_kernel - 1 tokens of its q, k and v (for a causal convolution) and
  // per value head a key_head_dim x value_head_dim matrix. Empty: every layer attends.
  struct LinearAttention {
    uint64_t key_heads = 0, value_heads = 0, key_head_dim = 0, value_head_dim = 0, conv_kernel = 0;
    bool state_f32 = false;  // the config asks for an F32 temporal state (mamba_ssm_dtype float32)
    bool fused_beta_alpha = false;  // Qwen3-Next's beta and alpha gates in one projection (Qwen3.5: two)
    uint64_t key_width() const { return key_heads * key_head_dim; }
    uint64_t value_width() const { return value_heads * value_head_dim; }
    uint64_t conv_channels() const { return 2 * key_width() + value_width(); }  // q, k and v
  };
  std::vector<bool> linear_layers;
  LinearAttention linear;
  bool attn_output_gate = false;  // Qwen3-Next: q_proj also yields a sigmoid gate on attention's output (twice as wide)

  uint64_t max_context = 0;     // max_position_embeddings
  // Sliding-window attention: a window layer attends to (and caches) only the last
  // sliding_window tokens. window_layers marks them per layer (Gemma 2 every other layer, Gemma 3
  // five of six, GPT-OSS every other); empty with a window: every layer (Mistral v0.1's 4096).
  uint64_t sliding_window = 0;
  std::vector<bool> window_layers;
  // A window the model declares but the plan's engine does not apply (llama.cpp's llama
  // architecture, which Mistral converts to, has no sliding window): kept for the warning only.
  uint64_t ignored_window = 0;
  // Llama 4: a window layer attends within fixed chunks of sliding_window tokens (its cache holds the
  // current chunk) rather than a sliding window; counted as a window of that size (an upper bound on
  // the positions read).
  bool chunked_windows = false;
  // What the engine's cache keeps of a window layer per sequence, when more than the window: llama.cpp
  // keeps n_swa + n_ubatch cells (the window and a micro-batch being written), padded to 256, and reads
  // them all. 0: the window itself (vLLM, SGLang).
  uint64_t window_cache_tokens = 0;
  double rope_theta = 10000.0;
  // Gemma 3: the sliding-window layers rotate with their own base and no scaling (0: as the rest)
  double rope_local_theta = 0.0;
  // Gemma 2/3: q is scaled by query_pre_attn_scalar^-1/2 instead of head_dim^-1/2 (0: head_dim)
  double query_pre_attn_scalar = 0.0;
  double rms_norm_eps = 1e-6;

  bool is_moe() const { return experts > 0; }
  bool is_mla() const { return kv_lora_rank > 0; }
  // The tokens layer l attends to and caches at most; 0: the whole context.
  uint64_t layer_window(uint64_t layer) const {
    return sliding_window && !layer_is_linear(layer) && (window_layers.empty() || window_layers[layer]) ? sliding_window : 0;
  }
  uint64_t window_layer_count() const;
  // The tokens a window layer of one sequence caches (and an engine reads) at most.
  uint64_t cached_window() const { return window_cache_tokens ? window_cache_tokens : sliding_window; }
  bool layer_is_moe(uint64_t layer) const;
  bool is_hybrid() const { return !linear_layers.empty(); }
  bool layer_is_linear(uint64_t layer) const { return is_hybrid() && linear_layers[layer]; }
  uint64_t linear_layer_count() const;
  uint64_t attention_layers() const { return layers - linear_layer_count(); }  // the layers with a KV cache
  uint64_t shared_expert_width() const { return shared_intermediate ? shared_intermediate : moe_intermediate * shared_experts; }
  uint64_t moe_layer_count() const;  // the layers with experts
  // The layers with experts in units of a layer routing each token to 4 experts: llama.cpp's graph
  // gives a layer of k experts 8 + k nodes (9: the router's product, softmax, top-k, the weights'
  // get_rows, three expert products, the GLU, the weighting; and k - 1 adds of the experts'
  // outputs), so it counts (8 + k) / 12. A step's time beyond its reads grows with its nodes.
  double moe_layer_units() const;
  uint64_t q_width() const { return heads * head_dim; }     // attention width (not always hidden)
  uint64_t kv_width() const { return kv_heads * head_dim; }  // per K or V
  uint64_t attn_out_width() const { return heads * (is_mla() ? v_head_dim : head_dim); }  // attn_output's input
  // Values the KV cache holds per token and layer: K and V rows of kv_width, or MLA's one latent
  // row of kv_lora_rank + qk_rope_dim (V is read from it: no V row).
  uint64_t kv_k_values() const { return is_mla() ? kv_lora_rank + qk_rope_dim : kv_width(); }
  uint64_t kv_v_values() const { return is_mla() ? 0 : kv_width(); }
  // Attention FLOPs per layer for one query token and one cached position: 2 per multiply-add over
  // the scores and the weighted values; MLA in its absorbed form (llama.cpp's and vLLM's decode):
  // scores over the latent and the RoPE part, values over the latent.
  uint64_t attention_flops_per_position() const {
    return is_mla() ? 2 * heads * (kv_lora_rank + qk_rope_dim + kv_lora_rank) : 4 * q_width();
  }
};

// llama.cpp applies a sliding window only in these architectures (gemma2, gemma3, gpt-oss; llama4's
// chunks likewise); its
// llama (which Mistral converts to) and qwen2 have none, and its phi3 disables it.
inline bool llama_cpp_applies_windows(std::string_view gguf_arch) {
  return gguf_arch == "gemma2" || gguf_arch == "gemma3" || gguf_arch == "gpt-oss" || gguf_arch == "llama4";
}

// How the source names a ModelSpec member in messages: "field 'hidden_size'" for config.json,
// "metadata key 'qwen3.embedding_length'" for a GGUF. Called with the member's name ("hidden").
using ShapeFieldName = std::function<std::string(std::string_view member)>;

// Refuses a shape that no model has and that would divide by zero or overflow the size
// arithmetic downstream: every width, count and the total parameter count within
// planner/core/limits, head_dim even, heads a multiple of KV heads, finite RoPE base and epsilon.
void validate_model_shape(const ModelSpec& spec, const ShapeFieldName& name_of, std::string_view where);

// Parses a config.json object; `where` names the file for errors. `name` becomes spec.name.
ModelSpec model_spec_from_hf_config(const Json& config, const std::string& name,
                                    const std::string& where);

// Parameter counts from the tensor inventory (rope_freqs, a GGUF-only table, not counted).
struct ParameterCount {
  uint64_t total = 0;
  uint64_t active = 0;          // per token: experts_active of experts (all of them when dense)
  uint64_t embedding = 0;       // token_embd, plus output when untied
  uint64_t input_embedding = 0;  // token_embd alone: a row looked up per token, not multiplied
  uint64_t non_embedding() const { return total - embedding; }
  // Active per token without the input embedding's lookup (when it is not also the output head, as
  // with tied embeddings): DeepSeek's and GPT-OSS's cards count so, Qwen's count `active`.
  uint64_t active_without_lookup(bool tied) const { return tied ? active : active - input_embedding; }
};
ParameterCount parameter_count(const ModelSpec& spec);

// llama.cpp's general.architecture names the architecture table knows, in its order, and the
// Hugging Face model_type a GGUF file of each is read as (its first row: gemma3 -> gemma3_text);
// nullopt for a name it does not know.
std::vector<std::string> gguf_architectures();
std::optional<std::string> model_type_of_gguf_arch(std::string_view gguf_arch);

}  // namespace infer_plan
