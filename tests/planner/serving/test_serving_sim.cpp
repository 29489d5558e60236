// The serving simulation against pencil timelines, queueing theory (M/D/1, Little's law) and
// its own invariants: nothing lost, unstable loads called unstable, the rate search bracketed.
#include <cmath>
#include <doctest/doctest.h>
#include <utility>
#include <vector>

#include "planner/core/input_error.hpp"
#include "planner/serving/serving_sim.hpp"

using namespace infer_plan;

namespace {

ServerModel constant_server(double prefill_s, double iteration_s, uint64_t max_batch) {
  ServerModel m;
  m.prefill_s = [prefill_s](uint64_t) { return prefill_s; };
  m.decode_iteration_s = [iteration_s](uint64_t, uint64_t) { return iteration_s; };
  m.max_batch = max_batch;
  return m;
}

ServingLoad fixed_load(double rate_per_s, uint64_t requests, uint64_t prompt, uint64_t output) {
  ServingLoad l;
  l.rate_per_s = rate_per_s;
  l.requests = requests;
  l.arrivals = ArrivalProcess::fixed;
  l.prompt_tokens = TokenLengths::fixed(prompt);
  l.output_tokens = TokenLengths::fixed(output);
  return l;
}

// |got - want| <= rel * |want|
bool within(double got, double want, double rel) { return std::abs(got - want) <= rel * std::abs(want); }

}  // namespace

TEST_CASE("hand timeline: requests that never overlap") {
  // Arrivals every 0.5 s at 0.5, 1.0, 1.5 s; prefill 0.1 s then 10 iterations of 0.01 s
  // (11 tokens): each request is alone, sojourn 0.2 s, TTFT 0.1 s, TPOT 0.01 s.
  const ServingResult r = simulate_serving(constant_server(0.1, 0.01, 8), fixed_load(2, 3, 100, 11));
  CHECK(r.completed == 3);
  CHECK(r.rejected.total() == 0);
  CHECK(r.stable);
  REQUIRE(r.latency);
  CHECK(r.latency->sojourn_s.mean == doctest::Approx(0.2));
  CHECK(r.latency->ttft_s.p99 == doctest::Approx(0.1));
  CHECK(r.latency->queue_wait_s.max == doctest::Approx(0.0));
  CHECK(r.latency->tpot_s.mean == doctest::Approx(0.01));
  CHECK(r.span_s == doctest::Approx(1.7));                  // last departure 1.5 + 0.2
  CHECK(r.latency->mean_in_system == doctest::Approx(0.6 / 1.7));  // 3 x 0.2 s over 1.7 s
  CHECK(r.throughput_tok_s == doctest::Approx(33 / 1.7));  // 3 x 11 tokens
  CHECK(r.utilisation == doctest::Approx(0.6 / 1.7));
  CHECK(r.decode_iterations == 30);
  CHECK(r.mean_batch == doctest::Approx(1.0));
}

TEST_CASE("hand timeline: a closed loop sends each request as one in flight finishes") {
  // vLLM bench's --max-concurrency 1 with every request at t = 0 (10 per 0.1 s): one in flight at
  // a time, each prefill 0.1 s then 10 iterations of 0.01 s (11 tokens) = 0.2 s, the next sent
  // when the last token reaches the client, 0.05 s (the front end) after the step that made it.
  ServerModel server = constant_server(0.1, 0.01, 8);
  server.first_token_s = 0.05;
  ServingLoad load = fixed_load(100, 10, 100, 11);
  load.max_concurrency = 1;
  const ServingResult r = simulate_serving(server, load);
  CHECK(r.completed == 10);
  REQUIRE(r.latency);
  CHECK(r.latency->queue_wait_s.max == doctest::Approx(0.0));  // never more than one in the system
  CHECK(r.mean_batch == doctest::Approx(1.0));
  CHECK(r.latency->ttft_s.max == doctest::Approx(0.15));         // 0.1 s prefill + 0.05 s front end
  CHECK(r.latency->sojourn_s.mean == doctest::Approx(0.25));     // 0.2 s on the device + 0.05 s
  // request i is sent at 0.01 (its arrival) for i = 0, then at 0.01 + 0.25 i: the last leaves the
  // device at 0.01 + 9 x 0.25 + 0.2 = 2.46 s
  CHECK(r.span_s == doctest::Approx(2.46));
  CHECK(r.offered_span_s == doctest::Approx(0.01 + 9 * 0.25));
  // Open, the same burst queues behind one another and batches: TTFT grows, the span shrinks
  load.max_concurrency.reset();
  load.finite_run = true;  // a burst: its latencies whatever the queue
  const ServingResult open = simulate_serving(server, load);
  REQUIRE(open.latency);
  CHECK(open.latency->ttft_s.max > 0.5);
  CHECK(open.span_s < r.span_s);
  // 0 in flight is refused
  load.max_concurrency = 0;
  CHECK_THROWS_AS(simulate_serving(server, load), InputError);
}

