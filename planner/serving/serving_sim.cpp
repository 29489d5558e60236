// The serving simulation: one Engine drives the scheduler (scheduler.hpp) on a virtual clock, a
// step at a time; the main loop feeds it arrivals and keeps the books, and a copy of the Engine
// run forward (with stand-ins for those who leave, or with nobody else arriving) predicts a new
// request's finish for admission by deadline.
#include "planner/serving/serving_sim.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <fmt/format.h>
#include <functional>
#include <limits>
#include <queue>
#include <random>
#include <vector>

#include "planner/core/input_error.hpp"
#include "planner/core/limits.hpp"
#include "planner/core/units.hpp"
#include "planner/serving/scheduler.hpp"

namespace infer_plan {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

using Request = ServingRequest;

// What happened to each request in the main run (the lookahead copies record nothing).
using Outcome = RequestTimes;

}  // namespace

bool exceeds_kv_capacity(const ServerModel& server, uint64_t kv_tokens) {
  return server.kv_capacity_tokens && kv_reservation_tokens(server, kv_tokens) > *server.kv_capacity_tokens;
}

uint64_t kv_reservation_tokens(const ServerModel& server, uint64_t kv_tokens) {
  const uint64_t page = std::max<uint64_t>(server.kv_page_tokens, 1);
  return (kv_tokens + page - 1) / page * page;
}

bool admits_head(const ServerModel& server, uint64_t running, uint64_t reserved_kv_tokens, uint64_t head_kv_tokens) {
  if (running >= server.max_batch) return false;
  return !server.kv_capacity_tokens || reserved_kv_tokens + head_kv_tokens <= *server.kv_capacity_tokens;
}

namespace {

// The scheduler on a virtual clock: each step takes what the step model says.
class Engine {
 public:
  Engine(const ServerModel& server, const std::vector<Request>& requests) : sched(server, requests) {}
  Engine(const Scheduler& state, double now) : sched(state), now_s(now) { sched.set_pool(nullptr); }

  Scheduler sched;
  double now_s = 0;
  uint64_t departed = 0;  // by the last step, all at now_s

  // Statistics of the main run.
  double busy_s = 0;
  uint64_t decode_iterations = 0;
  uint64_t batch_sum = 0;  // sum over iterations of the batch size
  std::vector<Outcome>* outcomes = nullptr;  // null in lookahead copies
  // Inter-token latencies of the main run (null in lookahead copies): each gap between two
  // tokens of a request, as (gap, how many requests had it) since a batch shares its gaps.
  struct TokenGaps {
    std::vector<std::pair<double, uint64_t>> gaps;
    std::vector<double> last_token_s;  // per request: when its latest token came
  };
  TokenGaps* itl = nullptr;

  // The lookahead watches one request and, predicting with load_persists, replaces every
  // request that leaves by a stand-in with the same lengths, queued behind the watched one.
  std::optional<uint32_t> watched;
  bool watched_started = false;
  double watched_finish_s = kNever;
  bool replace_departures = false;

  // One step as the scheduler decides it; a decode step runs on until a request leaves or an
  // iteration ends at or after `stop_at_s` (nothing else can change what the scheduler decides).
  void step(double stop_at_s) {
    const ScheduledStep& s = sched.schedule();
    for (const uint32_t id : sched.started()) {
      if (outcomes && (*outcomes)[id].start_s < 0) (*outcomes)[id].start_s = now_s;  // not a preempted one's restart
      if (watched == id) watched_started = true;
    }
    if (s.prefill.empty()) {
      decode_until(stop_at_s);
    } else {
      const double dt = scheduled_step_s(sched.server(), s);
      now_s += dt;
      busy_s += dt;
      if (s.batch) {
        ++decode_iterations;
        batch_sum += s.batch;
        if (itl) {
          record_gaps(true, dt, s.batch);
          for (const Scheduler::Running& r : sched.running()) itl->last_token_s[r.id] = now_s;
        }
      }
      sched.complete();
    }
    for (const uint32_t id : sched.first_tokens()) {
      if (outcomes) (*outcomes)[id].first_token_s = now_s;
      if (itl) itl->last_token_s[id] = now_s;
    }
    if (itl)
      for (const uint32_t id : sched.resumed()) {  // a recomputed prefill's token, after the preemption's gap
        itl->gaps.emplace_back(now_s - itl->last_token_s[id], 1);
        itl->last_token_s[id] = now_s;
      }
    departed = sched.departed().size();
    for (const uint32_t id : sched.departed()) {
      if (outcomes) (*outcomes)[id].finish_s = now_s;
      if (watched == id) watched_finish_s = now_s;
      if (replace_departures && watched != id) sched.enqueue(sched.add(sched.request(id)));
    }
  }

