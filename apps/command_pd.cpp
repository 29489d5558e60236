// `infer-plan pd`: should prefill and decode run on separate GPUs or machines? The KV transfer
// a split costs against the stall a prefill imposes on a mixed decode step, the published decision
// table, its link rules (>= 25 Gb/s, transfer vs prefill) and one prefill instance to three decode.
#include <cctype>
#include <fmt/format.h>
#include <memory>
#include <optional>

#include "apps/commands.hpp"
#include "apps/format.hpp"
#include "apps/plan_options.hpp"
#include "planner/core/input_error.hpp"
#include "planner/plan/predict.hpp"
#include "apps/text_table.hpp"
#include "planner/catalog/catalog.hpp"
#include "planner/cost/pd_disaggregation.hpp"
#include "planner/serving/pd_serving.hpp"
#include "planner/serving/scheduler.hpp"
#include "planner/core/units.hpp"

namespace infer_plan::apps {
namespace {

// Defaults: the example (a 40 ms prefill inside a batch of 100 decodes at 5 ms) on Qwen3-8B
// with a 2048-token prompt, over the published minimum link.
constexpr double kDefaultPrefillMs = 40;
constexpr double kDefaultDecodeMs = 5;
constexpr uint64_t kDefaultDecodeBatch = 100;
constexpr const char* kDefaultPrompt = "2048";
constexpr const char* kDefaultOutput = "256";
constexpr const char* kDefaultLink = "25gbe";
constexpr const char* kDefaultSameMachineLink = "nvlink-4";

struct PdArgs {
  OutputOptions out;
  // the model, its KV types and, with --hw (or --plan), the devices, engine, weights and TP whose
  // roofline gives the prefill and decode times: the flags every planning command shares
  PlanOptions plan;
  std::string prompt = kDefaultPrompt, output = kDefaultOutput;
  std::string link;
  double prefill_ms = kDefaultPrefillMs;
  double decode_ms = kDefaultDecodeMs;
  uint64_t decode_batch = kDefaultDecodeBatch;
  std::optional<double> qps;
  std::optional<uint64_t> concurrency, prefill_concurrency, decode_concurrency, gpus;
  bool same_machine = false;
  std::string times_source = "given (--prefill-ms)";
  std::string prefill_band, decode_band;  // with --hw: a calibrated time's band, "; 61.90-778.39 ms
  // with --hw: whether the decode side holds its batch at the whole context (the fit's answer)
  std::optional<FitResult> decode_fit;
  // with --hw: a prompt's stall on the mixed server as the engine schedules it (chunked prefill)
  std::optional<PromptStall> engine_stall;
  std::string engine_name, engine_policy;
  bool engine_mixes = false;  // its prompts' chunks share steps with the decodes
  bool prefill_given = false, decode_given = false;
  // --simulate: both servers under the same Poisson load (planner/serving/pd_serving, serving_sim)
  bool simulate = false, stream = false;
  uint64_t num_prompts = 500, seed = 1;
  uint64_t prefill_workers = 1, decode_workers = 1;
  std::optional<PdServingResult> split_run;
  std::optional<ServedSummary> split_served, mixed_run;
};

std::string upper(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return s;
}

// The simulated servers side by side: TTFT and TPOT, and the split's TTFT in parts.
Json simulation_json(const PdArgs& a) {
  const PdServingResult& s = *a.split_run;
  const ServedSummary& m = *a.mixed_run;
  const auto to_ms = [](double seconds) { return seconds * 1e3; };
  Json mixed = {{"servers", a.prefill_workers + a.decode_workers}, {"stable", m.stable}, {"completed", m.completed}};
  if (m.stable)
    mixed.update({{"ttft_ms_p50", to_ms(m.ttft_s.p50)}, {"ttft_ms_p90", to_ms(m.ttft_s.p90)},
                  {"ttft_ms_mean", to_ms(m.ttft_s.mean)}, {"tpot_ms_p50", to_ms(m.tpot_s.p50)},
                  {"e2el_ms_mean", to_ms(m.e2el_s.mean)}});
  return Json{{"requests", a.num_prompts},
              {"seed", a.seed},
              {"choice", pd_choice_name(pd_choice(*a.split_served, m))},
              {"colocated", mixed},
              {"split",
               {{"prefill_workers", a.prefill_workers}, {"decode_workers", a.decode_workers}, {"stream", a.stream},
                {"completed", s.completed},
                {"ttft_ms_p50", to_ms(s.ttft_s.p50)}, {"ttft_ms_p90", to_ms(s.ttft_s.p90)}, {"ttft_ms_mean", to_ms(s.ttft_s.mean)},
                {"tpot_ms_p50", to_ms(s.tpot_s.p50)}, {"e2el_ms_mean", to_ms(s.e2el_s.mean)},
                {"queue_ms_mean", to_ms(s.queue_s.mean)},
                {"prefill_ms_mean", to_ms(s.prefill_s.mean)}, {"transfer_ms_mean", to_ms(s.transfer_s.mean)},
                {"first_decode_ms_mean", to_ms(s.first_decode_s.mean)}, {"kv_transfer_ms_mean", to_ms(s.link_s.mean)}}}};
}

void print_simulation(const PdArgs& a, double rate_per_s) {
  const PdServingResult& s = *a.split_run;
  const ServedSummary& m = *a.mixed_run;
  fmt::print("\n  simulated: {} Poisson arrivals at {:g} req/s (seed {}) on {} devices either way\n", a.num_prompts,
             rate_per_s, a.seed, a.prefill_workers + a.decode_workers);
  TextTable t{{"server", "TTFT p50", "TTFT p90", "TPOT p50", "E2EL mean", "TTFT in parts (means)"},
              {false, true, true, true, true, false}, {}};
  if (m.stable)
    t.rows.push_back({fmt::format("colocated, {} servers", a.prefill_workers + a.decode_workers), ms(m.ttft_s.p50 * 1e3),
                      ms(m.ttft_s.p90 * 1e3), ms(m.tpot_s.p50 * 1e3), ms(m.e2el_s.mean * 1e3), "-"});
  else
    t.rows.push_back({fmt::format("colocated, {} servers", a.prefill_workers + a.decode_workers), "unstable", "-", "-",
                      "-", m.unstable_reason});
  t.rows.push_back({fmt::format("split, {} prefill + {} decode{}", a.prefill_workers, a.decode_workers,
                                a.stream ? ", streamed" : ""),
                    ms(s.ttft_s.p50 * 1e3), ms(s.ttft_s.p90 * 1e3), ms(s.tpot_s.p50 * 1e3), ms(s.e2el_s.mean * 1e3),
                    fmt::format("queue {} + prefill {} + transfer {} + first decode {}", ms(s.queue_s.mean * 1e3),
                                ms(s.prefill_s.mean * 1e3), ms(s.transfer_s.mean * 1e3), ms(s.first_decode_s.mean * 1e3))});
  fmt::print("{}", t.render("  "));
  if (m.stable)
    fmt::print("  simulated choice: {} (the lower mean E2EL)\n", upper(pd_choice_name(pd_choice(*a.split_served, m))));
}



Json pd_json(const PdResult& r, const PdInputs& in) {
  Json table = Json::array(), matched = Json::array();
  for (const PdTableRow& row : r.table) {
    table.push_back({{"row", row.row}, {"workload", row.workload}, {"advice", row.advice},
                     {"matched", row.matched}, {"because", row.because}});
    if (row.matched) matched.push_back(row.row);
  }
  const PdConcurrencyCheck& c = r.concurrency_check;
  Json check{{"decode_concurrency", c.decode_concurrency},
             {"max_prefill_concurrency", c.max_prefill_concurrency},
             {"prefill_concurrency", c.prefill_concurrency ? Json(*c.prefill_concurrency) : Json(nullptr)},
             {"ok", c.ok ? Json(*c.ok) : Json(nullptr)}};
  Json split = nullptr;
  if (r.gpu_split)
    split = {{"gpus", r.gpu_split->gpus}, {"prefill", r.gpu_split->prefill}, {"decode", r.gpu_split->decode},
             {"ratio_by_count", r.gpu_split->ratio_by_count}};
  return Json{{"model", in.spec.name},
              {"kv_k", ggml_type_info(in.kv.k).name},
              {"kv_v", ggml_type_info(in.kv.v).name},
              {"prompt_tokens", in.workload.prompt_tokens},
              {"output_tokens", in.workload.output_tokens},
              {"link", r.link.name},
              {"link_bytes_per_s", r.link.bandwidth_bytes_per_s},
              {"link_message_ms", to_ms_exact(r.link.message_latency_s)},
              {"kv_bytes_per_token", r.kv_bytes_per_token},
              {"kv_bytes_per_request", r.kv_bytes_per_request},
              {"transfer_ms", r.transfer_ms},
              {"prefill_ms", r.prefill_ms},
              {"transfer_exceeds_prefill", r.transfer_exceeds_prefill},
              {"ttft_split_ms", r.ttft_split_ms ? Json(*r.ttft_split_ms) : Json(nullptr)},
              {"decode_ms", r.decode_step_ms},
              {"decode_batch", r.decode_batch},
              {"stall_ms", r.stall.step_ms},
              {"stall_added_ms", r.stall.added_ms},
              {"stall_ratio", r.stall.ratio},
              {"stall_delayed_request_ms", r.stall.delayed_request_ms},
              {"rate_per_s", r.rate_per_s},
              {"rate_from_littles_law", r.rate_from_littles_law},
              {"concurrency", r.concurrency},
              {"concurrency_from_littles_law", r.concurrency_from_littles_law},
              {"link_load", r.link_load},
              {"link_saturated", r.link_saturated},
              {"link_below_minimum", r.link_below_minimum},
              {"link_needed_bytes_per_s", r.link_needed_bytes_per_s},
              {"table", table},
              {"table_rows_matched", matched},
              {"table_verdict", pd_verdict_name(r.table_verdict)},
              {"verdict", pd_verdict_name(r.verdict)},
              {"link_vetoed", r.link_vetoed},
              {"split_across", r.split_across_gpus ? "gpus" : "machines"},
              {"concurrency_rule", check},
              {"gpu_split", split},
              {"reasons", r.reasons}};
}

void print_text(const PdResult& r, const PdInputs& in, const std::string& times_source, const std::string& decode_source) {
  fmt::print("pd: {}, KV {}, {}-token prompts, {}-token outputs, {} {} ({} per direction)\n\n", in.spec.name,
             kv_types_label(in.kv), in.workload.prompt_tokens, in.workload.output_tokens,
             r.split_across_gpus ? "GPUs of one machine over" : "machines over", r.link.name,
             format_rate(r.link.bandwidth_bytes_per_s));
  auto row = [](std::string_view label, std::string value, std::string note = "") {
    std::string line = fmt::format("  {:<22}{:>14}   {}", label, value, note);
    while (line.back() == ' ') line.pop_back();
    fmt::print("{}\n", line);
  };
  row("KV per request", format_bytes(r.kv_bytes_per_request),
      r.kv_bytes_per_request == r.kv_bytes_per_token * in.workload.prompt_tokens
          ? fmt::format("{}/token x {} tokens = {} B", format_bytes(r.kv_bytes_per_token), in.workload.prompt_tokens,
                        r.kv_bytes_per_request)
          : fmt::format("the cache of {} prompt tokens in whole pages{}{} = {} B", in.workload.prompt_tokens,
                        in.spec.window_layer_count() ? ", windows capped" : "",
                        in.spec.is_hybrid() ? ", with the linear-attention state" : "", r.kv_bytes_per_request));
  row("KV transfer", ms(r.transfer_ms),
      fmt::format("one request over an idle {}{}{}", r.link.name,
                  r.link.message_latency_s > 0 ? fmt::format(", its {:g} us latency included", r.link.message_latency_s * 1e6) : "",
                  r.transfer_exceeds_prefill ? "; exceeds the prefill" : ""));
  row("prefill", ms(r.prefill_ms), times_source);
  if (r.ttft_split_ms)
    row("TTFT with the split", ms(*r.ttft_split_ms), "prefill + transfer, before any queueing");
  else
    row("TTFT with the split", "unstable", "the link saturates (see link load)");
  row("decode step", ms(r.decode_step_ms),
      fmt::format("{} decodes ({})", r.decode_batch, decode_source));
  row("stalled decode step", ms(r.stall.step_ms),
      fmt::format("{:.2f}x: a prefill in the step delays each of {} decodes by {}", r.stall.ratio, r.decode_batch,
                  ms(r.stall.added_ms)));
  row("rate", fmt::format("{:.4g} req/s", r.rate_per_s),
      r.rate_from_littles_law ? fmt::format("Little's law: {} in flight / {:.4g} s per request", r.concurrency,
                                            r.request_time_s)
                              : "given (--qps)");
  row("concurrency", fmt::format("{}", r.concurrency),
      r.concurrency_from_littles_law
          ? fmt::format("requests in flight, Little's law: {:.4g} req/s x {:.4g} s per request = {:.3g}", r.rate_per_s,
                        r.request_time_s, r.littles_law_in_flight)
      : in.workload.concurrency ? std::string("requests in flight, given (--concurrency)")
                                : std::string("requests in flight: --decode-batch (no --qps or --concurrency given)"));
  if (r.link_saturated)
    row("link load", "unstable",
        fmt::format("KV traffic is {:.2f}x the link: transfers queue without bound", r.link_load));
  else
    row("link load", fmt::format("{:.1f}%", 100.0 * r.link_load), "of the link's bandwidth, for KV alone");
  row("link needed", format_rate(r.link_needed_bytes_per_s), "transfer <= prefill and load < 1");

  fmt::print("\n  when a split pays, by workload (a published rule of thumb; its thresholds under --help):\n");
  TextTable t{{"row", "workload", "advice", "match", "because"}, {true, false, false, false, false}, {}};
  for (const PdTableRow& tr : r.table)
    t.rows.push_back({fmt::format("{}", tr.row), tr.workload, tr.advice, tr.matched ? "yes" : "-", tr.because});
  fmt::print("{}", t.render("  "));

  std::string qualifier;
  if (r.link_vetoed)
    qualifier = fmt::format(" over {} (the table alone says {})", r.link.name, pd_verdict_name(r.table_verdict));
  else if (r.verdict != r.table_verdict)
    qualifier = fmt::format(" (the table alone says {})", pd_verdict_name(r.table_verdict));
  else if (r.verdict == PdVerdict::Yes || r.verdict == PdVerdict::StronglyYes)
    qualifier = r.split_across_gpus ? ", across the GPUs of one machine" : ", across machines";
  fmt::print("\n  verdict: {}{}\n", upper(pd_verdict_name(r.verdict)), qualifier);
  for (const std::string& reason : r.reasons) fmt::print("  - {}\n", reason);
}

void print_explain(const PdResult& r) {
  fmt::print("\nderivation:\n");
  for (const auto& line : r.derivation) fmt::print("  {}\n", line);
  const PdSeedReference& s = kSeed002PdReference;
  fmt::print("\nreference (a published measurement, not computed here):\n"
             "  {}: mixed about {:.0f} tok/s, PD split about {:.0f} tok/s, TTFT about {:.0f}%\n",
             s.setup, s.mixed_tokens_per_s, s.split_tokens_per_s, 100.0 * s.ttft_change);
  fmt::print("thresholds (this tool's reading of the table, which gives no numbers for load):\n"
             "  low QPS < {} req/s; medium concurrency {} to {}; high concurrency >= {}\n",
             kPdLowRatePerS, kPdMediumConcurrency, kPdHighConcurrency - 1, kPdHighConcurrency);
}

void run(const PdArgs& a) {
  PdInputs in;
  Plan plan = a.plan.resolve();
  in.spec = plan_model_spec(plan);
  in.kv = plan.kv;
  in.workload.prompt_tokens = parse_tokens(a.prompt, "--input-len");
  in.workload.output_tokens = parse_tokens(a.output, "--output-len");
  in.workload.rate_per_s = a.qps;
  in.workload.concurrency = a.concurrency;
  in.times = {a.prefill_ms, a.decode_ms, a.decode_batch};
  PdArgs& args = const_cast<PdArgs&>(a);
  const bool on_devices = !a.plan.hw.empty() || !a.plan.plan_file.empty();
  if (!on_devices && (!a.plan.engine.empty() || a.plan.tp.value_or(1) != 1))
    throw InputError(fmt::format("{}: needs --hw (the engine and the devices size the roofline's times and the "
                                 "decode fit; without --hw the times are --prefill-ms and --decode-ms)",
                                 a.plan.engine.empty() ? "--tp" : "--engine"));
  try {
    in.deployment.link = load_link(!a.link.empty() ? a.link : a.same_machine ? kDefaultSameMachineLink : kDefaultLink);
  } catch (const InputError& e) {
    throw InputError(std::string("--link: ") + e.what());
  }
  if (a.stream && !a.simulate) throw InputError("--stream: needs --simulate (it changes when the split's KV crosses)");
  if (a.simulate && (!on_devices || !a.qps))
    throw InputError("--simulate: needs --hw (the roofline times both servers' steps) and --qps (their Poisson load)");
  if (on_devices) {
    // The roofline of the model on --hw: one prefill of the prompt, and one decode step of the
    // batch at the mean context while generating. Explicit --prefill-ms / --decode-ms still win.
    if (a.decode_batch == 0) throw InputError("--decode-batch: expected at least 1");
    // the decode side holds every request of its batch at prompt + output tokens
    plan.context = in.workload.prompt_tokens + in.workload.output_tokens;
    plan.requests = a.decode_batch;
    const ResolvedPlan rp = resolve_plan(plan);
    in.kv = rp.plan.kv;  // a hybrid model's state as the engine keeps it
    args.decode_fit = rp.fit;
    // The same prompt on the mixed server, as the engine's scheduler cuts it (when the step times
    // are the roofline's: given times have no scheduler).
    if (!a.prefill_given && !a.decode_given) {
      args.engine_stall = prompt_stall(rp.server, in.workload.prompt_tokens, a.decode_batch,
                                       a.decode_batch * (in.workload.prompt_tokens + in.workload.output_tokens / 2));
      args.engine_name = rp.engine.empty() ? "no engine" : rp.engine;
      args.engine_policy = describe_policy(rp.server);
      args.engine_mixes = rp.server.step_token_budget && rp.server.mix_decodes;
    }
    auto band = [](const StepCost& c) { return c.calibrated ? "; " + step_band_text(c) : std::string(); };
    if (!a.prefill_given) {
      const StepCost c = rp.roofline->prefill(in.workload.prompt_tokens);
      in.times.prefill_ms = c.time_s * 1e3;
      args.prefill_band = band(c);
    }
    if (!a.decode_given) {
      const StepCost c = rp.roofline->decode_step(a.decode_batch, in.workload.prompt_tokens + in.workload.output_tokens / 2);
      in.times.decode_step_ms = c.time_s * 1e3;
      args.decode_band = band(c);
    }
    args.times_source = fmt::format("{} of {} ({}) on {}", step_model_name(rp), rp.spec.name, rp.weights.label, rp.hw.name);
    if (a.simulate) {  // both servers on the same devices and load: P + D colocated servers, or P prefill and D decode
      if (a.gpus && *a.gpus >= 2) {
        const PdGpuSplit split = split_pd_gpus(*a.gpus);
        args.prefill_workers = split.prefill;
        args.decode_workers = split.decode;
      }
      ServingLoad load;
      load.rate_per_s = *a.qps;
      load.requests = a.num_prompts;
      load.seed = a.seed;
      load.prompt_tokens = TokenLengths::fixed(in.workload.prompt_tokens);
      load.output_tokens = TokenLengths::fixed(in.workload.output_tokens);
      const PdServerModel model = pd_server_model(rp.server, in.spec, in.kv, in.deployment.link,
                                                  args.prefill_workers, args.decode_workers, a.stream);
      const std::vector<ServingRequest> requests = serving_requests(load);
      args.split_run = simulate_pd_serving(model, requests);
      args.split_served = summarize_served(*args.split_run, requests);
      // the same arrivals on as many colocated servers, request i on server i mod n (as report runs them)
      args.mixed_run = simulate_colocated(rp.server, load, requests, args.prefill_workers + args.decode_workers);
    }
  }
  in.deployment.same_machine = a.same_machine;
  in.deployment.gpus = a.gpus;
  in.deployment.prefill_concurrency = a.prefill_concurrency;
  in.deployment.decode_concurrency = a.decode_concurrency;
  const PdResult r = plan_pd(in);
  if (a.out.json()) {
    Json j = pd_json(r, in);
    if (a.decode_fit)
      j["decode_fit"] = {{"fits", a.decode_fit->fits}, {"max_requests", a.decode_fit->max_requests},
                         {"headroom_bytes", a.decode_fit->headroom_bytes}};
    j["engine_stall"] = nullptr;
    if (const auto& e = a.engine_stall)
      j["engine_stall"] = {{"engine", a.engine_name}, {"policy", a.engine_policy}, {"steps", e->steps},
                           {"chunk_tokens", e->chunk_tokens}, {"step_ms", e->gap_s * 1e3},
                           {"ratio", e->gap_s * 1e3 / r.decode_step_ms}};
    if (a.split_run) j["simulation"] = simulation_json(a);
    if (a.out.explain) {
      const PdSeedReference& s = kSeed002PdReference;
      j["derivation"] = r.derivation;
      j["reference"] = {{"setup", s.setup}, {"mixed_tokens_per_s", s.mixed_tokens_per_s},
                             {"split_tokens_per_s", s.split_tokens_per_s}, {"ttft_change", s.ttft_change},
                             {"note", "a published measurement; a reference, not computed here"}};
    }
    print_json(j);
    return;
  }
  print_text(r, in,
             a.prefill_given ? "given (--prefill-ms)"
             : !on_devices   ? fmt::format("default (--prefill-ms {:g}; or --hw for the roofline's)", kDefaultPrefillMs)
                             : a.times_source + a.prefill_band,
             a.decode_given ? "given (--decode-ms)"
             : !on_devices  ? fmt::format("default (--decode-ms {:g}; or --hw for the roofline's)", kDefaultDecodeMs)
                            : a.times_source + a.decode_band);
  if (const auto& e = a.engine_stall)
    fmt::print("\n  as {} schedules it ({}): {}\n", a.engine_name, a.engine_policy,
               a.engine_mixes && e->steps > 1
                   ? fmt::format("the prompt in {} chunks of at most {} tokens beside the decodes; the slowest step "
                                 "{} ({:.2f}x the step alone) instead of {}",
                                 e->steps, e->chunk_tokens, ms(e->gap_s * 1e3), e->gap_s * 1e3 / r.decode_step_ms,
                                 ms(r.stall.step_ms))
                   : fmt::format("the decodes wait for the whole prefill{}: {} between two tokens",
                                 e->steps > 1 ? fmt::format(" ({} steps of prompts alone, back to back)", e->steps) : "",
                                 ms(e->gap_s * 1e3)));
  if (a.decode_fit) {
    const FitResult& f = *a.decode_fit;
    fmt::print("\n  decode batch on {}{}: {} requests x {} tokens {} (at most {} at that context; `fit` for the "
               "breakdown)\n", f.tp > 1 ? fmt::format("{} x ", f.tp) : "", a.plan.hw.empty() ? plan.hw : a.plan.hw,
               a.decode_batch, f.context,
               f.fits ? fmt::format("fit with {} to spare", gib(f.headroom_bytes))
                      : fmt::format("DO NOT FIT: {} short", gib(-f.headroom_bytes)),
               f.max_requests);
  }
  if (a.split_run) print_simulation(a, *a.qps);
  if (a.out.explain) print_explain(r);
}

}  // namespace

void add_pd_command(CLI::App& app) {
  auto args = std::make_shared<PdArgs>();
  CLI::App* cmd = app.add_subcommand(
      "pd", "Prefill/decode disaggregation: the KV transfer against the prefill stall a split removes; when a split "
            "pays, by workload; prefill instances at most a third of decode's");
  // The shared plan flags (--model, --kv, --hw, --engine, --weights, --tp, the engines' own); the
  // decode side's context and batch are this command's: the prompt and output, --decode-batch.
  args->plan.add_to(*cmd, PlanOptions::kModel | PlanOptions::kMemory);
  for (const char* derived : {"--ctx-size", "--parallel"}) cmd->remove_option(cmd->get_option(derived));
  cmd->add_option("--input-len,-p,--prompt", args->prompt,
                  fmt::format("Mean prompt per request in tokens (2048 or 2K; llama-bench's -p); its KV is what a "
                              "split transfers (default {})", kDefaultPrompt))
      ->type_name("TOKENS");
  cmd->add_option("--output-len,-n,--output", args->output,
                  fmt::format("Mean generated tokens per request (llama.cpp's -n; default {})", kDefaultOutput))
      ->type_name("TOKENS");
  cmd->add_option("--link", args->link,
                  fmt::format("Link that carries the KV from prefill to decode: a built-in name ({}) or a link "
                              "JSON path (default {}, or {} with --same-machine)",
                              fmt::join(builtin_link_names(), ", "), kDefaultLink, kDefaultSameMachineLink))
      ->type_name("NAME|PATH");
  cmd->add_option("--prefill-ms", args->prefill_ms,
                  fmt::format("Time of one prefill of --input-len tokens, in milliseconds (default {}, the "
                              "example below)", kDefaultPrefillMs))
      ->check(kPositiveMs)->type_name("MS");
  cmd->add_option("--decode-ms", args->decode_ms,
                  fmt::format("Time of one decode step of the mixed batch, in milliseconds (default {})",
                              kDefaultDecodeMs))
      ->check(kPositiveMs)->type_name("MS");
  cmd->add_option("--decode-batch", args->decode_batch,
                  fmt::format("Decodes in that step, all stalled by a prefill inserted into it (default {})",
                              kDefaultDecodeBatch))
      ->check(kNonNegativeCount)
      ->type_name("N");
  cmd->add_option("--qps", args->qps,
                  "Arrival rate in requests per second (default: Little's law, concurrency / (prefill + "
                  "output x decode step))")
      ->check(kArrivalRate)->type_name("REQ/S");
  cmd->add_option("--concurrency", args->concurrency,
                  "Requests in flight, for the table's concurrency bands (default: --decode-batch)")
      ->check(kNonNegativeCount)
      ->type_name("N");
  cmd->add_option("--prefill-concurrency", args->prefill_concurrency,
                  "Planned prefill concurrency, checked against 1/3 of the decode concurrency (default: none, "
                  "only the limit is reported)")
      ->check(kNonNegativeCount)
      ->type_name("N");
  cmd->add_option("--decode-concurrency", args->decode_concurrency,
                  "Planned decode concurrency (default: --concurrency)")
      ->check(kNonNegativeCount)
      ->type_name("N");
  cmd->add_option("--gpus", args->gpus,
                  "GPUs/instances to divide into prefill and decode groups, one prefill to three decode (prefill "
                  "concurrency kept under a third of decode's; default: none, no split suggested; 1 means nothing "
                  "to split)")
      ->check(kNonNegativeCount)
      ->type_name("N");
  cmd->add_flag("--simulate", args->simulate,
                "With --hw and --qps: run both servers under that Poisson load on the same devices (the colocated "
                "ones sharing the arrivals, or --gpus divided into prefill and decode; default one of each) and "
                "print their TTFT and TPOT, the split's TTFT in parts");
  cmd->add_flag("--stream", args->stream,
                "With --simulate: the KV crosses layer by layer as the prefill writes it, overlapping the prefill, "
                "a transfer per layer and forward pass over the prompt (the engine's: vLLM's step budget, "
                "llama.cpp's micro-batch) (default: whole, once the prefill ends)");
  cmd->add_option("--num-prompts", args->num_prompts, "Requests simulated with --simulate (vLLM bench's name; default 500)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1000000}))
      ->type_name("N");
  cmd->add_option("--seed", args->seed, "The arrivals' seed with --simulate (default 1)")->type_name("N");
  cmd->add_flag("--same-machine", args->same_machine,
                "Prefill and decode GPUs share one machine (NVLink): split across GPUs, not machines "
                "(default: separate machines)");
  args->out.add_to(*cmd);
  cmd->footer(
      "When a split pays, as a practitioner's write-up of serving with nano-vllm puts it (two A100s there: mixed\n"
      "about 180 tok/s, split about 260, first token 35% sooner): not for short inputs at low load (a split\n"
      "only adds a network hop); strongly for long inputs at high concurrency; for long outputs at medium\n"
      "concurrency; across the GPUs of one machine, not machines, where they share NVLink; prefill\n"
      "concurrency under a third of decode's; the KV over at least 25 Gb/s, ideally RDMA or NVLink. Its\n"
      "thresholds as this tool reads them: short input < 500 tokens, long input > 2000, long output > 1000;\n"
      "low QPS < 2 req/s; medium concurrency 16-63, high >= 64.\n"
      "JSON: stall_ms is the decode step with the prefill inside (decode + prefill); stall_ratio is that\n"
      "over the step alone.\n"
      "Examples (a 40 ms prefill in a batch of 100 decodes at 5 ms; then the times from Qwen3-8B's roofline on an H200):\n"
      "  infer-plan pd --model qwen3-8b --input-len 2000 --link 400g-rdma --prefill-ms 40 --decode-ms 5 --decode-batch 100\n"
      "  infer-plan pd --model qwen3-8b --hw h200 -p 2K --link 25gbe --qps 1\n"
      "  infer-plan pd --model llama-3.1-70b --hw h100-sxm --engine vllm --tp 4 -p 8K --decode-batch 64");
  cmd->callback([args, cmd] {
    args->prefill_given = cmd->count("--prefill-ms") > 0;
    args->decode_given = cmd->count("--decode-ms") > 0;
    run(*args);
  });
}

}  // namespace infer_plan::apps
