// `infer-plan fit`: weights + runtime reserves + KV for N requests at a context, against usable
// memory (capacity - reserved). Prints the breakdown, the verdict with its margin, the most
// requests at this context and the longest context at this request count.
#include <fmt/format.h>
#include <memory>

#include "apps/commands.hpp"
#include "apps/plan_options.hpp"
#include "planner/catalog.hpp"
#include "planner/memory_fit.hpp"
#include "planner/units.hpp"
#include "planner/weights_size.hpp"

namespace infer_plan::apps {
namespace {

struct FitArgs {
  PlanOptions plan;
  OutputOptions out;
};

std::string kv_label(KvTypes t) {
  return t.k == t.v ? std::string(ggml_type_info(t.k).name)
                    : fmt::format("K {} / V {}", ggml_type_info(t.k).name, ggml_type_info(t.v).name);
}

std::string gib(int64_t b) { return format_gib(static_cast<double>(b)); }
std::string gib(uint64_t b) { return format_gib(static_cast<double>(b)); }

Json fit_json(const FitResult& r, const ModelSpec& spec, const HwProfile& hw, const Plan& plan) {
  Json reserves = Json::array();
  for (const auto& n : r.reserves) reserves.push_back({{"name", n.name}, {"bytes", n.bytes}});
  return Json{{"model", spec.name},
              {"hw", hw.name},
              {"weights", r.weights_label},
              {"kv_k", ggml_type_info(plan.kv.k).name},
              {"kv_v", ggml_type_info(plan.kv.v).name},
              {"context", r.context},
              {"requests", r.requests},
              {"tp", r.tp},
              {"capacity_bytes", r.capacity_bytes},
              {"system_reserved_bytes", r.system_reserved_bytes},
              {"usable_bytes", r.usable_bytes},
              {"weights_bytes", r.weights_bytes},
              {"kv_bytes_per_token", r.kv_bytes_per_token},
              {"kv_bytes_per_request", r.kv_bytes_per_request},
              {"kv_bytes", r.kv_bytes},
              {"reserves", reserves},
              {"reserved_bytes", r.reserved_bytes},
              {"free_after_weights_bytes", r.free_after_weights_bytes},
              {"headroom_bytes", r.headroom_bytes},
              {"fits", r.fits},
              {"max_requests", r.max_requests},
              {"max_context", r.max_context},
              {"model_max_context", spec.max_context},
              {"warnings", r.warnings}};
}

void print_text(const FitResult& r, const ModelSpec& spec, const HwProfile& hw, const Plan& plan) {
  fmt::print("fit: {} on {}{}\n", spec.name, hw.name, hw.description.empty() ? "" : " (" + hw.description + ")");
  fmt::print("     weights {}, KV {}, {} request{} x {} tokens{}\n\n", r.weights_label, kv_label(plan.kv),
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
  row("= free after weights", gib(r.free_after_weights_bytes));
  if (r.reserves.empty()) row("- runtime reserves", gib(uint64_t{0}), "none (add with --reserve NAME=SIZE)");
  for (const auto& n : r.reserves) row(fmt::format("- reserve {}", n.name), gib(n.bytes));
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
  fmt::print("  longest context for {} request{}: {} tokens\n", r.requests, r.requests == 1 ? "" : "s",
             r.max_context);
  for (const auto& w : r.warnings) fmt::print("  note: {}\n", w);
}

void run(const FitArgs& a) {
  const Plan plan = a.plan.resolve();
  const ModelSpec spec = load_model(plan.model);
  const HwProfile hw = load_hw_profile(plan.hw);
  uint64_t weights_bytes = 0;
  std::string label;
  if (plan.weights_bytes) {
    weights_bytes = *plan.weights_bytes;
    label = fmt::format("{} (given)", format_gib(static_cast<double>(weights_bytes)));
  } else {
    const WeightsSize w = uniform_weights_size(spec, plan.weights);
    weights_bytes = w.bytes;
    label = w.file_type;
  }
  const FitResult r = fit_memory(spec, hw, plan, weights_bytes, label);
  if (a.out.json) {
    Json j = fit_json(r, spec, hw, plan);
    if (a.out.explain) j["derivation"] = r.derivation;
    fmt::print("{}\n", j.dump(2));
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
  args->plan.add_to(*cmd, true);
  args->out.add_to(*cmd);
  cmd->footer(
      "Example (the seed's M2 Max case):\n"
      "  infer-plan fit --model qwen3-235b-a22b --hw m2-max-96gb --weights-size 79.81GiB --ctx 8K --requests 1");
  cmd->callback([args] { run(*args); });
}

}  // namespace infer_plan::apps
