#include "runtime/server.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <deque>
#include <map>
#include <thread>

#include "kernels/cpu/sampling.hpp"
#include "planner/weights/gguf_reader.hpp"
#include "planner/core/input_error.hpp"
#include "planner/cost/memory_fit.hpp"
#include "planner/plan/figures.hpp"
#include "planner/plan/plan.hpp"
#include "planner/serving/serving_sim.hpp"
#include "runtime/forward_pass.hpp"
#include "runtime/model_weights.hpp"
#include "runtime/offload_prefetcher.hpp"
#include "runtime/paged_kv_cache.hpp"
#include "runtime/thread_pool.hpp"

namespace infer_plan::runtime {
namespace {

struct Live {
  uint64_t id = 0;
  std::vector<uint32_t> tokens;  // prompt, then generated
  uint64_t emitted = 0;          // generated tokens so far
};

std::vector<ServingRequest> plan_requests(const Plan& plan) {
  if (plan.load && plan.load->rate_per_s) return serving_requests(plan_serving_load(plan));
  if (plan.output == 0 || plan.output >= plan.context)
    throw InputError(fmt::format("plan: output {} must be at least 1 and less than context {} (the prompt "
                                 "is context - output tokens)", plan.output, plan.context));
  std::vector<ServingRequest> closed(plan.requests);
  for (ServingRequest& r : closed) {
    r.prompt_tokens = plan.context - plan.output;
    r.output_tokens = plan.output;
  }
  return closed;
}

// The planner's admission rule on the server as it stands (planner/serving/serving_sim.hpp).
bool admitted_by_deadline(const ServerModel& model, const std::vector<ServingRequest>& arrivals,
                          const std::vector<Live>& running, const std::deque<Live>& waiting, double now,
                          const ServingRequest& candidate, double due_s) {
  ServerSnapshot snapshot;
  snapshot.now_s = now;
  for (const Live& s : running) snapshot.running.push_back({arrivals[s.id], s.emitted});
  for (const Live& s : waiting) snapshot.waiting.push_back(arrivals[s.id]);
  return admission_finish_s(model, snapshot, candidate, due_s) <= due_s;
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

}  // namespace

unsigned compute_threads(const Plan& plan, unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  return plan.offload ? std::max(1u, threads - 1) : threads;
}

RunResult run_plan(const ResolvedPlan& rp, Backend& backend, const RunOptions& options) {
  const Plan& plan = rp.plan;
  if (plan.tp != 1) throw InputError("run: the runtime executes on one device; set tp to 1");
  if (plan.weights_bytes) throw InputError("run: a given weights size cannot be executed; name the weight type");
  const std::vector<ServingRequest> arrivals = plan_requests(plan);
  const std::optional<WeightsOffload> offload = plan_weights_offload(rp);
  const bool closed = !(plan.load && plan.load->rate_per_s);
  const uint64_t max_batch = closed ? plan.requests : plan.load->max_batch;
  // Admission by deadline asks the planner's serving model (roofline steps, fit's KV pool) to
  // predict each arrival's finish from the server's state, with the simulation's own rule.
  const ServerModel& admission_model = rp.server;

  RunResult result;
  result.backend = std::string(backend.name());
  result.model = rp.spec.name;
  result.deadline_s = plan.deadline_s;
  ThreadPool pool(compute_threads(plan, options.threads));
  result.threads = pool.threads();
  auto clock_s = [&backend](uint64_t t0) { return static_cast<double>(backend.now_ns() - t0) * 1e-9; };

  const uint64_t setup0 = backend.now_ns();
  result.driver_before_bytes = backend.driver_used_bytes();
  if (options.progress) options.progress(fmt::format("writing {} synthetic weights ({})", rp.spec.name, rp.weights.label));
  // A .gguf model with its own types ("file") runs the file's tensors; anything else synthetic.
  const bool from_file = is_gguf_path(rp.spec.source) && rp.weights.layout.file_type.starts_with("as stored in");
  if (from_file && plan.scale != 1)
    throw InputError("run: --scale shrinks synthetic weights; a .gguf with its own weights runs at its own size");
  ModelWeights weights = from_file ? ModelWeights(backend, rp.spec, rp.weights.layout, rp.spec.source, pool, offload)
                                   : ModelWeights(backend, rp.spec, rp.weights.layout, options.seed, pool, offload);
  // Offload: `buffers` slots of the largest group (the planner's group_bytes) and the copy thread.
  std::unique_ptr<OffloadPrefetcher> prefetcher;
  if (offload) prefetcher = make_offload_prefetcher(backend, weights, plan.offload->buffers);
  // The KV pool fit sizes: requests x context, whole pages (planner/cost/memory_fit).
  const uint64_t pages = plan.requests * PagedKvCache::pages_for(plan.context);
  PagedKvCache cache(backend, rp.spec, plan.kv, pages);
  const std::unique_ptr<ForwardPass> decoder = make_forward_pass(backend, weights, cache, pool, 0, prefetcher.get());
  result.driver_after_setup_bytes = backend.driver_used_bytes();
  result.weights_bytes = backend.allocated(MemoryCategory::weights);
  result.offload = offload.has_value();
  result.offload_host_bytes = backend.allocated(MemoryCategory::offload_host);
  result.offload_buffer_bytes = backend.allocated(MemoryCategory::offload_buffers);
  result.kv_bytes = backend.allocated(MemoryCategory::kv_cache);
  result.kv_pages = pages;
  result.setup_s = clock_s(setup0);

  result.requests.resize(arrivals.size());
  for (size_t i = 0; i < arrivals.size(); ++i) {
    result.requests[i].arrival_s = arrivals[i].arrival_s;
    result.requests[i].prompt_tokens = arrivals[i].prompt_tokens;
    result.requests[i].output_tokens = arrivals[i].output_tokens;
  }

  std::deque<Live> waiting;
  std::vector<Live> running;
  size_t next = 0, ended = 0;
  std::vector<uint32_t> picked;  // the greedy token of each row of a pass
  std::vector<SequenceChunk> chunks;
  const uint64_t t0 = backend.now_ns();
  double last_progress_s = 0;

  auto record_offload = [&](StepRecord& step) {
    if (!prefetcher) return;
    const OffloadPassRecord pass = prefetcher->last_pass();  // the pass just run released its last group
    step.offload_bytes = pass.bytes;
    step.offload_copy_s = pass.copy_s;
    step.offload_wait_s = pass.wait_s;
  };
  auto finish = [&](const Live& s, double now) {
    result.requests[s.id].finish_s = now;
    cache.release(s.id);
    ++ended;
  };

  double seen_s = 0;
  uint64_t present = 0;  // waiting + running as the scheduler last saw it
  while (ended < arrivals.size()) {
    double now = clock_s(t0);
    result.in_system_area += static_cast<double>(present) * (now - seen_s);
    seen_s = now;
    while (next < arrivals.size() && arrivals[next].arrival_s <= now) {
      const ServingRequest& a = arrivals[next];
      if (PagedKvCache::pages_for(a.kv_tokens()) > cache.pages_total()) {
        result.requests[next].rejected = "exceeds_kv_capacity";
        ++ended;
      } else if (plan.deadline_s && !admitted_by_deadline(admission_model, arrivals, running, waiting, now, a,
                                                          a.arrival_s + *plan.deadline_s)) {
        result.requests[next].rejected = "deadline";
        ++ended;
      } else {
        Live s;
        s.id = next;
        kernels::SamplerRng rng(options.seed * 0x9E3779B97F4A7C15ULL + next);
        s.tokens.resize(a.prompt_tokens);
        for (uint32_t& tok : s.tokens) tok = static_cast<uint32_t>(rng.next_u64() % rp.spec.vocab);
        waiting.push_back(std::move(s));
      }
      ++next;
    }
    present = waiting.size() + running.size();
    if (options.progress && now - last_progress_s > 1.0) {
      last_progress_s = now;
      options.progress(fmt::format("t = {:.1f} s: {}/{} requests done, {} running, {} waiting", now, ended,
                                   arrivals.size(), running.size(), waiting.size()));
    }
    // Prefill first: the head of the queue starts when a batch slot and its pages are free.
    if (!waiting.empty() && running.size() < max_batch &&
        cache.reserve(waiting.front().id, result.requests[waiting.front().id].prompt_tokens +
                                              result.requests[waiting.front().id].output_tokens)) {
      Live s = std::move(waiting.front());
      waiting.pop_front();
      RequestRecord& rec = result.requests[s.id];
      rec.start_s = now;
      const uint64_t prompt = s.tokens.size();
      for (uint64_t past = 0; past < prompt; past += options.prefill_chunk) {
        const uint64_t n = std::min(options.prefill_chunk, prompt - past);
        const SequenceChunk c{s.id, std::span<const uint32_t>(s.tokens.data() + past, n), past};
        const double step0 = clock_s(t0);
        decoder->forward_argmax(std::span(&c, 1), picked);
        backend.synchronize();
        result.steps.push_back({true, 1, n, past + n, step0, clock_s(t0)});
        record_offload(result.steps.back());
      }
      s.tokens.push_back(picked[0]);
      s.emitted = 1;
      rec.first_token_s = clock_s(t0);
      if (s.emitted == rec.output_tokens) finish(s, rec.first_token_s);
      else running.push_back(std::move(s));
      continue;
    }
    if (!running.empty()) {
      chunks.clear();
      uint64_t context = 0;
      for (const Live& s : running) {
        chunks.push_back({s.id, std::span<const uint32_t>(&s.tokens.back(), 1), s.tokens.size() - 1});
        context += s.tokens.size();
      }
      const double step0 = clock_s(t0);
      decoder->forward_argmax(chunks, picked);
      backend.synchronize();
      const double step1 = clock_s(t0);
      result.steps.push_back({false, running.size(), running.size(), context, step0, step1});
      record_offload(result.steps.back());
      std::vector<Live> still;
      still.reserve(running.size());
      for (size_t i = 0; i < running.size(); ++i) {
        Live& s = running[i];
        s.tokens.push_back(picked[i]);
        if (++s.emitted == result.requests[s.id].output_tokens) finish(s, step1);
        else still.push_back(std::move(s));
      }
      running = std::move(still);
      continue;
    }
    if (next < arrivals.size()) {  // idle until the next arrival
      const double wait_s = arrivals[next].arrival_s - clock_s(t0);
      if (wait_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait_s));
      continue;
    }
    assert(waiting.empty());  // nothing runs, nothing arrives: a waiting request would fit
    break;
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
  for (const StepRecord& s : r.steps) (s.prefill ? prefill_ms : decode_ms).push_back((s.end_s - s.start_s) * 1e3);
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
  m.setup_s = r.setup_s;
  m.span_s = r.span_s;
  m.decode_iteration_ms = summarize(decode_ms);
  m.prefill_ms = summarize(prefill_ms);
  m.ttft_s = summarize(ttft);
  m.tpot_ms = summarize(tpot);
  m.sojourn_s = summarize(sojourn);
  m.throughput_tok_s = static_cast<double>(output_tokens) / span;
  m.mean_in_system = result_in_system(r, area, span);
  m.mean_sojourn_s = m.sojourn_s.mean;
  m.rate_per_s = static_cast<double>(m.completed) / span;
  m.littles_law_in_system = m.rate_per_s * m.mean_sojourn_s;
  m.requests = r.requests.size();
  if (r.driver_before_bytes && r.driver_after_setup_bytes)
    m.driver_setup_bytes = *r.driver_after_setup_bytes - *r.driver_before_bytes;
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
         {"setup_s", m.setup_s},
         {"span_s", m.span_s},
         {"decode_iteration_ms", distribution_figures(m.decode_iteration_ms)},
         {"prefill_ms", distribution_figures(m.prefill_ms)},
         {"ttft_s", distribution_figures(m.ttft_s)},
         {"tpot_ms", distribution_figures(m.tpot_ms)},
         {"sojourn_s", distribution_figures(m.sojourn_s)},
         {"throughput_tok_s", m.throughput_tok_s},
         {"mean_in_system", m.mean_in_system},
         {"mean_sojourn_s", m.mean_sojourn_s},
         {"rate_per_s", m.rate_per_s},
         {"littles_law_in_system", m.littles_law_in_system},
         {"requests", m.requests},
         {"completed", m.completed},
         {"completed_late", m.completed_late},
         {"rejected", m.rejected},
         {"rejected_by_reason", rejected}};
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
