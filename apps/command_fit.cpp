// `infer-plan fit`: weights + runtime reserves + KV for N requests at a context, against usable
// memory (capacity - reserved). Prints the breakdown, the verdict with its margin, the most
// requests at this context and the longest context at this request count.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "apps/commands.hpp"
#include "apps/exit_code.hpp"
#include "apps/format.hpp"
#include "apps/output_files.hpp"
#include "apps/plan_options.hpp"
#include "apps/svg_plot.hpp"
#include "planner/catalog/catalog.hpp"
#include "planner/plan/nearest_fits.hpp"
#include "planner/plan/predict.hpp"
#include "planner/plan/figures.hpp"
#include "planner/cost/memory_fit.hpp"
#include "planner/plan/plan.hpp"
#include "planner/core/limits.hpp"
#include "planner/core/units.hpp"
#include "planner/weights/weights_size.hpp"

namespace infer_plan::apps {
namespace {

struct FitArgs {
  PlanOptions plan;
  OutputOptions out;
  std::string svg;                // the breakdown as a waterfall chart
  std::string llama_fit = "off";  // llama.cpp's --fit on|off
  uint64_t fit_target_mib = 1024, fit_ctx = 4096;
};


// One row of the layer-split table: the fit at N layers on the device.
struct SplitRow {
  uint64_t gpu_layers;
  FitResult fit;
};

// The fit at every N worth showing, as gguf-parser tabulates it: 0, about eight steps up to every
// layer, and the plan's N with its neighbours.
std::vector<SplitRow> split_table(const ResolvedPlan& rp) {
  const uint64_t total = split_layer_count(rp.spec);
  const uint64_t at = rp.split ? rp.split->gpu_layers : total;
  const HostTensors held = rp.split ? rp.split->host_tensors : HostTensors{};  // at every N
  std::vector<uint64_t> ns{0, total};
  const uint64_t step = std::max<uint64_t>(1, (total + 7) / 8);
  for (uint64_t n = step; n < total; n += step) ns.push_back(n);
  for (uint64_t n : {at == 0 ? 0 : at - 1, at, at + 1})
    if (n <= total) ns.push_back(n);
  std::sort(ns.begin(), ns.end());
  ns.erase(std::unique(ns.begin(), ns.end()), ns.end());
  std::vector<SplitRow> rows;
  for (uint64_t n : ns) {
    if (n == total && !held.any_host()) {
      rows.push_back({n, fit_memory(rp.spec, rp.hw, rp.plan, rp.weights.bytes, rp.weights.label, false)});
    } else {
      const LayerSplit split = layer_split(rp.spec, rp.weights, n, held);
      rows.push_back({n, fit_memory(rp.spec, rp.hw, rp.plan, rp.weights.bytes, rp.weights.label, false, nullptr, &split)});
    }
  }
  return rows;
}

// Device and host need at N: weights + reserves + KV, and the host's weights + KV.
uint64_t device_need(const FitResult& f) { return f.device_weights_bytes + f.reserved_bytes + f.kv_bytes; }
uint64_t host_need(const FitResult& f) { return f.host ? f.host->weights_bytes + f.host->kv_bytes : 0; }

// A decode step at batch 1 and the plan's context, parted between the device and the host.
struct SplitDecode {
  double step_s = 0, host_s = 0;
};
SplitDecode split_decode(const ResolvedPlan& rp) {
  SplitDecode d;
  d.step_s = rp.server.decode_iteration_s(1, rp.plan.context);
  if (rp.split)
    d.host_s = split_host_s(rp.roofline->decode_step(1, rp.plan.context), *rp.split, rp.spec, *rp.hw.host);
  return d;
}

Json fit_json(const FitResult& r, const ModelSpec& spec, const HwProfile& hw, const Plan& plan) {
  Json j = fit_figures(r);
  j["model"] = spec.name;
  j["hw"] = hw.name;
  j["kv_k"] = ggml_type_info(plan.kv.k).name;
  j["kv_v"] = ggml_type_info(plan.kv.v).name;
  j["model_max_context"] = spec.max_context;
  return j;
}

Json split_json(const ResolvedPlan& rp) {
  Json table = Json::array();
  for (const SplitRow& row : split_table(rp))
    table.push_back({{"gpu_layers", row.gpu_layers}, {"device_bytes", device_need(row.fit)},
                     {"host_bytes", host_need(row.fit)}, {"fits", row.fit.fits}});
  const SplitDecode d = split_decode(rp);
  return {{"gpu_layers", rp.split ? rp.split->gpu_layers : split_layer_count(rp.spec)},
          {"layers", split_layer_count(rp.spec)},
          {"decode_ms_batch1", d.step_s * 1e3},
          {"host_ms_batch1", d.host_s * 1e3},
          {"tokens_per_s_batch1", d.step_s > 0 ? 1.0 / d.step_s : 0.0},
          {"table", table}};
}

void print_split(const ResolvedPlan& rp) {
  const FitResult& r = rp.fit;
  const uint64_t total = split_layer_count(rp.spec);
  if (r.host) {
    const HostProfile& h = *rp.hw.host;
    fmt::print("\n  host memory{}, its layers read at {:.1f} GB/s\n",
               h.description.empty() ? "" : " (" + h.description + ")", h.achieved_bandwidth() * 1e-9);
    fmt::print("  {:<22}{:>12}\n", "usable", gib(r.host->usable_bytes));
    const LayerSplit& sp = *r.split;
    std::vector<std::string> held;
    if (!sp.head_on_device) held.push_back("token_embd");
    if (sp.device_blocks < rp.spec.layers) held.push_back(fmt::format("{} of {} blocks", rp.spec.layers - sp.device_blocks, rp.spec.layers));
    if (!sp.head_on_device) held.push_back("the head");
    if (sp.host_expert_bytes && sp.cpu_moe_layers)
      held.push_back(sp.cpu_moe_layers >= rp.spec.layers ? std::string("every layer's routed experts")
                                                         : fmt::format("the routed experts of layers 0-{}", sp.cpu_moe_layers - 1));
    if (sp.override_host_tensors)
      held.push_back(fmt::format("{} tensor{} by -ot", sp.override_host_tensors, sp.override_host_tensors == 1 ? "" : "s"));
    fmt::print("  {:<22}{:>12}   {}\n", "- weights", gib(r.host->weights_bytes), fmt::join(held, ", "));
    fmt::print("  {:<22}{:>12}   {} layers' KV\n", "- KV cache", gib(r.host->kv_bytes), r.split->host_part.layers);
    fmt::print("  {:<22}{:>12}\n", "= headroom", gib(r.host->headroom_bytes));
  }
  fmt::print("\n  layers on the device (of {}): device / host memory\n", total);
  for (const SplitRow& row : split_table(rp)) {
    const bool here = row.gpu_layers == (rp.split ? rp.split->gpu_layers : total);
    fmt::print("  {} {:>4}   {:>12} / {:>12}   {}\n", here ? "->" : "  ", row.gpu_layers, gib(device_need(row.fit)),
               gib(host_need(row.fit)), row.fit.fits ? "fits" : "does not fit");
  }
  const SplitDecode d = split_decode(rp);
  fmt::print("\n  decode at {} layers, batch 1, {} tokens: {:.1f} ms per token ({:.1f} tokens/s){}\n",
             rp.split ? rp.split->gpu_layers : total, rp.plan.context, d.step_s * 1e3, 1.0 / d.step_s,
             rp.split ? fmt::format("; the host's part {:.1f} ms of it", d.host_s * 1e3) : "");
}

// The breakdown, top to bottom: each row a total (capacity, usable, headroom) or an amount taken
// from (or given back to) the one above. The text and the SVG waterfall are drawn from it.
struct FitRow {
  std::string label;
  int64_t bytes;
  WaterfallStep::Kind kind;
  std::string note = "";
};

std::vector<FitRow> fit_rows(const FitResult& r, const ModelSpec& spec) {
  using Kind = WaterfallStep::Kind;
  auto bytes = [](uint64_t b) { return static_cast<int64_t>(b); };
  std::vector<FitRow> rows;
  rows.push_back({"capacity", bytes(r.capacity_bytes), Kind::total, fmt::format("{} B", r.capacity_bytes)});
  rows.push_back({"- reserved (system)", bytes(r.system_reserved_bytes), Kind::minus});
  // An engine that takes a fraction of the memory (vLLM's gpu_memory_utilization) leaves the rest.
  if (const uint64_t seen = r.capacity_bytes - std::min(r.system_reserved_bytes, r.capacity_bytes); r.usable_bytes < seen)
    rows.push_back({"- outside the engine", bytes(seen - r.usable_bytes), Kind::minus,
                    "what the engine's memory fraction leaves to others"});
  rows.push_back({"= usable", bytes(r.usable_bytes), Kind::total});
  if (r.split)
    rows.push_back({"- weights (device)", bytes(r.device_weights_bytes), Kind::minus,
                    fmt::format("{} of {}: {}", gib(r.device_weights_bytes), r.weights_label, layer_split_label(*r.split, spec))});
  else
    rows.push_back({"- weights", bytes(r.weights_bytes), Kind::minus, r.weights_label});
  if (r.offload) {
    rows.push_back({"+ offloaded to host", bytes(r.offload->freed_bytes), Kind::plus,
                    fmt::format("{} x {}: {} of one layer in every {} (host memory; see `offload` for the time)",
                                r.offload->layers_offloaded, format_bytes(r.offload->group_bytes),
                                offload_part_name(r.offload->part), r.offload->every)});
    rows.push_back({"- prefetch slots", bytes(r.offload->buffer_bytes), Kind::minus,
                    fmt::format("{} x {} on the device", r.offload->buffers, format_bytes(r.offload->group_bytes))});
  }
  rows.push_back({"= free after weights", r.free_after_weights_bytes, Kind::total});
  if (r.reserves.empty()) rows.push_back({"- runtime reserves", 0, Kind::minus, "none (add with --reserve NAME=SIZE)"});
  for (const auto& n : r.reserves) rows.push_back({fmt::format("- reserve {}", n.name), bytes(n.bytes), Kind::minus});
  if (r.kv_share < 1.0)
    rows.push_back({fmt::format("x {} for the KV pool", r.kv_share), bytes(r.kv_room_bytes), Kind::total,
                    "the engine's share of what is left"});
  if (const uint64_t window_layers = spec.window_layer_count(); window_layers && r.context > spec.cached_window())
    rows.push_back({"- KV cache", bytes(r.kv_bytes), Kind::minus,
                    fmt::format("{}/token x {} tokens, {} of {} layers (window) only the last {}{}, x {} request{}",
                                format_bytes(r.kv_bytes_per_token), r.context, window_layers, spec.layers, spec.cached_window(),
                                spec.window_cache_tokens ? fmt::format(" (window {} + a micro-batch)", spec.sliding_window) : "",
                                r.requests, r.requests == 1 ? "" : "s")});
  else if (spec.is_hybrid())  // the linear-attention layers' state: once per request
    rows.push_back({"- KV cache", bytes(r.kv_bytes), Kind::minus,
                    fmt::format("({}/token x {} tokens + {} of linear-attention state) x {} request{}",
                                format_bytes(r.kv_bytes_per_token), r.context,
                                format_bytes(r.kv_bytes_per_request - r.kv_bytes_per_token * kv_cache_tokens(r.context)),
                                r.requests, r.requests == 1 ? "" : "s")});
  else
    rows.push_back({"- KV cache", bytes(r.kv_bytes), Kind::minus,
                    fmt::format("{}/token x {} tokens x {} request{}", format_bytes(r.kv_bytes_per_token), r.context,
                                r.requests, r.requests == 1 ? "" : "s")});
  rows.push_back({"= headroom", r.headroom_bytes, Kind::total});
  return rows;
}

// The same rows as horizontal bars, in GiB.
std::string fit_svg(const FitResult& r, const ModelSpec& spec, const HwProfile& hw, const Plan& plan) {
  std::vector<WaterfallStep> steps;
  for (const FitRow& f : fit_rows(r, spec))
    steps.push_back({f.label, static_cast<double>(f.bytes) / static_cast<double>(uint64_t{1} << 30), f.kind, f.note});
  return svg_waterfall(fmt::format("{} {} on {}, KV {}, {} x {}: {}", spec.name, r.weights_label, hw.name,
                                   kv_types_label(plan.kv), r.requests, r.context,
                                   r.fits ? fmt::format("fits, {} to spare", gib(r.headroom_bytes)) : "does not fit"),
                       "GiB", steps);
}

void print_text(const FitResult& r, const ModelSpec& spec, const HwProfile& hw, const Plan& plan) {
  fmt::print("fit: {} on {}{}\n", spec.name, hw.name, hw.description.empty() ? "" : " (" + hw.description + ")");
  fmt::print("     weights {}, KV {}, {} request{} x {} tokens{}\n\n", r.weights_label, kv_types_label(plan.kv),
             r.requests, r.requests == 1 ? "" : "s", r.context,
             r.tp > 1 ? fmt::format(", {} over {} devices (figures {})",
                                    r.layer_split ? "layers split" : "tensor parallel", r.tp,
                                    r.device_note.empty() ? "per device" : "for " + r.device_note)
                      : "");
  const std::vector<FitRow> rows = fit_rows(r, spec);
  size_t width = 22;  // the values in one column, however long an engine's reserve is named
  for (const FitRow& f : rows) width = std::max(width, f.label.size() + 1);
  for (const FitRow& f : rows) {
    std::string line = fmt::format("  {:<{}}{:>12}   {}", f.label, width, gib(f.bytes), f.note);
    while (line.back() == ' ') line.pop_back();
    fmt::print("{}\n", line);
  }
  fmt::print("\n");
  if (r.host && !r.host->fits && r.headroom_bytes >= 0)
    fmt::print("  verdict: DOES NOT FIT: the device holds its layers, but host memory is {} short\n",
               gib(-r.host->headroom_bytes));
  else if (r.fits)
    fmt::print("  verdict: FITS with {} to spare\n", gib(r.headroom_bytes));
  else if (r.free_after_weights_bytes < 0)
    fmt::print("  verdict: DOES NOT FIT: the weights alone are {} over the usable memory, before any KV\n",
               gib(-r.free_after_weights_bytes));
  else
    fmt::print("  verdict: DOES NOT FIT: {} short\n", gib(-r.headroom_bytes));
  fmt::print("  most requests at {} tokens: {}\n", r.context, r.max_requests);
  if (r.kv_pool_tokens)  // as the engine logs it ("GPU KV cache size", "Maximum concurrency")
    fmt::print("  KV pool: {} per device = {} tokens; {:.2f} requests of {} tokens at once\n", gib(r.kv_room_bytes),
               *r.kv_pool_tokens, r.kv_bytes_per_request ? static_cast<double>(r.kv_room_bytes) /
                                                                static_cast<double>(r.kv_bytes_per_request)
                                                          : 0.0,
               r.context);
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
  if (!a.svg.empty()) check_chart_path(a.svg, "--svg");
  Plan plan = a.plan.resolve();
  std::optional<LlamaCppFitChoice> chose;
  if (a.llama_fit == "on") {
    if (plan.engine != "llama.cpp")
      throw InputError(fmt::format("--fit: llama.cpp's automatic fit; the plan's engine is {} (--engine llama.cpp)",
                                   plan.engine.empty() ? "not named" : plan.engine));
    if (plan.tp > 1)
      throw InputError("--fit: llama.cpp's fit over several devices (it writes -ts too) is not modelled; one device only");
    LlamaCppFit fit;
    fit.target_free_bytes = a.fit_target_mib << 20;
    fit.min_context = a.fit_ctx;
    fit.context_given = !a.plan.ctx.empty() || !a.plan.plan_file.empty();
    fit.layers_given = !a.plan.gpu_layers.empty() || a.plan.n_cpu_moe || a.plan.cpu_moe;
    chose = llama_cpp_fit(plan, fit);
    plan = chose->plan;
  }
  const ResolvedPlan rp = resolve_plan(plan);
  require_engine_runs(rp);
  const ModelSpec& spec = rp.spec;
  const HwProfile& hw = rp.hw;
  const FitResult& r = rp.fit;
  // The table per N needs the host's memory (a profile without one refuses any split, in resolve_plan).
  const bool split_asked = (plan.gpu_layers || plan.gpu_layers_auto || plan.cpu_moe_layers || rp.split) && hw.host;
  // A single plan that does not fit ends with its own exit code, so that scripts can tell; a
  // sweep's table marks each row instead.
  const bool verdict_exits = !r.fits && !output_state().documents_wanted;
  const std::vector<FitSuggestion> suggestions = output_state().documents_wanted ? std::vector<FitSuggestion>{}
                                                                                 : nearest_fits(rp);
  // Each changed field as the flags that set it (llama.cpp's names for its own fields)
  const auto flags_of = [&](const FitSuggestion& f) -> std::string {
    if (f.lever == "weights") return "--weights " + f.value;
    if (f.lever == "kv") return plan.engine == "vllm" ? "--kv " + f.value : fmt::format("-ctk {} -ctv {}", f.value, f.value);
    if (f.lever == "context") return "-c " + f.value;
    if (f.lever == "requests") return "-np " + f.value;
    if (f.lever == "tp") return "--tp " + f.value;
    if (f.lever == "gpu_layers") return "-ngl " + f.value;
    return fmt::format("field '{}' {}", f.lever, f.value);
  };
  if (!a.svg.empty()) write_text_file(a.svg, fit_svg(r, spec, hw, plan), "--svg");
  if (a.out.json()) {
    Json j = fit_json(r, spec, hw, plan);
    if (chose)
      j["llama_cpp_fit"] = {{"met", chose->met}, {"context", plan.context},
                            {"gpu_layers", plan.gpu_layers ? Json(*plan.gpu_layers) : Json("all")},
                            {"cpu_moe_layers", plan.cpu_moe_layers ? Json(std::min(*plan.cpu_moe_layers, spec.layers)) : Json(0)},
                            {"steps", chose->steps}};
    if (split_asked) j["layer_split"] = split_json(rp);
    if (verdict_exits) {
      Json list = Json::array();
      for (const FitSuggestion& f : suggestions)
        list.push_back({{"lever", f.lever}, {"value", f.value}, {"flag", flags_of(f)}, {"outcome", f.outcome},
                        {"headroom_bytes", f.headroom_bytes}});
      j["suggestions"] = list;
    }
    if (a.out.explain) j["derivation"] = r.derivation;
    print_json(j);
    if (verdict_exits) throw ExitCode{kDoesNotFitExitCode};
    return;
  }
  if (chose) {
    fmt::print("llama.cpp's --fit (target {} MiB free, context at least {}): {}\n", a.fit_target_mib, a.fit_ctx,
               chose->met ? "met" : "NOT met");
    for (const std::string& s : chose->steps) fmt::print("  - {}\n", s);
    fmt::print("  as flags: -c {}{}{}\n\n", plan.context * plan.requests,
               plan.gpu_layers ? fmt::format(" -ngl {}", *plan.gpu_layers) : "",
               plan.cpu_moe_layers ? (*plan.cpu_moe_layers >= spec.layers ? std::string(" --cpu-moe")
                                                                           : fmt::format(" --n-cpu-moe {}", *plan.cpu_moe_layers))
                                   : "");
  }
  print_text(r, spec, hw, plan);
  if (split_asked) print_split(rp);
  if (!suggestions.empty()) {
    fmt::print("\n  nearest plans that fit, one change each:\n");
    size_t width = 0;
    for (const FitSuggestion& f : suggestions) width = std::max(width, flags_of(f).size());
    for (const FitSuggestion& f : suggestions) fmt::print("    {:<{}}   {}\n", flags_of(f), width, f.outcome);
  } else if (!r.fits) {
    fmt::print("\n  no single change of weights, KV type, context, requests, --tp or -ngl fits\n");
  }
  if (a.out.explain) {
    fmt::print("\nderivation:\n");
    for (const auto& line : r.derivation) fmt::print("  {}\n", line);
  }
  if (verdict_exits) throw ExitCode{kDoesNotFitExitCode};
}

}  // namespace

void add_fit_command(CLI::App& app) {
  auto args = std::make_shared<FitArgs>();
  CLI::App* cmd = app.add_subcommand(
      "fit", "Does it fit? Weights + reserves + KV for N requests at a context vs usable memory");
  args->plan.add_to(*cmd, PlanOptions::kModel | PlanOptions::kMemory);
  cmd->add_option("--fit", args->llama_fit,
                  "on: what llama.cpp's own --fit (on by default since late 2025) would choose: with -c not given, "
                  "the longest context from the model's trained one that leaves --fit-target free; then for a "
                  "mixture of experts the fewest layers' experts in host memory (--n-cpu-moe); then -ngl. One "
                  "device, --engine llama.cpp (default off: the plan as given)")
      ->check(CLI::IsMember({"on", "off"}))
      ->type_name("on|off");
  cmd->add_option("--fit-target", args->fit_target_mib, "With --fit on: MiB to leave free on the device (default 1024, as llama.cpp's)")
      ->check(kNonNegativeCount)
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 30))
      ->type_name("MiB");
  cmd->add_option("--fit-ctx", args->fit_ctx, "With --fit on: the shortest context it may choose (default 4096, as llama.cpp's)")
      ->check(kNonNegativeCount)
      ->check(CLI::Range(uint64_t{1}, kMaxContextTokens))
      ->type_name("N");
  cmd->add_option("--svg", args->svg,
                  "Write the breakdown as an SVG waterfall to this file: capacity, each amount taken (weights, the engine's "
                  "reserves, KV) and what is left, in GiB per device")
      ->type_name("FILE");
  args->out.add_to(*cmd);
  cmd->footer(
      "Example (an M2 Max with 96 GiB, of which Metal wires 72 GiB for the GPU by default):\n"
      "  infer-plan fit --model qwen3-235b-a22b --hw m2-max-96gb --weights-size 79.81GiB --ctx 8K --requests 1\n"
      "A plan with an 'offload' section counts the groups it moves to host memory and its prefetch slots:\n"
      "  infer-plan fit --plan scenarios/plans/h200-offload.json\n"
      "llama.cpp's layer split: the most layers a 24 GB card holds, the table per N and the decode speed:\n"
      "  infer-plan fit --model llama-3.1-70b --weights Q4_K_M --hw rtx-4090 -ngl auto -c 8192 -np 1\n"
      "What llama.cpp's own --fit (its default) picks for -c, --n-cpu-moe and -ngl on one card:\n"
      "  infer-plan fit --model gpt-oss-120b --weights MXFP4_MOE --hw rtx-4090 --engine llama.cpp -np 1 --fit on\n"
      "Exit status: 0 FITS, 1 DOES NOT FIT (one plan: it lists the nearest plans that fit, one change each:\n"
      "weights, KV type, context, requests, --tp, -ngl), 2 bad input. A sweep's table exits 0.");
  cmd->callback([args] { run(*args); });
}

}  // namespace infer_plan::apps
