#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "planner/serving/scheduler.hpp"
#include "planner/serving/serving_sim.hpp"

using namespace infer_plan;

namespace {

// A pool that keeps what the scheduler asks of it.
struct RecordingPool final : KvPagePool {
  std::map<uint32_t, uint64_t> held;  // id -> tokens
  void hold(uint32_t id, uint64_t tokens) override {
    REQUIRE(tokens > held[id]);  // pages are only ever added until the request lets go of them all
    held[id] = tokens;
  }
  void release(uint32_t id) override { REQUIRE(held.erase(id) == 1); }
  uint64_t cached = 0;  // the prefix cache's tokens
  void pin_prefix(uint32_t id, uint64_t tokens) override {
    REQUIRE((cached == 0 && held.at(id) >= tokens));
    cached = tokens;
  }
  void attach_prefix(uint32_t id, uint64_t tokens) override {
    REQUIRE((held.count(id) == 0 && tokens <= cached));
    held[id] = tokens;
  }
};

ServerModel linear_server() {
  ServerModel m;
  m.decode_iteration_s = [](uint64_t batch, uint64_t context) { return 0.010 + 0.002 * batch + 1e-5 * context; };
  m.prefill_s = [](uint64_t prompt) { return 0.004 + 1e-4 * prompt; };
  return m;
}

// The scheduler stepped by hand on a virtual clock, each step timed by scheduled_step_s, with no
// fast-forward: every request's course, to set beside simulate_serving's.
std::vector<RequestTimes> step_by_step(const ServerModel& server, const std::vector<ServingRequest>& arrivals,
                                       std::optional<double> deadline_s, uint64_t shared_prefix = 0) {
  std::vector<RequestTimes> out(arrivals.size());
  Scheduler s(server, arrivals);
  s.set_shared_prefix(shared_prefix);
  size_t next = 0;
  for (double now = 0;;) {
    for (; next < arrivals.size() && arrivals[next].arrival_s <= now; ++next)
      if (const char* why = s.offer(static_cast<uint32_t>(next), now, deadline_s)) out[next].rejected = why;
    if (!s.has_work()) {
      if (next == arrivals.size()) break;
      now = arrivals[next].arrival_s;
      continue;
    }
    const ScheduledStep& step = s.schedule();
    for (const uint32_t id : s.started())
      if (out[id].start_s < 0) out[id].start_s = now;  // a preempted request's restart is not its start
    now += scheduled_step_s(server, step);
    s.complete();
    for (const uint32_t id : s.first_tokens()) out[id].first_token_s = now;
    for (const uint32_t id : s.departed()) out[id].finish_s = now;
  }
  return out;
}

}  // namespace

TEST_CASE("scheduler, whole prefills: reject on arrival, prefill first, whole-life pages") {
  ServerModel server = linear_server();
  server.max_batch = 2;
  server.kv_page_tokens = 16;
  server.kv_capacity_tokens = 80;  // 5 pages
  // A: 30 + 3 tokens (3 pages), B: 20 + 2 (2 pages), C: 100 + 5 (105 > 80 tokens: never fits).
  const std::vector<ServingRequest> arrivals{{0, 30, 3}, {0, 20, 2}, {0, 100, 5}};
  Scheduler s(server, arrivals);
  RecordingPool pool;
  s.set_pool(&pool);
  CHECK(s.offer(0, 0, std::nullopt) == nullptr);
  CHECK(s.offer(1, 0, std::nullopt) == nullptr);
  CHECK(std::string(s.offer(2, 0, std::nullopt)) == "exceeds_kv_capacity");
  CHECK(s.waiting() == 2);
  // A: 0 + 48 <= 80 tokens, batch 0 < 2: its prompt alone.
  ScheduledStep step = s.schedule();
  CHECK(step.batch == 0);
  REQUIRE(step.prefill.size() == 1);
  CHECK((step.prefill[0].id == 0 && step.prefill[0].done == 0 && step.prefill[0].tokens == 30));
  CHECK(pool.held.at(0) == 33);
  CHECK(s.reserved_tokens() == 48);
  s.complete();
  CHECK(s.first_tokens() == std::vector<uint32_t>{0});
  // Prefill first: B's 32 tokens fill the pool to 80.
  step = s.schedule();
  REQUIRE(step.prefill.size() == 1);
  CHECK(step.prefill[0].id == 1);
  CHECK(s.reserved_tokens() == 80);
  s.complete();
  // Both decode: contexts 30 + 1 and 20 + 1.
  step = s.schedule();
  CHECK((step.batch == 2 && step.context_tokens == 52 && step.prefill.empty()));
  s.complete();  // B's second token is its last: its 2 pages return
  CHECK(s.departed() == std::vector<uint32_t>{1});
  CHECK(pool.held.count(1) == 0);
  CHECK(s.reserved_tokens() == 48);
  step = s.schedule();
  CHECK((step.batch == 1 && step.context_tokens == 32));
  s.complete();
  CHECK(s.departed() == std::vector<uint32_t>{0});
  CHECK_FALSE(s.has_work());
  CHECK(pool.held.empty());
  CHECK(s.peak_reserved_tokens() == 80);
  CHECK(s.peak_batch() == 2);

  // A full batch keeps the head waiting although its pages are free.
  server.max_batch = 1;
  Scheduler one(server, arrivals);
  CHECK(one.offer(0, 0, std::nullopt) == nullptr);
  CHECK(one.offer(1, 0, std::nullopt) == nullptr);
  one.schedule();
  one.complete();
  step = one.schedule();
  CHECK((step.batch == 1 && step.prefill.empty()));
  CHECK(one.waiting() == 1);
}