TEST_CASE("hand timeline: a closed loop of 4 keeps at most 4 in the system") {
  ServingLoad load = fixed_load(1000, 200, 64, 32);
  load.max_concurrency = 4;
  const ServingResult r = simulate_serving(constant_server(0.02, 0.005, 64), load);
  CHECK(r.completed == 200);
  REQUIRE(r.latency);
  CHECK(r.peak_batch <= 4);
  CHECK(r.latency->mean_in_system <= 4.0 + 1e-9);
}

TEST_CASE("hand timeline: prefill stalls the batch, contexts grow by one token per iteration") {
  // Arrivals at 0.25, 0.5, 0.75 s; prefill 0.125 s; iteration 0.0625 s; 4 output tokens
  // (1 from the prefill + 3 iterations); prompt 10. Binary fractions keep the clock exact.
  //  0.25  R0 prefill -> 0.375 (first token)    iterations (1, 11) 0.4375, (1, 12) 0.5
  //  0.5   R1 arrives: prefill first -> 0.625, R0 stalls
  //        (2, 13 + 11) 0.6875: R0's 3rd iteration, R0 done
  //        (1, 12) 0.75
  //  0.75  R2 prefill -> 0.875;  (2, 13 + 11) 0.9375: R1 done;  (1, 12) 1.0, (1, 13) 1.0625: R2 done
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  ServerModel m = constant_server(0.125, 0.0625, 8);
  m.decode_iteration_s = [&calls](uint64_t batch, uint64_t context) {
    calls.emplace_back(batch, context);
    return 0.0625;
  };
  const ServingResult r = simulate_serving(m, fixed_load(4, 3, 10, 4));
  const std::vector<std::pair<uint64_t, uint64_t>> expected{{1, 11}, {1, 12}, {2, 24}, {1, 12},
                                                            {2, 24}, {1, 12}, {1, 13}};
  // (After the run, the stability test probes the model at batches 1..8: not part of the run.)
  REQUIRE(calls.size() >= expected.size());
  calls.resize(expected.size());
  CHECK(calls == expected);
  REQUIRE(r.latency);
  // sojourn: R0 0.6875 - 0.25, R1 0.9375 - 0.5, R2 1.0625 - 0.75
  CHECK(r.latency->sojourn_s.mean == doctest::Approx((0.4375 + 0.4375 + 0.3125) / 3));
  CHECK(r.latency->sojourn_s.p50 == doctest::Approx(0.4375));  // nearest rank: 2nd of 3
  CHECK(r.latency->sojourn_s.p99 == doctest::Approx(0.4375));
  CHECK(r.latency->ttft_s.max == doctest::Approx(0.125));
  // TPOT: R0 (0.6875 - 0.375) / 3, R1 (0.9375 - 0.625) / 3, R2 (1.0625 - 0.875) / 3
  CHECK(r.latency->tpot_s.max == doctest::Approx(0.3125 / 3));
  CHECK(r.latency->tpot_s.mean == doctest::Approx((0.3125 + 0.3125 + 0.1875) / 9));
  CHECK(r.decode_iterations == 7);
  CHECK(r.mean_batch == doctest::Approx(9.0 / 7));
  // busy: 3 prefills x 0.125 + 7 x 0.0625 = 0.8125 s of 1.0625 s
  CHECK(r.utilisation == doctest::Approx(0.8125 / 1.0625));
  CHECK(r.latency->mean_in_system == doctest::Approx(1.1875 / 1.0625));
  // ITL, every gap between two tokens: R0 0.0625, 0.0625, then 0.1875 (R1's prefill in between);
  // R1 the same (R2's prefill); R2 three of 0.0625. Seven of 0.0625 and two of 0.1875.
  const Distribution& itl = r.latency->itl_s;
  CHECK(itl.count == 9);
  CHECK(itl.mean == doctest::Approx((7 * 0.0625 + 2 * 0.1875) / 9));
  CHECK(itl.p50 == doctest::Approx(0.0625));  // the 5th of 9
  CHECK(itl.p90 == doctest::Approx(0.1875));  // the ceil(8.1) = 9th
  CHECK(itl.max == doctest::Approx(0.1875));
  CHECK_FALSE(percentile_resolved(itl.count, 0.90));  // 9 samples cannot tell p90 from the max
  CHECK(percentile_resolved(10, 0.90));
  CHECK_FALSE(percentile_resolved(99, 0.99));
  CHECK(percentile_resolved(100, 0.99));
  CHECK_FALSE(r.good_requests.has_value());  // no goodput limits given
  // Goodput (vLLM's): TPOTs are 0.104, 0.104 and 0.0625 s, TTFTs all 0.125 s; a 0.1 s TPOT
  // limit passes R2 alone, a TTFT limit below 0.125 s none.
  ServingLoad load = fixed_load(4, 3, 10, 4);
  load.goodput.tpot_s = 0.1;
  CHECK(simulate_serving(m, load).good_requests == 1);
  load.goodput.ttft_s = 0.12;
  CHECK(simulate_serving(m, load).good_requests == 0);
  load.goodput = {};
  load.goodput.e2el_s = 0.4375;  // sojourns 0.4375, 0.4375, 0.3125: all within
  CHECK(simulate_serving(m, load).good_requests == 3);
}

