// `infer-plan offload`: what offloading one layer's part in every k buys (device memory, extra
// requests) and costs (a transfer per decode round over the host link), against the decode
// iteration; and the inverse questions: most layers hidden under compute, batch from which it hides.
#include <fmt/format.h>
#include <memory>
#include <optional>

#include "apps/commands.hpp"
#include "apps/format.hpp"
#include "apps/plan_options.hpp"
#include "planner/core/input_error.hpp"
#include "planner/plan/figures.hpp"
#include "planner/cost/memory_fit.hpp"
#include "planner/plan/plan.hpp"
#include "planner/cost/offload.hpp"
#include "planner/plan/predict.hpp"
#include "planner/core/units.hpp"

namespace infer_plan::apps {
namespace {

struct OffloadArgs {
  PlanOptions plan;
  OutputOptions out;
  // Given on the command line: each overrides the plan's offload section (else OffloadPlan's defaults).
  std::optional<std::string> part, link;
  std::optional<uint64_t> every, buffers;
  uint64_t max_batch = 4096;
};


void run(const OffloadArgs& a) {
  Plan plan = a.plan.resolve();
  OffloadPlan& o = plan.offload ? *plan.offload : plan.offload.emplace();
  if (a.part) o.part = *a.part;
  if (a.every) o.every = *a.every;
  if (a.buffers) o.buffers = *a.buffers;
  if (a.link) o.link = *a.link;
  const ResolvedPlan rp = resolve_plan(plan);
  LinkProfile link;
  const OffloadInput in = [&] {
    try {
      return plan_offload_input(rp, &link);
    } catch (const InputError& e) {  // the link named by the flag that gave it, else the plan file's field
      const std::string m = e.what(), field = "offload.link: ";
      if (!m.starts_with(field) || (!a.link && a.plan.plan_file.empty())) throw;
      throw InputError(a.link ? "--link: " + m.substr(field.size())
                              : fmt::format("{}: field 'offload.link': {}", a.plan.plan_file, m.substr(field.size())));
    }
  }();
  const OffloadResult r = plan_offload(rp.spec, rp.weights.layout, rp.weights.scale, plan.kv, in,
                                       rp.roofline.get(), a.max_batch);
  if (a.out.json()) {
    Json j = offload_figures(r);
    j["link"] = link.name;
    j["model"] = rp.spec.name;
    j["hw"] = rp.hw.name;
    j["part"] = o.part;
    j["every"] = o.every;
    j["buffers"] = o.buffers;
    if (a.out.explain) j["derivation"] = r.derivation;
    print_json(j);
    return;
  }

  fmt::print("offload: {} of one layer in every {} of {} ({}), {} buffer{}, over {} ({})\n", o.part, o.every,
             rp.spec.name, rp.weights.label, o.buffers, o.buffers == 1 ? "" : "s", link.name,
             format_rate(link.bandwidth_bytes_per_s));
  fmt::print("  {} x {} prompt + {} output tokens\n\n", count_of(plan.requests, "request"), plan.context, plan.output);
  fmt::print("  memory\n");
  fmt::print("    offloaded layers        {} of {} ({} per group)\n", r.layers_offloaded, rp.spec.layers,
             mib(static_cast<double>(r.group_bytes)));
  fmt::print("    freed on the device     {}\n", mib(static_cast<double>(r.freed_bytes)));
  fmt::print("    prefetch buffers        {}\n", mib(static_cast<double>(r.buffer_bytes)));
  fmt::print("    net saving              {}\n", mib(static_cast<double>(r.net_saving_bytes)));
  fmt::print("    extra requests          +{} at {} tokens ({} each); +{} reserving KV to completion ({} each)\n",
             r.extra_requests, plan.context, mib(static_cast<double>(r.kv_bytes_per_request)),
             r.extra_requests_reserved, mib(static_cast<double>(r.kv_bytes_per_request_reserved)));
  fmt::print("  time\n");
  fmt::print("    per round               {:.3f} GB over the link = {:.2f} ms\n", static_cast<double>(r.bytes_per_round) / 1e9,
             r.round_ms);
  fmt::print("    decode iteration        {:.2f} ms ({})\n", r.iteration_ms, in.iteration_source);
  fmt::print("    transfer                {}\n", r.transfer_exceeds_iteration
                                                     ? "EXCEEDS the iteration: decode waits for the link"
                                                     : "hidden under compute");
  fmt::print("    effective round         {:.2f} ms (each group's copy hides under {:.3f} ms of compute{}; stall {:.3f} ms)\n",
             r.effective_round_ms, r.window_ms, r.overlapped ? "" : ", 1 buffer", r.stall_per_group_ms);
  fmt::print("    throughput ceiling      {:.1f} tok/s ({})\n", r.throughput_ceiling_tok_s, count_of(plan.requests, "request"));
  fmt::print("    generation              {} rounds x {:.2f} ms = {:.2f} s (transfer alone {:.2f} s)\n", r.rounds,
             r.effective_round_ms, r.generation_s, r.transfer_total_s);
  if (r.meets_deadline)
    fmt::print("    deadline {:.2f} s         {}\n", *plan.deadline_s,
               *r.meets_deadline ? "met" : "MISSED: offload over this link is infeasible for this deadline");
  fmt::print("  inverse questions\n");
  fmt::print("    most layers hidden      {} (each group {:.3f} ms over the link, iteration {:.2f} ms)\n",
             r.max_hidden_layers, static_cast<double>(r.group_bytes) / link.bandwidth_bytes_per_s * 1e3, r.iteration_ms);
  if (r.hiding_batch)
    fmt::print("    hides from batch        {} (roofline iteration at that batch >= {:.2f} ms)\n", *r.hiding_batch, r.round_ms);
  else
    fmt::print("    hides from batch        none up to {} (the roofline iteration never reaches {:.2f} ms)\n",
               r.hiding_batch_searched_to, r.round_ms);
  if (a.out.explain) {
    fmt::print("\nderivation:\n");
    for (const auto& line : r.derivation) fmt::print("  {}\n", line);
  }
}

}  // namespace

void add_offload_command(CLI::App& app) {
  auto args = std::make_shared<OffloadArgs>();
  CLI::App* cmd = app.add_subcommand(
      "offload", "Offload part of one layer in every k to host memory: memory freed vs time per round");
  args->plan.add_to(*cmd, PlanOptions::kModel | PlanOptions::kMemory | PlanOptions::kGeneration);
  cmd->add_option("--part", args->part, "What of each offloaded layer: ffn, attn or layer (default: the plan's, else ffn)")
      ->check(CLI::IsMember({"ffn", "attn", "layer"}));
  cmd->add_option("--every", args->every, "Offload one layer in every K (default: the plan's, else 4: layers 3, 7, 11, ...)")
      ->check(kNonNegativeCount)
      ->type_name("K");
  cmd->add_option("--buffers", args->buffers,
                  "Device prefetch slots of one group each; 2 let the copy overlap compute (default: the plan's, else 2)")
      ->check(kNonNegativeCount)
      ->type_name("N");
  cmd->add_option("--link", args->link,
                  "Host link name (pcie-gen4-x16, pcie-gen5-x16, nvlink-c2c) or path (default: the plan's, else the profile's)")
      ->type_name("NAME|PATH");
  cmd->add_option("--max-batch", args->max_batch, "Largest batch searched for the hiding batch (default 4096)")
      ->check(CLI::Range(uint64_t{1}, kMaxConcurrentRequests))
      ->type_name("N");
  args->out.add_to(*cmd);
  cmd->footer("Examples (Qwen3-8B, FFN of 1 layer in 4, measured 26.26 ms iteration; over PCIe Gen5, then NVLink-C2C):\n"
              "  infer-plan offload --model qwen3-8b --hw h200 --link pcie-gen5-x16 --decode-ms 26.26 --deadline 7\n"
              "  infer-plan offload --model qwen3-8b --hw gh200 --link nvlink-c2c --decode-ms 26.26 --deadline 7");
  cmd->callback([args] { run(*args); });
}

}  // namespace infer_plan::apps