TEST_CASE("scheduler, chunked prefill: decodes first, the budget's rest on prompts, a long one over steps") {
  ServerModel server = linear_server();
  server.max_batch = 4;
  server.step_token_budget = 8;
  // A (5 + 4) fits the first step whole; B (10 + 2) is cut: 3 tokens beside A, then the next
  // step's 8 - 1 (A decodes) = 7 end it.
  const std::vector<ServingRequest> arrivals{{0, 5, 4}, {0, 10, 2}};
  Scheduler s(server, arrivals);
  s.offer(0, 0, std::nullopt);
  s.offer(1, 0, std::nullopt);
  ScheduledStep step = s.schedule();
  CHECK(step.batch == 0);
  REQUIRE(step.prefill.size() == 2);
  CHECK((step.prefill[0].id == 0 && step.prefill[0].tokens == 5));
  CHECK((step.prefill[1].id == 1 && step.prefill[1].done == 0 && step.prefill[1].tokens == 3));
  CHECK(s.started() == std::vector<uint32_t>{0, 1});
  // Both prompts begun here cost one prefill of their 8 tokens.
  CHECK(scheduled_step_s(server, step) == doctest::Approx(0.004 + 8e-4));
  s.complete();
  CHECK(s.first_tokens() == std::vector<uint32_t>{0});
  CHECK(s.chunks_continued() == 1);
  CHECK(s.prefilling() == 1);
  step = s.schedule();
  CHECK((step.batch == 1 && step.context_tokens == 6));
  REQUIRE(step.prefill.size() == 1);
  CHECK((step.prefill[0].id == 1 && step.prefill[0].done == 3 && step.prefill[0].tokens == 7));
  // The continued chunk costs prefill_s(10) - prefill_s(3): B's chunks cost what its prompt costs whole.
  CHECK(scheduled_step_s(server, step) == doctest::Approx((7e-4) + (0.010 + 0.002 + 6e-5)));
  s.complete();
  CHECK(s.first_tokens() == std::vector<uint32_t>{1});
  step = s.schedule();
  CHECK((step.batch == 2 && step.context_tokens == 7 + 11 && step.prefill.empty()));
}