 private:
  void decode_until(double stop_at_s) {
    for (bool first = true;; first = false) {
      const ScheduledStep& s = first ? sched.scheduled() : sched.schedule();  // the same decode step again
      assert(s.prefill.empty() && s.batch > 0);
      const double dt = checked_decode_s(sched.server(), s.batch, s.context_tokens);
      now_s += dt;
      busy_s += dt;
      ++decode_iterations;
      batch_sum += s.batch;
      if (itl) record_gaps(first, dt, s.batch);
      sched.complete();
      // A preemption queued a request whose recomputed prefill may start next.
      if (!sched.departed().empty() || !s.preempted.empty() || now_s >= stop_at_s) break;
    }
    if (itl)
      for (const Scheduler::Running& r : sched.running()) itl->last_token_s[r.id] = now_s;
  }

  // The first iteration after other steps: each request's gap runs from its own latest token (a
  // prefill in between stalled it); later ones: every request waited dt.
  void record_gaps(bool first, double dt, uint64_t batch) {
    std::vector<std::pair<double, uint64_t>>& gaps = itl->gaps;
    if (!first) {
      gaps.emplace_back(dt, batch);
      return;
    }
    const size_t from = gaps.size();
    for (const Scheduler::Running& r : sched.running()) {
      const double gap = now_s - itl->last_token_s[r.id];
      auto same = std::find_if(gaps.begin() + static_cast<std::ptrdiff_t>(from), gaps.end(),
                               [&](const auto& e) { return e.first == gap; });
      if (same == gaps.end())
        gaps.emplace_back(gap, 1);
      else
        ++same->second;
    }
  }
};

// The finish time `id` would have in `engine` (a copy) joining its queue; stops (returning
// kNever) once the clock passes `give_up_at_s`, when the answer no longer matters.
// `own_service_s` is the least time the request needs once it starts (its prefill and its
// iterations at batch 1): while it waits, a clock past give_up_at_s - own_service_s settles it.
double predicted_finish_s(Engine copy, uint32_t id, double give_up_at_s, double own_service_s, DeadlinePrediction how) {
  copy.watched = id;
  copy.replace_departures = how == DeadlinePrediction::load_persists;
  copy.sched.enqueue(id);
  while (copy.watched_finish_s == kNever) {
    if (copy.now_s > give_up_at_s) return kNever;
    if (!copy.watched_started && copy.now_s + own_service_s > give_up_at_s) return kNever;
    assert(copy.sched.has_work());
    copy.step(give_up_at_s);
  }
  return copy.watched_finish_s;
}
// Time integral of the number of requests present, in total and over two windows.
struct Occupancy {
  double last_s = 0;
  uint64_t present = 0;
  double area = 0;  // request-seconds
  static constexpr int kWindows = 3;
  double window_lo_s[kWindows] = {}, window_hi_s[kWindows] = {};
  double window_area[kWindows] = {};