TEST_CASE("summarize_weighted equals summarize on the expanded sample") {
  const std::vector<std::pair<double, uint64_t>> weighted{{3.0, 2}, {1.0, 5}, {10.0, 1}, {2.0, 92}};
  std::vector<double> expanded;
  for (const auto& [v, w] : weighted) expanded.insert(expanded.end(), w, v);
  const Distribution a = summarize_weighted(weighted), b = summarize(expanded);
  CHECK(a.count == b.count);
  CHECK(a.mean == doctest::Approx(b.mean));
  CHECK(a.p50 == b.p50);
  CHECK(a.p90 == b.p90);
  CHECK(a.p99 == b.p99);  // the 99th of 100: 3.0, not the maximum
  CHECK(a.p99 == 3.0);
  CHECK(a.max == 10.0);
  CHECK(summarize_weighted({}).count == 0);
}

TEST_CASE("KV capacity: the head of the queue waits for space; a request larger than it is rejected") {
  // Arrivals at 1, 2, 3 ms; prefill 0.1 s, one iteration of 0.1 s (2 output tokens); KV holds
  // two requests of 10 + 2 tokens. R0 prefill 0.001-0.101, R1 0.101-0.201, R2 must wait:
  // iteration 0.201-0.301 ends R0 and R1, R2 prefill 0.301-0.401, iteration -> 0.501.
  ServerModel m = constant_server(0.1, 0.1, 64);
  m.kv_capacity_tokens = 24;
  const ServingResult r = simulate_serving(m, fixed_load(1000, 3, 10, 2));
  REQUIRE(r.latency);
  CHECK(r.completed == 3);
  CHECK(r.peak_kv_tokens == 24);
  CHECK(r.latency->queue_wait_s.max == doctest::Approx(0.301 - 0.003));
  CHECK(r.latency->sojourn_s.max == doctest::Approx(0.501 - 0.003));
  CHECK(r.span_s == doctest::Approx(0.501));

  // Prompts uniform on 1..100 with 10 output tokens against 60 tokens of KV: every prompt
  // over 50 tokens can never fit and is rejected on arrival; nothing else is.
  ServingLoad l;
  l.rate_per_s = 1;
  l.requests = 400;
  l.prompt_tokens = {1, 100};
  l.output_tokens = TokenLengths::fixed(10);
  m.kv_capacity_tokens = 60;
  const ServingResult big = simulate_serving(m, l);
  CHECK(big.rejected.exceeds_kv_capacity > 150);  // about half of 400
  CHECK(big.rejected.exceeds_kv_capacity < 250);
  CHECK(big.rejected.deadline == 0);
  CHECK(big.completed + big.rejected.total() == 400);
  CHECK(big.peak_kv_tokens <= 60);
}

TEST_CASE("admission by deadline, SPEC 6 numbers: 0.1 s of queueing more misses 7 s") {
  // One request alone: TTFT 0.196 s + 255 iterations = 6.76 s finishes 6.956 s after arrival.
  // Batch 1 and arrivals every 6.856 s: each second request would wait 0.1 s behind the first
  // and finish at 7.056 s -> rejected at arrival; the third finds the server idle.
  ServerModel m = constant_server(0.196, 6.76 / 255, 1);
  ServingLoad l = fixed_load(1 / 6.856, 4, 1000, 256);
  l.deadline_s = 7;
  const ServingResult r = simulate_serving(m, l);
  CHECK(r.completed == 2);
  CHECK(r.rejected.deadline == 2);
  CHECK(r.completed_late == 0);
  CHECK(r.rejection_rate == doctest::Approx(0.5));
  REQUIRE(r.latency);
  CHECK(r.latency->sojourn_s.max == doctest::Approx(6.956));

  l.deadline_s = 7.06;  // 7.056 s now fits: the second request waits 0.1 s and is admitted
  l.requests = 2;
  const ServingResult looser = simulate_serving(m, l);
  CHECK(looser.completed == 2);
  REQUIRE(looser.latency);
  CHECK(looser.latency->queue_wait_s.max == doctest::Approx(0.1));
  CHECK(looser.latency->sojourn_s.max == doctest::Approx(7.056));
}