TEST_CASE("scheduler, SGLang's policy: prompts' chunks in steps of their own, the batch stalls") {
  ServerModel server = linear_server();
  server.max_batch = 4;
  server.step_token_budget = 8;
  server.mix_decodes = false;
  // A (5 + 4) starts and decodes; B (10 + 2) arrives: its chunks run alone, 8 then 2 tokens.
  const std::vector<ServingRequest> arrivals{{0, 5, 4}, {0.001, 10, 2}};
  Scheduler s(server, arrivals);
  s.offer(0, 0, std::nullopt);
  s.schedule();
  s.complete();
  s.offer(1, 0.001, std::nullopt);
  ScheduledStep step = s.schedule();
  CHECK(step.batch == 0);  // A waits while B's prompt runs
  REQUIRE(step.prefill.size() == 1);
  CHECK((step.prefill[0].id == 1 && step.prefill[0].tokens == 8));
  CHECK(scheduled_step_s(server, step) == doctest::Approx(0.004 + 8e-4));
  s.complete();
  step = s.schedule();
  CHECK(step.batch == 0);
  REQUIRE(step.prefill.size() == 1);
  CHECK((step.prefill[0].done == 8 && step.prefill[0].tokens == 2));
  s.complete();
  CHECK(s.first_tokens() == std::vector<uint32_t>{1});
  step = s.schedule();
  CHECK((step.batch == 2 && step.prefill.empty()));
}

TEST_CASE("scheduler, TensorRT-LLM's policy: whole prompts beside the decodes, within the budget") {
  ServerModel server = linear_server();
  server.max_batch = 4;
  server.step_token_budget = 8;
  server.chunk_prompts = false;
  // A (12 + 3): longer than the budget, it runs whole as the step's first prompt. Then B (5) fits
  // beside A's decode (room 7); C (4) does not fit what B leaves (2) and waits a step.
  const std::vector<ServingRequest> arrivals{{0, 12, 3}, {0.001, 5, 2}, {0.001, 4, 2}};
  Scheduler s(server, arrivals);
  s.offer(0, 0, std::nullopt);
  ScheduledStep step = s.schedule();
  REQUIRE(step.prefill.size() == 1);
  CHECK(step.prefill[0].tokens == 12);
  s.complete();
  s.offer(1, 0.001, std::nullopt);
  s.offer(2, 0.001, std::nullopt);
  step = s.schedule();
  CHECK(step.batch == 1);
  REQUIRE(step.prefill.size() == 1);
  CHECK((step.prefill[0].id == 1 && step.prefill[0].tokens == 5));
  CHECK(s.waiting() == 1);
  s.complete();
  step = s.schedule();
  CHECK(step.batch == 2);
  REQUIRE(step.prefill.size() == 1);
  CHECK((step.prefill[0].id == 2 && step.prefill[0].tokens == 4));
  CHECK(s.chunks_continued() == 0);
}

