// `infer-plan kv`: KV cache per token and per request for each KV type, with the saving
// against BF16 (Qwen3-8B at 8K: BF16 1152 MiB, q8_0 612 MiB, q4_0 324 MiB).
#include <fmt/format.h>
#include <memory>

#include "apps/format.hpp"
#include "apps/commands.hpp"
#include "apps/plan_options.hpp"
#include "apps/text_table.hpp"
#include "planner/catalog/catalog.hpp"
#include "planner/plan/predict.hpp"
#include "planner/cost/kv_cache.hpp"
#include "planner/cost/memory_fit.hpp"
#include "planner/plan/plan.hpp"
#include "planner/core/units.hpp"

namespace infer_plan::apps {
namespace {

struct KvArgs {
  PlanOptions plan;
  OutputOptions out;
  std::vector<std::string> types;
};

std::string trimmed(double v, std::string_view unit) {
  std::string s = fmt::format("{:.2f}", v);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s + " " + std::string(unit);
}

void run(const KvArgs& a) {
  const Plan plan = a.plan.resolve();
  const ModelSpec spec = plan_model_spec(plan);
  check_tensor_parallel(spec, plan.tp, "--tp");
  std::vector<KvTypes> rows;
  const bool explicit_pair = !a.plan.kv.empty() || !a.plan.kv_k.empty() || !a.plan.kv_v.empty();
  if (explicit_pair) rows.push_back(plan.kv);
  for (const std::string& name : a.types) {
    GgmlType t = kv_cache_type(name, "--types").type;
    rows.push_back(with_state_types({t, t}, spec, plan.engine));
  }
  if (rows.empty())
    for (GgmlType t : {GgmlType::BF16, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0})
      rows.push_back(with_state_types({t, t}, spec, plan.engine));

  // One request's bytes at the plan's context, unpaged (the KV table's convention): each layer holds
  // min(context, its window) tokens, so token bytes x context without windows.
  const auto layer_tokens = static_cast<uint64_t>(kv_attended_positions(kv_layer_windows(spec), plan.context));
  // (a hybrid model's linear-attention layers keep a state per sequence instead)
  const uint64_t kv_layers = spec.attention_layers();
  auto request_bytes = [&](KvTypes t) {
    return kv_bytes_per_token(spec, t, plan.tp) / kv_layers * layer_tokens + recurrent_state_bytes(spec, t, plan.tp);
  };
  const uint64_t bf16_request = request_bytes(with_state_types({GgmlType::BF16, GgmlType::BF16}, spec, plan.engine));

  if (a.out.json()) {
    Json per_type = Json::array();
    for (KvTypes t : rows) {
      const uint64_t token = kv_bytes_per_token(spec, t, plan.tp), request = request_bytes(t);
      per_type.push_back({{"type", kv_types_label(t)},
                          {"k_type", ggml_type_info(t.k).name},
                          {"v_type", ggml_type_info(t.v).name},
                          {"bytes_per_token", token},
                          {"bytes_per_request", request},
                          {"bytes_all_requests", request * plan.requests},
                          {"saving_vs_bf16_bytes_per_request", static_cast<int64_t>(bf16_request) -
                                                                   static_cast<int64_t>(request)}});
    }
    Json j{{"model", spec.name}, {"layers", spec.layers}, {"kv_heads", spec.kv_heads},
           {"head_dim", spec.head_dim}, {"context", plan.context}, {"requests", plan.requests},
           {"tp", plan.tp}, {"sliding_window_layers", spec.window_layer_count()},
           {"linear_attention_layers", spec.linear_layer_count()},
           {"state_bytes_per_request", rows.empty() ? 0 : recurrent_state_bytes(spec, rows.front(), plan.tp)},
           {"kv_window_tokens", spec.window_layer_count() ? Json(spec.cached_window()) : Json(nullptr)},
           {"per_type", per_type}};
    print_json(j);
    return;
  }

  if (spec.is_mla())
    fmt::print("KV cache of {}: {} layers x one latent row of {} + {} values (MLA: shared by the {} heads, no V "
               "rows){}\n", spec.name, spec.layers, spec.kv_lora_rank, spec.qk_rope_dim, spec.heads,
               plan.tp > 1 ? fmt::format(", the same on each of {} devices", plan.tp) : "");
  else
    fmt::print("KV cache of {}: {} layers x {} KV heads x {} head_dim ({} query heads{}){}\n", spec.name,
               spec.is_hybrid() ? fmt::format("{} attention", kv_layers) : fmt::to_string(spec.layers), spec.kv_heads, spec.head_dim, spec.heads,
               spec.kv_heads == spec.heads ? ", MHA" : fmt::format(", GQA {}:1", spec.heads / spec.kv_heads),
               plan.tp > 1 ? fmt::format(", per device of {}", plan.tp) : "");
  if (const uint64_t w = spec.window_layer_count(); w && plan.context > spec.cached_window())
    fmt::print("  {} of the {} layers attend within a {}-token {} and cache only {}: per request = per token / "
               "layer x ({} x {} + {} x {})\n", w, spec.layers, spec.sliding_window, spec.chunked_windows ? "chunk" : "window",
               spec.window_cache_tokens ? fmt::format("{} (the window and a micro-batch, as llama.cpp keeps it)",
                                                      spec.window_cache_tokens)
                                        : std::string("that"),
               spec.layers - w, plan.context, w, spec.cached_window());
  if (spec.is_hybrid() && !rows.empty()) {
    const uint64_t state = recurrent_state_bytes(spec, rows.front(), plan.tp);
    fmt::print("  and {} linear-attention layers, which keep {} per request whatever its context ({} as {} keeps it; "
               "in every row below)\n", spec.linear_layer_count(), format_bytes(state),
               ggml_type_info(rows.front().recurrent_state).name, plan.engine.empty() ? "llama.cpp" : plan.engine);
  }
  // Values cached per token on one device: K and V rows, or MLA's one latent row.
  const uint64_t values = spec.is_mla() ? spec.layers * spec.kv_k_values()
                                        : 2 * kv_layers * kv_heads_per_device(spec, plan.tp) * spec.head_dim;
  TextTable table{{"type", "bits/value", "per token", fmt::format("per request ({} tokens)", plan.context),
                   count_of(plan.requests, "request"), "saving vs BF16 (per request)"},
                  {false, true, true, true, true, true}, {}};
  for (KvTypes t : rows) {
    const uint64_t token = kv_bytes_per_token(spec, t, plan.tp);
    const uint64_t request = request_bytes(t);
    const double bits = 8.0 * static_cast<double>(token) / static_cast<double>(values);
    const int64_t saving = static_cast<int64_t>(bf16_request) - static_cast<int64_t>(request);
    table.rows.push_back({kv_types_label(t), fmt::format("{:.4g}", bits), trimmed(to_kib(token), "KiB"),
                          fmt::format("{} ({})", trimmed(to_mib(request), "MiB"), format_gib(static_cast<double>(request))),
                          format_gib(static_cast<double>(request * plan.requests)),
                          saving == 0 ? "-" : fmt::format("{} ({:.0f}%)", trimmed(static_cast<double>(saving) / MiB, "MiB"),
                                                           100.0 * static_cast<double>(saving) / static_cast<double>(bf16_request))});
  }
  fmt::print("{}", table.render("  "));
  if (a.out.explain) {
    fmt::print("\n");
    for (KvTypes t : rows) {
      for (const auto& line : kv_per_token_derivation(spec, t, plan.tp)) fmt::print("{}\n", line);
      const uint64_t token = kv_bytes_per_token(spec, t, plan.tp), request = request_bytes(t);
      if (spec.is_hybrid())
        fmt::print("per request = {} B / {} attention layers x {} layer-tokens + {} B state = {} B = {} MiB\n\n", token,
                   kv_layers, layer_tokens, recurrent_state_bytes(spec, t, plan.tp), request, trimmed(to_mib(request), ""));
      else if (layer_tokens == spec.layers * plan.context)
        fmt::print("per request = {} B x {} tokens = {} B = {} MiB\n\n", token, plan.context, request,
                   trimmed(to_mib(request), ""));
      else
        fmt::print("per request = {} B / {} layers x {} layer-tokens (windows capped) = {} B = {} MiB\n\n", token,
                   spec.layers, layer_tokens, request, trimmed(to_mib(request), ""));
    }
  }
}

}  // namespace

void add_kv_command(CLI::App& app) {
  auto args = std::make_shared<KvArgs>();
  CLI::App* cmd = app.add_subcommand(
      "kv", "KV cache bytes per token and per request for each KV type, and the saving vs BF16");
  args->plan.add_to(*cmd, PlanOptions::kModel);
  cmd->add_option("--types", args->types, "KV types to list (default bf16 f16 q8_0 q4_0)")->type_name("TYPE...");
  args->out.add_to(*cmd);
  cmd->footer("Examples:\n"
              "  infer-plan kv -m qwen3-8b -c 8K                      # bytes per token and per request, every type\n"
              "  infer-plan kv -m llama-3.1-70b -c 32K -np 16 -o md   # for 16 requests, as a Markdown table");
  cmd->callback([args] { run(*args); });
}

}  // namespace infer_plan::apps
