// Names and shapes follow llama.cpp's gguf-py tensor map (token_embd, blk.N.attn_q, ...,
// ffn_gate_exps stacked as {n_embd, n_ff_exp, n_expert}). Order: globals first, then blocks.
#include "planner/model/tensor_inventory.hpp"

#include <fmt/format.h>

namespace infer_plan {

std::string_view tensor_role_name(TensorRole role) {
  switch (role) {
    case TensorRole::token_embd: return "token_embd";
    case TensorRole::rope_freqs: return "rope_freqs";
    case TensorRole::output_norm: return "output_norm";
    case TensorRole::output: return "output";
    case TensorRole::attn_norm: return "attn_norm";
    case TensorRole::attn_q: return "attn_q";
    case TensorRole::attn_k: return "attn_k";
    case TensorRole::attn_v: return "attn_v";
    case TensorRole::attn_output: return "attn_output";
    case TensorRole::attn_q_norm: return "attn_q_norm";
    case TensorRole::attn_k_norm: return "attn_k_norm";
    case TensorRole::attn_q_bias: return "attn_q_bias";
    case TensorRole::attn_k_bias: return "attn_k_bias";
    case TensorRole::attn_v_bias: return "attn_v_bias";
    case TensorRole::ffn_norm: return "ffn_norm";
    case TensorRole::ffn_gate: return "ffn_gate";
    case TensorRole::ffn_up: return "ffn_up";
    case TensorRole::ffn_down: return "ffn_down";
    case TensorRole::ffn_gate_inp: return "ffn_gate_inp";
    case TensorRole::ffn_gate_exps: return "ffn_gate_exps";
    case TensorRole::ffn_up_exps: return "ffn_up_exps";
    case TensorRole::ffn_down_exps: return "ffn_down_exps";
    case TensorRole::attn_q_a: return "attn_q_a";
    case TensorRole::attn_q_a_norm: return "attn_q_a_norm";
    case TensorRole::attn_q_b: return "attn_q_b";
    case TensorRole::attn_kv_a_mqa: return "attn_kv_a_mqa";
    case TensorRole::attn_kv_a_norm: return "attn_kv_a_norm";
    case TensorRole::attn_k_b: return "attn_k_b";
    case TensorRole::attn_v_b: return "attn_v_b";
    case TensorRole::attn_kv_b: return "attn_kv_b";
    case TensorRole::ffn_gate_shexp: return "ffn_gate_shexp";
    case TensorRole::ffn_up_shexp: return "ffn_up_shexp";
    case TensorRole::ffn_down_shexp: return "ffn_down_shexp";
    case TensorRole::ffn_exp_probs_b: return "ffn_exp_probs_b";
    case TensorRole::attn_qkv: return "attn_qkv";
    case TensorRole::attn_post_norm: return "post_attention_norm";
    case TensorRole::ffn_post_norm: return "post_ffw_norm";
    case TensorRole::attn_output_bias: return "attn_output_bias";
    case TensorRole::attn_sinks: return "attn_sinks";
    case TensorRole::ffn_gate_inp_bias: return "ffn_gate_inp_bias";
    case TensorRole::ffn_gate_exps_bias: return "ffn_gate_exps_bias";
    case TensorRole::ffn_up_exps_bias: return "ffn_up_exps_bias";
    case TensorRole::ffn_down_exps_bias: return "ffn_down_exps_bias";
    case TensorRole::attn_gate: return "attn_gate";
    case TensorRole::ssm_conv1d: return "ssm_conv1d";
    case TensorRole::ssm_dt: return "ssm_dt";
    case TensorRole::ssm_a: return "ssm_a";
    case TensorRole::ssm_ba: return "ssm_ba";
    case TensorRole::ssm_norm: return "ssm_norm";
    case TensorRole::ssm_out: return "ssm_out";
    case TensorRole::ffn_gate_inp_shexp: return "ffn_gate_inp_shexp";
    case TensorRole::ssm_beta: return "ssm_beta";
    case TensorRole::ssm_alpha: return "ssm_alpha";
  }
  return "?";
}

uint64_t TensorInfo::elements() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

bool TensorInfo::is_expert() const {
  return role == TensorRole::ffn_gate_exps || role == TensorRole::ffn_up_exps ||
         role == TensorRole::ffn_down_exps || role == TensorRole::ffn_gate_exps_bias ||
         role == TensorRole::ffn_up_exps_bias || role == TensorRole::ffn_down_exps_bias;
}

std::vector<TensorInfo> tensor_inventory(const ModelSpec& s) {
  std::vector<TensorInfo> out;
  auto global = [&](std::string name, std::vector<uint64_t> shape, TensorRole role) {
    out.push_back({std::move(name), std::move(shape), role, -1});
  };
  global("token_embd.weight", {s.hidden, s.vocab}, TensorRole::token_embd);
  if (s.rope_freqs_tensor) global("rope_freqs.weight", {(s.rope_dims ? s.rope_dims : s.head_dim) / 2}, TensorRole::rope_freqs);

  for (uint64_t l = 0; l < s.layers; ++l) {
    auto add = [&](std::string_view suffix, std::vector<uint64_t> shape, TensorRole role) {
      out.push_back({fmt::format("blk.{}.{}", l, suffix), std::move(shape), role,
                     static_cast<int64_t>(l)});
    };
    add("attn_norm.weight", {s.hidden}, TensorRole::attn_norm);
    if (s.is_mla()) {
      // llama.cpp's deepseek2 tensors: queries through the q_lora bottleneck (or plainly), the
      // latent and the shared RoPE key from one projection, then per head the latent's key and
      // value maps (attn_k_b {nope, kv_lora, heads}, attn_v_b {kv_lora, v, heads}).
      if (s.q_lora_rank) {
        add("attn_q_a.weight", {s.hidden, s.q_lora_rank}, TensorRole::attn_q_a);
        add("attn_q_a_norm.weight", {s.q_lora_rank}, TensorRole::attn_q_a_norm);
        add("attn_q_b.weight", {s.q_lora_rank, s.q_width()}, TensorRole::attn_q_b);
      } else {
        add("attn_q.weight", {s.hidden, s.q_width()}, TensorRole::attn_q);
      }
      add("attn_kv_a_mqa.weight", {s.hidden, s.kv_lora_rank + s.qk_rope_dim}, TensorRole::attn_kv_a_mqa);
      add("attn_kv_a_norm.weight", {s.kv_lora_rank}, TensorRole::attn_kv_a_norm);
      add("attn_k_b.weight", {s.qk_nope_dim, s.kv_lora_rank, s.heads}, TensorRole::attn_k_b);
      add("attn_v_b.weight", {s.kv_lora_rank, s.v_head_dim, s.heads}, TensorRole::attn_v_b);
      add("attn_output.weight", {s.attn_out_width(), s.hidden}, TensorRole::attn_output);
      add("ffn_norm.weight", {s.hidden}, TensorRole::ffn_norm);
      if (s.layer_is_moe(l)) {
        add("ffn_gate_inp.weight", {s.hidden, s.experts}, TensorRole::ffn_gate_inp);
        if (s.expert_score_bias) add("exp_probs_b.bias", {s.experts}, TensorRole::ffn_exp_probs_b);
        add("ffn_gate_exps.weight", {s.hidden, s.moe_intermediate, s.experts}, TensorRole::ffn_gate_exps);
        add("ffn_up_exps.weight", {s.hidden, s.moe_intermediate, s.experts}, TensorRole::ffn_up_exps);
        add("ffn_down_exps.weight", {s.moe_intermediate, s.hidden, s.experts}, TensorRole::ffn_down_exps);
        if (s.shared_experts) {
          const uint64_t shared = s.moe_intermediate * s.shared_experts;
          add("ffn_gate_shexp.weight", {s.hidden, shared}, TensorRole::ffn_gate_shexp);
          add("ffn_up_shexp.weight", {s.hidden, shared}, TensorRole::ffn_up_shexp);
          add("ffn_down_shexp.weight", {shared, s.hidden}, TensorRole::ffn_down_shexp);
        }
      } else {
        add("ffn_gate.weight", {s.hidden, s.intermediate}, TensorRole::ffn_gate);
        add("ffn_up.weight", {s.hidden, s.intermediate}, TensorRole::ffn_up);
        add("ffn_down.weight", {s.intermediate, s.hidden}, TensorRole::ffn_down);
      }
      continue;
    }
    if (s.layer_is_linear(l)) {
      // Gated DeltaNet (llama.cpp's qwen3next): q, k and v in one projection, the output gate z,
      // the causal convolution's taps over q, k and v, per value head a step bias, a decay and the
      // beta and alpha gates, a norm over each value head, and the output projection.
      const ModelSpec::LinearAttention& a = s.linear;
      add("attn_qkv.weight", {s.hidden, a.conv_channels()}, TensorRole::attn_qkv);
      add("attn_gate.weight", {s.hidden, a.value_width()}, TensorRole::attn_gate);
      add("ssm_conv1d.weight", {a.conv_kernel, a.conv_channels()}, TensorRole::ssm_conv1d);
      add("ssm_dt.bias", {a.value_heads}, TensorRole::ssm_dt);
      add("ssm_a", {a.value_heads}, TensorRole::ssm_a);
      if (a.fused_beta_alpha) {
        add("ssm_ba.weight", {s.hidden, 2 * a.value_heads}, TensorRole::ssm_ba);
      } else {
        add("ssm_beta.weight", {s.hidden, a.value_heads}, TensorRole::ssm_beta);
        add("ssm_alpha.weight", {s.hidden, a.value_heads}, TensorRole::ssm_alpha);
      }
      add("ssm_norm.weight", {a.value_head_dim}, TensorRole::ssm_norm);
      add("ssm_out.weight", {a.value_width(), s.hidden}, TensorRole::ssm_out);
    } else if (s.fused_qkv) {
      add("attn_qkv.weight", {s.hidden, s.q_width() + 2 * s.kv_width()}, TensorRole::attn_qkv);
    } else {
      // Qwen3-Next's q projection also yields the output gate: twice the width
      add("attn_q.weight", {s.hidden, (s.attn_output_gate ? 2 : 1) * s.q_width()}, TensorRole::attn_q);
      add("attn_k.weight", {s.hidden, s.kv_width()}, TensorRole::attn_k);
      add("attn_v.weight", {s.hidden, s.kv_width()}, TensorRole::attn_v);
    }
    const bool attends = !s.layer_is_linear(l);
    if (s.qkv_bias && attends) {
      add("attn_q.bias", {s.q_width()}, TensorRole::attn_q_bias);
      add("attn_k.bias", {s.kv_width()}, TensorRole::attn_k_bias);
      add("attn_v.bias", {s.kv_width()}, TensorRole::attn_v_bias);
    }
    if (attends) add("attn_output.weight", {s.q_width(), s.hidden}, TensorRole::attn_output);
    if (s.attn_output_bias) add("attn_output.bias", {s.hidden}, TensorRole::attn_output_bias);
    if (s.attn_sinks) add("attn_sinks.weight", {s.heads}, TensorRole::attn_sinks);
    if (s.qk_norm && attends) {
      add("attn_q_norm.weight", {s.qk_norm_whole ? s.q_width() : s.head_dim}, TensorRole::attn_q_norm);
      add("attn_k_norm.weight", {s.qk_norm_whole ? s.kv_width() : s.head_dim}, TensorRole::attn_k_norm);
    }
    // GPT-OSS's, GLM-4.5's and Qwen3-Next's one norm before the FFN is llama.cpp's post_attention_norm;
    // Gemma has both.
    const bool post_attention_norm_only = s.expert_bias || s.gguf_arch == "glm4moe" || s.is_hybrid();
    if (s.post_norms || post_attention_norm_only)
      add("post_attention_norm.weight", {s.hidden}, TensorRole::attn_post_norm);
    if (!post_attention_norm_only) add("ffn_norm.weight", {s.hidden}, TensorRole::ffn_norm);
    if (s.layer_is_moe(l)) {
      add("ffn_gate_inp.weight", {s.hidden, s.experts}, TensorRole::ffn_gate_inp);
      if (s.expert_bias) add("ffn_gate_inp.bias", {s.experts}, TensorRole::ffn_gate_inp_bias);
      if (s.expert_score_bias) add("exp_probs_b.bias", {s.experts}, TensorRole::ffn_exp_probs_b);
      add("ffn_gate_exps.weight", {s.hidden, s.moe_intermediate, s.experts}, TensorRole::ffn_gate_exps);
      add("ffn_up_exps.weight", {s.hidden, s.moe_intermediate, s.experts}, TensorRole::ffn_up_exps);
      add("ffn_down_exps.weight", {s.moe_intermediate, s.hidden, s.experts}, TensorRole::ffn_down_exps);
      if (s.expert_bias) {
        add("ffn_gate_exps.bias", {s.moe_intermediate, s.experts}, TensorRole::ffn_gate_exps_bias);
        add("ffn_up_exps.bias", {s.moe_intermediate, s.experts}, TensorRole::ffn_up_exps_bias);
        add("ffn_down_exps.bias", {s.hidden, s.experts}, TensorRole::ffn_down_exps_bias);
      }
      if (s.shared_experts) {  // GLM-4.5's, as DeepSeek's; Qwen3-Next's behind a gate
        const uint64_t shared = s.shared_expert_width();
        if (s.shared_expert_gate) add("ffn_gate_inp_shexp.weight", {s.hidden}, TensorRole::ffn_gate_inp_shexp);
        add("ffn_gate_shexp.weight", {s.hidden, shared}, TensorRole::ffn_gate_shexp);
        add("ffn_up_shexp.weight", {s.hidden, shared}, TensorRole::ffn_up_shexp);
        add("ffn_down_shexp.weight", {shared, s.hidden}, TensorRole::ffn_down_shexp);
      }
    } else if (s.fused_qkv) {  // Phi: gate and up in one ffn_up of twice the width
      add("ffn_up.weight", {s.hidden, 2 * s.intermediate}, TensorRole::ffn_up);
      add("ffn_down.weight", {s.intermediate, s.hidden}, TensorRole::ffn_down);
    } else {
      add("ffn_gate.weight", {s.hidden, s.intermediate}, TensorRole::ffn_gate);
      add("ffn_up.weight", {s.hidden, s.intermediate}, TensorRole::ffn_up);
      add("ffn_down.weight", {s.intermediate, s.hidden}, TensorRole::ffn_down);
    }
    if (s.post_norms) add("post_ffw_norm.weight", {s.hidden}, TensorRole::ffn_post_norm);
  }
  global("output_norm.weight", {s.hidden}, TensorRole::output_norm);
  if (!s.tied_embeddings) global("output.weight", {s.hidden, s.vocab}, TensorRole::output);
  return out;
}

}  // namespace infer_plan