TEST_CASE("a deadline nobody can meet rejects everyone and reports no latency; a loose one changes nothing") {
  ServerModel m = constant_server(0.05, 0.01, 16);
  ServingLoad l;
  l.rate_per_s = 10;  // prefills alone take half the server's time
  l.requests = 2000;
  l.prompt_tokens = TokenLengths::fixed(200);
  l.output_tokens = {10, 50};
  l.deadline_s = 0.04;  // below the 0.05 s prefill alone
  const ServingResult none = simulate_serving(m, l);
  CHECK(none.completed == 0);
  CHECK(none.rejected.deadline == 2000);
  CHECK_FALSE(none.latency.has_value());

  l.deadline_s.reset();
  const ServingResult free_run = simulate_serving(m, l);
  l.deadline_s = 1e6;
  const ServingResult loose = simulate_serving(m, l);
  REQUIRE(free_run.latency);
  REQUIRE(loose.latency);
  CHECK(loose.rejected.total() == 0);
  CHECK(loose.latency->sojourn_s.mean == free_run.latency->sojourn_s.mean);  // bit for bit
  CHECK(loose.decode_iterations == free_run.decode_iterations);
}

TEST_CASE("deadline admission under overload: start and TTFT exact; the two prediction rules") {
  // A batching server offered 30 req/s where its prefills alone would take two thirds of the
  // time. Requests behind a candidate cannot start before it, so both rules predict its
  // prefill start and first token exactly: no admitted request waits or sees its first token
  // past the deadline. Its decoding is then stalled by the prefills of later arrivals:
  // no_more_arrivals cannot see them (a lower bound: many admitted requests finish late);
  // load_persists replaces each departure and sees most of them.
  ServerModel m;
  m.max_batch = 32;
  m.kv_capacity_tokens = 32 * 600;
  m.prefill_s = [](uint64_t prompt) { return 0.01 + 0.00005 * static_cast<double>(prompt); };
  m.decode_iteration_s = [](uint64_t batch, uint64_t context) {
    return 0.01 + 0.0005 * static_cast<double>(batch) + 1e-7 * static_cast<double>(context);
  };
  ServingLoad l;
  l.rate_per_s = 30;
  l.requests = 5000;
  l.prompt_tokens = {100, 400};
  l.output_tokens = {20, 150};
  l.deadline_s = 3;
  l.deadline_prediction = DeadlinePrediction::no_more_arrivals;
  const ServingResult lower = simulate_serving(m, l);
  l.deadline_prediction = DeadlinePrediction::load_persists;
  const ServingResult persists = simulate_serving(m, l);
  for (const ServingResult* r : {&lower, &persists}) {
    CHECK(r->completed + r->rejected.total() == r->requests);
    CHECK(r->rejected.deadline > 1000);
    CHECK(r->stable);  // rejections bound the queue
    REQUIRE(r->latency);
    CHECK(r->latency->queue_wait_s.max <= 3.0);
    CHECK(r->latency->ttft_s.max <= 3.0);
  }
  CHECK(lower.completed_late > lower.completed / 2);        // measured 1904 of 2588
  CHECK(persists.completed_late < lower.completed_late / 4);  // measured 228 of 2484
  CHECK(persists.rejected.deadline > lower.rejected.deadline);

  l.deadline_s.reset();  // the same load without admission control runs away
  const ServingResult open = simulate_serving(m, l);
  CHECK_FALSE(open.stable);
  CHECK(open.rho_lower_bound > 1.0);
}