  void advance_to(double t) {
    if (t <= last_s) return;
    const double n = static_cast<double>(present);
    area += n * (t - last_s);
    for (int w = 0; w < kWindows; ++w) {
      const double overlap = std::min(t, window_hi_s[w]) - std::max(last_s, window_lo_s[w]);
      if (overlap > 0) window_area[w] += n * overlap;
    }
    last_s = t;
  }
  double window_mean(int w) const {
    const double width = window_hi_s[w] - window_lo_s[w];
    return width > 0 ? window_area[w] / width : 0;
  }
};

// Raw 64-bit draws turned into numbers by hand: std::*_distribution differ between standard
// libraries, and a seed must give the same run everywhere.
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
uint64_t draw_tokens(std::mt19937_64& rng, TokenLengths t) {
  // Modulo bias is at most (range / 2^64): immaterial for token ranges.
  return t.min_tokens + rng() % (t.max_tokens - t.min_tokens + 1);
}

}  // namespace

std::vector<ServingRequest> serving_requests(const ServingLoad& load) {
  std::mt19937_64 rng(load.seed);
  std::vector<Request> requests(load.requests);
  double t = 0;
  for (Request& r : requests) {
    // Three draws per request whatever the options, so changing the length distribution or
    // the arrival process does not shift the other draws.
    const double u = uniform01(rng);
    t += load.arrivals == ArrivalProcess::poisson ? -std::log1p(-u) / load.rate_per_s
                                                  : 1.0 / load.rate_per_s;
    r.arrival_s = t;
    r.prompt_tokens = draw_tokens(rng, load.prompt_tokens);
    r.output_tokens = draw_tokens(rng, load.output_tokens);
  }
  return requests;
}

namespace {

void validate(const ServerModel& server, const ServingLoad& load) {
  if (!server.decode_iteration_s || !server.prefill_s)
    throw InputError("server: decode_iteration_s and prefill_s must both be set");
  if (server.max_batch == 0) throw InputError("max_batch: must be at least 1");
  if (!(server.first_token_s >= 0 && server.first_token_s <= kMaxTimeS))
    throw InputError(fmt::format("first_token_s: {} is not a time in [0, {:g}] s", server.first_token_s, kMaxTimeS));
  if (server.kv_capacity_tokens && *server.kv_capacity_tokens == 0)
    throw InputError("kv_capacity_tokens: must be at least 1 token (leave it out for no limit)");
  if (load.max_concurrency && *load.max_concurrency == 0)
    throw InputError("max_concurrency: must be at least 1 request in flight (leave it out for an open loop)");
  if (!std::isfinite(load.rate_per_s) || load.rate_per_s <= 0)
    throw InputError(fmt::format("rate_per_s: {} is not a positive, finite rate", load.rate_per_s));
  if (load.requests == 0 || load.requests > kMaxSimulatedRequests)
    throw InputError(fmt::format("requests: {} is out of range 1..{}", load.requests, kMaxSimulatedRequests));
  for (const auto& [t, what] : {std::pair{load.prompt_tokens, "prompt_tokens"},
                                std::pair{load.output_tokens, "output_tokens"}}) {
    if (t.min_tokens == 0) throw InputError(fmt::format("{}: lengths must be at least 1 token", what));
    if (t.min_tokens > t.max_tokens)
      throw InputError(fmt::format("{}: min {} is above max {}", what, t.min_tokens, t.max_tokens));
    if (t.max_tokens > (uint64_t{1} << 32))
      throw InputError(fmt::format("{}: {} tokens is beyond 2^32", what, t.max_tokens));
  }
  if (load.shared_prefix_tokens > load.prompt_tokens.min_tokens)
    throw InputError(fmt::format("shared_prefix_tokens: {} tokens is longer than the shortest prompt ({} tokens)",
                                 load.shared_prefix_tokens, load.prompt_tokens.min_tokens));
  if (load.deadline_s && (!std::isfinite(*load.deadline_s) || *load.deadline_s <= 0))
    throw InputError(fmt::format("deadline_s: {} is not a positive, finite time", *load.deadline_s));
  for (const auto& [limit, what] : {std::pair{load.goodput.ttft_s, "goodput ttft"}, std::pair{load.goodput.tpot_s, "goodput tpot"},
                                    std::pair{load.goodput.e2el_s, "goodput e2el"}})
    if (limit && (!std::isfinite(*limit) || *limit <= 0))
      throw InputError(fmt::format("{}: {} s is not a positive, finite time", what, *limit));
}

}  // namespace

