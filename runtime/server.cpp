#include "runtime/server.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <chrono>
#include <map>
#include <thread>

#include "planner/weights/gguf_reader.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/units.hpp"
#include "planner/cost/memory_fit.hpp"
#include "planner/plan/figures.hpp"
#include "planner/plan/plan.hpp"
#include "planner/serving/scheduler.hpp"
#include "planner/serving/serving_sim.hpp"
#include "runtime/forward_pass.hpp"
#include "runtime/interrupt.hpp"
#include "runtime/model_weights.hpp"
#include "runtime/offload_prefetcher.hpp"
#include "runtime/rope_params.hpp"
#include "runtime/paged_kv_cache.hpp"
#include "runtime/thread_pool.hpp"
#if INFER_PLAN_HAVE_CUDA
#include "runtime/cuda_decoder.hpp"
#endif

namespace infer_plan::runtime {
namespace {

// The plan's arrivals; a given prompt replaces each one's prompt length, and must leave room in
// the context for the request's output.
std::vector<ServingRequest> plan_requests(const Plan& plan, std::span<const uint32_t> prompt, uint64_t vocab) {
  std::vector<ServingRequest> requests;
  if (plan.load && plan.load->rate_per_s) {
    requests = serving_requests(plan_serving_load(plan));
  } else {
    if (plan.output == 0 || (prompt.empty() && plan.output >= plan.context))
      throw InputError(fmt::format("plan: output {} must be at least 1 and less than context {} (the prompt "
                                   "is context - output tokens)", plan.output, plan.context));
    requests.resize(plan.requests);
    for (ServingRequest& r : requests) {
      r.prompt_tokens = plan.context - plan.output;
      r.output_tokens = plan.output;
    }
  }
  if (prompt.empty()) return requests;
  for (const uint32_t id : prompt)
    if (id >= vocab)
      throw InputError(fmt::format("run: prompt token {} is not in the vocabulary (ids 0..{})", id, vocab - 1));
  for (ServingRequest& r : requests) {
    r.prompt_tokens = prompt.size();
    if (r.kv_tokens() > plan.context)
      throw InputError(fmt::format("run: the prompt ({} tokens) and the output ({} tokens) need {} tokens of context; "
                                   "the plan has {} (raise --ctx-size or lower --output-len)", prompt.size(),
                                   r.output_tokens, r.kv_tokens(), plan.context));
  }
  return requests;
}

// The plan's offload section as the runtime executes it (resolve_plan checked its ranges: the
// fit's offload_memory).
std::optional<WeightsOffload> plan_weights_offload(const ResolvedPlan& rp) {
  if (!rp.fit.offload) return std::nullopt;
  WeightsOffload w;
  w.part = rp.fit.offload->part;
  w.every = rp.fit.offload->every;
  return w;
}

// Sequences a decode step runs at most: every request of a closed batch, load.max_batch under a load.
uint64_t plan_max_batch(const Plan& plan) {
  const bool closed = !(plan.load && plan.load->rate_per_s);
  return closed ? plan.requests : plan.load->max_batch;
}

// The paged cache takes and returns each request's pages as the scheduler decides.
class CachePages final : public KvPagePool {
 public:
  explicit CachePages(PagedKvCache& cache) : cache_(cache) {}
  void hold(uint32_t id, uint64_t tokens) override {
    if (!cache_.reserve(id, tokens))
      throw std::logic_error("run: the KV pool refused a request the scheduler counted room for");
  }
  void release(uint32_t id) override { cache_.release(id); }
  void pin_prefix(uint32_t id, uint64_t tokens) override { cache_.pin_prefix(id, tokens / kKvPageTokens); }
  void attach_prefix(uint32_t id, uint64_t tokens) override { cache_.attach_prefix(id, tokens / kKvPageTokens); }

