// `infer-plan admit`: admission by deadline for one request: finish = queue wait +
// TTFT + generation against the deadline, the margin, and what to do instead of admitting.
#include <cmath>
#include <fmt/format.h>
#include <memory>

#include "apps/commands.hpp"
#include "apps/format.hpp"
#include "apps/plan_options.hpp"
#include "planner/serving/admission.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/json_fields.hpp"

namespace infer_plan::apps {
namespace {

struct AdmitArgs {
  OutputOptions out;
  double queue_wait_s = 0, ttft_s = 0, generation_s = 0, deadline_s = 0;
  std::optional<double> kv_free_tokens, kv_needed_tokens;
};


void run(const AdmitArgs& a) {
  AdmissionQuery q{a.queue_wait_s, a.ttft_s, a.generation_s, a.deadline_s, a.kv_free_tokens, a.kv_needed_tokens};
  // Checked here so the messages name the flags (the planner names its fields).
  for (auto [v, flag] : {std::pair{a.queue_wait_s, "--queue-wait"}, std::pair{a.ttft_s, "--ttft"},
                         std::pair{a.generation_s, "--generation"}, std::pair{a.deadline_s, "--deadline"}})
    if (!std::isfinite(v) || v < 0 || (v == 0 && std::string_view(flag) == "--deadline"))
      throw InputError(fmt::format("{}: {} is not a {} number of seconds", flag, v,
                                   std::string_view(flag) == "--deadline" ? "positive" : "non-negative"));
  if (a.kv_free_tokens.has_value() != a.kv_needed_tokens.has_value())
    throw InputError("--kv-free and --kv-need: give both or neither");
  for (auto [v, flag] : {std::pair{a.kv_free_tokens, "--kv-free"}, std::pair{a.kv_needed_tokens, "--kv-need"}})
    if (v && (!std::isfinite(*v) || *v < 0))
      throw InputError(fmt::format("{}: {} is not a non-negative token count", flag, *v));
  const AdmissionDecision d = decide_admission(q);
  if (a.out.json()) {
    const Json j{{"finish_s", d.finish_s},
                 {"margin_s", d.margin_s},
                 {"admit", d.admit},
                 {"meets_deadline", d.meets_deadline},
                 {"kv_fits", d.kv_fits ? Json(*d.kv_fits) : Json(nullptr)},
                 {"generation_speedup_needed",
                  d.generation_speedup_needed ? Json(*d.generation_speedup_needed) : Json(nullptr)},
                 {"rule", kAdmissionRule},
                 {"alternatives", d.alternatives}};
    print_json(j);
    return;
  }
  fmt::print("finish = queue wait {} s + TTFT {} s + generation {} s = {} s after arrival\n", secs(a.queue_wait_s),
             secs(a.ttft_s), secs(a.generation_s), secs(d.finish_s));
  fmt::print("margin = deadline {} s - {} s = {} s\n", secs(a.deadline_s), secs(d.finish_s), secs(d.margin_s));
  if (d.kv_fits)
    fmt::print("KV: needs {:g} tokens, {:g} free: {}\n", *a.kv_needed_tokens, *a.kv_free_tokens,
               *d.kv_fits ? "fits" : "does not fit");
  if (d.admit) {
    fmt::print("verdict: ADMIT with {} s to spare\n", secs(d.margin_s));
  } else {
    std::string why;
    if (!d.meets_deadline) why = fmt::format("misses the deadline by {} s", secs(-d.margin_s));
    if (d.kv_fits == false) why += fmt::format("{}no KV space", why.empty() ? "" : " and ");
    fmt::print("verdict: DO NOT ADMIT: {}\n", why);
    fmt::print("instead:\n");
    for (const auto& alt : d.alternatives) fmt::print("  - {}\n", alt);
  }
  fmt::print("rule: {}. Queueing time is part of the budget.\n", kAdmissionRule);
  if (a.out.explain)
    fmt::print("\n{} + {} + {} = {}; {} - {} = {} {} 0 -> {}\n", secs(a.queue_wait_s), secs(a.ttft_s),
               secs(a.generation_s), secs(d.finish_s), secs(a.deadline_s), secs(d.finish_s), secs(d.margin_s),
               d.meets_deadline ? ">=" : "<", d.admit ? "admit" : "reject");
}

}  // namespace

void add_admit_command(CLI::App& app) {
  auto a = std::make_shared<AdmitArgs>();
  CLI::App* cmd = app.add_subcommand(
      "admit", "Admission by deadline for one request: finish = queue wait + TTFT + generation vs the deadline");
  cmd->add_option("--queue-wait", a->queue_wait_s, "Time the request waits before its prefill, in seconds (default 0)")
      ->check(kNonNegativeSeconds)->type_name("S");
  cmd->add_option("--ttft", a->ttft_s, "Time to first token (the prefill), in seconds (required)")
      ->check(kNonNegativeSeconds)->type_name("S")
      ->required();
  cmd->add_option("--generation", a->generation_s, "Time from the first to the last token, in seconds (required)")
      ->check(kNonNegativeSeconds)->type_name("S")
      ->required();
  cmd->add_option("--deadline", a->deadline_s, "Deadline from arrival to the last token, in seconds (required)")
      ->check(kPositiveSeconds)->type_name("S")
      ->required();
  cmd->add_option("--kv-free", a->kv_free_tokens, "KV tokens not reserved by admitted requests (optional, with --kv-need)")
      ->check(number_in(0, static_cast<double>(kMaxContextTokens) * kMaxConcurrentRequests, true))->type_name("TOKENS");
  cmd->add_option("--kv-need", a->kv_needed_tokens, "KV tokens this request reserves: prompt + output (optional)")
      ->check(number_in(0, static_cast<double>(kMaxContextTokens), true))->type_name("TOKENS");
  a->out.add_to(*cmd);
  cmd->footer("Examples:\n"
              "  infer-plan admit --ttft 0.196 --generation 6.76 --deadline 7                    # 6.956 s: admit\n"
              "  infer-plan admit --queue-wait 0.1 --ttft 0.196 --generation 6.76 --deadline 7   # 7.056 s: reject");
  cmd->callback([a] { run(*a); });
}

}  // namespace infer_plan::apps