TEST_CASE("M/D/1: batch 1, constant service, Poisson arrivals -> Pollaczek-Khinchine") {
  // Mean wait in queue Wq = rho S / (2 (1 - rho)). Tolerances: 4 standard deviations of the
  // seed-to-seed spread of the simulated mean over 20 seeds at 10^5 requests (0.9% at
  // rho 0.5, 2.0% at rho 0.8): waits are strongly correlated from one request to the next.
  struct Case {
    double rho, tolerance;
    double prefill_s, iteration_s;
    uint64_t output;
  };
  // S = 0.1 s either as one prefill (output 1), or 0.02 s prefill + 8 iterations of 0.01 s.
  for (const Case c : {Case{0.5, 0.036, 0.1, 0.01, 1}, Case{0.8, 0.08, 0.02, 0.01, 9}}) {
    CAPTURE(c.rho);
    const double service_s = 0.1;
    ServingLoad l;
    l.rate_per_s = c.rho / service_s;
    l.requests = 100'000;
    l.seed = 7;
    l.prompt_tokens = TokenLengths::fixed(64);
    l.output_tokens = TokenLengths::fixed(c.output);
    const ServingResult r = simulate_serving(constant_server(c.prefill_s, c.iteration_s, 1), l);
    REQUIRE(r.stable);
    REQUIRE(r.latency);
    const double wq = c.rho * service_s / (2 * (1 - c.rho));  // 0.05 s at 0.5, 0.2 s at 0.8
    CHECK(within(r.latency->queue_wait_s.mean, wq, c.tolerance));
    CHECK(within(r.latency->sojourn_s.mean, wq + service_s, c.tolerance));
    // The busy fraction is rho (a Poisson count's relative spread at 10^5 is 0.3%).
    CHECK(within(r.utilisation, c.rho, 0.01));
    CHECK(within(r.rho_lower_bound, c.rho, 0.01));  // exact for batch 1
    // L = lambda (Wq + S): 0.75 at rho 0.5, 2.4 at rho 0.8
    CHECK(within(r.latency->mean_in_system, l.rate_per_s * (wq + service_s), c.tolerance));
    CHECK(r.latency->ttft_s.p50 >= c.prefill_s);
  }
}

TEST_CASE("Little's law on the simulated path") {
  ServerModel m;
  m.max_batch = 16;
  m.kv_capacity_tokens = 16 * 700;
  m.prefill_s = [](uint64_t prompt) { return 0.002 + 0.0001 * static_cast<double>(prompt); };
  m.decode_iteration_s = [](uint64_t batch, uint64_t) { return 0.02 + 0.001 * static_cast<double>(batch); };
  ServingLoad l;
  l.rate_per_s = 3.5;
  l.requests = 50'000;
  l.prompt_tokens = {50, 500};
  l.output_tokens = {16, 128};
  l.deadline_s = 10;
  const ServingResult r = simulate_serving(m, l);
  REQUIRE(r.stable);
  REQUIRE(r.latency);
  const ServingLatency& lat = *r.latency;
  // Over [0, span] the system starts and ends empty, so the time integral of the number
  // present equals the sum of sojourns: the two are computed separately (an event-by-event
  // integral vs the per-request records), so only rounding may differ.
  CHECK(within(lat.mean_in_system, lat.littles_law_in_system, 1e-9));
  CHECK(within(lat.rate_effective_per_s, static_cast<double>(r.completed) / r.span_s, 1e-12));
  // Against the offered rate: lambda (1 - rejected) x W. Differs by the drain after the last
  // arrival (W / span, ~1e-4) and the Poisson count's spread (1 / sqrt(50000) = 0.45%): 2%.
  CHECK(within(lat.mean_in_system, l.rate_per_s * (1 - r.rejection_rate) * lat.sojourn_s.mean, 0.02));
  CHECK(lat.sojourn_s.p50 <= lat.sojourn_s.p90);
  CHECK(lat.sojourn_s.p90 <= lat.sojourn_s.p99);
  CHECK(lat.sojourn_s.p99 <= lat.sojourn_s.max);
}

