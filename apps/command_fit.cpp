// `infer-plan fit`: weights + runtime reserves + KV for N requests at a context, against usable
// memory (capacity - reserved). Prints the breakdown, the verdict with its margin, the most
// requests at this context and the longest context at this request count.
#include <fmt/format.h>
#include <memory>

#include "apps/commands.hpp"
#include "apps/format.hpp"
#include "apps/plan_options.hpp"
#include "planner/catalog/catalog.hpp"
#include "planner/plan/predict.hpp"
#include "planner/plan/figures.hpp"
#include "planner/cost/memory_fit.hpp"
#include "planner/plan/plan.hpp"
#include "planner/core/units.hpp"
#include "planner/weights/weights_size.hpp"

namespace infer_plan::apps {
namespace {

struct FitArgs {
  PlanOptions plan;
  OutputOptions out;
};


Json fit_json(const FitResult& r, const ModelSpec& spec, const HwProfile& hw, const Plan& plan) {
  Json j = fit_figures(r);
  j["model"] = spec.name;
  j["hw"] = hw.name;
  j["kv_k"] = ggml_type_info(plan.kv.k).name;
  j["kv_v"] = ggml_type_info(plan.kv.v).name;
  j["model_max_context"] = spec.max_context;
  return j;
}

void print_text(const FitResult& r, const ModelSpec& spec, const HwProfile& hw, const Plan& plan) {
  fmt::print("fit: {} on {}{}\n", spec.name, hw.name, hw.description.empty() ? "" : " (" + hw.description + ")");
  fmt::print("     weights {}, KV {}, {} request{} x {} tokens{}\n\n", r.weights_label, kv_types_label(plan.kv),
             r.requests, r.requests == 1 ? "" : "s", r.context,
             r.tp > 1 ? fmt::format(", tensor parallel over {} devices (figures per device)", r.tp) : "");
  auto row = [](std::string_view label, std::string value, std::string note = "") {
    std::string line = fmt::format("  {:<22}{:>12}   {}", label, value, note);
    while (line.back() == ' ') line.pop_back();
    fmt::print("{}\n", line);
  };
  row("capacity", gib(r.capacity_bytes), fmt::format("{} B", r.capacity_bytes));
  row("- reserved (system)", gib(r.system_reserved_bytes));
  row("= usable", gib(r.usable_bytes));
  row("- weights", gib(r.weights_bytes), r.weights_label);
  if (r.offload) {
    row("+ offloaded to host", gib(r.offload->freed_bytes),
        fmt::format("{} x {}: {} of one layer in every {} (host memory; see `offload` for the time)",
                    r.offload->layers_offloaded, format_bytes(r.offload->group_bytes),
                    offload_part_name(r.offload->part), r.offload->every));
    row("- prefetch slots", gib(r.offload->buffer_bytes),
        fmt::format("{} x {} on the device", r.offload->buffers, format_bytes(r.offload->group_bytes)));
  }
  row("= free after weights", gib(r.free_after_weights_bytes));
  if (r.reserves.empty()) row("- runtime reserves", gib(uint64_t{0}), "none (add with --reserve NAME=SIZE)");
  for (const auto& n : r.reserves) row(fmt::format("- reserve {}", n.name), gib(n.bytes));
  if (const uint64_t window_layers = spec.window_layer_count(); window_layers && r.context > spec.sliding_window)
    row("- KV cache", gib(r.kv_bytes),
        fmt::format("{}/token x {} tokens, {} of {} layers (window) only the last {}, x {} request{}",
                    format_bytes(r.kv_bytes_per_token), r.context, window_layers, spec.layers, spec.sliding_window,
                    r.requests, r.requests == 1 ? "" : "s"));
  else
    row("- KV cache", gib(r.kv_bytes),
        fmt::format("{}/token x {} tokens x {} request{}", format_bytes(r.kv_bytes_per_token), r.context,
                    r.requests, r.requests == 1 ? "" : "s"));
  row("= headroom", gib(r.headroom_bytes));
  fmt::print("\n");
  if (r.fits)
    fmt::print("  verdict: FITS with {} to spare\n", gib(r.headroom_bytes));
  else if (r.free_after_weights_bytes < 0)
    fmt::print("  verdict: DOES NOT FIT: the weights alone are {} over the usable memory, before any KV\n",
               gib(-r.free_after_weights_bytes));
  else
    fmt::print("  verdict: DOES NOT FIT: {} short\n", gib(-r.headroom_bytes));
  fmt::print("  most requests at {} tokens: {}\n", r.context, r.max_requests);
  if (r.context_unbounded)
    fmt::print("  longest context for {} request{}: not bounded by memory (every layer keeps only its window)\n",
               r.requests, r.requests == 1 ? "" : "s");
  else
    fmt::print("  longest context for {} request{}: {} tokens\n", r.requests, r.requests == 1 ? "" : "s",
               r.max_context);
  for (const auto& w : r.warnings) fmt::print("  note: {}\n", w);
  fmt::print("  engine: {}\n", r.engine_assumption);
}

void run(const FitArgs& a) {
  const Plan plan = a.plan.resolve();
  const ResolvedPlan rp = resolve_plan(plan);
  const ModelSpec& spec = rp.spec;
  const HwProfile& hw = rp.hw;
  const FitResult& r = rp.fit;
  if (a.out.json()) {
    Json j = fit_json(r, spec, hw, plan);
    if (a.out.explain) j["derivation"] = r.derivation;
    print_json(j);
    return;
  }
  print_text(r, spec, hw, plan);
  if (a.out.explain) {
    fmt::print("\nderivation:\n");
    for (const auto& line : r.derivation) fmt::print("  {}\n", line);
  }
}

}  // namespace

void add_fit_command(CLI::App& app) {
  auto args = std::make_shared<FitArgs>();
  CLI::App* cmd = app.add_subcommand(
      "fit", "Does it fit? Weights + reserves + KV for N requests at a context vs usable memory");
  args->plan.add_to(*cmd, PlanOptions::kModel | PlanOptions::kMemory);
  args->out.add_to(*cmd);
  cmd->footer(
      "Example (an M2 Max with 96 GiB, of which Metal wires 72 GiB for the GPU by default):\n"
      "  infer-plan fit --model qwen3-235b-a22b --hw m2-max-96gb --weights-size 79.81GiB --ctx 8K --requests 1\n"
      "A plan with an 'offload' section counts the groups it moves to host memory and its prefetch slots:\n"
      "  infer-plan fit --plan scenarios/plans/h200-offload.json");
  cmd->callback([args] { run(*args); });
}

}  // namespace infer_plan::apps
