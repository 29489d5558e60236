// `infer-plan spec`: speculative decoding, block length m = 1..M: expected tokens per round, round
// time, ms per token and speedup over plain decoding, the optimum, and the published rule of thumb
// beside it. Defaults reproduce the worked example (a = 0.75, verify 26.3 ms, draft 3.6 ms: optimum m = 4).
#include <charconv>
#include <fmt/format.h>
#include <memory>
#include <optional>

#include "apps/commands.hpp"
#include "apps/format.hpp"
#include "apps/output_files.hpp"
#include "apps/plan_options.hpp"
#include "apps/svg_plot.hpp"
#include "planner/weights/gguf_reader.hpp"
#include "planner/plan/predict.hpp"
#include "apps/text_table.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/json_fields.hpp"
#include "planner/cost/speculative.hpp"

namespace infer_plan::apps {
namespace {

// Seed 000 section 5's figures: Qwen3-8B batch-1 decode on the seed's GPU, a small drafter.
constexpr double seed_verify_ms = 26.3;
constexpr double seed_draft_ms = 3.6;
constexpr uint64_t default_max_block = 8;

struct SpecArgs {
  std::string accept = "0.75";  // the seed's rate
  double verify_ms = seed_verify_ms;
  double draft_ms = seed_draft_ms;
  std::optional<double> decode_ms;
  std::optional<uint64_t> max_block;
  uint64_t group = 1;
  OutputOptions out;
  // Derived mode: times from the rooflines of a target (--model) and a draft model on --hw.
  PlanOptions target;
  std::string draft, draft_weights;
  std::optional<uint64_t> draft_layers;  // a draft of the target's first layers (the runtime's)
  uint64_t batch = 1;
  std::string svg;           // ms per token against the block length, as a chart
  std::string derived_from;  // filled by run(): what the times came from
  SpecInputNames names;      // the flags, or the plan file's fields where those filled them
  bool verify_from_plan = false, draft_from_plan = false;  // the plan section's verify_ms, draft_ms
  const CLI::App* cmd = nullptr;  // to ask which flags were given
};

// A --plan file's speculative section fills every field its flag did not give: the rates, the
// block range and group, and the times (its draft_layers or draft model, else its verify_ms and
// draft_ms). Without a section (or without --plan) the flags and their seed defaults stand.
void apply_plan_section(SpecArgs& a) {
  const Plan plan = a.target.resolve();
  if (!plan.speculative) return;
  const SpeculativePlan& sp = *plan.speculative;
  auto given = [&](const char* flag) { return a.cmd->count(flag) > 0; };
  auto field = [&](const char* name) { return fmt::format("{}: field 'speculative.{}'", a.target.plan_file, name); };
  if (!given("--accept")) {
    a.accept.clear();
    for (double r : sp.accept) a.accept += (a.accept.empty() ? "" : ",") + fmt::format("{}", r);
    a.names.accept = field("accept");
  }
  if (!given("--max-block")) {
    a.max_block = sp.max_block;
    a.names.max_block = field("max_block");
  }
  if (!given("--group")) {
    a.group = sp.group;
    a.names.group = field("group");
  }
  if (given("--verify-ms") || given("--draft-ms") || given("--draft") || given("--draft-layers")) return;
  if (sp.draft_layers) {
    a.draft_layers = sp.draft_layers;
  } else if (!sp.draft.empty()) {
    a.draft = sp.draft;
  } else {
    if (sp.verify_ms) a.verify_ms = *sp.verify_ms, a.verify_from_plan = true;
    if (sp.draft_ms) a.draft_ms = *sp.draft_ms, a.draft_from_plan = true;
    a.names.verify_ms = field("verify_ms");
    a.names.draft_ms = field("draft_ms");
  }
}

// Derived times assume the batch runs: the target, and a draft model beside it, each with batch x
// context tokens of KV, must fit the device, or the table's speedup is for a plan that cannot run.
void check_spec_memory(const Plan& plan, uint64_t batch, const ResolvedPlan* draft) {
  Plan p = plan;
  p.requests = batch;
  p.speculative.reset();
  double draft_bytes = 0;
  if (draft) {
    draft_bytes = static_cast<double>(draft->fit.device_weights_bytes) +
                  static_cast<double>(draft->fit.kv_bytes_per_token) *
                      static_cast<double>(kv_cache_tokens(plan.context)) * static_cast<double>(batch);
    p.reserves.push_back({"draft " + draft->spec.name + " (weights + KV)",
                          static_cast<uint64_t>(std::min(draft_bytes, static_cast<double>(kMaxBytes)))});
  }
  const ResolvedPlan rp = resolve_plan(p);
  if (rp.fit.fits) return;
  throw InputError(fmt::format(
      "--batch: {} sequences of {} tokens do not fit on {}: target weights {} + KV {}{} + reserves leave {} "
      "short of the {} usable; lower --batch or --ctx, or quantize the KV (--kv q8_0)",
      batch, plan.context, rp.hw.name, gib(rp.fit.device_weights_bytes), gib(rp.fit.kv_bytes),
      draft ? fmt::format(" + draft {} {}", draft->spec.name, format_gib(draft_bytes)) : "",
      gib(rp.fit.headroom_bytes < 0 ? static_cast<uint64_t>(-rp.fit.headroom_bytes) : 0),
      gib(rp.fit.usable_bytes)));
}

// "0.75" -> {0.75}; "0.9,0.8,0.7" -> per-position rates. Range checks are the planner's.
std::vector<double> parse_accept_list(const std::string& text) {
  std::vector<double> rates;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    double v = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size())
      throw InputError(fmt::format("--accept: '{}' is not a number; expected one rate in [0, 1] (0.75) or one "
                                   "per position (0.9,0.8,0.7)", item));
    rates.push_back(v);
    start = end + 1;
  }
  return rates;
}


