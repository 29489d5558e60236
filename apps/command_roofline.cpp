// `infer-plan roofline`: per decode iteration, the bytes read over memory bandwidth vs the FLOPs
// over compute (plus the all-reduce with --tp); prefill likewise; TTFT, TPOT and tokens/s
// ceilings. Says which rates were used (datasheet, efficiency, or measured by probe).
#include <fmt/format.h>
#include <algorithm>
#include <memory>
#include <vector>

#include "apps/format.hpp"
#include "apps/commands.hpp"
#include "apps/output_files.hpp"
#include "apps/plan_options.hpp"
#include "apps/svg_plot.hpp"
#include "planner/calibration/calibration.hpp"
#include "planner/plan/figures.hpp"
#include "planner/core/input_error.hpp"
#include "planner/plan/predict.hpp"
#include "planner/core/units.hpp"

namespace infer_plan::apps {
namespace {

struct RooflineArgs {
  PlanOptions plan;
  OutputOptions out;
  std::optional<uint64_t> batch;
  std::string svg;
};

// Decode against batch size: the step time (with its interval where a step model gives one) and
// the batch's tokens per second, at batch 1, 2, 4, ... 256 and the plan's own, which is named.
std::string roofline_svg(const ResolvedPlan& rp, const Plan& plan) {
  std::vector<uint64_t> batches{plan.requests};
  for (uint64_t b = 1; b <= std::max<uint64_t>(256, plan.requests); b *= 2) batches.push_back(b);
  std::sort(batches.begin(), batches.end());
  batches.erase(std::unique(batches.begin(), batches.end()), batches.end());
  const std::string basis = rp.roofline->rates().basis;
  const bool modelled = basis != "ceiling";
  Series step{modelled ? fmt::format("predicted ({})", basis) : "ceiling (datasheet rates; no step model)", {}, {}, false},
      ceiling{"ceiling (speed of light)", {}, {}, false};
  Series rate = step, rate_ceiling = ceiling;
  for (uint64_t b : batches) {
    const StepCost c = estimate_latency(*rp.roofline, b, plan.context, plan.output).decode;
    const double x = static_cast<double>(b);
    const std::string label = b == plan.requests ? fmt::format("batch {}", b) : "";
    step.x.push_back(x);
    step.y.push_back(c.time_s * 1e3);
    step.labels.push_back(label);
    rate.x.push_back(x);
    rate.y.push_back(x / c.time_s);
    rate.labels.push_back(label);
    ceiling.x.push_back(x);
    ceiling.y.push_back(c.ceiling_s * 1e3);
    rate_ceiling.x.push_back(x);
    rate_ceiling.y.push_back(x / c.ceiling_s);
    if (modelled) {
      step.lo.push_back(c.time_lo_s * 1e3);
      step.hi.push_back(c.time_hi_s * 1e3);
      rate.lo.push_back(x / c.time_hi_s);
      rate.hi.push_back(x / c.time_lo_s);
    }
  }
  std::vector<Series> time_series{step}, rate_series{rate};
  if (modelled) {
    time_series.push_back(ceiling);
    rate_series.push_back(rate_ceiling);
  }
  const std::string x_label = "batch (sequences decoded together)";
  return svg_line_panels(fmt::format("{} {} on {}: decode against batch (context {})", rp.spec.name, rp.weights.label,
                                     rp.hw.name, plan.context),
                         {LinePanel{x_label, "decode iteration (ms)", time_series},
                          LinePanel{x_label, "tokens/s for the batch", rate_series}});
}

void print_step(std::string_view label, const StepCost& c) {
  if (c.calibrated) {  // the step model, then the ceiling it never undercuts
    // read_s is the bound's term at its achieved rate: the reads, or a compute-bound prefill's FLOPs
    fmt::print("  {:<26} {:>9.3f} ms ({:.3f}-{:.3f})  = {:.3f} ms fixed + {:.3f} ms {}{}{}\n", label, c.time_s * 1e3,
               c.time_lo_s * 1e3, c.time_hi_s * 1e3, c.fixed_s * 1e3, c.read_s * 1e3, c.compute_bound ? "compute" : "reads",
               c.extra_tokens_s > 0 ? fmt::format(" + {:.3f} ms extra tokens", c.extra_tokens_s * 1e3) : "",
               c.comm_s > 0 ? fmt::format(" + {:.3f} ms {}", c.comm_s * 1e3, c.comm_kind) : "");
    fmt::print("  {:<26} {:>9.3f} ms ceiling = max({:.3f} ms memory, {:.3f} ms compute)  {}-bound\n", "",
               c.ceiling_s * 1e3, c.memory_s * 1e3, c.compute_s * 1e3, c.compute_bound ? "compute" : "memory");
    fmt::print("  {:<26} {:>9.3f} GB weights + {:.3f} GB KV, {:.3f} TFLOP\n", "", c.weight_bytes / 1e9,
               c.kv_bytes / 1e9, c.flops / 1e12);
    return;
  }
  fmt::print("  {:<26} {:>9.3f} ms  = max({:.3f} ms memory, {:.3f} ms compute){}  {}-bound\n", label,
             c.time_s * 1e3, c.memory_s * 1e3, c.compute_s * 1e3,
             c.comm_s > 0 ? fmt::format(" + {:.3f} ms {}", c.comm_s * 1e3, c.comm_kind) : "",
             c.compute_bound ? "compute" : "memory");
  fmt::print("  {:<26} {:>9.3f} GB weights + {:.3f} GB KV, {:.3f} TFLOP\n", "", c.weight_bytes / 1e9,
             c.kv_bytes / 1e9, c.flops / 1e12);
}

void run(const RooflineArgs& a) {
  Plan plan = a.plan.resolve();
  if (a.batch) plan.requests = *a.batch;
  if (plan.requests == 0) throw InputError("--batch: expected at least 1 sequence");
  if (!a.svg.empty()) check_chart_path(a.svg, "--svg");
  const ResolvedPlan rp = resolve_plan(plan);
  require_engine_runs(rp);
  if (!a.svg.empty()) write_text_file(a.svg, roofline_svg(rp, plan), "--svg");
  const LatencyEstimate e = estimate_latency(*rp.roofline, plan.requests, plan.context, plan.output);
  if (a.out.json()) {
    Json j = latency_figures(e, rp.roofline->rates());
    j["model"] = rp.spec.name;
    j["hw"] = rp.hw.name;
    j["weights"] = rp.weights.label;
    j["tp"] = plan.tp;
    if (a.out.explain) j["derivation"] = e.derivation;
    print_json(j);
    return;
  }
  const RooflineRates& r = rp.roofline->rates();
  fmt::print("roofline: {} on {}, weights {}, batch {}, context {}, output {}{}\n", rp.spec.name, rp.hw.name,
             rp.weights.label, plan.requests, plan.context, plan.output,
             plan.tp > 1 ? fmt::format(", {}{}", devices_label(rp), rp.roofline->tp() > 1 ? " (per device)" : "") : "");
  fmt::print("  rates: memory {}; compute {}{}\n", r.memory_source, r.compute_source,
             rp.roofline->tp() > 1 ? fmt::format("; all-reduce {}", r.all_reduce_source) : "");
  fmt::print("  step model: {}\n\n", r.step_source);
  print_step("decode iteration", e.decode);
  print_step(fmt::format("TPOT (context {})", plan.context + plan.output / 2), e.generation);
  print_step(e.prefill.micro_batches > 1
                 ? fmt::format("prefill ({} tokens, {:.0f} micro-batches)", plan.context, e.prefill.micro_batches)
                 : fmt::format("prefill ({} tokens)", plan.context),
             e.prefill);
  const double front_s = rp.hw.calibration ? rp.hw.calibration->first_token_s : 0;
  fmt::print("\n  TTFT {:.3f} s ({}, no queueing), TPOT {:.3f} ms, {:.1f} tokens/s for the batch "
             "({:.1f} per sequence)\n", e.ttft_s,
             front_s > 0 ? fmt::format("prefill + {:.1f} ms the engine's front end", front_s * 1e3) : "prefill only", e.tpot_ms, e.tokens_per_s, e.tokens_per_s / static_cast<double>(plan.requests));
  if (!e.decode.calibrated)
    fmt::print("  these are ceilings: a real engine adds a fixed time per step and reaches a fraction of the bandwidth "
               "(--engine llama.cpp on {}; `calibrate` your own measurements; `probe` this machine)\n",
               fmt::join(builtin_calibration_names(), ", "));
  else if (r.basis == "transferred")
    fmt::print("  (lo-hi): the errors of devices predicted from the others (`calibrate --loo device`), wider than a "
               "device's own calibration; the ceiling is the speed of light, never the prediction\n");
  else
    fmt::print("  (lo-hi): the calibration's leave-one-out errors; the ceiling is the speed of light, never the prediction\n");
  if (rp.spec.is_moe())
    fmt::print("  MoE: {:.1f} of {} experts per layer touched by {} token(s) (uniform routing)\n",
               rp.roofline->distinct_experts(static_cast<double>(plan.requests)), rp.spec.experts, plan.requests);
  if (a.out.explain) {
    fmt::print("\nderivation:\n");
    for (const auto& line : e.derivation) fmt::print("  {}\n", line);
  }
}

}  // namespace

void add_roofline_command(CLI::App& app) {
  auto args = std::make_shared<RooflineArgs>();
  CLI::App* cmd = app.add_subcommand(
      "roofline", "Decode and prefill time from bytes over bandwidth and FLOPs over compute; TTFT, TPOT, tokens/s");
  args->plan.add_to(*cmd, PlanOptions::kModel | PlanOptions::kMemory | PlanOptions::kGeneration);
  cmd->add_option("--batch", args->batch, "Sequences decoded together (default: --requests, 4)")
      ->check(CLI::Range(uint64_t{1}, kMaxConcurrentRequests))->type_name("N");
  cmd->add_option("--svg", args->svg,
                  "Write decode against batch size (1 to 256 and the plan's) as an SVG chart to this file: the step time "
                  "with its interval, the ceiling, and tokens/s")
      ->type_name("FILE");
  args->out.add_to(*cmd);
  cmd->footer("Examples (a 7B FP16 model at 1-2 TB/s takes at least 7-14 ms per token; llama.cpp adds its fixed time):\n"
              "  infer-plan roofline --model llama-2-7b --weights F16 --hw a100-80gb --batch 1\n"
              "  infer-plan roofline --model llama-2-7b --weights Q4_0 --hw rtx-4090 --engine llama.cpp --batch 1 --ctx 512");
  cmd->callback([args] { run(*args); });
}

}  // namespace infer_plan::apps