Distribution summarize(std::vector<double> values) {
  Distribution d;
  d.count = values.size();
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  d.mean = sum / static_cast<double>(values.size());
  auto rank = [&](double p) {  // nearest rank: the ceil(p n)-th smallest
    const auto k = static_cast<size_t>(std::ceil(p * static_cast<double>(values.size())));
    return values[std::clamp<size_t>(k, 1, values.size()) - 1];
  };
  d.p50 = rank(0.50);
  d.p90 = rank(0.90);
  d.p95 = rank(0.95);
  d.p99 = rank(0.99);
  d.max = values.back();
  return d;
}

Distribution summarize_weighted(std::vector<std::pair<double, uint64_t>> values) {
  Distribution d;
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (const auto& [v, w] : values) {
    d.count += w;
    sum += v * static_cast<double>(w);
  }
  if (d.count == 0) return d;
  d.mean = sum / static_cast<double>(d.count);
  auto rank = [&](double p) {  // the value holding the ceil(p n)-th smallest place
    const auto k = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(p * static_cast<double>(d.count))));
    uint64_t seen = 0;
    for (const auto& [v, w] : values)
      if ((seen += w) >= k) return v;
    return values.back().first;
  };
  d.p50 = rank(0.50);
  d.p90 = rank(0.90);
  d.p95 = rank(0.95);
  d.p99 = rank(0.99);
  d.max = values.back().first;
  return d;
}

double distribution_percentile(const Distribution& d, double p) {
  if (p == 50) return d.p50;
  if (p == 90) return d.p90;
  if (p == 95) return d.p95;
  if (p == 99) return d.p99;
  throw InputError(fmt::format("percentile {:g}: expected 50, 90, 95 or 99", p));
}

bool percentile_resolved(uint64_t count, double p) {
  return static_cast<double>(count) * (1 - p) >= 1 - 1e-9;
}

namespace {

// Stability test (a): the least server time per decode token, amortised over the batch. The
// batch can hold at most `most` requests; the smallest context b requests can have is b
// prompts of the shortest length plus one token each.
constexpr uint64_t kMostBatchEvaluated = uint64_t{1} << 30;  // no real server batches more

double least_decode_s_per_token(const ServerModel& server, const ServingLoad& load) {
  uint64_t most = std::min(server.max_batch, kMostBatchEvaluated);
  const uint64_t smallest_kv = load.prompt_tokens.min_tokens + load.output_tokens.min_tokens;
  if (server.kv_capacity_tokens) most = std::min(most, std::max<uint64_t>(1, *server.kv_capacity_tokens / smallest_kv));
  double least = kNever;
  auto consider = [&](uint64_t b) {
    const uint64_t context = b * (load.prompt_tokens.min_tokens + 1);
    least = std::min(least, checked_decode_s(server, b, context) / static_cast<double>(b));
  };
  // Every batch up to 256, then a geometric grid (x 1.25) and the largest.
  for (uint64_t b = 1; b <= std::min<uint64_t>(most, 256); ++b) consider(b);
  for (double b = 320; b < static_cast<double>(most); b *= 1.25) consider(static_cast<uint64_t>(b));
  consider(most);
  return least;
}

// Stability test (b) thresholds (see ServingResult): the growth must exceed noise that does not
// scale with the run (an absolute floor) and drift that is too slow to matter (a fraction).
constexpr double kGrowthFloorRequests = 4;
constexpr double kGrowthFractionOfRequests = 0.005;
constexpr double kGrowthRatio = 1.5;
// Fewer admitted requests than this: the work test (a) is not applied (a handful of requests
// has no meaningful arrival rate).
constexpr uint64_t kWorkTestMinRequests = 50;

void judge_stability(ServingResult& r, uint64_t admitted, bool deadline) {
  if (!deadline && admitted >= kWorkTestMinRequests && r.rho_lower_bound >= 1) {
    r.stable = false;
    r.unstable_reason = fmt::format(
        "the admitted requests need at least {:.3f} s of server time per second of arrivals "
        "(rho >= {:.3f}): arrivals outpace what the server can complete even at its best batching",
        r.rho_lower_bound, r.rho_lower_bound);
    return;
  }
  const double growth = r.in_system_q4 - r.in_system_q2;
  const double floor = std::max(kGrowthFloorRequests, kGrowthFractionOfRequests * static_cast<double>(r.requests));
  const bool rising = r.in_system_q2 < r.in_system_q3 && r.in_system_q3 < r.in_system_q4;
  if (rising && growth > floor && r.in_system_q4 > kGrowthRatio * r.in_system_q2) {
    r.stable = false;
    r.unstable_reason = fmt::format(
        "the number in system rose quarter by quarter over the arrivals' span: {:.1f}, {:.1f}, "
        "{:.1f} (more than {:.1f} requests and x{:.1f}): arrivals outpace completions",
        r.in_system_q2, r.in_system_q3, r.in_system_q4, floor, kGrowthRatio);
  }
}

}  // namespace