std::string rate(double a) { return fmt::format("{:.4g}", a); }

std::string rates_label(const std::vector<double>& rates) {
  if (rates.size() == 1) return fmt::format("{} at every position (i.i.d.)", rate(rates[0]));
  std::string s;
  for (double a : rates) s += (s.empty() ? "" : ", ") + rate(a);
  return fmt::format("per position {}", s);
}

// E_m with the numbers substituted: the closed form for one rate, the sum of products for a list.
std::string expected_derivation(const std::vector<double>& rates, const SpecRow& row) {
  const uint64_t m = row.block;
  if (rates.size() == 1) {
    const double a = rates[0];
    if (a == 1.0) return fmt::format("E = m + 1 = {:.2f} (a = 1)", row.expected_tokens);
    return fmt::format("E = (1 - {}^{}) / (1 - {}) = {:.2f}", rate(a), m + 1, rate(a), row.expected_tokens);
  }
  std::string s = "E = 1";
  double all_accepted = 1.0;
  for (uint64_t i = 1; i <= m; ++i) {
    all_accepted *= rates[i - 1];
    s += " + " + rate(all_accepted);
  }
  return fmt::format("{} = {:.2f}", s, row.expected_tokens);
}

std::string drafts_derivation(uint64_t m, uint64_t group) {
  if (group == 1) return fmt::format("{}", m);
  return fmt::format("ceil({}/{}) x {} = {}", m, group, group, spec_drafts(m, group));
}

