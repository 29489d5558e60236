// `infer-plan run PLAN --backend cpu`: execute the plan on a backend and print what was measured,
// in the planner's keys (runtime/server.hpp); --out writes the measured figures as JSON.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <memory>
#include <map>
#include <numeric>
#include <optional>
#include <vector>

#include "apps/exit_code.hpp"
#include "apps/format.hpp"
#include "apps/commands.hpp"
#include "apps/plan_options.hpp"
#include "apps/run_options.hpp"
#include "apps/token_ids.hpp"
#include "tokenizer/tokenizer.hpp"
#include "planner/core/input_error.hpp"
#include "planner/plan/predict.hpp"
#include "planner/core/units.hpp"
#include "runtime/interrupt.hpp"
#include "runtime/server.hpp"

namespace infer_plan::apps {
namespace {

struct RunArgs {
  PlanOptions plan;
  RuntimeOptions runtime;
  OutputOptions out;
  std::string out_path;
  uint64_t spec_repeats = kDefaultSpecRepeats;
  std::string prompt_tokens;  // "1,2,3"
  std::string prompt, prompt_file;  // text, through the model's tokenizer
  std::string emit;           // tokens | logits | text
  uint64_t logits_top_k = 0;  // 0: the whole vocabulary
  float temperature = 0.0f, top_p = 1.0f;
};

// One JSON line per generated token: request, step, position, token, and the logits (all of
// them, or the top k as [token, logit] pairs, highest first). Floats in their shortest form
// that reads back to the same float; a non-finite logit as null.
std::string token_event_line(const runtime::TokenEvent& e, bool with_logits, uint64_t top_k) {
  std::string line = fmt::format(R"({{"request": {}, "step": {}, "position": {}, "token": {})", e.request, e.step,
                                 e.position, e.token);
  const auto number = [](float v) { return std::isfinite(v) ? fmt::format("{}", v) : std::string("null"); };
  if (with_logits && top_k == 0) {
    line += R"(, "logits": [)";
    for (size_t i = 0; i < e.logits.size(); ++i) line += (i ? ", " : "") + number(e.logits[i]);
    line += "]";
  } else if (with_logits) {
    std::vector<uint32_t> order(e.logits.size());
    std::iota(order.begin(), order.end(), 0u);
    const size_t k = std::min<size_t>(top_k, order.size());
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                      [&](uint32_t a, uint32_t b) { return e.logits[a] > e.logits[b] || (e.logits[a] == e.logits[b] && a < b); });
    line += R"(, "top_logits": [)";
    for (size_t i = 0; i < k; ++i) line += fmt::format("{}[{}, {}]", i ? ", " : "", order[i], number(e.logits[order[i]]));
    line += "]";
  }
  return line + "}\n";
}

void print_measured(std::FILE* to, const runtime::MeasuredFigures& m) {
  auto d = [&](const char* key, const Distribution& j, double scale) {
    if (j.count == 0) return;
    fmt::print(to, "  {:<22} median {:>9.3f}  p90 {:>9.3f}  p99 {:>9.3f}  mean {:>9.3f} ms  (n = {})\n", key,
               j.p50 * scale, j.p90 * scale, j.p99 * scale, j.mean * scale, j.count);
  };
  fmt::print(to, "measured on {}: {}\n", m.backend == "cpu" ? fmt::format("cpu ({})", count_of(m.threads, "thread")) : m.backend,
             m.model);
  fmt::print(to, "  weights_bytes          {} B ({})\n", m.weights_bytes, format_bytes(m.weights_bytes));
  fmt::print(to, "  kv_bytes               {} B ({}, {} pages)\n", m.kv_bytes, format_bytes(m.kv_bytes), m.kv_pages);
  d("decode_iteration_ms", m.decode_iteration_ms, 1);
  d("prefill_ms", m.prefill_ms, 1);
  d("ttft_ms", m.ttft_s, 1e3);
  d("tpot_ms", m.tpot_ms, 1);
  d("e2el_ms", m.sojourn_s, 1e3);
  fmt::print(to, "  output_throughput      {:.1f} tok/s, request throughput {:.3f} req/s\n", m.throughput_tok_s, m.rate_per_s);
  fmt::print(to, "  mean_in_system         {:.3f} (Little: {:.3f} req/s x mean E2EL {:.3f} s = {:.3f})\n", m.mean_in_system,
             m.rate_per_s, m.mean_sojourn_s, m.littles_law_in_system);
  fmt::print(to, "  requests               {} completed, {} rejected; span {:.2f} s (setup {:.2f} s)\n", m.completed,
             m.rejected, m.span_s, m.setup_s);
}

void print_speculative(const Json& s) {
  fmt::print("speculative decoding, draft {} (temperature {:g}), {} tokens x {} repeats per block:\n",
             s.at("draft").get<std::string>(), s.at("temperature").get<double>(), s.at("output_tokens").get<uint64_t>(),
             s.at("repeats").get<uint64_t>());
  fmt::print("  plain                  {:.3f} ms/token\n", s.at("plain_ms_per_token").get<double>());
  for (const Json& b : s.at("blocks"))
    fmt::print("  m = {:<2}                 {:.3f} ms/token, {:.2f} tokens/round, verify {:.3f} ms, draft {:.3f} ms\n",
               b.at("block").get<uint64_t>(), b.at("spec_ms_per_token").get<double>(),
               b.at("spec_tokens_per_round").get<double>(), b.at("verify_ms").get<double>(), b.at("draft_ms").get<double>());
  fmt::print("  acceptance             {:.3f} (i.i.d. fit), {:.3f} (accepted / drafted); best block {}\n",
             s.at("accept_iid").get<double>(), s.at("spec_accept_rate").get<double>(),
             s.at("spec_best_block").get<uint64_t>());
}

// Admission by deadline predicts each arrival's finish with the plan's profile. On the CPU a
// built-in device profile (h200 by default) would admit everything, so a run with a deadline
// predicts with this CPU's profile, probed now, unless --hw names a profile file.
Plan with_backend_profile(Plan plan, const RuntimeOptions& runtime) {
  if (!plan.deadline_s || runtime.backend != "cpu" || plan.hw_inline || plan.hw.ends_with(".json")) return plan;
  if (!runtime.quiet)
    fmt::print(stderr, "run: admission by deadline predicts with this CPU's profile instead of {}: probing it (about "
                       "10 s; --hw FILE from `infer-plan probe --out FILE` skips this)\n", plan.hw);
  ProbeCopy copy;
  copy.types = plan_weight_types(plan);
  plan.hw_inline = probe_profile(runtime, true, copy, "cpu-probed");
  plan.hw = "inline";
  return plan;
}

void run(const RunArgs& a) {
  check_output_path(a.out_path, "--out");
  runtime::RunOptions base;
  if (!a.prompt_tokens.empty() + !a.prompt.empty() + !a.prompt_file.empty() > 1)
    throw InputError("run: give one of --prompt, --prompt-file and --prompt-tokens");
  if (!a.prompt_tokens.empty()) base.prompt = parse_token_ids(a.prompt_tokens, "--prompt-tokens");
  Plan resolved = a.plan.resolve();
  // Text goes through the model's tokenizer (a .gguf's vocabulary, else the synthetic one), with
  // BOS as the vocabulary asks, as llama.cpp's tools tokenize a prompt.
  std::optional<tokenizer::Tokenizer> text_tokenizer;
  if (!a.prompt.empty() || !a.prompt_file.empty() || a.emit == "text")
    text_tokenizer.emplace(tokenizer::vocabulary_for(plan_model_spec(resolved)));
  if (!a.prompt.empty() || !a.prompt_file.empty()) {
    base.prompt = text_tokenizer->encode(a.prompt_file.empty() ? a.prompt : read_text_file(a.prompt_file));
    if (base.prompt.empty()) throw InputError("run: the prompt is empty once tokenized; give some text");
  }
  const bool emitting = !a.emit.empty();
  if (emitting && a.out.json())
    throw InputError("--emit writes one JSON line per token to stdout; with it, write the measured figures with "
                     "--out FILE instead of -o/--json");
  if (a.logits_top_k && a.emit != "logits") throw InputError("--logits-top-k: only with --emit logits");
  base.sampling = {a.temperature, a.top_p};
  std::map<uint64_t, std::vector<uint32_t>> generated;  // --emit text: each request's tokens so far
  if (emitting) {
    base.token_logits = a.emit == "logits";
    base.on_token = [&a, &generated, &text_tokenizer, &resolved](const runtime::TokenEvent& e) {
      if (a.emit != "text") {
        std::fputs(token_event_line(e, a.emit == "logits", a.logits_top_k).c_str(), stdout);
        return;
      }
      std::vector<uint32_t>& tokens = generated[e.request];
      tokens.push_back(e.token);
      if (tokens.size() < resolved.output) return;
      // A byte-level token may end inside a UTF-8 character: invalid bytes become U+FFFD here.
      const Json line{{"request", e.request}, {"tokens", tokens.size()}, {"text", text_tokenizer->decode(tokens)}};
      std::fputs((line.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n").c_str(), stdout);
      generated.erase(e.request);
    };
  }
  // A given prompt sets the context to prompt + output and runs it once, unless told otherwise.
  if (!base.prompt.empty() && a.plan.plan_file.empty()) {
    if (a.plan.ctx.empty()) resolved.context = base.prompt.size() + resolved.output;
    if (!a.plan.requests) resolved.requests = 1;
  }
  // A split is weighed against colocated servers, which is report's job: run serves one server.
  if (resolved.pd)
    throw InputError(fmt::format("run: the plan has a 'pd' section (a disaggregated server); `infer-plan report {}` "
                                 "runs it beside colocated servers, or leave the section out to run one server",
                                 a.plan.plan_file.empty() ? std::string("PLAN") : a.plan.plan_file));
  const Plan plan = with_backend_profile(resolved, a.runtime);
  const ResolvedPlan rp = resolve_plan(plan);
  if (plan.speculative) runtime::check_speculative_sweep(rp, a.spec_repeats);  // before minutes of serving
  const runtime::MeasuredFigures figures = runtime::measured_figures(execute_plan(rp, a.runtime, base));
  std::fflush(stdout);
  Json measured = runtime::measured_json(figures);
  bool interrupted = figures.interrupted;
  if (plan.speculative && !interrupted) {
    const runtime::SpecSweepResult sweep = execute_speculative_sweep(rp, a.runtime, a.spec_repeats);
    interrupted = sweep.interrupted;
    measured["speculative"] = runtime::spec_sweep_json(sweep);
  }
  if (!a.out_path.empty()) write_json_file(a.out_path, measured, "--out");
  if (a.out.json()) {
    print_json(measured);
    if (interrupted) throw ExitCode{runtime::kInterruptedExitCode};
    return;
  }
  if (!emitting || !a.runtime.quiet) print_measured(emitting ? stderr : stdout, figures);
  if (measured.contains("speculative")) print_speculative(measured.at("speculative"));
  if (interrupted) {
    if (figures.interrupted)
      fmt::print(stderr, "run: interrupted; {} requests ended, {} did not (the figures above are theirs)\n",
                 figures.requests - figures.unfinished, figures.unfinished);
    else
      fmt::print(stderr, "run: interrupted during the speculative sweep, after {} of {} repeats (the figures above "
                         "are theirs)\n", measured.at("speculative").at("repeats").get<uint64_t>(), a.spec_repeats);
    throw ExitCode{runtime::kInterruptedExitCode};
  }
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Execute a plan on a backend (synthetic weights, paged KV, continuous batching) and measure it");
  cmd->add_option("PLAN", args->plan.plan_file, "Plan JSON file (same as --plan)")->type_name("FILE");
  args->plan.add_to(*cmd, PlanOptions::kModel | PlanOptions::kMemory | PlanOptions::kGeneration);
  args->runtime.add_to(*cmd);
  cmd->add_option("--out", args->out_path, "Write the measured figures as JSON to this file")->type_name("FILE");
  add_spec_repeats_option(*cmd, args->spec_repeats);
  cmd->add_option("--prompt-tokens", args->prompt_tokens,
                  "Every request's prompt as token ids (e.g. 1,2,3) instead of seeded random ids; sets the "
                  "context to prompt + output and one request unless --ctx-size or -np say otherwise")
      ->type_name("ID,ID,...");
  cmd->add_option("--prompt", args->prompt,
                  "Every request's prompt as text, through the model's tokenizer (a .gguf's vocabulary, else the "
                  "synthetic one `gguf write` stores); context and requests as with --prompt-tokens")
      ->type_name("TEXT");
  cmd->add_option("--prompt-file", args->prompt_file, "The prompt text from a file")->type_name("FILE");
  cmd->add_option("--emit", args->emit,
                  "Print every generated token as a JSON line on stdout (request, step, position, token), with "
                  "its logits for 'logits'; 'text': one line per request with its output decoded. The measured "
                  "figures then go to stderr. Requests generate --output-len tokens: an end-of-text token does "
                  "not stop them (vLLM's --ignore-eos), so what runs is what the plan predicts")
      ->check(CLI::IsMember({"tokens", "logits", "text"}))
      ->type_name("tokens|logits|text");
  cmd->add_option("--logits-top-k", args->logits_top_k,
                  "With --emit logits: only the k largest, as [token, logit] pairs (default: the whole vocabulary)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 32))
      ->type_name("K");
  cmd->add_option("--temp", args->temperature, "Sampling temperature; 0 (the default) picks greedily")
      ->check(CLI::Range(0.0f, 100.0f))
      ->type_name("T");
  cmd->add_option("--top-p", args->top_p, "Nucleus sampling: keep the most likely tokens up to this mass (default 1)")
      ->check(CLI::Range(0.0f, 1.0f))
      ->type_name("P");
  args->out.add_to(*cmd);
  cmd->footer("Without a 'load' section the plan runs as a closed batch of -np requests (prompt =\n"
              "context - output). Examples, a quarter-size Qwen3-8B at Q8_0 on this CPU, then a plan under load:\n"
              "  infer-plan run -m qwen3-8b --scale 0.25 -w Q8_0 -c 128 -n 32 -np 4\n"
              "  infer-plan run -m model.gguf -w file --prompt-tokens 1,2,3 -n 8 --emit logits --logits-top-k 5\n"
              "  infer-plan run -m model.gguf -w file --prompt 'Once upon a time' -n 32 --emit text\n"
              "  infer-plan run scenarios/plans/cpu-small.json --json");
  cmd->callback([args] { run(*args); });
}

}  // namespace infer_plan::apps