 private:
  PagedKvCache& cache_;
};

}  // namespace

std::vector<uint32_t> synthetic_prompt(uint64_t seed, uint64_t request, uint64_t tokens, uint64_t vocab) {
  kernels::SamplerRng rng(seed * 0x9E3779B97F4A7C15ULL + request);
  std::vector<uint32_t> out(tokens);
  for (uint32_t& t : out) t = static_cast<uint32_t>(rng.next_u64() % vocab);
  return out;
}

bool plan_weights_from_file(const ResolvedPlan& rp) {
  const bool as_stored = rp.weights.layout.file_type.starts_with("as stored in");
  if (as_stored && rp.plan.scale != 1)
    throw InputError("run: --scale shrinks synthetic weights; a .gguf with its own weights runs at its own size");
  return is_gguf_path(rp.spec.source) && (as_stored || rp.plan.scale == 1);
}

ModelWeights plan_model_weights(const ResolvedPlan& rp, Backend& backend, ThreadPool& pool, uint64_t seed,
                                const std::optional<WeightsOffload>& offload) {
  return plan_weights_from_file(rp) ? ModelWeights(backend, rp.spec, rp.weights.layout, rp.spec.source, pool, offload)
                                    : ModelWeights(backend, rp.spec, rp.weights.layout, seed, pool, offload);
}

PassShape server_pass_shape(const Plan& plan, uint64_t prefill_chunk, std::optional<uint64_t> step_token_budget) {
  // The pool run_plan makes: requests x context, whole pages. A running sequence holds one page at least.
  const uint64_t per_sequence = PagedKvCache::pages_for(plan.context), pool = plan.requests * per_sequence;
  const uint64_t batch = std::max<uint64_t>(1, std::min(plan_max_batch(plan), pool));
  PassShape pass;
  // A prompt alone runs in passes of prefill_chunk tokens; with a step token budget a step is one pass
  // of the batch's tokens and prompts' chunks (its rows still a slot each).
  pass.tokens = std::max(batch, std::min(step_token_budget ? *step_token_budget : prefill_chunk,
                                         step_token_budget ? pool * kKvPageTokens : plan.context));
  pass.rows = batch;
  pass.pages = std::max<uint64_t>(1, std::min(batch * per_sequence, pool));
  pass.context = per_sequence * kKvPageTokens;
  return pass;
}

unsigned compute_threads(const Plan& plan, unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  return plan.offload ? std::max(1u, threads - 1) : threads;
}

void check_runnable(const ResolvedPlan& rp, const Backend& backend, [[maybe_unused]] const PassShape& largest_pass,
                    [[maybe_unused]] uint64_t decoders) {  // read with CUDA only
  const Plan& plan = rp.plan;
  if (plan.tp != 1) throw InputError("run: the runtime executes on one device; set tp to 1");
  if (plan.weights_bytes) throw InputError("run: a given weights size cannot be executed; name the weight type");
  static constexpr std::array<std::string_view, 9> kRunnable{"llama",  "qwen2",  "qwen3",   "qwen3moe", "phi3",
                                                             "gemma2", "gemma3", "gpt-oss", "deepseek2"};
  if (std::find(kRunnable.begin(), kRunnable.end(), rp.spec.gguf_arch) == kRunnable.end())
    throw InputError(fmt::format("run: {} is llama.cpp architecture {}, which the planner models but the runtime does "
                                 "not execute yet (it runs llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, phi3, "
                                 "gemma2, gemma3, gpt_oss, deepseek_v2)", rp.spec.name, rp.spec.gguf_arch));
  // A window layer's ring keeps no room for drafted positions a verification rejects: they would
  // overwrite positions the window still needs.
  if (rp.spec.window_layer_count() && plan.speculative && plan.context > rp.spec.sliding_window)
    throw InputError(fmt::format("run: {} has {}-token sliding-window layers, whose cache ring the runtime's "
                                 "speculative decoding would overwrite; run without speculation, or at a context of "
                                 "at most {} tokens", rp.spec.name, rp.spec.sliding_window, rp.spec.sliding_window));
  // RoPE scaling the kernels do not apply would give another model's logits in silence: refused,
  // naming the key (the planner's figures do not depend on it).
  try {
    rope_params(rp.spec, nullptr);
  } catch (const InputError& e) {
    throw InputError(std::string("run: ") + e.what());
  }
  if (rp.spec.window_layer_count() && plan.load && plan.load->shared_prefix && rp.server.prefix_caching)
    throw InputError(fmt::format("run: {} has sliding-window layers, whose cache ring the runtime's prefix caching "
                                 "cannot share; run without load.shared_prefix", rp.spec.name));
  if (rp.spec.max_context && plan.context > rp.spec.max_context)
    throw InputError(fmt::format("run: context {} tokens is beyond the {} tokens {} was trained for; lower the "
                                 "context (--ctx)", plan.context, rp.spec.max_context, rp.spec.name));
  // The CUDA decoder's refusals and its working buffers, which it allocates with its first passes:
  // short of device memory there, a run would stop part-way with a bare out-of-memory error. Its
  // rules apply where the backend names itself cuda (a device-less stand-in in the tests too).
  uint64_t buffers_bytes = 0;
  std::string buffers_parts;
#if INFER_PLAN_HAVE_CUDA
  if (backend.name() == "cuda") {
    if (const std::optional<std::string> why = cuda_decoder_refusal(rp.spec, plan.kv, rp.weights.layout.tensors))
      throw InputError("run: " + *why);
    const CudaDecoderScratch b = cuda_decoder_scratch(rp.spec, rp.weights.layout.tensors, largest_pass);
    buffers_bytes = decoders * b.total();
    buffers_parts = fmt::format(
        ", decoder buffers {}{}: activations {}, logits {}, per-token arrays {}, attention {}, GEMM {}, cuBLAS "
        "workspace {}", format_bytes(buffers_bytes), decoders > 1 ? fmt::format(" for {} decoders", decoders) : "",
        format_bytes(b.activations), format_bytes(b.logits), format_bytes(b.meta), format_bytes(b.attention),
        format_bytes(b.gemm), format_bytes(b.cublas_workspace));
  }
#endif
  // Weights (less what is offloaded, plus the prefetch slots), the KV pool and the decoder's
  // buffers on the device; the offloaded groups in host memory. On the CPU both are the host's.
  const uint64_t device_bytes = rp.fit.device_weights_bytes + rp.fit.kv_bytes + buffers_bytes;
  const uint64_t host_bytes = rp.fit.offload ? rp.fit.offload->freed_bytes : 0;
  auto refuse_beyond = [&](const char* where, uint64_t need, std::optional<uint64_t> available) {
    if (!available || need <= *available) return;
    throw InputError(fmt::format("run: the plan needs {} of {} (weights {}, KV {}{}{}) but {} has {} available; lower "
                                 "--scale, --ctx or --requests, or pick smaller weights or KV types",
                                 format_gib(static_cast<double>(need)), where, format_gib(static_cast<double>(rp.fit.device_weights_bytes)),
                                 format_gib(static_cast<double>(rp.fit.kv_bytes)),
                                 host_bytes ? fmt::format(", offloaded {}", format_gib(static_cast<double>(host_bytes))) : "",
                                 buffers_parts, backend.name(), format_gib(static_cast<double>(*available))));
  };
  if (backend.host_addressable(MemoryCategory::weights)) {
    refuse_beyond("memory", device_bytes + host_bytes, backend.available_bytes(MemoryCategory::weights));
  } else {
    refuse_beyond("device memory", device_bytes, backend.available_bytes(MemoryCategory::weights));
    refuse_beyond("host memory", host_bytes, backend.available_bytes(MemoryCategory::offload_host));
  }
}

RunResult run_plan(const ResolvedPlan& rp, Backend& backend, const RunOptions& options) {
  const Plan& plan = rp.plan;
  check_runnable(rp, backend, server_pass_shape(plan, options.prefill_chunk, rp.server.step_token_budget));
  const std::vector<ServingRequest> arrivals =
      options.arrivals.empty() ? plan_requests(plan, options.prompt, rp.spec.vocab) : options.arrivals;
  const std::optional<WeightsOffload> offload = plan_weights_offload(rp);
  const uint64_t max_batch = plan_max_batch(plan);

  RunResult result;
  result.backend = std::string(backend.name());
  result.model = rp.spec.name;
  result.deadline_s = plan.deadline_s;
  ThreadPool pool(compute_threads(plan, options.threads));
  result.threads = pool.threads();
  auto clock_s = [&backend](uint64_t t0) { return static_cast<double>(backend.now_ns() - t0) * 1e-9; };

  const uint64_t setup0 = backend.now_ns();
  result.driver_before_bytes = backend.driver_used_bytes();
  // A .gguf model runs the file's tensors: as stored ("file"), or quantized on load to the plan's
  // types. Shrunk by --scale, its shape runs with synthetic weights; a config.json model too.
  const bool from_file = plan_weights_from_file(rp);
  if (options.progress)
    options.progress(from_file ? fmt::format("reading {}'s weights ({})", rp.spec.name, rp.weights.label)
                               : fmt::format("writing {} synthetic weights ({})", rp.spec.name, rp.weights.label));
  ModelWeights weights = plan_model_weights(rp, backend, pool, options.seed, offload);
  // Offload: `buffers` slots of the largest group (the planner's group_bytes) and the copy thread.
  std::unique_ptr<OffloadPrefetcher> prefetcher;
  if (offload) prefetcher = make_offload_prefetcher(backend, weights, plan.offload->buffers);
  // The KV pool fit sizes: requests x context, whole pages (planner/cost/memory_fit); window
  // layers at most their window each.
  const uint64_t pages = plan.requests * PagedKvCache::pages_for(plan.context);
  PagedKvCache cache(backend, rp.spec, plan.kv, pages, plan.requests * PagedKvCache::window_pages_for(rp.spec, plan.context));
  const std::unique_ptr<ForwardPass> decoder = make_forward_pass(backend, weights, cache, pool, 0, prefetcher.get());
  result.driver_after_setup_bytes = backend.driver_used_bytes();
  result.weights_bytes = backend.allocated(MemoryCategory::weights);
  result.offload = offload.has_value();
  result.offload_host_bytes = backend.allocated(MemoryCategory::offload_host);
  result.offload_buffer_bytes = backend.allocated(MemoryCategory::offload_buffers);
  result.kv_bytes = backend.allocated(MemoryCategory::kv_cache);
  result.kv_pages = pages;
  result.setup_s = clock_s(setup0);

  // The planner's scheduler decides every step (planner/serving/scheduler.hpp) with the pool as
  // allocated; admission by deadline asks the planner's serving model (roofline steps) to predict
  // each arrival's finish from the scheduler's state, with the simulation's own rule.
  ServerModel server = rp.server;
  server.kv_capacity_tokens = cache.pages_total() * kKvPageTokens;
  server.kv_page_tokens = kKvPageTokens;
  server.max_batch = max_batch;
  Scheduler scheduler(server, arrivals);
  const uint64_t shared_prefix = plan.load ? plan.load->shared_prefix : 0;
  scheduler.set_shared_prefix(shared_prefix);
  CachePages cache_pages(cache);
  scheduler.set_pool(&cache_pages);
  std::vector<RequestRecord> records(arrivals.size());
  for (size_t i = 0; i < arrivals.size(); ++i)
    records[i] = {arrivals[i].arrival_s, -1, -1, -1, arrivals[i].prompt_tokens, arrivals[i].output_tokens, {}};
  std::vector<std::vector<uint32_t>> tokens(arrivals.size());  // by request: prompt, then what it emitted
  std::vector<double> last_token_s(arrivals.size());
  size_t next = 0;       // the next arrival
  uint64_t ended = 0;    // completed or rejected
  uint64_t present = 0;  // admitted to the queue, not yet departed
  const auto arrive = [&](double now_s) {
    for (; next < arrivals.size() && arrivals[next].arrival_s <= now_s; ++next) {
      const ServingRequest& a = arrivals[next];
      const auto id = static_cast<uint32_t>(next);
      if (const char* why = scheduler.offer(id, now_s, plan.deadline_s)) {
        records[id].rejected = why;
        ++ended;
      } else {
        if (!options.prompt.empty()) {
          tokens[id] = options.prompt;
        } else if (shared_prefix) {  // every prompt begins with the same tokens
          tokens[id] = synthetic_prompt(options.seed, kSharedPrefixStream, shared_prefix, rp.spec.vocab);
          const std::vector<uint32_t> own =
              synthetic_prompt(options.seed, id, a.prompt_tokens - shared_prefix, rp.spec.vocab);
          tokens[id].insert(tokens[id].end(), own.begin(), own.end());
        } else {
          tokens[id] = synthetic_prompt(options.seed, id, a.prompt_tokens, rp.spec.vocab);
        }
        ++present;
        result.in_system_area += now_s - a.arrival_s;  // present since it arrived, during the step just run
      }
    }
  };

  std::vector<uint32_t> picked;  // the token chosen for each row of a pass
  // Greedy passes pick on the device (forward_argmax); sampling and --emit logits bring each row's
  // logits to the host and choose there, request i with its own generator, for the rows that emit
  // (a chunk that does not end its prompt draws nothing).
  const bool host_logits = options.token_logits || options.sampling.temperature > 0.0f;
  std::vector<std::vector<float>> logits;
  std::map<uint64_t, kernels::SamplerRng> rngs;
  std::vector<float> sampling_scratch;
  std::vector<SequenceChunk> rows;
  std::vector<uint64_t> emits;  // per row: the index of the token it emits, or kNoToken
  constexpr uint64_t kNoToken = ~uint64_t{0};
  const auto run_pass = [&]() {
    const bool any = std::any_of(emits.begin(), emits.end(), [](uint64_t e) { return e != kNoToken; });
    if (!any) {  // a prompt's chunk before its last: no row asks for logits
      decoder->forward_layers(rows);
      return;
    }
    if (!host_logits) {
      decoder->forward_argmax(rows, picked);
      return;
    }
    decoder->forward(rows, logits);
    picked.assign(rows.size(), 0);
    for (size_t i = 0; i < rows.size(); ++i) {
      if (emits[i] == kNoToken) continue;
      const uint64_t id = rows[i].seq;
      auto rng = rngs.try_emplace(id, kernels::SamplerRng(options.seed ^ (0x9E3779B97F4A7C15ull * (id + 1)))).first;
      picked[i] = kernels::sample_token(logits[i], options.sampling, rng->second, sampling_scratch);
    }
  };
  // Each pass's tokens, in order within a request.
  const auto emit = [&]() {
    if (!options.on_token) return;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (emits[i] == kNoToken) continue;
      const SequenceChunk& c = rows[i];
      TokenEvent e{c.seq, emits[i], c.past + c.tokens.size() - 1, picked[i], {}};
      if (options.token_logits) e.logits = logits[i];
      options.on_token(e);
    }
  };
  const auto record_step = [&](bool prefill, uint64_t batch, uint64_t pass_tokens, uint64_t context,
                               uint64_t prompt_tokens, double start_s, double end_s) {
    StepRecord step{prefill, batch, pass_tokens, context, prompt_tokens, result.schedule.size() - 1, start_s, end_s};
    if (prefetcher) {  // the pass just run released its last group
      const OffloadPassRecord pass = prefetcher->last_pass();
      step.offload_bytes = pass.bytes;
      step.offload_copy_s = pass.copy_s;
      step.offload_wait_s = pass.wait_s;
    }
    result.steps.push_back(step);
  };
  if (options.on_ready) options.on_ready();
  const uint64_t t0 = backend.now_ns();
  double last_progress_s = 0, seen_s = 0;
  while (ended < arrivals.size()) {
    if (interrupt_requested()) {  // between steps: what ran so far is whole
      result.interrupted = true;
      break;
    }
    const double now = clock_s(t0);
    result.in_system_area += static_cast<double>(present) * (now - seen_s);
    seen_s = now;
    arrive(now);
    if (options.progress && now - last_progress_s > 1.0) {
      last_progress_s = now;
      options.progress(fmt::format("t = {:.1f} s: {}/{} requests done, {} running, {} waiting", now, ended,
                                   arrivals.size(), scheduler.running().size(), scheduler.waiting()));
    }
    if (!scheduler.has_work()) {  // idle until the next arrival
      if (next == arrivals.size()) break;
      const double wait_s = arrivals[next].arrival_s - clock_s(t0);
      if (wait_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait_s));
      continue;
    }
    const ScheduledStep& step = scheduler.schedule();
    result.schedule.push_back({now, step});
    for (const uint32_t id : scheduler.started())
      if (records[id].start_s < 0) records[id].start_s = now;  // not a preempted one's restart
    rows.clear();
    emits.clear();
    uint64_t context = 0;  // the prompts' contexts after the step
    if (step.batch)  // the batch decodes a token each
      for (const Scheduler::Running& r : scheduler.running()) {
        const std::vector<uint32_t>& t = tokens[r.id];
        rows.push_back({r.id, std::span<const uint32_t>(&t.back(), 1), t.size() - 1});
        emits.push_back(t.size() - arrivals[r.id].prompt_tokens);
      }
    for (const PrefillChunk& c : step.prefill) {  // a preempted request's recompute its emitted tokens too
      rows.push_back({c.id, std::span<const uint32_t>(tokens[c.id].data() + c.done, c.tokens), c.done});
      const uint64_t prefill = scheduler.prefill_tokens(c.id);
      emits.push_back(c.done + c.tokens == prefill ? prefill - arrivals[c.id].prompt_tokens : kNoToken);
      context += c.done + c.tokens;  // recorded for a step of prompts alone
    }
    if (!server.step_token_budget && step.batch == 0) {  // a prompt alone, in passes of prefill_chunk tokens
      // (after the tokens the prefix cache holds: whole.past)
      const SequenceChunk whole = rows.front();
      const uint64_t rest = whole.tokens.size(), emitted = emits.front();
      for (uint64_t done = 0; done < rest; done += options.prefill_chunk) {
        const uint64_t n = std::min(options.prefill_chunk, rest - done);
        rows.assign(1, {whole.seq, whole.tokens.subspan(done, n), whole.past + done});
        emits.assign(1, done + n == rest ? emitted : kNoToken);
        const double step0 = clock_s(t0);
        run_pass();
        backend.synchronize();
        record_step(true, 1, n, whole.past + done + n, n, step0, clock_s(t0));
      }
    } else {  // one pass: the batch's tokens and the prompts' chunks
      const double step0 = clock_s(t0);
      run_pass();
      backend.synchronize();
      uint64_t prompt_tokens = 0;
      for (const PrefillChunk& c : step.prefill) prompt_tokens += c.tokens;
      if (step.batch == 0) record_step(true, rows.size(), prompt_tokens, context, prompt_tokens, step0, clock_s(t0));
      else record_step(false, step.batch, step.batch + prompt_tokens, step.context_tokens, prompt_tokens, step0, clock_s(t0));
    }
    const double end = clock_s(t0);
    emit();
    for (size_t i = 0; i < rows.size(); ++i) {
      if (emits[i] == kNoToken) continue;
      tokens[rows[i].seq].push_back(picked[i]);
      if (emits[i] > 0) result.token_gaps_s.push_back(end - last_token_s[rows[i].seq]);
      last_token_s[rows[i].seq] = end;
    }
    scheduler.complete();
    for (const uint32_t id : scheduler.first_tokens()) records[id].first_token_s = end;
    // the count changes at the step's end, when the scheduler sees the departures
    result.in_system_area += static_cast<double>(present) * (end - seen_s);
    seen_s = end;
    for (const uint32_t id : scheduler.departed()) {
      records[id].finish_s = end;
      std::vector<uint32_t>().swap(tokens[id]);
      ++ended;
      --present;
    }
  }
  result.chunks_continued = scheduler.chunks_continued();
  result.preemptions = scheduler.preemptions();
  result.recomputed_tokens = scheduler.recomputed_tokens();
  result.prefix_hit_tokens = scheduler.prefix_hit_tokens();
  result.shared_prefix_tokens = shared_prefix;
  result.scheduler_model = server;
  result.kv_peak_pages = cache.peak_pages_in_use();
  result.peak_bytes = backend.peak();
  result.requests = std::move(records);
  if (result.interrupted) {  // keep the requests that ended; count the rest
    const auto done = [](const RequestRecord& r) { return r.finish_s >= 0 || !r.rejected.empty(); };
    result.unfinished = static_cast<uint64_t>(std::count_if(result.requests.begin(), result.requests.end(),
                                                            [&](const RequestRecord& r) { return !done(r); }));
    std::erase_if(result.requests, [&](const RequestRecord& r) { return !done(r); });
  }
  result.span_s = clock_s(t0);
  result.in_system_area += static_cast<double>(present) * (result.span_s - seen_s);
  for (const RequestRecord& r : result.requests) {
    assert(r.finish_s >= 0 || !r.rejected.empty());  // every request ends completed or rejected
    result.span_s = std::max(result.span_s, r.arrival_s);
  }
  return result;
}