TokenLengths parse_token_lengths(std::string_view text, std::string_view what) {
  const size_t colon = text.find(':');
  const TokenLengths t = colon == std::string_view::npos
                            ? TokenLengths::fixed(parse_tokens(text, what))
                            : TokenLengths{parse_tokens(text.substr(0, colon), what), parse_tokens(text.substr(colon + 1), what)};
  if (t.min_tokens > t.max_tokens)
    throw InputError(fmt::format("{}: '{}': the range MIN:MAX has its minimum above its maximum", what, text));
  if (t.min_tokens == 0) throw InputError(fmt::format("{}: '{}': lengths must be at least 1 token", what, text));
  return t;
}

ServingResult simulate_serving(const ServerModel& server, const ServingLoad& load) {
  validate(server, load);
  return simulate_serving(server, load, serving_requests(load));
}

ServingResult simulate_serving(const ServerModel& server, const ServingLoad& load, const std::vector<ServingRequest>& requests) {
  validate(server, load);
  if (requests.empty()) throw InputError("requests: none to serve");
  std::vector<Outcome> outcomes(requests.size());
  // In a closed loop a request's arrival is the time it is sent, set as a slot frees (the
  // scheduler reads the list, so it sees each time once it is set).
  std::vector<ServingRequest> timed = requests;
  Engine engine(server, timed);
  engine.sched.set_shared_prefix(load.shared_prefix_tokens);
  engine.outcomes = &outcomes;
  Engine::TokenGaps itl;
  if (load.inter_token_latency) {
    itl.last_token_s.assign(requests.size(), 0);
    engine.itl = &itl;
  }

  ServingResult res;
  res.requests = requests.size();
  res.offered_span_s = timed.back().arrival_s;
  Occupancy occ;
  const double quarter_s = res.offered_span_s / 4;
  for (int w = 0; w < Occupancy::kWindows; ++w) {  // the 2nd, 3rd and 4th quarters
    occ.window_lo_s[w] = (w + 1) * quarter_s;
    occ.window_hi_s[w] = (w + 2) * quarter_s;
  }

  // A closed loop's free slots: when each frees (the earliest first).
  std::priority_queue<double, std::vector<double>, std::greater<>> free_slots;
  const bool closed = load.max_concurrency.has_value();
  for (uint64_t i = 0; closed && i < *load.max_concurrency; ++i) free_slots.push(0);
  size_t next = 0;
  auto next_arrival_s = [&] {
    if (next >= timed.size()) return kNever;
    if (!closed) return timed[next].arrival_s;
    return free_slots.empty() ? kNever : std::max(timed[next].arrival_s, free_slots.top());
  };
  auto arrive = [&] {
    const uint32_t id = static_cast<uint32_t>(next++);
    if (closed) {
      timed[id].arrival_s = std::max(timed[id].arrival_s, free_slots.top());
      free_slots.pop();
    }
    occ.advance_to(timed[id].arrival_s);
    if (const char* why = engine.sched.offer(id, engine.now_s, load.deadline_s, load.deadline_prediction)) {
      outcomes[id].rejected = why;
      ++(outcomes[id].rejected == "deadline" ? res.rejected.deadline : res.rejected.exceeds_kv_capacity);
      if (closed) free_slots.push(timed[id].arrival_s);
      return;
    }
    ++occ.present;
  };

  for (;;) {
    if (engine.sched.has_work()) {
      engine.step(next_arrival_s());
    } else if (next_arrival_s() < kNever) {
      assert(engine.sched.waiting() == 0);  // a request too large for the KV was rejected on arrival
      engine.departed = 0;
      engine.now_s = next_arrival_s();  // idle until the next arrival
    } else {
      break;
    }
    // a departure's slot frees when its last token reaches the client
    for (uint64_t i = 0; closed && i < engine.departed; ++i) free_slots.push(engine.now_s + server.first_token_s);
    // Arrivals during the step count from their own time; they join the queue behind the
    // requests already there and are scheduled from the step's end.
    while (next_arrival_s() <= engine.now_s) arrive();
    occ.advance_to(engine.now_s);
    occ.present -= engine.departed;
  }
  if (closed) res.offered_span_s = timed.back().arrival_s;
  assert(occ.present == 0 && !engine.sched.has_work() && engine.sched.waiting() == 0);

  // The books.
  res.span_s = std::max(engine.now_s, res.offered_span_s);
  std::vector<double> sojourn, wait, ttft, tpot;
  uint64_t output_tokens = 0, good = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const Outcome& o = outcomes[i];
    if (!o.rejected.empty()) continue;
    assert(o.finish_s >= 0);
    ++res.completed;
    const double a = timed[i].arrival_s, front_s = server.first_token_s;
    sojourn.push_back(o.finish_s + front_s - a);
    wait.push_back(o.start_s - a);
    ttft.push_back(o.first_token_s + front_s - a);
    if (requests[i].output_tokens >= 2)
      tpot.push_back((o.finish_s - o.first_token_s) / static_cast<double>(requests[i].output_tokens - 1));
    if (load.deadline_s && sojourn.back() > *load.deadline_s) ++res.completed_late;
    const ServingLoad::Goodput& g = load.goodput;
    const double tpot_s = requests[i].output_tokens >= 2 ? tpot.back() : 0;
    if ((!g.ttft_s || ttft.back() <= *g.ttft_s) && (!g.tpot_s || tpot_s <= *g.tpot_s) &&
        (!g.e2el_s || sojourn.back() <= *g.e2el_s))
      ++good;
    output_tokens += requests[i].output_tokens;
  }
  if (res.completed + res.rejected.total() != res.requests)
    throw std::logic_error("serving simulation lost a request");  // asserted in release builds too
  res.rejection_rate = static_cast<double>(res.rejected.total()) / static_cast<double>(res.requests);
  if (res.span_s > 0) {
    res.throughput_tok_s = static_cast<double>(output_tokens) / res.span_s;
    res.utilisation = engine.busy_s / res.span_s;
  }
  res.decode_iterations = engine.decode_iterations;
  res.mean_batch = engine.decode_iterations
                       ? static_cast<double>(engine.batch_sum) / static_cast<double>(engine.decode_iterations)
                       : 0;
  res.peak_kv_tokens = engine.sched.peak_reserved_tokens();
  res.peak_batch = engine.sched.peak_batch();
  res.chunks_continued = engine.sched.chunks_continued();
  res.preemptions = engine.sched.preemptions();
  res.recomputed_tokens = engine.sched.recomputed_tokens();
  res.prefix_hit_tokens = engine.sched.prefix_hit_tokens();
  if (load.goodput.any()) res.good_requests = good;
  res.in_system_q2 = occ.window_mean(0);
  res.in_system_q3 = occ.window_mean(1);
  res.in_system_q4 = occ.window_mean(2);
  if (!load.deadline_s && res.offered_span_s > 0) {
    const double decode_s_per_token = least_decode_s_per_token(server, load);
    // With prefix caching a prompt's prefill may start after the shared prefix's whole pages (the
    // scheduler's chunk cost): the least work it can take.
    const uint64_t page = std::max<uint64_t>(server.kv_page_tokens, 1);
    const uint64_t cached = server.prefix_caching ? load.shared_prefix_tokens / page * page : 0;
    double work_s = 0;
    for (size_t i = 0; i < requests.size(); ++i) {
      if (!outcomes[i].rejected.empty()) continue;
      const uint64_t prompt = requests[i].prompt_tokens, skip = std::min(cached, (prompt - 1) / page * page);
      work_s += checked_prefill_s(server, prompt) - (skip ? checked_prefill_s(server, skip) : 0.0) +
                static_cast<double>(requests[i].output_tokens - 1) * decode_s_per_token;
    }
    res.rho_lower_bound = work_s / res.offered_span_s;
  }
  if (!closed) judge_stability(res, res.completed, load.deadline_s.has_value());

  if ((res.stable || load.finite_run) && res.completed > 0 && res.span_s > 0) {
    ServingLatency lat;
    lat.sojourn_s = summarize(std::move(sojourn));
    lat.queue_wait_s = summarize(std::move(wait));
    lat.ttft_s = summarize(std::move(ttft));
    lat.tpot_s = summarize(std::move(tpot));
    if (load.inter_token_latency) lat.itl_s = summarize_weighted(std::move(itl.gaps));
    lat.mean_in_system = occ.area / res.span_s;
    lat.rate_effective_per_s = static_cast<double>(res.completed) / res.span_s;
    // the server holds a request for its sojourn less the front end's delay
    lat.littles_law_in_system = lat.rate_effective_per_s * (lat.sojourn_s.mean - server.first_token_s);
    res.latency = lat;
  }
  if (load.record_requests) res.per_request = std::move(outcomes);
  return res;
}