TEST_CASE("scheduler, KV on demand: pages as tokens are written, the newest preempted and recomputed") {
  ServerModel server = linear_server();
  server.max_batch = 4;
  server.step_token_budget = 100;  // every prompt whole
  server.kv_on_demand = true;
  server.kv_page_tokens = 4;
  server.kv_capacity_tokens = 16;  // 4 pages
  // A, B, C: 4-token prompts, 8 tokens out (12 tokens each: one would fit whole-life reservations
  // only one at a time beside another).
  const std::vector<ServingRequest> arrivals{{0, 4, 8}, {0, 4, 8}, {0, 4, 8}};
  Scheduler s(server, arrivals);
  RecordingPool pool;
  s.set_pool(&pool);
  for (uint32_t id = 0; id < 3; ++id) CHECK(s.offer(id, 0, std::nullopt) == nullptr);
  // Step 1: each prompt takes its one page; all three start (a reservation would take 3 pages each).
  ScheduledStep step = s.schedule();
  CHECK(step.prefill.size() == 3);
  CHECK(s.reserved_tokens() == 12);
  CHECK((pool.held.at(0) == 4 && pool.held.at(2) == 4));
  s.complete();
  CHECK(s.first_tokens() == std::vector<uint32_t>{0, 1, 2});
  // Step 2: each writes token 4 (its first decode), a page each: 3 pages, 1 free. C, the newest,
  // is preempted (its page returns: 2 free); A and B decode (contexts 4 + 1 each).
  step = s.schedule();
  CHECK(step.preempted == std::vector<uint32_t>{2});
  CHECK((step.batch == 2 && step.context_tokens == 10 && step.prefill.empty()));
  CHECK(s.reserved_tokens() == 16);
  CHECK(pool.held.count(2) == 0);
  CHECK(pool.held.at(0) == 5);
  CHECK(s.waiting() == 1);
  CHECK(s.prefill_tokens(2) == 5);  // its prompt and the token it emitted, prefilled again
  s.complete();
  // Steps 3 to 5 write tokens 5 to 7 in the pages they hold; C's 5 tokens need 2 pages, none free.
  for (int i = 3; i <= 5; ++i) {
    step = s.schedule();
    CHECK((step.batch == 2 && step.prefill.empty() && step.preempted.empty()));
    s.complete();
  }
  // Step 6: token 8 opens a page for A and B, none free: B (newer than A) is preempted, 5 emitted,
  // and waits at the head, before C.
  step = s.schedule();
  CHECK(step.preempted == std::vector<uint32_t>{1});
  CHECK(step.batch == 1);
  CHECK(s.prefill_tokens(1) == 9);
  s.complete();
  // Steps 7-8: A's tokens 9 and 10; its 8th token leaves it (3 pages back: 12 free).
  s.schedule();
  s.complete();
  s.schedule();
  s.complete();
  CHECK(s.departed() == std::vector<uint32_t>{0});
  CHECK(s.reserved_tokens() == 0);  // the 3 pages of A's 11 written tokens (its last is never written)
  // Step 9: B's 9 tokens (3 pages) again, alone: C's 2 pages do not fit beside them. It emits
  // its 6th token, no first token.
  step = s.schedule();
  REQUIRE(step.prefill.size() == 1);
  CHECK((step.prefill[0].id == 1 && step.prefill[0].done == 0 && step.prefill[0].tokens == 9 && step.batch == 0));
  s.complete();
  CHECK(s.resumed() == std::vector<uint32_t>{1});
  CHECK(s.first_tokens().empty());
  // B decodes its 7th and 8th tokens and leaves; then C prefills its 5 and decodes 6 more.
  uint64_t steps = 9;
  std::vector<uint32_t> departures;
  while (s.has_work()) {
    step = s.schedule();
    CHECK(step.preempted.empty());
    s.complete();
    ++steps;
    departures.insert(departures.end(), s.departed().begin(), s.departed().end());
  }
  CHECK(departures == std::vector<uint32_t>{1, 2});
  CHECK(steps == 9 + 2 + 1 + 6);
  CHECK(s.preemptions() == 2);
  CHECK(s.recomputed_tokens() == 1 + 5);
  CHECK(s.peak_reserved_tokens() == 16);
  CHECK(s.reserved_tokens() == 0);
  CHECK(pool.held.empty());
}

TEST_CASE("scheduler, prefix caching: the shared prefix's whole pages computed once, then skipped") {
  ServerModel server = linear_server();
  server.max_batch = 4;
  server.kv_page_tokens = 4;
  server.kv_capacity_tokens = 64;
  server.prefix_caching = true;
  // A and B: 14-token prompts whose first 10 tokens are shared (2 whole pages: 8 tokens), 2 out.
  const std::vector<ServingRequest> arrivals{{0, 14, 2}, {0, 14, 2}};
  Scheduler s(server, arrivals);
  s.set_shared_prefix(10);
  RecordingPool pool;
  s.set_pool(&pool);
  for (uint32_t id = 0; id < 2; ++id) CHECK(s.offer(id, 0, std::nullopt) == nullptr);
  // A prefills all 14 tokens and reserves 16 (4 pages); its first 2 pages become the cache's.
  ScheduledStep step = s.schedule();
  REQUIRE(step.prefill.size() == 1);
  CHECK((step.prefill[0].id == 0 && step.prefill[0].done == 0 && step.prefill[0].tokens == 14));
  s.complete();
  CHECK(pool.cached == 8);
  CHECK(s.reserved_tokens() == 16);
  // B begins after the cached 8: its chunk [8, 14), its own 2 pages beside the cache's 2.
  step = s.schedule();
  REQUIRE(step.prefill.size() == 1);
  CHECK((step.prefill[0].id == 1 && step.prefill[0].done == 8 && step.prefill[0].tokens == 6));
  CHECK(pool.held.at(1) == 16);
  CHECK(s.reserved_tokens() == 24);
  CHECK(s.prefix_hit_tokens() == 8);
  // Its cost: the 6 tokens after 8 (prefill_s(14) - prefill_s(8) = 6e-4 s), not a whole prompt.
  CHECK(scheduled_step_s(server, step) == doctest::Approx(6e-4).scale(0));
  s.complete();
  while (s.has_work()) {
    s.schedule();
    s.complete();
  }
  // Both left; the cache's pages stay.
  CHECK(pool.held.empty());
  CHECK(s.reserved_tokens() == 8);
  CHECK(s.peak_reserved_tokens() == 24);
}

