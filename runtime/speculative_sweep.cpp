#include "runtime/speculative_sweep.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "kernels/cpu/sampling.hpp"
#include "planner/weights/gguf_reader.hpp"
#include "planner/core/input_error.hpp"
#include "planner/cost/speculative.hpp"
#include "runtime/forward_pass.hpp"
#include "runtime/interrupt.hpp"
#include "runtime/model_weights.hpp"
#include "runtime/paged_kv_cache.hpp"
#include "runtime/server.hpp"
#include "runtime/thread_pool.hpp"

namespace infer_plan::runtime {

double SpecSweepPoint::ms_per_token() const {
  return stats.num_emitted_tokens ? stats.decode_s * 1e3 / static_cast<double>(stats.num_emitted_tokens) : 0;
}
double SpecSweepPoint::verify_ms() const {
  return stats.num_drafts ? stats.verify_s * 1e3 / static_cast<double>(stats.num_drafts) : 0;
}
double SpecSweepPoint::draft_ms() const {
  return stats.draft_passes ? stats.draft_s * 1e3 / static_cast<double>(stats.draft_passes) : 0;
}

std::vector<double> SpecSweepResult::accept_per_pos() const {
  std::vector<double> a(accepted_per_pos.size(), 0.0);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = reached_per_pos[i] ? static_cast<double>(accepted_per_pos[i]) / static_cast<double>(reached_per_pos[i])
                              : (i ? a[i - 1] : 0.0);
  return a;
}

double SpecSweepResult::accept_iid() const {
  uint64_t accepted = 0, reached = 0;
  for (size_t i = 0; i < accepted_per_pos.size(); ++i) {
    accepted += accepted_per_pos[i];
    reached += reached_per_pos[i];
  }
  return reached ? static_cast<double>(accepted) / static_cast<double>(reached) : 0;
}

double SpecSweepResult::draft_accept_rate() const {
  uint64_t accepted = 0, drafted = 0;
  for (const SpecSweepPoint& p : points) {
    accepted += p.stats.num_accepted_tokens;
    drafted += p.stats.num_draft_tokens;
  }
  return drafted ? static_cast<double>(accepted) / static_cast<double>(drafted) : 0;
}

uint64_t SpecSweepResult::best_block() const {
  uint64_t best = 0;
  for (size_t i = 1; i < points.size(); ++i)
    if (points[i].ms_per_token() < points[best].ms_per_token()) best = i;
  return points.empty() ? 0 : points[best].block;
}

void check_speculative_sweep(const ResolvedPlan& rp, uint64_t repeats) {
  const Plan& plan = rp.plan;
  if (!plan.speculative || !plan.speculative->draft_layers)
    throw InputError("run: speculative decoding runs with a draft made of the target's first layers; set "
                     "speculative.draft_layers");
  const SpeculativePlan& sp = *plan.speculative;
  if (*sp.draft_layers > rp.spec.layers)
    throw InputError(fmt::format("speculative.draft_layers: {} is more than the target's {} layers", *sp.draft_layers,
                                 rp.spec.layers));
  if (plan.offload)
    throw InputError("plan: the runtime measures speculative decoding without offload; give 'offload' and "
                     "'speculative' in two plans");
  if (sp.group != 1)
    throw InputError(fmt::format("speculative.group: {}; the runtime's draft proposes one token per pass, so the "
                                 "runtime runs group 1 only", sp.group));
  if (plan.output < 2 || plan.output >= plan.context)
    throw InputError(fmt::format("plan: output {} must be at least 2 and less than context {} (the prompt is "
                                 "context - output tokens)", plan.output, plan.context));
  if (repeats == 0) throw InputError("speculative sweep: repeats must be at least 1");
}

SpecSweepResult run_speculative_sweep(const ResolvedPlan& rp, Backend& backend, const RunOptions& options,
                                      uint64_t repeats) {
  check_speculative_sweep(rp, repeats);
  const Plan& plan = rp.plan;
  const SpeculativePlan& sp = *plan.speculative;
  // Room for the prompt, the output and a whole last block past it (a round may overshoot).
  const uint64_t tokens = plan.context + sp.max_block + 1;
  const uint64_t pages = PagedKvCache::pages_for(tokens);
  // Two decoders, the target and its draft. Their largest passes: the prompt in one (the draft's
  // first catch-up brings the target's first token too), or a verify pass of a block and the
  // token before it, with every token's logits.
  PassShape largest;
  largest.tokens = std::max(plan.context - plan.output + 1, sp.max_block + 1);
  largest.rows = sp.max_block + 1;
  largest.pages = pages;
  largest.context = pages * kKvPageTokens;
  check_runnable(rp, backend, largest, 2);

  SpecSweepResult r;
  r.model = rp.spec.name;
  r.draft_layers = *sp.draft_layers;
  r.draft = fmt::format("first {} of {} layers", r.draft_layers, rp.spec.layers);
  r.temperature = sp.temperature;
  r.prompt_tokens = plan.context - plan.output;
  r.output_tokens = plan.output;
  r.repeats = repeats;
  ThreadPool pool(options.threads);
  r.threads = pool.threads();
  if (options.progress) options.progress(fmt::format("writing {} synthetic weights ({})", rp.spec.name, rp.weights.label));
  const bool from_file = is_gguf_path(rp.spec.source) && rp.weights.layout.file_type.starts_with("as stored in");
  const ModelWeights weights = from_file ? ModelWeights(backend, rp.spec, rp.weights.layout, rp.spec.source, pool)
                                         : ModelWeights(backend, rp.spec, rp.weights.layout, options.seed, pool);
  PagedKvCache target_cache(backend, rp.spec, plan.kv, pages);
  PagedKvCache draft_cache(backend, first_layers_spec(rp.spec, r.draft_layers), plan.kv, pages);
  const std::unique_ptr<ForwardPass> target_pass = make_forward_pass(backend, weights, target_cache, pool);
  const std::unique_ptr<ForwardPass> draft_pass = make_forward_pass(backend, weights, draft_cache, pool, r.draft_layers);
  ForwardPass &target = *target_pass, &draft = *draft_pass;
  constexpr SequenceId kSeq = 1;
  if (!target_cache.reserve(kSeq, tokens) || !draft_cache.reserve(kSeq, tokens))
    throw std::logic_error("speculative sweep: a fresh cache refused its one sequence");

  const std::vector<uint32_t> prompt = synthetic_prompt(options.seed, 0x5eed, r.prompt_tokens, rp.spec.vocab);

  // A short warm-up touches the weights and both caches before anything is timed.
  generate(target, kSeq, prompt, 2, {sp.temperature, options.seed});
  r.points.resize(sp.max_block);
  for (uint64_t m = 1; m <= sp.max_block; ++m) r.points[m - 1].block = m;
  double plain_s = 0;
  uint64_t plain_tokens = 0;
  for (uint64_t rep = 0; rep < repeats; ++rep) {
    if (rep > 0 && interrupt_requested()) {  // whole repeats only: every m keeps the same count
      r.interrupted = true;
      r.repeats = rep;
      break;
    }
    const uint64_t seed = options.seed + 7919 * rep;
    if (options.progress) options.progress(fmt::format("speculative sweep {}/{}: plain", rep + 1, repeats));
    double decode_s = 0;
    generate(target, kSeq, prompt, plan.output, {sp.temperature, seed}, &decode_s);
    plain_s += decode_s;
    plain_tokens += plan.output - 1;
    for (SpecSweepPoint& p : r.points) {
      if (options.progress)
        options.progress(fmt::format("speculative sweep {}/{}: block {}/{}", rep + 1, repeats, p.block, sp.max_block));
      SpecOptions o;
      o.temperature = sp.temperature;
      o.seed = seed;
      o.block = p.block;
      generate_speculative(target, kSeq, draft, kSeq, prompt, plan.output, o, p.stats);
    }
  }
  r.plain_ms_per_token = plain_s * 1e3 / static_cast<double>(plain_tokens);
  r.accepted_per_pos.assign(sp.max_block, 0);
  r.reached_per_pos.assign(sp.max_block, 0);
  for (const SpecSweepPoint& p : r.points) {
    const std::vector<uint64_t>& acc = p.stats.num_accepted_tokens_per_pos;
    for (uint64_t i = 0; i < p.block; ++i) {
      r.accepted_per_pos[i] += acc[i];
      r.reached_per_pos[i] += i == 0 ? p.stats.num_drafts : acc[i - 1];
    }
  }
  return r;
}

Json spec_sweep_json(const SpecSweepResult& r) {
  Json points = Json::array();
  for (const SpecSweepPoint& p : r.points) {
    const SpecDecodeStats& s = p.stats;
    points.push_back({{"block", p.block},
                      {"spec_ms_per_token", p.ms_per_token()},
                      {"spec_tokens_per_round", s.tokens_per_round()},
                      {"verify_ms", p.verify_ms()},
                      {"draft_ms", p.draft_ms()},
                      {"num_drafts", s.num_drafts},
                      {"num_draft_tokens", s.num_draft_tokens},
                      {"num_accepted_tokens", s.num_accepted_tokens},
                      {"num_accepted_tokens_per_pos", s.num_accepted_tokens_per_pos}});
  }
  return Json{{"model", r.model},
              {"draft", r.draft},
              {"draft_layers", r.draft_layers},
              {"temperature", r.temperature},
              {"prompt_tokens", r.prompt_tokens},
              {"output_tokens", r.output_tokens},
              {"repeats", r.repeats},
              {"interrupted", r.interrupted},
              {"threads", r.threads},
              {"plain_ms_per_token", r.plain_ms_per_token},
              {"spec_accept_rate", r.draft_accept_rate()},
              {"accept_iid", r.accept_iid()},
              {"accept_per_pos", r.accept_per_pos()},
              {"spec_best_block", r.best_block()},
              {"blocks", points}};
}

}  // namespace infer_plan::runtime