Json spec_json(const SpecInputs& in, const SpecResult& r, const SpecArgs& a, double rule_rate,
               SpecRuleOfThumb rule) {
  Json rows = Json::array();
  for (const SpecRow& row : r.rows)
    rows.push_back({{"block", row.block},
                    {"expected_tokens", row.expected_tokens},
                    {"drafts", row.drafts},
                    {"verify_ms", row.verify_ms},
                    {"round_ms", row.round_ms},
                    {"ms_per_token", row.ms_per_token},
                    {"speedup", row.speedup}});
  return Json{{"accept_rates", in.accept_rates},
              {"iid", in.accept_rates.size() == 1},
              {"verify_ms", a.verify_ms},
              {"draft_ms", in.draft_ms},
              {"plain_ms_per_token", r.plain_ms_per_token},
              {"max_block", in.max_block},
              {"group", in.group},
              {"rows", rows},
              {"best_block", r.best_block},
              {"best_ms_per_token", r.best_ms_per_token},
              {"best_speedup", r.best_speedup},
              {"beats_plain", r.beats_plain},
              // 0 = plain decoding: no block length pays for its drafts.
              {"recommended_block", r.beats_plain ? r.best_block : 0},
              {"rule_of_thumb",
               {{"source", "rule of thumb"}, {"accept_rate", rule_rate}, {"block_min", rule.block_min},
                {"block_max", rule.block_max}}}};
}

// ms per token against the block length, plain decoding as a line, the optimum named.
std::string spec_svg(const SpecInputs& in, const SpecResult& r) {
  Series rows{fmt::format("predicted, acceptance {}", rates_label(in.accept_rates)), {}, {}, false};
  for (const SpecRow& row : r.rows) {
    rows.x.push_back(static_cast<double>(row.block));
    rows.y.push_back(row.ms_per_token);
    rows.labels.push_back(row.block == r.best_block ? fmt::format("{} m={}: {:.2f} ms/token, {:.2f}x",
                                                                  r.beats_plain ? "best" : "least slow", row.block,
                                                                  row.ms_per_token, row.speedup)
                                                    : "");
  }
  return svg_line_panels("speculative decoding: time per token against block length",
                         {LinePanel{"block length m (drafts per round)", "ms per token", {rows},
                                    {{fmt::format("plain decoding {:.2f} ms/token", r.plain_ms_per_token), r.plain_ms_per_token}}}});
}

// A target named (a model, device, weights or engine) with neither a draft to time nor both times
// given: the worked example's times would answer, silently, for another model on another device.
void check_times_for_target(const SpecArgs& a) {
  if (!a.draft.empty() || a.draft_layers) return;
  std::vector<std::string> named;
  for (const char* flag : {"--model", "--hw", "--weights", "--engine"})
    if (a.cmd->count(flag) > 0) named.push_back(flag);
  std::vector<std::string> missing, seeds;
  if (a.cmd->count("--verify-ms") == 0 && !a.verify_from_plan)
    missing.push_back("--verify-ms"), seeds.push_back(short_decimal(seed_verify_ms) + " ms");
  if (a.cmd->count("--draft-ms") == 0 && !a.draft_from_plan)
    missing.push_back("--draft-ms"), seeds.push_back(short_decimal(seed_draft_ms) + " ms");
  if (named.empty() || missing.empty()) return;
  throw InputError(fmt::format(
      "{}: a target is named but nothing times it: without a draft, {} would be the worked example's {}, not "
      "{}'s; give a draft to time both on the device (--draft MODEL, or --draft-layers N: the target's first N "
      "layers), or {}",
      fmt::join(named, ", "), fmt::join(missing, " and "), fmt::join(seeds, " and "),
      a.cmd->count("--model") > 0 ? "this model" : "this device", fmt::join(missing, " and ")));
}

