// Every tensor of a model as llama.cpp's GGUF converter writes it: name ("blk.3.attn_q.weight"),
// shape in GGUF order (ne[0] = row length, the dimension a quantization block runs along), and
// a role that the size recipes and the runtime dispatch on.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "planner/model/model_spec.hpp"

namespace infer_plan {

enum class TensorRole {
  token_embd, rope_freqs, output_norm, output,
  attn_norm, attn_q, attn_k, attn_v, attn_output, attn_q_norm, attn_k_norm,
  attn_q_bias, attn_k_bias, attn_v_bias,
  ffn_norm, ffn_gate, ffn_up, ffn_down,
  ffn_gate_inp, ffn_gate_exps, ffn_up_exps, ffn_down_exps,
  // DeepSeek's multi-head latent attention (llama.cpp's deepseek2 names)
  attn_q_a, attn_q_a_norm, attn_q_b, attn_kv_a_mqa, attn_kv_a_norm, attn_k_b, attn_v_b,
  attn_kv_b,  // older deepseek2 files: attn_k_b and attn_v_b as one {kv_lora, heads x (nope + v)}
  // DeepSeek's shared experts and routing bias
  ffn_gate_shexp, ffn_up_shexp, ffn_down_shexp, ffn_exp_probs_b,
  // Phi-3/4's fused q, k, v projection (its ffn_up holds gate and up, 2 x n_ff wide)
  attn_qkv,
  // Gemma's norms after attention and after the FFN; GPT-OSS's pre-FFN norm has the first's name
  attn_post_norm, ffn_post_norm,
  // GPT-OSS: attention output bias, one sink logit per head, router and expert biases
  attn_output_bias, attn_sinks, ffn_gate_inp_bias, ffn_gate_exps_bias, ffn_up_exps_bias, ffn_down_exps_bias,
  // Qwen3-Next's Gated DeltaNet layers (llama.cpp's ssm_* names; their q, k and v projection is attn_qkv,
  // the output gate's attn_gate) and its shared expert's gate
  attn_gate, ssm_conv1d, ssm_dt, ssm_a, ssm_ba, ssm_norm, ssm_out, ffn_gate_inp_shexp,
  ssm_beta, ssm_alpha,  // Qwen3.5's beta and alpha gates apart
};

std::string_view tensor_role_name(TensorRole role);

struct TensorInfo {
  std::string name;
  std::vector<uint64_t> shape;  // GGUF order: ne[0] first
  TensorRole role;
  int64_t layer = -1;           // block index, -1 for global tensors

  uint64_t elements() const;
  uint64_t row_length() const { return shape.front(); }
  bool is_expert() const;       // one of the stacked ffn_*_exps tensors (or their biases)
  bool is_vector() const { return shape.size() == 1; }  // norms, biases: kept in F32 by llama.cpp
  // A weight matrix (or a stack of them): what a matmul reads. Not a bias, even a 2-D one (GPT-OSS's
  // per-expert biases), nor a norm.
  bool is_matrix() const { return shape.size() >= 2 && name.ends_with(".weight"); }
  // Written and kept F32 by llama.cpp's converter and llama-quantize: vectors, biases and the
  // MoE router (tiny, and routing is sensitive).
  // Also the Gated DeltaNet convolution's few taps per channel.
  bool kept_f32() const { return !is_matrix() || role == TensorRole::ffn_gate_inp || role == TensorRole::ssm_conv1d; }
};

std::vector<TensorInfo> tensor_inventory(const ModelSpec& spec);

}  // namespace infer_plan
