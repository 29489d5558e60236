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
  // DeepSeek's shared experts and routing bias
  ffn_gate_shexp, ffn_up_shexp, ffn_down_shexp, ffn_exp_probs_b,
};

std::string_view tensor_role_name(TensorRole role);

struct TensorInfo {
  std::string name;
  std::vector<uint64_t> shape;  // GGUF order: ne[0] first
  TensorRole role;
  int64_t layer = -1;           // block index, -1 for global tensors

  uint64_t elements() const;
  uint64_t row_length() const { return shape.front(); }
  bool is_expert() const;       // one of the stacked ffn_*_exps tensors
  bool is_vector() const { return shape.size() == 1; }  // norms, biases: kept in F32 by llama.cpp
};

std::vector<TensorInfo> tensor_inventory(const ModelSpec& spec);

}  // namespace infer_plan