void run(SpecArgs a) {
  if (!a.svg.empty()) check_chart_path(a.svg, "--svg");
  apply_plan_section(a);
  // With the times given the target is not timed, but a model, profile or weights that was named
  // must still exist: a typo is not ignored.
  (void)resolve_plan(a.target.resolve());
  check_times_for_target(a);
  SpecInputs in;
  in.accept_rates = parse_accept_list(a.accept);
  in.verify_ms = constant_verify_ms(a.verify_ms);
  in.draft_ms = a.draft_ms;
  in.plain_ms_per_token = a.decode_ms.value_or(a.verify_ms);
  if (a.draft_layers) {
    Plan plan = a.target.resolve();
    if (a.batch == 0) throw InputError("--batch: expected at least 1 sequence");
    if (*a.draft_layers == 0) throw InputError("--draft-layers: expected at least 1 layer");
    plan.speculative.reset();
    ResolvedPlan target = resolve_plan(plan);
    if (*a.draft_layers > target.spec.layers)
      throw InputError(fmt::format("--draft-layers: {} is more than {}'s {} layers", *a.draft_layers, target.spec.name,
                                   target.spec.layers));
    target.plan.speculative = SpeculativePlan{};
    target.plan.speculative->draft_layers = a.draft_layers;
    const std::unique_ptr<Roofline> draft = plan_draft_roofline(target);
    check_spec_memory(plan, a.batch, nullptr);
    in.verify_ms = roofline_verify_ms(*target.roofline, a.batch, plan.context);
    in.draft_ms = roofline_draft_ms(*draft, a.batch, plan.context);
    in.plain_ms_per_token = a.decode_ms.value_or(in.verify_ms(0));
    a.verify_ms = in.verify_ms(0);
    a.draft_ms = in.draft_ms;
    a.derived_from = fmt::format("{} on {}: target {} ({}), draft its first {} layer{} and head, batch {}, "
                                    "context {}; verify grows with m once compute-bound", step_model_name(target), target.hw.name,
                                    target.spec.name, target.weights.label, *a.draft_layers,
                                    *a.draft_layers == 1 ? "" : "s", a.batch, plan.context);
  } else if (!a.draft.empty()) {
    // Both models run on the same device with the same KV type and context.
    Plan plan = a.target.resolve();
    if (a.batch == 0) throw InputError("--batch: expected at least 1 sequence");
    const ResolvedPlan target = resolve_plan(plan);
    Plan draft_plan = plan;
    draft_plan.model = a.draft;
    draft_plan.weights = a.draft_weights.empty() && !is_gguf_path(draft_plan.model) ? plan.weights : a.draft_weights;
    draft_plan.weights_bytes.reset();
    const ResolvedPlan draft = resolve_plan(draft_plan);
    if (draft.spec.vocab != target.spec.vocab)
      throw InputError(fmt::format("--draft: {} has a vocabulary of {} tokens, the target {} has {}; speculative "
                                   "decoding needs a shared vocabulary", draft.spec.name, draft.spec.vocab,
                                   target.spec.name, target.spec.vocab));
    check_spec_memory(plan, a.batch, &draft);
    in.verify_ms = roofline_verify_ms(*target.roofline, a.batch, plan.context);
    in.draft_ms = roofline_draft_ms(*draft.roofline, a.batch, plan.context);
    in.plain_ms_per_token = a.decode_ms.value_or(in.verify_ms(0));
    a.verify_ms = in.verify_ms(0);
    a.draft_ms = in.draft_ms;
    a.derived_from = fmt::format("{} on {}: target {} ({}), draft {} ({}), batch {}, context {}; verify "
                                    "grows with m once compute-bound", step_model_name(target), target.hw.name, target.spec.name,
                                    target.weights.label, draft.spec.name, draft.weights.label, a.batch, plan.context);
  }
  // A per-position list sets the table's length unless --max-block says otherwise.
  in.max_block = a.max_block.value_or(in.accept_rates.size() > 1 ? in.accept_rates.size() : default_max_block);
  in.group = a.group;
  in.names = a.names;
  const SpecResult r = speculative_table(in);
  const double rule_rate = spec_mean_accept_rate(in.accept_rates, in.max_block);
  const SpecRuleOfThumb rule = spec_rule_of_thumb(rule_rate);
  if (!a.svg.empty()) write_text_file(a.svg, spec_svg(in, r), "--svg");

  if (a.out.json()) {
    print_json(spec_json(in, r, a, rule_rate, rule));
    return;
  }

  fmt::print("speculative decoding: acceptance {}\n", rates_label(in.accept_rates));
  if (!a.derived_from.empty()) fmt::print("  times from the {}\n", a.derived_from);
  fmt::print("  verify {} ms/round, draft {} ms/position{}, plain decode {} ms/token\n\n", short_decimal(a.verify_ms),
             short_decimal(in.draft_ms),
             in.group > 1 ? fmt::format(" in groups of {} (a partial group costs a whole one)", in.group) : "",
             short_decimal(r.plain_ms_per_token));
  TextTable table{{"block", "expected tokens", "drafts", "round ms", "ms/token", "speedup", ""},
                  {true, true, true, true, true, true, false},
                  {}};
  table.rows.push_back({"plain", "1.00", "0", short_decimal(r.plain_ms_per_token), fmt::format("{:.2f}", r.plain_ms_per_token),
                        "1.00x", ""});
  for (const SpecRow& row : r.rows)
    table.rows.push_back({fmt::format("{}", row.block), fmt::format("{:.2f}", row.expected_tokens),
                          fmt::format("{}", row.drafts), short_decimal(row.round_ms), fmt::format("{:.2f}", row.ms_per_token),
                          fmt::format("{:.2f}x", row.speedup), row.block == r.best_block ? "<- best" : ""});
  fmt::print("{}\n", table.render("  "));

  if (r.beats_plain)
    fmt::print("optimum: block {}, {:.2f} ms/token, {:.2f}x plain decoding ({:.2f} ms/token)\n", r.best_block,
               r.best_ms_per_token, r.best_speedup, r.plain_ms_per_token);
  else
    fmt::print("verdict: no block 1..{} beats plain decoding ({:.2f} ms/token): the drafts do not pay; the "
               "least slow, block {}, costs {:.2f} ms/token ({:.2f}x)\n",
               in.max_block, r.plain_ms_per_token, r.best_block, r.best_ms_per_token, r.best_speedup);
  const std::string blocks = rule.block_min == rule.block_max ? fmt::format("{}", rule.block_min)
                                                              : fmt::format("{}-{}", rule.block_min, rule.block_max);
  const std::string basis = rule_rate > spec_rule_high_accept  ? "above 70%"
                            : rule_rate < spec_rule_low_accept ? "below 40%"
                                                               : "between 40% and 70%";
  fmt::print("rule of thumb (a starting point, not the answer): acceptance {}{} is {} -> block {}{}\n",
             rate(rule_rate),
             in.accept_rates.size() > 1 ? fmt::format(" (mean of positions 1..{})", in.max_block) : "", basis,
             blocks,
             r.best_block >= rule.block_min && r.best_block <= rule.block_max
                 ? "; the computed optimum agrees"
                 : fmt::format("; the computed optimum is block {}", r.best_block));

  if (a.out.explain) {
    fmt::print("\nE_m = 1 + sum_(i=1..m) a_1 x ... x a_i   (the target's own token + drafts 1..i all accepted)\n");
    fmt::print("T_m = T_verify + drafts(m) x T_draft;  ms/token = T_m / E_m;  speedup = T_plain / (ms/token)\n");
    fmt::print("T_plain = {} ms/token ({}), drafts(m) = {}\n", short_decimal(r.plain_ms_per_token),
               a.decode_ms ? "--decode-ms" : "plain decode = one verify pass with no drafts",
               in.group == 1 ? "m" : fmt::format("ceil(m/{0}) x {0}: a partial group costs a whole one", in.group));
    for (const SpecRow& row : r.rows)
      fmt::print("m={}: {}; drafts {}; T = {} + {} x {} = {} ms; {} / {:.2f} = {:.2f} ms/token; {}x\n", row.block,
                 expected_derivation(in.accept_rates, row), drafts_derivation(row.block, in.group), short_decimal(row.verify_ms),
                 row.drafts, short_decimal(in.draft_ms), short_decimal(row.round_ms), short_decimal(row.round_ms), row.expected_tokens,
                 row.ms_per_token, fmt::format("{:.2f}", row.speedup));
  }
}

}  // namespace

