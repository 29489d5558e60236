#include "runtime/pd_server.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <latch>
#include <map>
#include <mutex>
#include <thread>

#include "planner/core/input_error.hpp"
#include "planner/core/units.hpp"
#include "planner/plan/figures.hpp"
#include "planner/serving/scheduler.hpp"
#include "runtime/forward_pass.hpp"
#include "runtime/interrupt.hpp"
#include "runtime/model_weights.hpp"
#include "runtime/paged_kv_cache.hpp"
#include "runtime/thread_pool.hpp"

namespace infer_plan::runtime {
namespace {

// The link copies a request's pages in pieces of this size, each when the link's pace allows.
constexpr size_t kLinkChunkBytes = 64 * 1024;

// A worker: a device of its own.
struct Worker {
  Worker(const ResolvedPlan& rp, Backend& backend, unsigned threads, uint64_t pages, uint64_t seed)
      : pool(threads),
        weights(plan_model_weights(rp, backend, pool, seed)),
        cache(backend, rp.spec, rp.plan.kv, pages),
        pass(make_forward_pass(backend, weights, cache, pool)) {}
  ThreadPool pool;
  ModelWeights weights;
  PagedKvCache cache;
  std::unique_ptr<ForwardPass> pass;
  std::vector<StepRecord> steps;
};

// A request's pages: all of them, or streamed, one layer's part of some of them.
inline constexpr uint64_t kAllLayers = ~uint64_t{0};
struct Message {
  uint32_t id = 0;
  std::vector<uint8_t> bytes;
  uint64_t layer = kAllLayers;  // a layer: its part of pages [first_page, ...), page after page
  uint64_t first_page = 0;
  bool last = true;             // the request's last piece
};

// A queue between two threads; closed when its producer is done.
struct Mailbox {
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<Message> items;
  bool closed = false;
  void push(Message m) {
    {
      const std::lock_guard lock(mutex);
      items.push_back(std::move(m));
    }
    changed.notify_all();
  }
  void close() {
    {
      const std::lock_guard lock(mutex);
      closed = true;
    }
    changed.notify_all();
  }
};

// What the split's threads share: the clock, a stop flag, the first error.
class Crew {
 public:
  Crew(Backend& backend, uint64_t t0) : backend_(backend), t0_(t0) {}
  double now_s() const { return static_cast<double>(backend_.now_ns() - t0_) * 1e-9; }
  void sleep_until(double t_s) const {
    const double wait = t_s - now_s();
    if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  }
  bool stopped() const { return stop_.load(); }
  void stop(const std::vector<Mailbox*>& wake) {
    stop_ = true;
    for (Mailbox* m : wake) m->changed.notify_all();
  }
  // Runs `body`; an error stops the others (and is rethrown by rethrow()).
  void guard(const std::function<void()>& body, const std::vector<Mailbox*>& wake) {
    try {
      body();
    } catch (...) {
      {
        const std::lock_guard lock(error_mutex_);
        if (!error_) error_ = std::current_exception();
      }
      stop(wake);
    }
  }
  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  Backend& backend_;
  uint64_t t0_;
  std::atomic<bool> stop_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

// The decode side's server: its pool as allocated, the plan's batch limit (as run_plan sets it).
ServerModel decode_server(const ResolvedPlan& rp, const PagedKvCache& cache) {
  ServerModel server = rp.server;
  server.kv_capacity_tokens = cache.pages_total() * kKvPageTokens;
  server.kv_page_tokens = kKvPageTokens;
  server.max_batch = rp.plan.load->max_batch;
  return server;
}

void run_split(const ResolvedPlan& rp, Backend& backend, const RunOptions& options, PdRunResult& result) {
  const Plan& plan = rp.plan;
  const std::vector<ServingRequest>& arrivals = result.arrivals;
  const size_t n = arrivals.size();
  uint64_t longest_prompt = 1;
  for (const ServingRequest& a : arrivals) longest_prompt = std::max(longest_prompt, a.prompt_tokens);
  std::vector<std::unique_ptr<Worker>> prefill, decode;
  if (options.progress)
    options.progress(fmt::format("writing {} weights for {} prefill and {} decode workers", rp.spec.name,
                                 plan.pd->prefill_workers, plan.pd->decode_workers));
  for (uint64_t w = 0; w < plan.pd->prefill_workers; ++w)  // a prompt at a time
    prefill.push_back(std::make_unique<Worker>(rp, backend, result.threads_per_worker,
                                               PagedKvCache::pages_for(longest_prompt), options.seed));
  for (uint64_t w = 0; w < plan.pd->decode_workers; ++w)  // the pool fit sizes, as a colocated server's
    decode.push_back(std::make_unique<Worker>(rp, backend, result.threads_per_worker,
                                              plan.requests * PagedKvCache::pages_for(plan.context), options.seed));
  const ServerModel server = decode_server(rp, decode.front()->cache);

  result.split.requests.assign(n, {});
  result.kv_transfer_bytes.assign(n, 0);
  std::vector<std::vector<uint32_t>> tokens(n);  // prompt, then what the decode side emitted
  uint64_t admitted = 0;
  for (size_t i = 0; i < n; ++i) {
    PdRequestTimes& t = result.split.requests[i];
    t.arrival_s = arrivals[i].arrival_s;
    if (exceeds_kv_capacity(server, arrivals[i].kv_tokens())) {
      t.rejected = "exceeds_kv_capacity";
      continue;
    }
    tokens[i] = synthetic_prompt(options.seed, i, arrivals[i].prompt_tokens, rp.spec.vocab);
    ++admitted;
  }

  Mailbox to_link;
  std::vector<Mailbox> inboxes(decode.size());
  std::vector<Mailbox*> all{&to_link};
  for (Mailbox& m : inboxes) all.push_back(&m);
  std::mutex next_mutex;
  size_t next = 0;  // the next prompt, in arrival order
  std::atomic<uint64_t> prefills_left{admitted};
  const bool stream = plan.pd->stream;
  std::mutex on_token_mutex;
  Crew crew(backend, backend.now_ns());
  std::vector<PdRequestTimes>& times = result.split.requests;

  const auto prefill_worker = [&](Worker& w) {
    for (;;) {
      size_t id;
      {
        const std::lock_guard lock(next_mutex);
        while (next < n && !times[next].rejected.empty()) ++next;
        if (next == n || crew.stopped()) return;
        id = next++;
      }
      crew.sleep_until(arrivals[id].arrival_s);
      if (crew.stopped()) return;
      PdRequestTimes& t = times[id];
      t.prefill_start_s = crew.now_s();
      const uint64_t prompt = arrivals[id].prompt_tokens;
      if (!w.cache.reserve(id, prompt)) throw std::logic_error("pd: a prefill worker's cache refused a prompt");
      std::vector<uint64_t> sent(rp.spec.layers, 0);  // streamed: each layer's pages sent so far
      for (uint64_t done = 0; done < prompt; done += options.prefill_chunk) {
        const uint64_t tokens_now = std::min(options.prefill_chunk, prompt - done), end = done + tokens_now;
        if (stream)  // each layer's whole pages as soon as the layer has written them
          w.pass->on_layer_written([&, id, end](uint64_t layer) {
            const uint64_t upto = end == prompt ? PagedKvCache::pages_for(prompt) : end / kKvPageTokens;
            if (upto <= sent[layer]) return;
            Message piece{static_cast<uint32_t>(id), {}, layer, sent[layer], end == prompt && layer + 1 == rp.spec.layers};
            w.cache.export_layer(id, layer, sent[layer], upto - sent[layer], piece.bytes);
            sent[layer] = upto;
            to_link.push(std::move(piece));
          });
        const SequenceChunk chunk{id, std::span<const uint32_t>(tokens[id].data() + done, tokens_now), done};
        const double step0 = crew.now_s();
        w.pass->forward_layers(std::span<const SequenceChunk>(&chunk, 1));  // the decode side's is the first token
        backend.synchronize();
        w.steps.push_back({true, 1, tokens_now, end, tokens_now, 0, step0, crew.now_s()});
      }
      w.pass->on_layer_written(nullptr);
      Message m{static_cast<uint32_t>(id), {}};
      if (!stream) w.cache.export_pages(id, prompt, m.bytes);
      w.cache.release(id);
      t.prefill_end_s = crew.now_s();  // then the pages leave, whole (streamed, they have left)
      if (!stream) to_link.push(std::move(m));
      if (--prefills_left == 0) to_link.close();
      if (interrupt_requested()) crew.stop(all);
    }
  };

  const double bytes_per_s = result.link_bytes_per_s;
  const double message_s = result.link_message_s;
  const PagedKvCache& layout = prefill.front()->cache;  // every worker's pages are laid out alike
  const auto link = [&]() {
    size_t landed = 0;
    std::map<uint32_t, Message> receiving;  // requests part-way over the link, as whole pages
    for (;;) {
      Message m;
      {
        std::unique_lock lock(to_link.mutex);
        to_link.changed.wait(lock, [&] { return !to_link.items.empty() || to_link.closed || crew.stopped(); });
        if (crew.stopped() || to_link.items.empty()) break;
        m = std::move(to_link.items.front());
        to_link.items.pop_front();
      }
      PdRequestTimes& t = times[m.id];
      const double start = crew.now_s();
      Message& received = receiving[m.id];
      if (received.bytes.empty()) {
        received.id = m.id;
        received.bytes.resize(PagedKvCache::pages_for(arrivals[m.id].prompt_tokens) * layout.page_bytes());
        t.transfer_start_s = start;
        t.link_s = 0;
      }
      // One transfer (a request whole, or one layer of it when streamed): the link's latency,
      // then a piece at a time (a layer's part of one page when streamed), each when the link's
      // pace allows.
      const bool whole = m.layer == kAllLayers;
      const uint64_t piece = whole ? kLinkChunkBytes : layout.layer_stride();
      uint64_t copied = 0;
      while (copied < m.bytes.size()) {
        const uint64_t length = std::min<uint64_t>(piece, m.bytes.size() - copied);
        const uint64_t to = whole ? copied
                                  : (m.first_page + copied / piece) * layout.page_bytes() + layout.layer_offset(m.layer);
        if (to + length > received.bytes.size()) throw std::logic_error("pd: a piece beyond the request's pages");
        std::memcpy(received.bytes.data() + to, m.bytes.data() + copied, length);
        copied += length;
        crew.sleep_until(start + message_s + static_cast<double>(copied) / bytes_per_s);
      }
      t.link_s += crew.now_s() - start;
      result.kv_transfer_bytes[m.id] += copied;
      if (!m.last) continue;
      t.transfer_end_s = crew.now_s();
      inboxes[landed++ % inboxes.size()].push(std::move(received));
      receiving.erase(m.id);
    }
    for (Mailbox& m : inboxes) m.close();
  };

  const auto decode_worker = [&](Worker& w, Mailbox& inbox) {
    DecodePool pool(server, arrivals);
    std::map<uint32_t, std::vector<uint8_t>> landed;
    std::vector<SequenceChunk> rows;
    std::vector<uint32_t> picked;
    for (;;) {
      bool closed = false;
      {
        std::unique_lock lock(inbox.mutex);
        if (!pool.has_work())
          inbox.changed.wait(lock, [&] { return !inbox.items.empty() || inbox.closed || crew.stopped(); });
        for (Message& m : inbox.items) {
          if (!pool.offer(m.id)) throw std::logic_error("pd: a decode worker refused a request its pool holds");
          landed[m.id] = std::move(m.bytes);
        }
        inbox.items.clear();
        closed = inbox.closed;
      }
      if (crew.stopped()) return;
      if (!pool.has_work()) {
        if (closed && pool.waiting() == 0) return;
        continue;
      }
      const std::vector<uint32_t>& batch = pool.schedule();
      for (const uint32_t id : pool.started()) {
        if (!w.cache.reserve(id, arrivals[id].kv_tokens()))
          throw std::logic_error("pd: a decode worker's cache refused a request its pool admitted");
        w.cache.import_pages(id, landed.at(id));
        landed.erase(id);
      }
      rows.clear();
      for (const uint32_t id : batch) rows.push_back({id, std::span<const uint32_t>(&tokens[id].back(), 1), tokens[id].size() - 1});
      const double step0 = crew.now_s();
      w.pass->forward_argmax(rows, picked);
      backend.synchronize();
      const double end = crew.now_s();
      w.steps.push_back({false, batch.size(), batch.size(), pool.context_tokens() + batch.size(), 0, 0, step0, end});
      for (size_t i = 0; i < rows.size(); ++i) {
        std::vector<uint32_t>& t = tokens[rows[i].seq];
        if (options.on_token) {  // in order within a request; one worker's at a time
          const std::lock_guard lock(on_token_mutex);
          options.on_token({rows[i].seq, t.size() - arrivals[rows[i].seq].prompt_tokens, t.size() - 1, picked[i], {}});
        }
        t.push_back(picked[i]);
      }
      for (const uint32_t id : pool.started()) times[id].first_token_s = end;
      pool.complete();
      for (const uint32_t id : pool.departed()) {
        times[id].finish_s = end;
        w.cache.release(id);
        std::vector<uint32_t>().swap(tokens[id]);
      }
      if (interrupt_requested()) crew.stop(all);
    }
  };

  if (options.progress) options.progress(fmt::format("serving {} requests on the split", n));
  std::vector<std::thread> threads;
  for (auto& w : prefill) threads.emplace_back([&, wp = w.get()] { crew.guard([&] { prefill_worker(*wp); }, all); });
  if (admitted == 0) to_link.close();
  threads.emplace_back([&] { crew.guard(link, all); });
  for (size_t d = 0; d < decode.size(); ++d)
    threads.emplace_back([&, d] { crew.guard([&] { decode_worker(*decode[d], inboxes[d]); }, all); });
  for (std::thread& t : threads) t.join();
  crew.rethrow();
  result.interrupted = crew.stopped();
  for (PdRequestTimes& t : times)  // an interrupt's unfinished requests: counted, not timed
    if (t.rejected.empty() && t.finish_s < 0) t.rejected = "unfinished";
  for (auto& w : prefill) result.prefill_steps.insert(result.prefill_steps.end(), w->steps.begin(), w->steps.end());
  for (auto& w : decode) result.decode_steps.insert(result.decode_steps.end(), w->steps.begin(), w->steps.end());
}

// As many servers as the split has workers, all at once, each on its share of the arrivals.
std::vector<RunResult> run_colocated(const ResolvedPlan& rp, Backend& backend, const RunOptions& options,
                                     const PdRunResult& split) {
  const uint64_t servers = rp.plan.pd->prefill_workers + rp.plan.pd->decode_workers;
  std::vector<RunResult> runs(servers);
  std::vector<std::exception_ptr> errors(servers);
  std::latch ready(static_cast<std::ptrdiff_t>(servers));
  if (options.progress) options.progress(fmt::format("serving the same requests on {} colocated servers", servers));
  std::vector<std::thread> threads;
  for (uint64_t k = 0; k < servers; ++k)
    threads.emplace_back([&, k] {
      bool arrived = false;
      try {
        RunOptions o;
        o.threads = split.threads_per_worker;
        o.seed = options.seed;
        o.prefill_chunk = options.prefill_chunk;
        for (size_t i = k; i < split.arrivals.size(); i += servers) o.arrivals.push_back(split.arrivals[i]);
        o.on_ready = [&] {
          arrived = true;
          ready.arrive_and_wait();
        };
        if (!o.arrivals.empty()) runs[k] = run_plan(rp, backend, o);
      } catch (...) {
        errors[k] = std::current_exception();
      }
      if (!arrived) ready.count_down();
    });
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  return runs;
}

}  // namespace

unsigned pd_worker_threads(const Plan& plan, unsigned threads) {
  const uint64_t workers = plan.pd ? plan.pd->prefill_workers + plan.pd->decode_workers : 1;
  return std::max(1u, static_cast<unsigned>(compute_threads(plan, threads) / workers));
}

void check_pd_runnable(const ResolvedPlan& rp, const Backend& backend) {
  const Plan& plan = rp.plan;
  if (!plan.pd) throw InputError("run: the plan has no 'pd' section");
  const char* unsupported = plan.offload          ? "offload"
                            : plan.speculative    ? "speculative"
                            : plan.load->shared_prefix ? "load.shared_prefix"
                                                  : nullptr;
  if (unsupported)
    throw InputError(fmt::format("run: the disaggregated server does not run a plan's '{}' yet; leave it out of a plan "
                                 "with a 'pd' section", unsupported));
  if (rp.spec.window_layer_count() || rp.spec.is_hybrid())
    throw InputError(fmt::format("run: {} keeps {} per sequence, which the disaggregated server does not carry over its "
                                 "link yet; pick a model whose every layer attends to the whole context", rp.spec.name,
                                 rp.spec.is_hybrid() ? "a linear-attention state" : "a window ring"));
  if (!backend.host_addressable(MemoryCategory::kv_cache))
    throw InputError(fmt::format("run: the disaggregated server runs on the cpu backend for now ({} keeps its KV "
                                 "where the link cannot copy it)", backend.name()));
  const uint64_t workers = plan.pd->prefill_workers + plan.pd->decode_workers;
  check_runnable(rp, backend, server_pass_shape(plan, 256));
  // Every worker and every colocated server holds the weights and a KV pool at once.
  const std::optional<uint64_t> available = backend.available_bytes(MemoryCategory::weights);
  const uint64_t need = workers * (rp.fit.device_weights_bytes + rp.fit.kv_bytes);
  if (available && need > *available)
    throw InputError(fmt::format("run: {} workers, each with the weights and a KV pool, need {:.2f} GiB; {} has {:.2f} "
                                 "GiB available; lower --scale, the workers or the context",
                                 workers, static_cast<double>(need) / (1 << 30), backend.name(),
                                 static_cast<double>(*available) / (1 << 30)));
}

PdRunResult run_pd_plan(const ResolvedPlan& rp, Backend& backend, const RunOptions& options) {
  check_pd_runnable(rp, backend);
  PdRunResult result;
  result.backend = std::string(backend.name());
  result.threads_per_worker = pd_worker_threads(rp.plan, options.threads);
  result.arrivals = serving_requests(plan_serving_load(rp.plan));
  const LinkProfile link = plan_pd_link(rp.plan);
  result.link = link.name;
  result.link_bytes_per_s = link.bandwidth_bytes_per_s;
  result.link_message_s = link.message_latency_s;
  run_split(rp, backend, options, result);
  if (result.interrupted) return result;
  result.colocated = run_colocated(rp, backend, options, result);
  result.interrupted = std::any_of(result.colocated.begin(), result.colocated.end(),
                                   [](const RunResult& r) { return r.interrupted; });
  return result;
}

MeasuredPd measured_pd(const PdRunResult& r) {
  MeasuredPd m;
  m.split = r.split;
  summarize_pd(m.split, r.arrivals);
  m.split_served = summarize_served(m.split, r.arrivals);
  std::vector<ServedRequest> served;
  for (const RunResult& run : r.colocated)
    for (const RequestRecord& q : run.requests)
      served.push_back({q.arrival_s, q.first_token_s, q.finish_s, q.output_tokens, !q.rejected.empty()});
  m.colocated = summarize_served(served);
  m.choice = pd_choice(m.split_served, m.colocated);
  bool any = false;
  for (size_t i = 0; i < r.kv_transfer_bytes.size(); ++i) {
    if (!r.split.requests[i].rejected.empty()) continue;
    const uint64_t b = r.kv_transfer_bytes[i];
    m.kv_transfer_bytes = any ? std::max(m.kv_transfer_bytes, b) : b;
    m.kv_transfer_bytes_min = any ? std::min(m.kv_transfer_bytes_min, b) : b;
    any = true;
  }
  return m;
}

Json measured_pd_json(const PdRunResult& r, const MeasuredPd& m) {
  std::vector<double> prefill_ms, decode_ms, colocated_prefill_ms, colocated_decode_ms;
  for (const StepRecord& s : r.prefill_steps) prefill_ms.push_back((s.end_s - s.start_s) * 1e3);
  for (const StepRecord& s : r.decode_steps) decode_ms.push_back((s.end_s - s.start_s) * 1e3);
  for (const RunResult& run : r.colocated)
    for (const StepRecord& s : run.steps)
      (s.prefill ? colocated_prefill_ms : colocated_decode_ms).push_back((s.end_s - s.start_s) * 1e3);
  return Json{{"backend", r.backend},
              {"threads_per_worker", r.threads_per_worker},
              {"link", r.link},
              {"link_bytes_per_s", r.link_bytes_per_s},
              {"link_message_ms", to_ms_exact(r.link_message_s)},
              {"kv_transfer_bytes", m.kv_transfer_bytes},
              {"kv_transfer_bytes_min", m.kv_transfer_bytes_min},
              {"kv_transfer_ms", m.split.link_s.mean * 1e3},
              {"prefill_pass_ms", distribution_figures(summarize(prefill_ms))},
              {"decode_step_ms", distribution_figures(summarize(decode_ms))},
              {"colocated_prefill_pass_ms", distribution_figures(summarize(colocated_prefill_ms))},
              {"colocated_decode_step_ms", distribution_figures(summarize(colocated_decode_ms))},
              {"split", pd_split_figures(m.split, m.split_served)},
              {"colocated", served_figures(m.colocated)},
              {"choice", pd_choice_name(m.choice)},
              {"interrupted", r.interrupted}};
}

}  // namespace infer_plan::runtime