TEST_CASE("unstable loads are reported as unstable, with no latency figures") {
  SUBCASE("M/D/1 at rho 1.3: the work test") {
    ServingLoad l;
    l.rate_per_s = 13;  // S = 0.1 s
    l.requests = 10'000;
    l.output_tokens = TokenLengths::fixed(1);
    const ServingResult r = simulate_serving(constant_server(0.1, 0.01, 1), l);
    CHECK_FALSE(r.stable);
    CHECK_FALSE(r.latency.has_value());
    CHECK(r.rho_lower_bound == doctest::Approx(1.3).epsilon(0.02).scale(0));
    CHECK(r.unstable_reason.find("rho >= 1.") != std::string::npos);
    CHECK(r.completed == 10'000);  // finite run: everyone finishes, late
    l.rate_per_s = 7;              // rho 0.7: stable
    CHECK(simulate_serving(constant_server(0.1, 0.01, 1), l).stable);
  }
  SUBCASE("a batch that grows without bound: iteration 10 ms + 1 ms per request") {
    // 99 iterations per request at batch b cost 99 (10 + b) / b ms each: the server completes
    // at most 1 / 0.099 = 10.1 req/s however large the batch grows.
    ServerModel m;
    m.max_batch = 1'000'000;
    m.prefill_s = [](uint64_t) { return 0.0; };
    m.decode_iteration_s = [](uint64_t batch, uint64_t) { return 0.01 + 0.001 * static_cast<double>(batch); };
    ServingLoad l;
    l.rate_per_s = 15;
    l.requests = 10'000;
    l.output_tokens = TokenLengths::fixed(100);
    const ServingResult r = simulate_serving(m, l);
    CHECK_FALSE(r.stable);
    CHECK_FALSE(r.latency.has_value());
    CHECK(r.rho_lower_bound > 1.0);
    l.rate_per_s = 7;
    CHECK(simulate_serving(m, l).stable);
  }
  SUBCASE("KV that holds fewer requests than the best case assumes: the growth test") {
    // Prompts 1..1000 tokens against 1100 tokens of KV: the best case packs 10 short
    // requests, but most pairs do not fit together, so the real batch is 1 or 2. The work
    // test's bound stays below 1; the number in system climbs quarter by quarter.
    ServerModel m = constant_server(0.0, 0.01, 64);
    m.kv_capacity_tokens = 1100;
    ServingLoad l;
    l.rate_per_s = 1.5;
    l.requests = 10'000;
    l.prompt_tokens = {1, 1000};
    l.output_tokens = TokenLengths::fixed(100);
    const ServingResult r = simulate_serving(m, l);
    CHECK(r.rho_lower_bound < 1.0);
    CHECK_FALSE(r.stable);
    CHECK(r.unstable_reason.find("quarter by quarter") != std::string::npos);
    CHECK(r.in_system_q4 > r.in_system_q3);
    CHECK(r.in_system_q3 > r.in_system_q2);
    l.rate_per_s = 0.5;
    CHECK(simulate_serving(m, l).stable);
  }
}

TEST_CASE("same seed, same run; another seed, another run") {
  ServerModel m = constant_server(0.01, 0.005, 8);
  ServingLoad l;
  l.rate_per_s = 30;
  l.requests = 3000;
  l.prompt_tokens = {10, 100};
  l.output_tokens = {5, 50};
  const ServingResult a = simulate_serving(m, l), b = simulate_serving(m, l);
  l.seed = 2;
  const ServingResult c = simulate_serving(m, l);
  REQUIRE(a.latency);
  REQUIRE(c.latency);
  CHECK(a.latency->sojourn_s.mean == b.latency->sojourn_s.mean);
  CHECK(a.latency->sojourn_s.mean != c.latency->sojourn_s.mean);
}

TEST_CASE("max sustainable rate: D/D/1 brackets 10 req/s within the tolerance") {
  // Fixed arrivals, batch 1, S = 0.1 s: below 10 req/s nobody queues and TTFT = 0.1 s; at
  // or above it the work test says unstable. The search must end within 1% below 10.
  ServingLoad l = fixed_load(1, 200, 10, 1);
  ServingSlo slo;
  slo.ttft_p99_s = 0.15;
  const SustainableRate s = max_sustainable_rate(constant_server(0.1, 0.01, 1), l, slo, 0.01);
  REQUIRE(s.rate_per_s.has_value());
  CHECK(*s.rate_per_s < 10.0);
  CHECK(*s.rate_per_s >= 10.0 / 1.01);
  CHECK(s.upper_bound_per_s >= 10.0);
  CHECK(s.upper_bound_per_s - s.lower_bound_per_s <= 0.01 * s.lower_bound_per_s);
  REQUIRE(s.at_rate.has_value());
  CHECK(meets_slo(*s.at_rate, slo));

  slo.ttft_p99_s = 0.05;  // below the 0.1 s prefill: no rate can meet it
  const SustainableRate none = max_sustainable_rate(constant_server(0.1, 0.01, 1), l, slo, 0.01);
  CHECK_FALSE(none.rate_per_s.has_value());
  CHECK(none.note.find("fails even without queueing") != std::string::npos);
}

TEST_CASE("max sustainable rate with a deadline: the rejection rate is the binding SLO") {
  ServingLoad l;
  l.requests = 5000;
  l.prompt_tokens = TokenLengths::fixed(64);
  l.output_tokens = TokenLengths::fixed(1);
  l.deadline_s = 0.5;
  ServingSlo slo;
  slo.rejection_rate_max = 0.05;
  const SustainableRate s = max_sustainable_rate(constant_server(0.1, 0.01, 1), l, slo, 0.01);
  REQUIRE(s.rate_per_s.has_value());
  REQUIRE(s.at_rate.has_value());
  CHECK(s.at_rate->rejection_rate <= 0.05);
  // With at most 4 requests' worth of wait allowed (0.5 s), 5% rejection sits near rho 0.9:
  // the rate is below the 10 req/s capacity and well above half of it.
  CHECK(*s.rate_per_s < 10.0);
  CHECK(*s.rate_per_s > 5.0);
}

TEST_CASE("bad input names the field") {
  const ServerModel m = constant_server(0.1, 0.01, 4);
  ServingLoad l;
  l.rate_per_s = 0;
  CHECK_THROWS_WITH_AS(simulate_serving(m, l), doctest::Contains("rate_per_s"), InputError);
  l = ServingLoad{};
  l.requests = 0;
  CHECK_THROWS_WITH_AS(simulate_serving(m, l), doctest::Contains("requests"), InputError);
  l = ServingLoad{};
  l.prompt_tokens = {10, 5};
  CHECK_THROWS_WITH_AS(simulate_serving(m, l), doctest::Contains("prompt_tokens"), InputError);
  l = ServingLoad{};
  l.deadline_s = -1;
  CHECK_THROWS_WITH_AS(simulate_serving(m, l), doctest::Contains("deadline_s"), InputError);
  ServerModel zero = m;
  zero.max_batch = 0;
  CHECK_THROWS_WITH_AS(simulate_serving(zero, ServingLoad{}), doctest::Contains("max_batch"), InputError);
  ServerModel negative = m;
  negative.decode_iteration_s = [](uint64_t, uint64_t) { return -1.0; };
  CHECK_THROWS_WITH_AS(simulate_serving(negative, ServingLoad{}), doctest::Contains("decode_iteration_s"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse_token_lengths("512:256", "--prompt"), doctest::Contains("--prompt"), InputError);
  CHECK_THROWS_WITH_AS(parse_token_lengths("0", "--output"), doctest::Contains("at least 1"), InputError);
  CHECK(parse_token_lengths("8K", "--prompt").max_tokens == 8192);
  CHECK(parse_token_lengths("256:1K", "--prompt").min_tokens == 256);
  ServingSlo slo;
  slo.rejection_rate_max = 2;
  CHECK_THROWS_WITH_AS(max_sustainable_rate(m, ServingLoad{}, slo), doctest::Contains("rejection_rate_max"),
                       InputError);
}

TEST_CASE("admission_finish_s: a snapshot of a real server, predicted by the simulation's rule") {
  ServerModel server;
  server.decode_iteration_s = [](uint64_t, uint64_t) { return 0.01; };
  server.prefill_s = [](uint64_t) { return 0.1; };
  server.max_batch = 8;
  const ServingRequest candidate{0, 10, 5};
  ServerSnapshot idle;
  idle.now_s = 2.0;
  // Alone: its prefill, then 4 iterations: 2 + 0.1 + 4 x 0.01.
  CHECK(admission_finish_s(server, idle, candidate, 100) == doctest::Approx(2.14));
  // One request decoding with 3 iterations left (output 5, emitted 2). The candidate's prefill
  // comes first (0.1), then they decode together; after 3 iterations the other leaves.
  ServerSnapshot busy;
  busy.running.push_back({ServingRequest{0, 10, 5}, 2});
  // No more arrivals: 0.1 + 4 x 0.01.
  CHECK(admission_finish_s(server, busy, candidate, 100, DeadlinePrediction::no_more_arrivals) ==
        doctest::Approx(0.14));
  // Load persists: the leaver is replaced by one like it, whose prefill (0.1) stalls the
  // candidate's last iteration: 0.1 + 3 x 0.01 + 0.1 + 0.01.
  CHECK(admission_finish_s(server, busy, candidate, 100, DeadlinePrediction::load_persists) ==
        doctest::Approx(0.24));
  // Past the due time the prediction gives up: infinity means "reject".
  CHECK(std::isinf(admission_finish_s(server, busy, candidate, 0.2)));
}

TEST_CASE("the admission predicates the scheduler calls") {
  ServerModel server;
  server.max_batch = 2;
  server.kv_capacity_tokens = 100;
  CHECK(exceeds_kv_capacity(server, 101));
  CHECK_FALSE(exceeds_kv_capacity(server, 100));
  CHECK(admits_head(server, 1, 60, 40));        // 60 + 40 = 100 <= 100, batch 1 < 2
  CHECK_FALSE(admits_head(server, 1, 61, 40));  // 101 tokens
  CHECK_FALSE(admits_head(server, 2, 0, 1));    // the batch is full
  server.kv_capacity_tokens.reset();            // unlimited KV: only the batch limits
  CHECK_FALSE(exceeds_kv_capacity(server, uint64_t{1} << 40));
  CHECK(admits_head(server, 1, uint64_t{1} << 40, uint64_t{1} << 40));
}

TEST_CASE("peak_batch counts the most requests decoding at once; without ITL the other figures are the same") {
  // Arrivals every 0.5 s never overlap (each is done in 0.2 s): at most one decodes.
  CHECK(simulate_serving(constant_server(0.1, 0.01, 8), fixed_load(2, 3, 100, 11)).peak_batch == 1);
  // Arrivals every 0.25 s, each alone 0.05 + 100 x 0.01 = 1.05 s: four or five would overlap, so
  // the batch of 4 fills (and the queue stays short: a full batch serves 4 per ~1.1 s).
  ServingLoad l = fixed_load(4, 40, 100, 101);
  const ServingResult full = simulate_serving(constant_server(0.05, 0.01, 4), l);
  CHECK(full.peak_batch == 4);
  l.inter_token_latency = false;
  const ServingResult lean = simulate_serving(constant_server(0.05, 0.01, 4), l);
  REQUIRE(full.latency);
  REQUIRE(lean.latency);
  CHECK(full.latency->itl_s.count > 0);
  CHECK(lean.latency->itl_s.count == 0);
  CHECK(lean.latency->tpot_s.p99 == full.latency->tpot_s.p99);
  CHECK(lean.latency->sojourn_s.p99 == full.latency->sojourn_s.p99);
  CHECK(lean.peak_batch == full.peak_batch);
}

TEST_CASE("chunked prefill: a long prompt over several steps beside the decodes, its chunks costing the whole") {
  ServerModel server;
  server.decode_iteration_s = [](uint64_t, uint64_t) { return 0.01; };
  server.prefill_s = [](uint64_t p) { return 0.001 * double(p) + 1e-7 * double(p) * double(p); };
  server.max_batch = 8;
  ServingLoad one;
  one.rate_per_s = 1;  // one request at t = 1 s
  one.requests = 1;
  one.arrivals = ArrivalProcess::fixed;
  one.prompt_tokens = TokenLengths::fixed(2048);
  one.output_tokens = TokenLengths::fixed(3);
  one.record_requests = true;
  // Alone, four chunks of 512: prefill_s(512) + (prefill_s(1024) - prefill_s(512)) + ... = prefill_s(2048),
  // the same first token as one whole prefill; then two decode iterations.
  const double whole = 0.001 * 2048 + 1e-7 * 2048.0 * 2048.0;
  for (const std::optional<uint64_t> budget : {std::optional<uint64_t>{}, std::optional<uint64_t>{512}}) {
    server.step_token_budget = budget;
    const ServingResult r = simulate_serving(server, one);
    REQUIRE(r.per_request.size() == 1);
    CHECK(r.per_request[0].start_s == doctest::Approx(1.0));
    CHECK(r.per_request[0].first_token_s == doctest::Approx(1.0 + whole));
    CHECK(r.per_request[0].finish_s == doctest::Approx(1.0 + whole + 0.02));
  }
  // Under load, as chunked prefill does in vLLM's own benchmarks: 4K-token prompts in 512-token chunks
  // keep the decodes' gaps short (ITL p99) and make the first token later (TTFT) than prompts taken whole.
  server.decode_iteration_s = [](uint64_t batch, uint64_t context) { return 0.008 + 0.0002 * double(batch) + 2e-8 * double(context); };
  server.prefill_s = [](uint64_t p) { return 0.00005 * double(p) + 2e-9 * double(p) * double(p); };
  server.max_batch = 256;
  ServingLoad load;
  load.rate_per_s = 4;
  load.requests = 400;
  load.prompt_tokens = TokenLengths::fixed(4096);
  load.output_tokens = TokenLengths::fixed(256);
  load.finite_run = true;
  server.step_token_budget = 512;
  const ServingResult chunked = simulate_serving(server, load);
  server.step_token_budget = 8192;
  const ServingResult whole_prompts = simulate_serving(server, load);
  REQUIRE(chunked.latency);
  REQUIRE(whole_prompts.latency);
  CHECK(chunked.latency->itl_s.p99 < 0.5 * whole_prompts.latency->itl_s.p99);
  CHECK(chunked.latency->ttft_s.mean > whole_prompts.latency->ttft_s.mean);
  CHECK(chunked.completed == 400);
}