double admission_finish_s(const Scheduler& state, double now_s, uint32_t id, double due_s, DeadlinePrediction how) {
  const ServerModel& server = state.server();
  const Request& r = state.request(id);
  // The least time it needs once started: the iteration time is assumed not to fall as the batch
  // or the context grows (as for the stability test), so batch 1 is the floor.
  const double own_service_s = checked_prefill_s(server, r.prompt_tokens) +
                               static_cast<double>(r.output_tokens - 1) * checked_decode_s(server, 1, r.prompt_tokens + 1);
  return predicted_finish_s(Engine(state, now_s), id, due_s, own_service_s, how);
}

double admission_finish_s(const ServerModel& server, const ServerSnapshot& state, const ServingRequest& candidate,
                          double due_s, DeadlinePrediction how) {
  std::vector<Request> requests;
  for (const ServerSnapshot::Decoding& d : state.running) requests.push_back(d.request);
  for (const ServingRequest& w : state.waiting) requests.push_back(w);
  requests.push_back(candidate);
  Scheduler scheduler(server, requests);
  uint32_t id = 0;
  for (const ServerSnapshot::Decoding& d : state.running) scheduler.restore_running(id++, d.emitted);
  for (size_t i = 0; i < state.waiting.size(); ++i) scheduler.enqueue(id++);
  return admission_finish_s(scheduler, state.now_s, id, due_s, how);
}