TEST_CASE("the simulation decides as the scheduler stepped by hand: same arrivals, same course, every policy") {
  struct Case {
    const char* what;
    TokenLengths prompt, output;
    uint64_t pages;
    std::optional<double> deadline_s;
    std::optional<uint64_t> budget;
    bool mix_decodes = true, chunk_prompts = true, kv_on_demand = false;
    uint64_t shared_prefix = 0;  // with prefix caching
  };
  // A pool of 12 pages (192 tokens) keeps requests waiting for KV and rejects the longest; a
  // deadline rejects by the lookahead; a budget of 64 tokens cuts most prompts.
  const Case cases[] = {{"fixed lengths", TokenLengths::fixed(32), TokenLengths::fixed(16), 64, std::nullopt, std::nullopt},
                        {"variable lengths, tight KV", {5, 150}, {1, 60}, 12, std::nullopt, std::nullopt},
                        {"variable lengths, deadline", {5, 90}, {2, 40}, 20, 0.9, std::nullopt},
                        {"chunked prefill", {5, 150}, {1, 60}, 24, std::nullopt, 64},
                        {"chunked prefill, deadline", {5, 150}, {2, 40}, 24, 1.5, 64},
                        {"SGLang: chunks in steps of their own", {5, 150}, {1, 60}, 24, std::nullopt, 64, false, true},
                        {"TensorRT-LLM: whole prompts beside decodes", {5, 150}, {1, 60}, 24, 1.5, 64, true, false},
                        {"vLLM: KV on demand, preemption", {5, 150}, {1, 60}, 12, std::nullopt, 64, true, true, true},
                        {"vLLM: KV on demand, deadline", {5, 150}, {2, 40}, 12, 1.5, 64, true, true, true},
                        {"KV on demand, whole prompts alone", {5, 150}, {1, 60}, 12, std::nullopt, std::nullopt, true,
                         true, true},
                        {"vLLM: prefix caching, a 40-token shared prefix", {45, 150}, {1, 60}, 12, 1.5, 64, true, true,
                         true, 40},
                        {"prefix caching, whole prompts alone, reserved KV", {45, 150}, {1, 60}, 12, std::nullopt,
                         std::nullopt, true, true, false, 40}};
  for (const Case& c : cases) {
    const std::string what = c.what;
    CAPTURE(what);
    ServerModel server = linear_server();
    server.max_batch = 3;
    server.kv_page_tokens = 16;
    server.kv_capacity_tokens = c.pages * 16;
    server.step_token_budget = c.budget;
    server.mix_decodes = c.mix_decodes;
    server.chunk_prompts = c.chunk_prompts;
    server.kv_on_demand = c.kv_on_demand;
    server.prefix_caching = c.shared_prefix > 0;
    ServingLoad load;
    load.shared_prefix_tokens = c.shared_prefix;
    load.rate_per_s = 12;
    load.requests = 120;
    load.seed = 3;
    load.prompt_tokens = c.prompt;
    load.output_tokens = c.output;
    load.deadline_s = c.deadline_s;
    load.record_requests = true;
    load.inter_token_latency = false;
    const ServingResult predicted = simulate_serving(server, load);
    const std::vector<RequestTimes> stepped = step_by_step(server, serving_requests(load), c.deadline_s, c.shared_prefix);
    REQUIRE(predicted.per_request.size() == stepped.size());
    uint64_t rejected = 0, waited = 0;
    for (size_t i = 0; i < stepped.size(); ++i) {
      CAPTURE(i);
      const RequestTimes& p = predicted.per_request[i];
      const RequestTimes& m = stepped[i];
      CHECK(p.rejected == m.rejected);
      CHECK(p.start_s == doctest::Approx(m.start_s).epsilon(1e-12));
      CHECK(p.first_token_s == doctest::Approx(m.first_token_s).epsilon(1e-12));
      CHECK(p.finish_s == doctest::Approx(m.finish_s).epsilon(1e-12));
      rejected += !m.rejected.empty();
      waited += m.start_s > serving_requests(load)[i].arrival_s + 1e-9;
    }
    // the cases exercise what they are for: queueing everywhere, rejections where KV or deadlines bind
    CHECK(waited > 10);
    if (c.pages == 12 || c.deadline_s) CHECK(rejected > 0);
    else CHECK(rejected == 0);
    if (c.kv_on_demand) CHECK(predicted.preemptions > 0);
    else CHECK(predicted.preemptions == 0);
    // 32 of the 40 shared tokens are whole pages: every request admitted after the first hits them
    if (c.shared_prefix) CHECK(predicted.prefix_hit_tokens >= 32 * (predicted.completed - 3));
    else CHECK(predicted.prefix_hit_tokens == 0);
  }
}