namespace {
// Little's law check needs two independent measurements: the scheduler's count of requests
// present (mean_in_system) and the per-request timestamps (rate x mean sojourn). The records'
// own occupancy integral equals the latter by construction, so it is only a fallback.
double result_in_system(const RunResult& r, double records_area, double span) {
  return (r.in_system_area > 0 ? r.in_system_area : records_area) / span;
}
}  // namespace

MeasuredFigures measured_figures(const RunResult& r) {
  std::vector<double> decode_ms, prefill_ms, ttft, tpot, sojourn;
  std::vector<double> mixed_ms;
  for (const StepRecord& s : r.steps)
    (s.prefill ? prefill_ms : s.mixed() ? mixed_ms : decode_ms).push_back((s.end_s - s.start_s) * 1e3);
  MeasuredFigures m;
  if (r.offload) {  // per decode round (prefill passes copy the same groups but are not rounds)
    std::vector<double> bytes, round_ms, stall_ms;
    double total_bytes = 0, total_copy_s = 0;
    for (const StepRecord& s : r.steps)
      if (!s.prefill) {
        bytes.push_back(static_cast<double>(s.offload_bytes));
        round_ms.push_back(s.offload_copy_s * 1e3);
        stall_ms.push_back(s.offload_wait_s * 1e3);
        total_bytes += static_cast<double>(s.offload_bytes);
        total_copy_s += s.offload_copy_s;
      }
    m.offload = MeasuredOffload{r.offload_host_bytes, r.offload_buffer_bytes, bytes.size(), summarize(bytes),
                                summarize(round_ms), summarize(stall_ms),
                                total_copy_s > 0 ? total_bytes / total_copy_s : 0.0};
  }
  uint64_t output_tokens = 0;
  // Requests present over time: +1 at arrival, -1 at departure (rejections never enter).
  std::vector<std::pair<double, int>> events;
  for (const RequestRecord& q : r.requests) {
    if (!q.rejected.empty()) {
      ++m.rejected_by_reason[q.rejected];
      ++m.rejected;
      continue;
    }
    ++m.completed;
    if (r.deadline_s && q.finish_s > q.arrival_s + *r.deadline_s) ++m.completed_late;
    output_tokens += q.output_tokens;
    ttft.push_back(q.first_token_s - q.arrival_s);
    if (q.output_tokens >= 2) tpot.push_back((q.finish_s - q.first_token_s) / static_cast<double>(q.output_tokens - 1) * 1e3);
    sojourn.push_back(q.finish_s - q.arrival_s);
    events.push_back({q.arrival_s, +1});
    events.push_back({q.finish_s, -1});
  }
  std::sort(events.begin(), events.end());
  double area = 0, last = 0;
  int present = 0;
  for (const auto& [t, d] : events) {
    area += present * (t - last);
    last = t;
    present += d;
  }
  const double span = r.span_s > 0 ? r.span_s : 1e-9;
  m.backend = r.backend;
  m.threads = r.threads;
  m.model = r.model;
  m.weights_bytes = r.weights_bytes;
  m.kv_bytes = r.kv_bytes;
  m.kv_pages = r.kv_pages;
  m.kv_peak_pages = r.kv_peak_pages;
  for (const auto& [category, bytes] : r.peak_bytes) m.peak_bytes[std::string(memory_category_name(category))] = bytes;
  m.interrupted = r.interrupted;
  m.unfinished = r.unfinished;
  m.setup_s = r.setup_s;
  m.span_s = r.span_s;
  m.decode_iteration_ms = summarize(decode_ms);
  m.prefill_ms = summarize(prefill_ms);
  m.mixed_step_ms = summarize(mixed_ms);
  std::vector<double> itl_ms;
  for (const double gap : r.token_gaps_s) itl_ms.push_back(gap * 1e3);
  m.itl_ms = summarize(std::move(itl_ms));
  m.ttft_s = summarize(ttft);
  m.tpot_ms = summarize(tpot);
  m.sojourn_s = summarize(sojourn);
  m.throughput_tok_s = static_cast<double>(output_tokens) / span;
  m.mean_in_system = result_in_system(r, area, span);
  m.mean_sojourn_s = m.sojourn_s.mean;
  m.rate_per_s = static_cast<double>(m.completed) / span;
  m.littles_law_in_system = m.rate_per_s * m.mean_sojourn_s;
  m.requests = r.requests.size() + r.unfinished;  // arrived or due: ended, or cut off by an interrupt
  if (r.driver_before_bytes && r.driver_after_setup_bytes)
    m.driver_setup_bytes = *r.driver_after_setup_bytes - *r.driver_before_bytes;
  m.steps = r.schedule.size();
  m.chunks_continued = r.chunks_continued;
  m.preemptions = r.preemptions;
  m.recomputed_tokens = r.recomputed_tokens;
  m.prefix_hit_tokens = r.prefix_hit_tokens;
  if (!r.interrupted && r.scheduler_model.decode_iteration_s) {
    std::vector<ServingRequest> arrivals;
    std::vector<std::string> rejected;
    for (const RequestRecord& q : r.requests) {
      arrivals.push_back({q.arrival_s, q.prompt_tokens, q.output_tokens});
      rejected.push_back(q.rejected);
    }
    m.schedule_replay =
        replay_schedule(r.scheduler_model, arrivals, r.deadline_s, r.schedule, rejected, r.shared_prefix_tokens);
  }
  return m;
}