void add_spec_command(CLI::App& app) {
  auto args = std::make_shared<SpecArgs>();
  CLI::App* cmd = app.add_subcommand(
      "spec", "Speculative decoding: expected tokens, round time and ms/token per block length, the optimum");
  cmd->footer(
      "Model: E_m = 1 + sum_(i=1..m) a_1...a_i tokens per round; T_m = verify + drafts x draft;\n"
      "ms/token = T_m / E_m. Defaults are a worked example's figures (a = 0.75, 26.3 ms, 3.6 ms); with a\n"
      "target named (--model, --hw, --weights, --engine), give a draft (--draft or --draft-layers) or both times.\n"
      "A --plan file's 'speculative' section replaces them (its rates, block range, group, draft_layers or\n"
      "draft, or times), and a flag given here overrides its field. Examples:\n"
      "  infer-plan spec --accept 0.75 --verify-ms 26.3 --draft-ms 3.6          # block 4: 13.34 ms/token\n"
      "  infer-plan spec --model qwen3-8b --draft qwen3-0.6b --hw h200 --batch 8  # times from the rooflines");
  cmd->add_option("--accept", args->accept,
                  "Acceptance rate in [0, 1]: one rate for every position (i.i.d.), or a comma list, one per "
                  "position (0.9,0.8,0.7: a_i = P(draft i accepted | drafts before it were)); default 0.75")
      ->type_name("RATE[,RATE...]");
  cmd->add_option("--verify-ms", args->verify_ms,
                  "Target's verify pass over the block, ms per round (> 0); default 26.3")
      ->check(kPositiveMs)->type_name("MS");
  cmd->add_option("--draft-ms", args->draft_ms, "Draft model, ms per drafted position (> 0); default 3.6")
      ->check(kPositiveMs)->type_name("MS");
  cmd->add_option("--decode-ms", args->decode_ms,
                  "Plain decoding without drafts, ms per token (> 0), the baseline of the speedup; default "
                  "the --verify-ms value")
      ->check(kPositiveMs)->type_name("MS");
  cmd->add_option("--max-block", args->max_block,
                  "Longest block m to tabulate, 1 to 64; default 8, or the length of a per-position --accept list")
      ->check(kNonNegativeCount)
      ->type_name("M");
  cmd->add_option("--group", args->group,
                  "Drafts run G positions at a time; a partial group costs a whole one (1 to 64); default 1")
      ->check(kNonNegativeCount)
      ->type_name("G");
  args->target.add_to(*cmd, PlanOptions::kModel | PlanOptions::kMemory);
  CLI::Option* draft = cmd->add_option("--draft", args->draft,
                  "Draft model (built-in name or config.json): derive verify and draft times from the rooflines "
                  "of --model (the target) and the draft on --hw, instead of --verify-ms/--draft-ms")
      ->type_name("NAME|PATH");
  cmd->add_option("--draft-weights", args->draft_weights, "Draft model's weight type (default: the target's --weights)")
      ->type_name("TYPE");
  cmd->add_option("--batch", args->batch, "Sequences verified together in derived mode (default 1)")
      ->check(CLI::Range(uint64_t{1}, kMaxConcurrentRequests))->type_name("N");
  CLI::Option* draft_layers = cmd->add_option("--draft-layers", args->draft_layers,
                  "Draft made of the target's first N layers and its head (as the runtime's synthetic draft): "
                  "derive the times from rooflines, like --draft")
      ->type_name("N");
  cmd->get_option("--verify-ms")->excludes(draft)->excludes(draft_layers);
  cmd->get_option("--draft-ms")->excludes(draft)->excludes(draft_layers);
  draft->excludes(draft_layers);
  cmd->add_option("--svg", args->svg,
                  "Write ms per token against the block length as an SVG chart to this file, plain decoding as a line and "
                  "the optimum named")
      ->type_name("FILE");
  args->out.add_to(*cmd);
  args->cmd = cmd;
  cmd->callback([args] { run(*args); });
}

}  // namespace infer_plan::apps