TEST_CASE("replay: the same decisions replayed are identical; a changed one is named by its step") {
  ServerModel server = linear_server();
  server.max_batch = 3;
  server.step_token_budget = 32;
  server.kv_capacity_tokens = 400;
  const std::vector<ServingRequest> arrivals{{0, 40, 3}, {0.01, 20, 4}, {0.02, 500, 2}, {0.05, 10, 2}};
  // Record a run on a virtual clock.
  std::vector<StepDecision> decisions;
  std::vector<std::string> rejected(arrivals.size());
  Scheduler s(server, arrivals);
  size_t next = 0;
  for (double now = 0;;) {
    for (; next < arrivals.size() && arrivals[next].arrival_s <= now; ++next)
      if (const char* why = s.offer(static_cast<uint32_t>(next), now, std::nullopt)) rejected[next] = why;
    if (!s.has_work()) {
      if (next == arrivals.size()) break;
      now = arrivals[next].arrival_s;
      continue;
    }
    decisions.push_back({now, s.schedule()});
    now += scheduled_step_s(server, decisions.back().step);
    s.complete();
  }
  CHECK(rejected[2] == "exceeds_kv_capacity");
  ScheduleReplay r = replay_schedule(server, arrivals, std::nullopt, decisions, rejected);
  CHECK(r.identical);
  CHECK(r.steps == decisions.size());
  CHECK(r.first_difference.empty());
  // A step that decided otherwise: the replay stops there and says what differs.
  std::vector<StepDecision> changed = decisions;
  changed[1].step.prefill.at(0).tokens += 1;
  r = replay_schedule(server, arrivals, std::nullopt, changed, rejected);
  CHECK_FALSE(r.identical);
  CHECK(r.steps == 1);
  CHECK(r.first_difference.find("step 1") == 0);
  // A rejection recorded where the replay admits.
  std::vector<std::string> wrong = rejected;
  wrong[3] = "deadline";
  r = replay_schedule(server, arrivals, std::nullopt, decisions, wrong);
  CHECK_FALSE(r.identical);
  CHECK(r.first_difference.find("request 3") == 0);
}

TEST_CASE("a prompt's stall on the decoding batch, as each policy schedules it") {
  ServerModel server = linear_server();
  // 4 requests decoding at 400 tokens in all: 0.010 + 0.002 x 4 + 1e-5 x 400 = 0.022 s a step.
  // A 250-token prompt alone: prefill_s(250) = 0.004 + 0.025 = 0.029 s.
  PromptStall whole = prompt_stall(server, 250, 4, 400);
  CHECK(whole.gap_s == doctest::Approx(0.051));
  CHECK((whole.steps == 1 && whole.chunk_tokens == 250));
  // vLLM's budget of 100: 96 tokens a step beside the 4 decodes, chunks 96, 96, 58; the first
  // costs prefill_s(96) = 0.0136 s, the later ones 9.6e-3 and 5.8e-3: the slowest step 0.0356 s.
  server.step_token_budget = 100;
  PromptStall chunked = prompt_stall(server, 250, 4, 400);
  CHECK(chunked.gap_s == doctest::Approx(0.0356));
  CHECK((chunked.steps == 3 && chunked.chunk_tokens == 96));
  // SGLang's steps of prompts alone run back to back: the batch waits for all three.
  server.mix_decodes = false;
  PromptStall alone = prompt_stall(server, 250, 4, 400);
  CHECK(alone.gap_s == doctest::Approx(0.051));
  CHECK((alone.steps == 3 && alone.chunk_tokens == 100));  // the whole budget: no decodes beside
}