bool meets_slo(const ServingResult& r, const ServingSlo& slo) {
  if (!r.stable) return false;
  if (slo.rejection_rate_max && r.rejection_rate > *slo.rejection_rate_max) return false;
  if (slo.ttft_p99_s || slo.tpot_p99_s) {
    if (!r.latency) return false;  // nothing completed
    if (slo.ttft_p99_s && r.latency->ttft_s.p99 > *slo.ttft_p99_s) return false;
    if (slo.tpot_p99_s && r.latency->tpot_s.count > 0 && r.latency->tpot_s.p99 > *slo.tpot_p99_s)
      return false;
  }
  return true;
}

SustainableRate max_sustainable_rate(const ServerModel& server, const ServingLoad& load,
                                     const ServingSlo& slo, double relative_tolerance) {
  if (!(relative_tolerance > 0 && relative_tolerance < 1))
    throw InputError(fmt::format("relative_tolerance: {} is not in (0, 1)", relative_tolerance));
  for (const auto& [v, what] : {std::pair{slo.ttft_p99_s, "slo ttft_p99_s"},
                                std::pair{slo.tpot_p99_s, "slo tpot_p99_s"}})
    if (v && (!std::isfinite(*v) || *v <= 0))
      throw InputError(fmt::format("{}: {} is not a positive, finite time", what, *v));
  if (slo.rejection_rate_max && !(*slo.rejection_rate_max >= 0 && *slo.rejection_rate_max <= 1))
    throw InputError(fmt::format("slo rejection_rate_max: {} is not a fraction in [0, 1]", *slo.rejection_rate_max));
  ServingLoad checked = load;
  checked.rate_per_s = 1;  // the search sets the rate
  validate(server, checked);

  SustainableRate out;
  std::optional<ServingResult> best;
  auto probe = [&](double rate) {
    ServingLoad l = load;
    l.rate_per_s = rate;
    ++out.simulations;
    ServingResult r = simulate_serving(server, l);
    const bool ok = meets_slo(r, slo);
    if (ok) best = std::move(r);
    return ok;
  };

  // Start at one request's service rate: a server that batches sustains more, a server that
  // cannot meet the SLO even alone sustains less.
  const auto prompt = static_cast<uint64_t>(std::llround(load.prompt_tokens.mean()));
  const auto output = static_cast<uint64_t>(std::llround(load.output_tokens.mean()));
  const double alone_s = checked_prefill_s(server, prompt) +
                         static_cast<double>(output - 1) * checked_decode_s(server, 1, prompt + output / 2);
  double rate = std::isfinite(alone_s) && alone_s > 0 ? 1.0 / alone_s : 1.0;
  constexpr int kMaxDoublings = 60;  // 2^60 x: far past any server
  // A millionth of one request's service rate: requests never meet; failing there is failing
  // alone (and much lower rates would lose the service times in the arrival clock's rounding).
  constexpr int kMaxHalvings = 20;
  double meet = 0, fail = 0;
  if (probe(rate)) {
    meet = rate;
    for (int i = 0; i < kMaxDoublings && fail == 0; ++i) {
      rate *= 2;
      if (probe(rate)) meet = rate; else fail = rate;
    }
    if (fail == 0) {
      out.note = fmt::format("the SLO is still met at {:g} req/s; no upper limit found", meet);
      out.rate_per_s = meet;
      out.at_rate = best;
      out.lower_bound_per_s = out.upper_bound_per_s = meet;
      return out;
    }
  } else {
    fail = rate;
    for (int i = 0; i < kMaxHalvings && meet == 0; ++i) {
      rate /= 2;
      if (probe(rate)) meet = rate; else fail = rate;
    }
    if (meet == 0) {
      out.note = fmt::format("no rate down to {:g} req/s meets the SLO: it fails even without queueing", rate);
      out.upper_bound_per_s = fail;
      return out;
    }
  }
  while (fail - meet > relative_tolerance * meet) {
    const double mid = 0.5 * (meet + fail);
    if (probe(mid)) meet = mid; else fail = mid;
  }
  out.rate_per_s = meet;
  out.at_rate = best;
  out.lower_bound_per_s = meet;
  out.upper_bound_per_s = fail;
  out.note = fmt::format("bisection: meets at {:g} req/s, fails at {:g} req/s ({} simulations)", meet,
                         fail, out.simulations);
  return out;
}

}  // namespace infer_plan
