// `infer-plan model [NAME|PATH]`: a model's shapes, parameter counts (total and active) and,
// with --tensors, the full GGUF tensor inventory (names and shapes as llama.cpp writes them).
#include <fmt/format.h>
#include <memory>

#include "apps/format.hpp"
#include "apps/commands.hpp"
#include "planner/cost/kv_cache.hpp"
#include "apps/plan_options.hpp"
#include "apps/text_table.hpp"
#include "planner/catalog/catalog.hpp"
#include "planner/model/tensor_inventory.hpp"

namespace infer_plan::apps {
namespace {

struct ModelArgs {
  std::string model;
  bool tensors = false;
  OutputOptions out;
};

std::string shape_text(const std::vector<uint64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

Json spec_json(const ModelSpec& s) {
  const ParameterCount p = parameter_count(s);
  return Json{{"name", s.name}, {"source", s.source}, {"model_type", s.model_type},
              {"gguf_arch", s.gguf_arch}, {"hidden", s.hidden}, {"layers", s.layers},
              {"heads", s.heads}, {"kv_heads", s.kv_heads}, {"head_dim", s.head_dim},
              {"intermediate", s.intermediate}, {"vocab", s.vocab},
              {"tied_embeddings", s.tied_embeddings}, {"qk_norm", s.qk_norm}, {"qkv_bias", s.qkv_bias},
              {"experts", s.experts}, {"experts_active", s.experts_active},
              {"moe_intermediate", s.moe_intermediate}, {"max_context", s.max_context},
              {"parameters_total", p.total}, {"parameters_active", p.active},
              {"parameters_active_without_lookup", p.active_without_lookup(s.tied_embeddings)},
              {"parameters_embedding", p.embedding}, {"parameters_non_embedding", p.non_embedding()},
              {"shared_experts", s.shared_experts}, {"first_dense_layers", s.first_dense_layers},
              {"q_lora_rank", s.q_lora_rank}, {"kv_lora_rank", s.kv_lora_rank}, {"qk_rope_dim", s.qk_rope_dim},
              {"v_head_dim", s.is_mla() ? s.v_head_dim : s.head_dim},
              {"kv_bytes_per_token", kv_bytes_per_token(s, {GgmlType::BF16, GgmlType::BF16})},
              {"full_attention_layers", s.attention_layers() - s.window_layer_count()},
              {"linear_attention_layers", s.linear_layer_count()},
              {"state_bytes_per_sequence", recurrent_state_bytes(s, {GgmlType::BF16, GgmlType::BF16})},
              {"sliding_window_layers", s.window_layer_count()},
              {"kv_window_tokens", s.window_layer_count() ? Json(s.sliding_window) : Json(nullptr)},
              {"attention_sinks", s.attn_sinks},
              {"attn_logit_softcap", s.attn_softcap > 0 ? Json(s.attn_softcap) : Json(nullptr)},
              {"final_logit_softcap", s.final_softcap > 0 ? Json(s.final_softcap) : Json(nullptr)},
              {"swiglu_limit", s.swiglu_limit > 0 ? Json(s.swiglu_limit) : Json(nullptr)}};
}

// "36 layers see the whole context" or "18 full, 18 within a 128-token window (...)".
std::string attention_text(const ModelSpec& s) {
  std::string text;
  if (s.is_hybrid()) {
    const ModelSpec::LinearAttention& a = s.linear;
    text = fmt::format("{} of {} layers attend to the whole context{}; {} are linear attention (Gated DeltaNet: {} key and "
                       "{} value heads of {} x {}, a {}-tap convolution), a fixed state per sequence and no KV",
                       s.attention_layers(), s.layers, s.attn_output_gate ? " (a sigmoid gate on their output)" : "",
                       s.linear_layer_count(), a.key_heads, a.value_heads, a.key_head_dim, a.value_head_dim, a.conv_kernel);
  } else if (const uint64_t w = s.window_layer_count(); w == 0)
    text = fmt::format("every layer attends to the whole context");
  else if (w == s.layers)
    text = fmt::format("every layer within a {}-token sliding window (KV capped there)", s.sliding_window);
  else if (s.chunked_windows)
    text = fmt::format("{} full layers, {} within {}-token chunks (their KV capped at a chunk)", s.layers - w, w,
                       s.sliding_window);
  else
    text = fmt::format("{} full layers, {} within a {}-token sliding window (their KV capped there)", s.layers - w, w,
                       s.sliding_window);
  if (s.attn_sinks) text += "; a learned sink per head";
  if (s.attn_softcap > 0) text += fmt::format("; scores soft-capped at {}", s.attn_softcap);
  if (s.final_softcap > 0) text += fmt::format("; logits soft-capped at {}", s.final_softcap);
  return text;
}

void run(const ModelArgs& a) {
  if (a.model.empty()) {
    if (a.out.json()) {
      Json all = Json::array();
      for (const auto& n : builtin_model_names()) all.push_back(spec_json(load_model(n)));
      print_json(Json{{"models", all}});
      return;
    }
    TextTable t{{"model", "arch", "layers", "hidden", "heads/kv", "head_dim", "params", "active"},
                {false, false, true, true, true, true, true, true}, {}};
    for (const auto& n : builtin_model_names()) {
      const ModelSpec s = load_model(n);
      const ParameterCount p = parameter_count(s);
      t.rows.push_back({s.name, s.gguf_arch, std::to_string(s.layers), std::to_string(s.hidden),
                        fmt::format("{}/{}", s.heads, s.kv_heads), std::to_string(s.head_dim),
                        fmt::format("{:.2f} B", p.total / 1e9), fmt::format("{:.2f} B", p.active / 1e9)});
    }
    fmt::print("{}", t.render());
    return;
  }
  const ModelSpec s = load_model(a.model);
  const auto inventory = tensor_inventory(s);
  if (a.out.json()) {
    Json j = spec_json(s);
    if (a.tensors) {
      Json ts = Json::array();
      for (const auto& t : inventory)
        ts.push_back({{"name", t.name}, {"shape", t.shape}, {"role", tensor_role_name(t.role)},
                      {"elements", t.elements()}});
      j["tensors"] = ts;
    }
    print_json(j);
    return;
  }
  const ParameterCount p = parameter_count(s);
  fmt::print("{} ({}, llama.cpp arch {}), from {}\n", s.name, s.model_type, s.gguf_arch, s.source);
  fmt::print("  layers {}, hidden {}, heads {} (KV {}), head_dim {} (attention width {}), vocab {}\n",
             s.layers, s.hidden, s.heads, s.kv_heads, s.head_dim, s.q_width(), s.vocab);
  if (s.is_moe())
    fmt::print("  MoE: {} experts, {} active, expert FFN {}{}{}{}\n", s.experts, s.experts_active, s.moe_intermediate,
               s.swiglu_limit > 0 ? fmt::format(" (SwiGLU clamped at {})", s.swiglu_limit) : "",
               s.shared_experts ? fmt::format(", {} shared", s.shared_experts) : "",
               s.first_dense_layers ? fmt::format("; first {} layers dense (FFN {})", s.first_dense_layers, s.intermediate)
                                    : "");
  if (s.is_mla())
    fmt::print("  MLA: q_lora_rank {}, kv latent {} + RoPE key {} per token and layer (the cache), value heads {}\n",
               s.q_lora_rank ? std::to_string(s.q_lora_rank) : std::string("none"), s.kv_lora_rank, s.qk_rope_dim,
               s.v_head_dim);
  else if (const uint64_t dense = s.layers - s.moe_layer_count(); dense > 0)  // none when every layer has experts
    fmt::print("  dense FFN {}{}\n", s.intermediate, s.is_moe() ? fmt::format(" (in {} of the {} layers)", dense, s.layers) : "");
  fmt::print("  attention: {}\n", attention_text(s));
  fmt::print("  embeddings {}, q/k norm {}, qkv bias {}, trained context {}\n",
             s.tied_embeddings ? "tied" : "untied", s.qk_norm ? "yes" : "no", s.qkv_bias ? "yes" : "no",
             s.max_context);
  fmt::print("  parameters: {} total ({:.3f} B), {} active per token ({:.3f} B), {} non-embedding ({:.3f} B)\n",
             p.total, p.total / 1e9, p.active, p.active / 1e9, p.non_embedding(), p.non_embedding() / 1e9);
  if (p.active_without_lookup(s.tied_embeddings) != p.active)
    fmt::print("  active per token without the input embedding (a lookup, not a product): {} ({:.3f} B); model cards "
               "differ: DeepSeek's and GPT-OSS's count this one, Qwen's the one above, GLM's neither embedding table "
               "({:.3f} B)\n",
               p.active_without_lookup(s.tied_embeddings), p.active_without_lookup(s.tied_embeddings) / 1e9,
               static_cast<double>(p.active - p.embedding) / 1e9);
  fmt::print("  tensors: {}\n", inventory.size());
  if (a.tensors) {
    TextTable t{{"name", "shape (GGUF ne)", "elements"}, {false, false, true}, {}};
    for (const auto& tensor : inventory)
      t.rows.push_back({tensor.name, shape_text(tensor.shape), std::to_string(tensor.elements())});
    fmt::print("\n{}", t.render("  "));
  }
}

}  // namespace

void add_model_command(CLI::App& app) {
  auto args = std::make_shared<ModelArgs>();
  CLI::App* cmd = app.add_subcommand(
      "model", "A model's shapes, parameter counts (total, active) and GGUF tensor inventory");
  cmd->add_option("MODEL", args->model,
                  "Built-in name or config.json path; lists the built-in models when omitted");
  cmd->add_flag("--tensors", args->tensors, "List every tensor with its GGUF name and shape");
  args->out.add_to(*cmd);
  cmd->footer("Examples:\n"
              "  infer-plan model qwen3-235b-a22b --tensors   # parameters (total, active) and GGUF tensor names\n"
              "  infer-plan model path/to/config.json         # a Hugging Face config.json");
  cmd->callback([args] { run(*args); });
}

}  // namespace infer_plan::apps
