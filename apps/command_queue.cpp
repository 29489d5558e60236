// `infer-plan queue`: Little's law (n = lambda x T from any two), or with --simulate a
// discrete-event run of a continuous-batching server under Poisson arrivals (latency
// percentiles, rejections, stability), and with --max-rate the highest rate meeting an SLO.
#include <cmath>
#include <fmt/format.h>
#include <memory>
#include <optional>
#include <vector>

#include "apps/commands.hpp"
#include "apps/format.hpp"
#include "apps/plan_options.hpp"
#include "apps/text_table.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/limits.hpp"
#include "planner/core/json_fields.hpp"
#include "planner/serving/littles_law.hpp"
#include "planner/cost/memory_fit.hpp"
#include "planner/plan/figures.hpp"
#include "planner/plan/plan.hpp"
#include "planner/plan/predict.hpp"
#include "planner/serving/engine_policy.hpp"
#include "planner/serving/scheduler.hpp"
#include "planner/serving/serving_sim.hpp"
#include "planner/core/units.hpp"

namespace infer_plan::apps {
namespace {

constexpr double kBurstS = 0.1;  // --rate inf: every request within this

struct QueueArgs {
  OutputOptions out;
  std::optional<double> rate_per_s, sojourn_s, in_system;
  bool all_at_once = false;  // --rate inf: vLLM bench's --request-rate inf, every request at t = 0
  bool simulate = false;
  uint64_t requests = 1000;
  std::string prompt = "512", output = "256", arrivals = "poisson", kv_tokens, deadline_rule = "persists";
  std::string prefix_len;  // vLLM bench's --random-prefix-len: shared tokens before each prompt
  std::optional<double> iteration_ms;
  double per_seq_ms = 0, per_ktoken_ms = 0, prefill_ms = 0, prefill_per_ktoken_ms = 0;
  std::optional<uint64_t> max_batch;  // default: the engine's (planner/serving/engine_policy)
  std::optional<uint64_t> max_concurrency;  // vLLM bench's --max-concurrency: a closed loop
  std::optional<uint64_t> parallel, batch_size;  // llama-server's -np and -b
  std::optional<uint64_t> max_num_batched_tokens;  // chunked prefill's budget; default: the engine's
  std::string engine_version;                     // vLLM's: V0 (before 0.8) prefills alone
  bool enable_prefix_caching = false, no_prefix_caching = false;
  std::optional<double> deadline_s;
  uint64_t seed = 1;
  bool max_rate = false;
  std::optional<double> slo_ttft_p99_s, slo_tpot_p99_ms, slo_reject;
  double rate_tolerance = 0.01;
  std::vector<std::string> goodput;  // vLLM's KEY:MS, e.g. ttft:500 tpot:50
  std::vector<CLI::Option*> simulation_options;  // given without --simulate: an error
  // Roofline mode: iteration and prefill times from a model on a profile, KV capacity from fit.
  std::string model = "qwen3-8b", hw, weights = "BF16", kv, engine;
  std::optional<uint64_t> tp;  // tensor-parallel devices per replica (roofline mode)
  std::string tp_link;         // ... and the link between them (a name or path; empty: the profile's)
};

// --- Little's law ---

void run_little(const QueueArgs& a) {
  LittleQuery q;
  q.rate_per_s = a.rate_per_s;
  q.mean_sojourn_s = a.sojourn_s;
  q.mean_in_system = a.in_system;
  q.rate_what = "--rate";
  q.sojourn_what = "--sojourn";
  q.in_system_what = "--in-system";
  const LittleResult r = solve_littles_law(q);
  const char* solved = r.solved_for == LittleUnknown::in_system ? "mean_in_system"
                       : r.solved_for == LittleUnknown::rate    ? "rate_per_s"
                                                                : "mean_sojourn_s";
  if (a.out.json()) {
    const Json j{{"mode", "littles_law"}, {"mean_in_system", r.mean_in_system}, {"rate_per_s", r.rate_per_s},
                 {"mean_sojourn_s", r.mean_sojourn_s}, {"solved_for", solved}};
    print_json(j);
    return;
  }
  auto mark = [&](LittleUnknown u) { return r.solved_for == u ? "  <- solved" : ""; };
  fmt::print("Little's law: n = lambda x T\n");
  fmt::print("  arrival rate (lambda)   {:g} req/s{}\n", r.rate_per_s, mark(LittleUnknown::rate));
  fmt::print("  mean sojourn (T)        {:g} s{}\n", r.mean_sojourn_s, mark(LittleUnknown::sojourn));
  fmt::print("  mean in system (n)      {:g} requests{}\n", r.mean_in_system, mark(LittleUnknown::in_system));
  fmt::print("Holds for a stable system in the long run; bursts, deadlines and KV limits need "
             "--simulate. Requests in the system are set by lambda x T, not by how many KV slots fit: "
             "both must hold.\n");
  if (a.out.explain) fmt::print("\n{}\n", r.derivation);
}

// --- simulation ---

struct Simulation {
  ServerModel server;
  ServingLoad load;
  std::shared_ptr<ResolvedPlan> plan;  // roofline mode: owns the roofline the callbacks use
  std::string server_text;             // how the server's times are computed
  std::string basis = "given";         // the step times': given (--iteration-ms), calibrated, transferred, ceiling
};

Simulation build_simulation(const QueueArgs& a) {
  if (a.sojourn_s || a.in_system)
    throw InputError("--sojourn and --in-system belong to Little's law; --simulate measures them");
  if (!a.iteration_ms && a.hw.empty())
    throw InputError("--simulate needs the server's times: --hw (the model's roofline on a profile) or "
                     "--iteration-ms (the time of one decode iteration at batch 1)");
  if (a.iteration_ms && !a.hw.empty())
    throw InputError("--iteration-ms and --hw both given: the times come from one or the other");
  if (a.tp && a.hw.empty()) throw InputError("--tp: tensor parallel needs --hw (the roofline splits the model across its devices)");
  if (!a.tp_link.empty() && a.hw.empty())
    throw InputError("--tp-link: the link between --tp devices needs --hw (the roofline times the all-reduce over it)");
  // The times, rates and fractions are range-checked by their flags' validators.
  if (a.max_batch && *a.max_batch == 0) throw InputError("--max-batch: must be at least 1");
  if (a.max_num_batched_tokens && (*a.max_num_batched_tokens == 0 || *a.max_num_batched_tokens > kMaxContextTokens))
    throw InputError(fmt::format("--max-num-batched-tokens: {} is out of range; expected 1 to {} tokens per step",
                                 *a.max_num_batched_tokens, kMaxContextTokens));
  if (a.requests == 0 || a.requests > kMaxSimulatedRequests)
    throw InputError(fmt::format("--num-prompts: {} is out of range 1..{}", a.requests, kMaxSimulatedRequests));

  Simulation s;
  if (a.hw.empty() && (a.enable_prefix_caching || a.no_prefix_caching))
    throw InputError("--enable-prefix-caching and --no-enable-prefix-caching choose the engine's prefix caching; they "
                     "need --hw and --engine vllm, sglang or trtllm");
  if (!a.hw.empty()) {
    Plan plan;
    plan.model = a.model;
    plan.hw = a.hw;
    plan.weights = a.weights;
    plan.engine = a.engine;
    plan.tp = a.tp.value_or(1);
    if (!a.tp_link.empty()) plan.tp_link = checked_tp_link(a.tp_link);
    plan.engine_settings.max_num_batched_tokens = a.max_num_batched_tokens;
    plan.engine_settings.batch = a.batch_size;
    if (!a.engine_version.empty()) plan.engine_settings.engine_version = a.engine_version;
    plan.engine_settings.enable_prefix_caching = prefix_caching_setting(a.enable_prefix_caching, a.no_prefix_caching);
    validate_plan(plan, [](std::string_view field) {
      return field == "engine_version" ? std::string("--engine-version")
             : field == "batch"        ? std::string("--batch-size")
             : field == "tp_link"      ? std::string("--tp-link")
             : field == "tp"           ? std::string("--tp")
                                       : std::string(field);
    });
    if (!a.kv.empty()) plan.kv.k = plan.kv.v = kv_cache_type(a.kv, "--kv").type;
    s.plan = std::make_shared<ResolvedPlan>(resolve_plan(plan));
    require_engine_runs(*s.plan);
    s.basis = s.plan->roofline->rates().basis;
    // The plan's server, its KV pool all that fit leaves after the weights (one request's context
    // is irrelevant here).
    const FitResult& fit = s.plan->pool_fit;
    if (fit.kv_room_bytes == 0)
      throw InputError(fmt::format("--hw {}: {} ({}) leaves no memory for the KV cache", a.hw, s.plan->spec.name,
                                   s.plan->weights.label));
    s.server = s.plan->server;
    s.server.kv_capacity_tokens = fit.kv_tokens_in(fit.kv_room_bytes);
    s.server_text = fmt::format("{} of {} ({}, KV {}) on {}: decode iteration(batch, context) and prefill(prompt) "
                                "from bytes and FLOPs ({}); KV capacity from fit ({})", step_model_name(*s.plan), s.plan->spec.name,
                                s.plan->weights.label, ggml_type_info(plan.kv.k).name,
                                plan.tp > 1 ? fmt::format("{} x {} ({})", plan.tp, s.plan->hw.name,
                                                            s.plan->roofline->layer_split() > 1 ? "layer split" : "tensor parallel")
                                            : s.plan->hw.name,
                                s.plan->roofline->rates().step_source, fit.engine_assumption);
  } else {
    const double base_s = *a.iteration_ms / 1e3, per_seq_s = a.per_seq_ms / 1e3, per_token_s = a.per_ktoken_ms / 1e6;
    s.server.decode_iteration_s = [=](uint64_t batch, uint64_t context) {
      return base_s + per_seq_s * static_cast<double>(batch) + per_token_s * static_cast<double>(context);
    };
    const double prefill_s = a.prefill_ms / 1e3, prefill_token_s = a.prefill_per_ktoken_ms / 1e6;
    s.server.prefill_s = [=](uint64_t prompt) { return prefill_s + prefill_token_s * static_cast<double>(prompt); };
    s.server_text = fmt::format("decode iteration {:g} ms + {:g} ms x batch + {:g} ms per 1K context tokens; prefill "
                                "{:g} ms + {:g} ms per 1K prompt tokens", *a.iteration_ms, a.per_seq_ms,
                                a.per_ktoken_ms, a.prefill_ms, a.prefill_per_ktoken_ms);
  }
  if ((a.parallel || a.batch_size) && !(s.plan && s.plan->engine == "llama.cpp"))
    throw InputError(fmt::format("--parallel and --batch-size are llama-server's slots and n_batch; {} (for other "
                                 "engines: --max-batch and --max-num-batched-tokens)",
                                 s.plan ? fmt::format("the engine here is {} (--engine llama.cpp)", s.plan->engine)
                                        : std::string("they need --hw and --engine llama.cpp")));
  if (a.parallel && *a.parallel == 0) throw InputError("--parallel: 0 slots; expected at least 1");
  if (a.parallel && a.max_batch)
    throw InputError("--parallel and --max-batch: both set the most running requests; give one");
  if (a.max_num_batched_tokens) s.server.step_token_budget = a.max_num_batched_tokens;
  s.server.max_batch = a.parallel ? *a.parallel : a.max_batch ? *a.max_batch : s.plan ? engine_policy(s.plan->engine, s.plan->hw, s.plan->plan.engine_settings).max_batch
                                                            : EnginePolicy{}.max_batch;
  if (!a.kv_tokens.empty()) {  // overrides the roofline mode's fit
    const uint64_t kv = parse_tokens(a.kv_tokens, "--kv-tokens");
    if (kv == 0) throw InputError("--kv-tokens: must be at least 1 token (leave it out for no limit)");
    s.server.kv_capacity_tokens = kv;
  }
  if (a.max_rate) {
    s.load.rate_per_s = 1;  // the search sets it
  } else {
    if (!a.rate_per_s) throw InputError("--rate is required with --simulate (arrivals per second), or give --max-rate");
    // inf: every request within the first tenth of a second, as a benchmark's burst
    s.load.rate_per_s = a.all_at_once ? static_cast<double>(a.requests) / kBurstS : *a.rate_per_s;
  }
  s.load.requests = a.requests;
  if (a.max_concurrency) {
    if (a.max_rate)
      throw InputError("--max-concurrency and --max-rate: a closed loop sets its own rate; give --rate (or inf) with it");
    s.load.max_concurrency = a.max_concurrency;
  }
  s.load.finite_run = true;  // a benchmark's N requests: their latencies even when the queue grows
  s.load.arrivals = a.arrivals == "fixed" ? ArrivalProcess::fixed : ArrivalProcess::poisson;
  s.load.prompt_tokens = parse_token_lengths(a.prompt, "--input-len");
  if (!a.prefix_len.empty() && a.prefix_len != "0") {  // as vLLM bench: the shared prefix comes before --input-len's tokens
    const uint64_t prefix = parse_tokens(a.prefix_len, "--random-prefix-len");
    if (prefix + s.load.prompt_tokens.max_tokens > (uint64_t{1} << 32))
      throw InputError(fmt::format("--random-prefix-len and --input-len: {} + {} tokens a prompt is beyond 2^32", prefix,
                                   s.load.prompt_tokens.max_tokens));
    s.load.shared_prefix_tokens = prefix;
    s.load.prompt_tokens.min_tokens += prefix;
    s.load.prompt_tokens.max_tokens += prefix;
  }
  s.load.output_tokens = parse_token_lengths(a.output, "--output-len");
  s.load.deadline_s = a.deadline_s;
  s.load.deadline_prediction =
      a.deadline_rule == "lower-bound" ? DeadlinePrediction::no_more_arrivals : DeadlinePrediction::load_persists;
  s.load.seed = a.seed;
  s.load.goodput = parse_goodput(a.goodput);
  return s;
}

std::string lengths_text(TokenLengths t) {
  return t.min_tokens == t.max_tokens ? fmt::format("{}", t.min_tokens)
                                      : fmt::format("{}..{} (uniform)", t.min_tokens, t.max_tokens);
}

Json lengths_json(TokenLengths t) { return Json{{"min", t.min_tokens}, {"max", t.max_tokens}}; }

// The bands of the means a step model's error gives: (latency key, its band) for TTFT (the prefill's
// error), TPOT and ITL (the decode step's); none where the step times are given or a ceiling.
struct MeanBand {
  const char* key;   // the JSON distribution's
  const char* name;  // the table's row
  Distribution ServingLatency::*latency;
  ErrorBand band;
};
std::vector<MeanBand> mean_bands(const Simulation& s) {
  if (!s.plan || (s.basis != "calibrated" && s.basis != "transferred")) return {};
  const std::optional<StepCalibration>& c = s.plan->roofline->calibration();
  if (!c) return {};
  std::vector<MeanBand> out;
  if (c->prefill && c->prefill->error.points > 0) out.push_back({"ttft_ms", "TTFT", &ServingLatency::ttft_s, c->prefill->error});
  if (c->decode.error.points > 0) {
    out.push_back({"tpot_ms", "TPOT", &ServingLatency::tpot_s, c->decode.error});
    out.push_back({"itl_ms", "ITL", &ServingLatency::itl_s, c->decode.error});
  }
  return out;
}

// Latency keys are null when nothing completed; an unstable run's are its N requests' (stable: false).
Json simulation_json(const Simulation& s, const ServingResult& r) {
  Json j{{"num_prompts", r.requests},
         {"basis", s.basis},
         {"server", s.server_text},
         {"rate_per_s", s.load.rate_per_s},
         {"arrivals", s.load.arrivals == ArrivalProcess::poisson ? "poisson" : "fixed"},
         {"seed", s.load.seed},
         {"max_concurrency", s.load.max_concurrency ? Json(*s.load.max_concurrency) : Json(nullptr)},
         {"input_len", lengths_json(s.load.prompt_tokens)},
         {"output_len", lengths_json(s.load.output_tokens)},
         {"deadline_s", s.load.deadline_s ? Json(*s.load.deadline_s) : Json(nullptr)},
         {"deadline_rule", s.load.deadline_prediction == DeadlinePrediction::load_persists ? "persists" : "lower-bound"},
         {"max_batch", s.server.max_batch},
         {"step_token_budget", s.server.step_token_budget ? Json(*s.server.step_token_budget) : Json(nullptr)},
         {"mix_decodes", s.server.mix_decodes},
         {"chunk_prompts", s.server.chunk_prompts},
         {"kv_page_tokens", s.server.kv_page_tokens},
         {"kv_on_demand", s.server.kv_on_demand},
         {"prefix_caching", s.server.prefix_caching},
         {"shared_prefix_tokens", s.load.shared_prefix_tokens},
         {"front_end_ms", s.server.first_token_s * 1e3},
         {"kv_capacity_tokens", s.server.kv_capacity_tokens ? Json(*s.server.kv_capacity_tokens) : Json(nullptr)},
         {"completed", r.completed},
         {"completed_late", r.completed_late},
         {"rejected", r.rejected.total()},
         {"rejected_by_reason", {{"deadline", r.rejected.deadline}, {"exceeds_kv_capacity", r.rejected.exceeds_kv_capacity}}},
         {"rejection_rate", r.rejection_rate},
         {"stable", r.stable},
         {"unstable_reason", r.stable ? Json(nullptr) : Json(r.unstable_reason)},
         {"rho_lower_bound", s.load.deadline_s ? Json(nullptr) : Json(r.rho_lower_bound)},
         {"in_system_by_quarter", {r.in_system_q2, r.in_system_q3, r.in_system_q4}},
         {"utilisation", r.utilisation},
         {"mean_batch", r.mean_batch},
         {"decode_iterations", r.decode_iterations},
         {"chunks_continued", r.chunks_continued},
         {"preemptions", r.preemptions},
         {"recomputed_tokens", r.recomputed_tokens},
         {"prefix_hit_tokens", r.prefix_hit_tokens},
         {"peak_kv_tokens", r.peak_kv_tokens},
         {"duration_s", r.span_s}};
  j.update(serving_metrics(r));
  for (const MeanBand& b : mean_bands(s))
    if (Json& d = j[b.key]; d.is_object() && d.contains("mean")) {
      const double mean = d.at("mean").get<double>();
      d["mean_lo"] = mean * (1 + b.band.lo);
      d["mean_hi"] = mean * (1 + b.band.hi);
    }
  Json goodput = Json::object();
  const ServingLoad::Goodput& g = s.load.goodput;
  if (g.ttft_s) goodput["ttft_ms"] = *g.ttft_s * 1e3;
  if (g.tpot_s) goodput["tpot_ms"] = *g.tpot_s * 1e3;
  if (g.e2el_s) goodput["e2el_ms"] = *g.e2el_s * 1e3;
  j["goodput_slo"] = g.any() ? goodput : Json(nullptr);
  j["good_requests"] = r.good_requests ? Json(*r.good_requests) : Json(nullptr);
  return j;
}

void print_simulation(const QueueArgs& a, const Simulation& s, const ServingResult& r) {
  fmt::print("serving simulation: {} {} arrivals at {:g} req/s{} (seed {}); input {} tokens, output {} tokens{}\n",
             r.requests, s.load.arrivals == ArrivalProcess::poisson ? "Poisson" : "evenly spaced",
             s.load.rate_per_s, a.all_at_once ? " (--rate inf: all within 0.1 s)" : "", s.load.seed, lengths_text(s.load.prompt_tokens), lengths_text(s.load.output_tokens),
             s.load.deadline_s ? fmt::format(", deadline {} s", secs(*s.load.deadline_s)) : "");
  if (s.load.max_concurrency)
    fmt::print("closed loop: at most {} in flight (vLLM bench's --max-concurrency): each request is sent at its arrival "
               "or when one in flight has its last token, whichever is later\n", *s.load.max_concurrency);
  fmt::print("server: {}\n", s.server_text);
  fmt::print("        max batch {}, KV {}; FCFS, {}{}\n", s.server.max_batch,
             s.server.kv_capacity_tokens ? fmt::format("{} tokens", *s.server.kv_capacity_tokens) : "unlimited",
             describe_policy(s.server),
             s.server.first_token_s > 0
                 ? fmt::format("; the engine's front end {:.1f} ms per request (in TTFT and E2E)", s.server.first_token_s * 1e3)
                 : "");
  fmt::print("outcome: {} completed{}, {} rejected (deadline {}, larger than the KV {}); rejection rate {:.1f}%{}\n",
             r.completed, s.load.deadline_s ? fmt::format(" ({} after the deadline)", r.completed_late) : "",
             r.rejected.total(), r.rejected.deadline, r.rejected.exceeds_kv_capacity, 100 * r.rejection_rate,
             s.server.kv_on_demand ? fmt::format("; {} preempted ({} emitted tokens prefilled again)", r.preemptions,
                                                 r.recomputed_tokens)
                                   : "");
  if (s.load.shared_prefix_tokens)
    fmt::print("prefix: {} tokens shared by every prompt; {}\n", s.load.shared_prefix_tokens,
               s.server.prefix_caching ? fmt::format("the prefix cache held {} prompt tokens, not prefilled",
                                                     r.prefix_hit_tokens)
                                       : "no prefix caching: every prompt prefilled whole");
  const std::string quarters = fmt::format("in system by quarter of the arrivals {:.1f}, {:.1f}, {:.1f}",
                                           r.in_system_q2, r.in_system_q3, r.in_system_q4);
  if (a.all_at_once && !s.load.max_concurrency) {
    // A burst has no arrival rate to keep up with: its requests drain, and only how long they wait is asked.
    fmt::print("stability: a burst (--rate inf): {} requests at once, no steady state; the last completed at {:.3f} s, "
               "the queue's wait is in TTFT\n", r.requests, r.span_s);
  } else if (!r.stable) {
    fmt::print("stability: UNSTABLE: {}\n", r.unstable_reason);
    fmt::print("latency: of these {} requests only, as `vllm bench serve --num-prompts {}` would measure them: an "
               "unstable queue has no steady-state latency (a longer run's grows with its length); lower the rate, add a "
               "deadline, or add capacity\n", r.requests, r.requests);
  } else if (s.load.max_concurrency) {
    fmt::print("stability: a closed loop: no more than {} requests are ever in the system\n", *s.load.max_concurrency);
  } else {
    fmt::print("stability: stable ({}{})\n",
               s.load.deadline_s ? "admission by deadline bounds the queue"
                                 : fmt::format("work rho >= {:.3f}", r.rho_lower_bound),
               "; " + quarters);
  }
  if (r.latency) {
    const ServingLatency& l = *r.latency;
    // vLLM bench serve's names, all in ms, one format for the whole table.
    TextTable t{{"(ms)", "mean", "median", "p90", "p99", "max", "samples"}, {false, true, true, true, true, true, true}, {}};
    bool marked = false;
    auto row = [&](const char* name, const Distribution& d) {
      if (d.count == 0) {
        t.rows.push_back({name, "-", "-", "-", "-", "-", "0"});
        return;
      }
      auto pct = [&](double v, double p) {
        const bool resolved = percentile_resolved(d.count, p);
        marked = marked || !resolved;
        return fmt::format("{:.2f}{}", v * 1e3, resolved ? "" : "*");
      };
      t.rows.push_back({name, fmt::format("{:.2f}", d.mean * 1e3), fmt::format("{:.2f}", d.p50 * 1e3),
                        pct(d.p90, 0.90), pct(d.p99, 0.99), fmt::format("{:.2f}", d.max * 1e3),
                        fmt::format("{}", d.count)});
    };
    row("TTFT", l.ttft_s);
    row("TPOT", l.tpot_s);
    row("ITL", l.itl_s);
    row("E2EL", l.sojourn_s);
    row("queue wait", l.queue_wait_s);
    fmt::print("\n{}", t.render("  "));
    if (marked)
      fmt::print("  * fewer samples than the percentile can resolve (p90 needs 10, p99 100): it is the largest value\n");
    std::vector<std::string> bands;
    for (const MeanBand& b : mean_bands(s))
      if (const Distribution& d = l.*b.latency; d.count > 0)
        bands.push_back(fmt::format("{} {:.2f}-{:.2f}", b.name, d.mean * (1 + b.band.lo) * 1e3, d.mean * (1 + b.band.hi) * 1e3));
    if (!bands.empty())
      fmt::print("  the means' band (the {} step model's held-out error on published measurements): {} ms\n", s.basis,
                 fmt::join(bands, ", "));
    fmt::print("\nrequest throughput {:.4g} req/s, output throughput {:.1f} tok/s", l.rate_effective_per_s,
               r.throughput_tok_s);
    if (r.good_requests)
      fmt::print(", goodput {:.4g} req/s ({} of {} completed meet the --goodput limits)",
                 static_cast<double>(*r.good_requests) / r.span_s, *r.good_requests, r.completed);
    fmt::print("\nmean in system {:.3f} requests (time average); Little: {:.4g} req/s x {} s mean E2EL = {:.3f}\n",
               l.mean_in_system, l.rate_effective_per_s, secs(l.sojourn_s.mean), l.littles_law_in_system);
  } else if (r.stable) {
    fmt::print("latency: none: no request completed\n");
  }
  fmt::print("server busy {:.1f}% of {} s; mean batch {:.2f}; peak KV {} tokens{}\n", 100 * r.utilisation,
             secs(r.span_s), r.mean_batch, r.peak_kv_tokens, r.stable ? "" : " (saturated)");
}

void explain_simulation(const QueueArgs& a, const Simulation& s, const ServingResult& r) {
  const auto p = static_cast<uint64_t>(std::llround(s.load.prompt_tokens.mean()));
  const auto o = static_cast<uint64_t>(std::llround(s.load.output_tokens.mean()));
  const double prefill = s.server.prefill_s(p), iteration = s.server.decode_iteration_s(1, p + 1);
  fmt::print("\nmodel:\n");
  if (a.iteration_ms) {
    fmt::print("  decode iteration(b, ctx) = {:g} ms + {:g} ms x b + {:g} ms x ctx / 1000\n", *a.iteration_ms,
               a.per_seq_ms, a.per_ktoken_ms);
    fmt::print("  prefill(p) = {:g} ms + {:g} ms x p / 1000\n", a.prefill_ms, a.prefill_per_ktoken_ms);
  } else {
    fmt::print("  {}\n", s.server_text);
  }
  fmt::print("  one request alone: prefill({}) + {} x iteration(1, {}..{}) = {} s + {} x {} s = {} s\n", p, o - 1,
             p + 1, p + o - 1, secs(prefill), o - 1, secs(iteration),
             secs(prefill + static_cast<double>(o - 1) * iteration));
  fmt::print("rules:\n");
  fmt::print("  FCFS; admit the head of the queue when running < {} and reserved KV + prompt + output <= {}\n",
             s.server.max_batch,
             s.server.kv_capacity_tokens ? fmt::format("{} tokens", *s.server.kv_capacity_tokens) : "unlimited");
  fmt::print("  {}; a prompt's last part emits its first token;\n"
             "  each decode iteration emits one token per running request\n", describe_policy(s.server));
  if (s.load.deadline_s)
    fmt::print("  deadline {} s: at arrival, run a copy of the server forward {}; reject if that finish is\n"
               "  past the deadline\n",
               secs(*s.load.deadline_s),
               s.load.deadline_prediction == DeadlinePrediction::load_persists
                   ? "replacing each request that leaves by one like it (the load persists)"
                   : "with no further arrivals (a lower bound)");
  fmt::print("  percentiles: nearest rank (p99 = the ceil(0.99 n)-th smallest)\n");
  fmt::print("stability:\n");
  if (!s.load.deadline_s)
    fmt::print("  (a) rho >= admitted work at best batching / arrivals' span = {:.4f} (unstable if >= 1)\n",
               r.rho_lower_bound);
  fmt::print("  (b) in system by quarter {:.2f} -> {:.2f} -> {:.2f} (unstable if rising, by > max(4, 0.5% of "
             "{}) and x1.5)\n",
             r.in_system_q2, r.in_system_q3, r.in_system_q4, r.requests);
  if (r.latency)
    fmt::print("Little: time average {:.4f} vs lambda_eff x W = {} / {} s x {} s = {:.4f}\n",
               r.latency->mean_in_system, r.completed, secs(r.span_s), secs(r.latency->sojourn_s.mean),
               r.latency->littles_law_in_system);
}

std::string slo_text(const ServingSlo& slo) {
  std::string t = "stable";
  if (slo.ttft_p99_s) t += fmt::format(", p99 TTFT <= {} s", secs(*slo.ttft_p99_s));
  if (slo.tpot_p99_s) t += fmt::format(", p99 TPOT <= {} ms", secs(*slo.tpot_p99_s * 1e3));
  if (slo.rejection_rate_max) t += fmt::format(", rejection rate <= {:g}%", 100 * *slo.rejection_rate_max);
  return t;
}

void run_simulation(const QueueArgs& a) {
  Simulation s = build_simulation(a);
  if (!a.max_rate) {
    const ServingResult r = simulate_serving(s.server, s.load);
    if (a.out.json()) {
      Json j = simulation_json(s, r);
      j["mode"] = "simulate";
      print_json(j);
      return;
    }
    print_simulation(a, s, r);
    if (a.out.explain) explain_simulation(a, s, r);
    return;
  }

  ServingSlo slo;
  slo.ttft_p99_s = a.slo_ttft_p99_s;
  if (a.slo_tpot_p99_ms) slo.tpot_p99_s = *a.slo_tpot_p99_ms / 1e3;
  slo.rejection_rate_max = a.slo_reject;
  const SustainableRate m = max_sustainable_rate(s.server, s.load, slo, a.rate_tolerance);
  if (a.out.json()) {
    Json j{{"mode", "max_rate"},
           {"max_rate_per_s", m.rate_per_s ? Json(*m.rate_per_s) : Json(nullptr)},
           {"lower_bound_per_s", m.rate_per_s ? Json(m.lower_bound_per_s) : Json(nullptr)},
           {"upper_bound_per_s", m.upper_bound_per_s},
           {"rate_tolerance", a.rate_tolerance},
           {"simulations", m.simulations},
           {"note", m.note},
           {"slo", {{"stable", true},
                    {"ttft_p99_s", slo.ttft_p99_s ? Json(*slo.ttft_p99_s) : Json(nullptr)},
                    {"tpot_p99_ms", a.slo_tpot_p99_ms ? Json(*a.slo_tpot_p99_ms) : Json(nullptr)},
                    {"rejection_rate_max", slo.rejection_rate_max ? Json(*slo.rejection_rate_max) : Json(nullptr)}}}};
    if (m.at_rate) {
      s.load.rate_per_s = *m.rate_per_s;
      j["at_rate"] = simulation_json(s, *m.at_rate);
    } else {
      j["at_rate"] = nullptr;
    }
    print_json(j);
    return;
  }
  fmt::print("SLO: {}\n", slo_text(slo));
  if (!m.rate_per_s) {
    fmt::print("max sustainable rate: none: {}\n", m.note);
    return;
  }
  fmt::print("max sustainable rate: {:.4g} req/s ({}; tolerance {:g}%, for this seed and {})\n\n",
             *m.rate_per_s, m.note, 100 * a.rate_tolerance, count_of(s.load.requests, "request"));
  s.load.rate_per_s = *m.rate_per_s;
  print_simulation(a, s, *m.at_rate);
  if (a.out.explain) explain_simulation(a, s, *m.at_rate);
}

void run(const QueueArgs& a) {
  const bool simulate = a.simulate || a.max_rate;
  if (!simulate)
    for (const CLI::Option* o : a.simulation_options)
      if (o->count() > 0) throw InputError(fmt::format("{} needs --simulate", o->get_name()));
  if (a.all_at_once && (!a.simulate || a.max_rate))
    throw InputError("--rate inf: every request at once is a simulated benchmark run; give --simulate (and no --max-rate)");
  if (simulate)
    run_simulation(a);
  else
    run_little(a);
}

}  // namespace

void add_queue_command(CLI::App& app) {
  auto a = std::make_shared<QueueArgs>();
  CLI::App* cmd = app.add_subcommand(
      "queue",
      "Little's law n = lambda x T from any two of the three; with --simulate, a continuous-batching server "
      "under Poisson arrivals (latency percentiles, rejections, stability); with --max-rate, the highest rate "
      "meeting an SLO");
  cmd->add_option("--rate", a->rate_per_s,
                  "Arrival rate lambda in requests per second; with --simulate, inf sends every request at once "
                  "(within 0.1 s), as vLLM bench's --request-rate inf")
      ->check(CLI::Validator(
          [a](std::string& text) -> std::string {
            if (text != "inf") return kArrivalRate(text);
            a->all_at_once = true;
            text = "1";  // a placeholder: the simulation sets the burst's rate
            return {};
          },
          "", "rate or inf"))
      ->type_name("REQ/S|inf");
  cmd->add_option("--sojourn", a->sojourn_s, "Little's law: mean time in the system T in seconds")->check(kPositiveSeconds)->type_name("S");
  cmd->add_option("--in-system", a->in_system, "Little's law: mean number of requests in the system n")
      ->check(number_in(0, static_cast<double>(kMaxConcurrentRequests)))->type_name("N");
  cmd->add_flag("--simulate", a->simulate,
                "Simulate a server instead: FCFS, continuous batching, admission by KV space and --deadline; each "
                "prefill alone, or with an engine's step budget (--max-num-batched-tokens) chunked beside the decodes");
  auto sim = [&](CLI::Option* o) { a->simulation_options.push_back(o); };
  sim(cmd->add_option("--max-concurrency", a->max_concurrency,
                      "At most N requests in flight, as vLLM bench serve's --max-concurrency (a closed loop): each "
                      "request is sent at its arrival (--rate; inf: all at once) or when one in flight has its last "
                      "token, whichever is later (default: none, every request at its arrival)")
      ->check(number_in(0, static_cast<double>(kMaxConcurrentRequests)))->type_name("N"));
  sim(cmd->add_option("--num-prompts,--requests", a->requests,
                      "Requests to simulate (vLLM bench's --num-prompts; default 1000; --requests: the old name, "
                      "kept for this release)")
      ->check(kNonNegativeCount)->type_name("N"));
  sim(cmd->add_option("--input-len,-p,--prompt", a->prompt,
                      "Prompt tokens per request: N, or MIN:MAX for uniform (llama-bench's -p; default 512)")
          ->type_name("TOKENS"));
  sim(cmd->add_option("--random-prefix-len", a->prefix_len,
                      "Tokens of a prefix every prompt shares, before its --input-len tokens (vLLM bench's; a shared "
                      "system prompt): an engine with prefix caching computes its whole KV blocks once (default 0)")
          ->type_name("TOKENS"));
  sim(cmd->add_option("--output-len,-n,--output", a->output,
                      "Output tokens per request, incl. the first: N, or MIN:MAX for uniform (llama.cpp's -n; "
                      "default 256)")
          ->type_name("TOKENS"));
  sim(cmd->add_option("--arrivals", a->arrivals, "poisson (exponential gaps) or fixed (every 1/rate s) (default poisson)")
          ->check(CLI::IsMember({"poisson", "fixed"}))
          ->type_name("KIND"));
  sim(cmd->add_option("--iteration-ms", a->iteration_ms,
                      "Decode iteration base time in ms: an iteration takes this + --per-seq-ms x batch + "
                      "--per-ktoken-ms x context tokens / 1000 (required)")
          ->check(kPositiveMs)->type_name("MS"));
  sim(cmd->add_option("--per-seq-ms", a->per_seq_ms, "Added to the iteration per running request, in ms (default 0)")
          ->check(kNonNegativeMs)->type_name("MS"));
  sim(cmd->add_option("--per-ktoken-ms", a->per_ktoken_ms,
                      "Added to the iteration per 1000 context tokens in the batch, in ms (default 0)")
          ->check(kNonNegativeMs)->type_name("MS"));
  sim(cmd->add_option("--hw", a->hw,
                      "Time the server with the roofline of --model on this profile (iteration and prefill), KV "
                      "capacity from fit; instead of --iteration-ms")
          ->type_name("NAME|PATH"));
  sim(cmd->add_option("--model,-m", a->model, "Model for --hw (default qwen3-8b)")->type_name("NAME|PATH"));
  sim(cmd->add_option("--weights,-w", a->weights, "Weight type for --hw (default BF16)")->type_name("TYPE"));
  sim(cmd->add_option("--kv", a->kv, "KV cache type for --hw (default bf16)")->type_name("TYPE"));
  sim(cmd->add_option("--engine", a->engine,
                      "For --hw: the engine's step model (llama.cpp: the device's built-in calibration) and its memory "
                      "beside weights and KV (llama.cpp, vllm)")
          ->type_name("NAME"));
  sim(cmd->add_option("--tp", a->tp, "For --hw: devices one replica's model is split across (tensor parallel; times per step "
                      "include the all-reduce over the profile's device link; llama.cpp gives each device whole "
                      "layers, which take turns; default 1)")
          ->check(CLI::Range(uint64_t{1}, kMaxTensorParallel))
          ->type_name("N"));
  sim(cmd->add_option("--tp-link", a->tp_link,
                      "For --tp: the link between the devices the all-reduce crosses, by name (hwprofiles/links) or "
                      "path; default the profile's device link, else its host link")
          ->type_name("NAME|PATH"));
  sim(cmd->add_option("--prefill-ms", a->prefill_ms, "Prefill time per request in ms (default 0)")->check(kNonNegativeMs)->type_name("MS"));
  sim(cmd->add_option("--prefill-per-ktoken-ms", a->prefill_per_ktoken_ms,
                      "Added to the prefill per 1000 prompt tokens, in ms (default 0)")
          ->check(kNonNegativeMs)->type_name("MS"));
  sim(cmd->add_option("--kv-tokens", a->kv_tokens,
                      "KV capacity in tokens (e.g. 64K); each admitted request reserves prompt + output, or with "
                      "vLLM's KV on demand takes pages as it writes them (default unlimited)")
          ->type_name("TOKENS"));
  sim(cmd->add_option("--max-batch,--max-num-seqs,--max-running-requests,--max-batch-size", a->max_batch,
                      "Most running requests (vLLM's --max-num-seqs, SGLang's --max-running-requests, TensorRT-LLM's "
                      "--max_batch_size; default: the engine's, vLLM 1024 on a device of 70 GiB "
                      "or more that is not an A100, else 256; 256 without an engine)")
      ->check(kNonNegativeCount)->type_name("N"));
  sim(cmd->add_option("--parallel", a->parallel,
                      "llama-server's slots (-np; --engine llama.cpp): the most running requests")
          ->check(kNonNegativeCount)->type_name("N"));
  sim(cmd->add_option("--batch-size,-b", a->batch_size,
                      "llama-server's n_batch (--engine llama.cpp): a step takes the slots' new tokens, then prompts' "
                      "tokens up to these many, a long prompt over several steps (default 2048)")
          ->check(kNonNegativeCount)->type_name("TOKENS"));
  sim(cmd->add_option("--max-num-batched-tokens,--chunked-prefill-size,--max-num-tokens", a->max_num_batched_tokens,
                      "Chunked prefill (vLLM's name; SGLang's --chunked-prefill-size, TensorRT-LLM's --max_num_tokens): "
                      "a step decodes the batch and spends what is left of these many tokens on prompts, a long one "
                      "over several steps (default: the engine's, vLLM 8192 on a device of 70 GiB or more that is not an "
                      "A100, else 2048; none without an engine: each prefill alone)")
          ->check(kNonNegativeCount)->type_name("TOKENS"));
  const auto [caching_on, caching_off] = add_prefix_caching_flags(*cmd, a->enable_prefix_caching, a->no_prefix_caching);
  sim(caching_on);
  sim(caching_off);
  sim(cmd->add_option("--engine-version", a->engine_version,
                      "vLLM's version, e.g. 0.6 (default: the current): before 0.8 its V0 engine prefilled each prompt "
                      "alone with 256 sequences at most; from 0.20 its CUDA graphs' estimate comes out of the KV pool")
          ->type_name("MAJOR.MINOR"));
  sim(cmd->add_option("--deadline", a->deadline_s,
                      "Deadline from arrival to last token in seconds; reject at arrival when the predicted "
                      "finish is later (default none)")
          ->check(kPositiveSeconds)->type_name("S"));
  sim(cmd->add_option("--deadline-rule", a->deadline_rule,
                      "How the finish is predicted at arrival: persists (each request that leaves is replaced "
                      "by one like it) or lower-bound (nobody else arrives: rejects only certain misses) "
                      "(default persists)")
          ->check(CLI::IsMember({"persists", "lower-bound"}))
          ->type_name("RULE"));
  sim(cmd->add_option("--seed", a->seed, "Seed of the arrival and length draws (default 1)")
      ->check(kNonNegativeCount)->type_name("N"));
  sim(cmd->add_option("--goodput", a->goodput,
                      "Count the completed requests meeting every limit, as vLLM bench serve does: KEY:MS with KEY "
                      "ttft, tpot or e2el, e.g. --goodput ttft:500 tpot:50 (default none)")
          ->expected(1, 3)
          ->type_name("KEY:MS"));
  sim(cmd->add_flag("--max-rate", a->max_rate,
                    "Search (bisection) for the highest rate meeting the --slo-* flags and stability; implies "
                    "--simulate"));
  sim(cmd->add_option("--slo-ttft-p99", a->slo_ttft_p99_s, "SLO: p99 TTFT in seconds (default none)")
          ->check(kPositiveSeconds)->type_name("S"));
  sim(cmd->add_option("--slo-tpot-p99-ms", a->slo_tpot_p99_ms, "SLO: p99 TPOT in ms (default none)")
          ->check(kPositiveMs)->type_name("MS"));
  sim(cmd->add_option("--slo-reject", a->slo_reject, "SLO: highest rejection rate, a fraction 0..1 (default none)")
          ->check(kFraction)->type_name("FRACTION"));
  sim(cmd->add_option("--rate-tolerance", a->rate_tolerance,
                      "Stop the search when (fail - meet) <= this x meet (default 0.01)")
          ->check(number_in(0, 1))->type_name("FRACTION"));
  a->out.add_to(*cmd);
  cmd->footer("Examples:\n"
              "  infer-plan queue --rate 4 --sojourn 0.5     # Little's law: 2 requests in the system\n"
              "  infer-plan queue --simulate --rate 4 --hw h200 -m qwen3-8b -p 2K -n 256 --goodput ttft:500 tpot:50\n"
              "                                               # TTFT, TPOT, ITL, E2EL (ms) and goodput, as vLLM bench serve");
  cmd->callback([a] { run(*a); });
}

}  // namespace infer_plan::apps