Json measured_json(const MeasuredFigures& m) {
  Json rejected = Json::object();
  for (const auto& [why, n] : m.rejected_by_reason) rejected[why] = n;
  Json j{{"backend", m.backend},
         {"threads", m.threads},
         {"model", m.model},
         {"weights_bytes", m.weights_bytes},
         {"kv_bytes", m.kv_bytes},
         {"kv_pages", m.kv_pages},
         {"kv_peak_pages", m.kv_peak_pages},
         {"peak_bytes", m.peak_bytes},
         {"interrupted", m.interrupted},
         {"unfinished", m.unfinished},
         {"setup_s", m.setup_s},
         {"span_s", m.span_s},
         {"decode_iteration_ms", distribution_figures(m.decode_iteration_ms)},
         {"prefill_ms", distribution_figures(m.prefill_ms)},
         {"mixed_step_ms", distribution_figures(m.mixed_step_ms)},
         // vLLM bench serve's names and units, as the serving simulation's (planner/plan/figures)
         {"ttft_ms", distribution_figures(m.ttft_s, 1e3)},
         {"tpot_ms", distribution_figures(m.tpot_ms)},
         {"itl_ms", distribution_figures(m.itl_ms)},
         {"e2el_ms", distribution_figures(m.sojourn_s, 1e3)},
         {"output_throughput_tok_s", m.throughput_tok_s},
         {"request_throughput_req_s", m.rate_per_s},
         {"mean_in_system", m.mean_in_system},
         {"littles_law_in_system", m.littles_law_in_system},
         {"requests", m.requests},
         {"completed", m.completed},
         {"completed_late", m.completed_late},
         {"rejected", m.rejected},
         {"rejected_by_reason", rejected}};
  j["steps"] = m.steps;
  j["chunks_continued"] = m.chunks_continued;
  j["preemptions"] = m.preemptions;
  j["recomputed_tokens"] = m.recomputed_tokens;
  j["prefix_hit_tokens"] = m.prefix_hit_tokens;
  if (m.schedule_replay)
    j["schedule_replay"] = {{"steps", m.schedule_replay->steps},
                            {"identical", m.schedule_replay->identical},
                            {"first_difference", m.schedule_replay->first_difference.empty()
                                                     ? Json(nullptr) : Json(m.schedule_replay->first_difference)}};
  if (m.driver_setup_bytes) j["driver_setup_bytes"] = *m.driver_setup_bytes;
  if (m.offload) {
    j["offload_host_bytes"] = m.offload->host_bytes;
    j["offload_buffer_bytes"] = m.offload->buffer_bytes;
    j["offload_rounds"] = m.offload->rounds;
    j["offload_bytes_per_round"] = distribution_figures(m.offload->bytes_per_round);
    j["offload_round_ms"] = distribution_figures(m.offload->round_ms);
    j["offload_stall_ms"] = distribution_figures(m.offload->stall_ms);
    j["offload_bandwidth_bytes_per_s"] = m.offload->bandwidth_bytes_per_s;
  }
  return j;
}

}  // namespace infer_plan::runtime
