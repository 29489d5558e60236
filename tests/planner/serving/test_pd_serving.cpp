#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "planner/catalog/catalog.hpp"
#include "planner/core/input_error.hpp"
#include "planner/cost/pd_disaggregation.hpp"
#include "planner/serving/pd_serving.hpp"

using namespace infer_plan;

namespace {

// A prefill of 125 ms, a transfer of 31.25 ms, a decode step of 7.8125 ms whatever the batch (binary
// fractions, so that the sums below are exact and a landing at a step's end is seen at that end):
// the times below are sums of these by hand.
constexpr double kPrefill = 0.125, kTransfer = 0.03125, kStep = 0.0078125;

PdServerModel model(uint64_t prefill_workers = 1, uint64_t decode_workers = 1) {
  PdServerModel m;
  m.prefill_s = [](uint64_t) { return kPrefill; };
  m.transfer_s = [](uint64_t) { return kTransfer; };
  m.decode.decode_iteration_s = [](uint64_t, uint64_t) { return kStep; };
  m.decode.max_batch = 8;
  m.prefill_workers = prefill_workers;
  m.decode_workers = decode_workers;
  return m;
}

}  // namespace

TEST_CASE("one request: TTFT = prefill + transfer + the first decode step, then a step per token") {
  const std::vector<ServingRequest> requests{{0.0, 100, 3}};
  const PdServingResult r = simulate_pd_serving(model(), requests);
  REQUIRE(r.completed == 1);
  const PdRequestTimes& t = r.requests[0];
  CHECK(t.prefill_end_s == 0.125);
  CHECK(t.transfer_end_s == 0.15625);
  CHECK(t.first_token_s == 0.1640625);  // 0.125 + 0.03125 + 0.0078125
  CHECK(t.finish_s == 0.1796875);       // two more steps for 3 tokens in all
  CHECK(r.ttft_s.mean == doctest::Approx(0.1640625));
  CHECK(r.queue_s.mean == doctest::Approx(0.0));
  CHECK(r.prefill_s.mean == doctest::Approx(kPrefill));
  CHECK(r.transfer_s.mean == doctest::Approx(kTransfer));
  CHECK(r.first_decode_s.mean == doctest::Approx(kStep));
  CHECK(r.tpot_s.mean == doctest::Approx(kStep));
  CHECK(r.span_s == doctest::Approx(0.1796875));
}

TEST_CASE("one prefill worker queues the prompts; two run them side by side and the link queues them") {
  const std::vector<ServingRequest> requests{{0.0, 100, 5}, {0.0, 100, 3}};
  // One prefill worker: the second prompt waits 125 ms, prefills 0.125-0.25, crosses to 0.28125,
  // and finds the decode worker idle (the first left at 0.1953125): first token 0.2890625.
  const PdServingResult one = simulate_pd_serving(model(1, 1), requests);
  CHECK(one.requests[0].finish_s == 0.1953125);
  CHECK(one.requests[1].prefill_start_s == 0.125);
  CHECK(one.requests[1].first_token_s == 0.2890625);
  CHECK(one.requests[1].finish_s == 0.3046875);
  CHECK(one.queue_s.max == doctest::Approx(0.125));
  // Two prefill workers: both prefills end at 0.125; the link takes one at a time (to 0.15625,
  // then to 0.1875), so the second's transfer part is 62.5 ms. The first decodes from 0.15625, its
  // fourth token at 0.1875; the second lands then and joins the fifth step (0.1953125).
  const PdServingResult two = simulate_pd_serving(model(2, 1), requests);
  CHECK(two.requests[1].prefill_start_s == 0.0);
  CHECK(two.requests[1].transfer_start_s == 0.15625);
  CHECK(two.requests[1].transfer_end_s == 0.1875);
  CHECK(two.transfer_s.max == doctest::Approx(0.0625));
  CHECK(two.requests[0].finish_s == 0.1953125);
  CHECK(two.requests[1].first_token_s == 0.1953125);
  CHECK(two.requests[1].finish_s == 0.2109375);
}

TEST_CASE("a decode step is timed at its batch and contexts; a full KV pool holds the next request back") {
  PdServerModel m = model(2, 1);
  // 7.8125 ms + 0.9765625 ms per sequence; contexts recorded to check the batch's sum
  std::vector<uint64_t> contexts;
  m.decode.decode_iteration_s = [&](uint64_t batch, uint64_t context) {
    contexts.push_back(context);
    return kStep + 0.0009765625 * static_cast<double>(batch);
  };
  m.transfer_s = [](uint64_t) { return 0.0; };  // both land at 0.125 together
  const std::vector<ServingRequest> requests{{0.0, 100, 2}, {0.0, 50, 2}};
  const PdServingResult r = simulate_pd_serving(m, requests);
  // both join the first step (batch 2: 9.765625 ms), contexts 100 + 50; the second step 101 + 51
  CHECK(r.requests[0].first_token_s == 0.134765625);
  CHECK(r.requests[1].first_token_s == 0.134765625);
  CHECK(r.requests[1].finish_s == 0.14453125);
  REQUIRE(contexts.size() == 2);
  CHECK(contexts[0] == 150);
  CHECK(contexts[1] == 152);
  // A pool of 112 tokens in pages of 16 holds the first (100 + 2 -> 112) but not both: the second
  // waits until the first leaves (two steps of 8.7890625 ms: 0.142578125), then decodes two more.
  m.decode.kv_capacity_tokens = 112;
  m.decode.kv_page_tokens = 16;
  const PdServingResult held = simulate_pd_serving(m, requests);
  CHECK(held.requests[0].finish_s == 0.142578125);
  CHECK(held.requests[1].first_token_s == 0.1513671875);
  CHECK(held.requests[1].finish_s == 0.16015625);
  CHECK(held.first_decode_s.max == doctest::Approx(0.0263671875));
}

TEST_CASE("two decode workers take the landed requests in turn; an oversized request is rejected") {
  PdServerModel m = model(2, 2);
  m.decode.kv_capacity_tokens = 256;
  m.decode.kv_page_tokens = 16;
  const std::vector<ServingRequest> requests{{0.0, 100, 2}, {0.0, 100, 2}, {0.05, 300, 2}};
  const PdServingResult r = simulate_pd_serving(m, requests);
  CHECK(r.completed == 2);
  CHECK(r.rejected == 1);
  CHECK(r.requests[2].rejected == "exceeds_kv_capacity");  // 302 tokens, 304 in pages > 256
  // the second lands at 0.1875 (behind the first on the link) on the second worker, idle
  CHECK(r.requests[0].first_token_s == 0.1640625);
  CHECK(r.requests[1].first_token_s == 0.1953125);
  CHECK(r.completed + r.rejected == requests.size());
}

TEST_CASE("a disaggregated server needs a worker of each kind and finite times") {
  const std::vector<ServingRequest> requests{{0.0, 100, 2}};
  CHECK_THROWS_AS(simulate_pd_serving(model(0, 1), requests), InputError);
  CHECK_THROWS_AS(simulate_pd_serving(model(1, 0), requests), InputError);
  PdServerModel bad = model();
  bad.transfer_s = [](uint64_t) { return -1.0; };
  CHECK_THROWS_WITH_AS(simulate_pd_serving(bad, requests), doctest::Contains("transfer_s"), InputError);
}

TEST_CASE("colocated servers share the arrivals in turn; the choice goes by mean end-to-end latency") {
  // A colocated server prefills a prompt alone (125 ms, emitting the first token) and decodes a
  // step of 7.8125 ms; no step token budget: a prompt that can start runs first.
  ServerModel server;
  server.prefill_s = [](uint64_t) { return kPrefill; };
  server.decode_iteration_s = [](uint64_t, uint64_t) { return kStep; };
  server.max_batch = 8;
  ServingLoad load;
  load.rate_per_s = 1;
  load.requests = 2;
  load.prompt_tokens = TokenLengths::fixed(100);
  load.output_tokens = TokenLengths::fixed(3);
  const std::vector<ServingRequest> requests{{0.0, 100, 3}, {0.0, 100, 3}};
  // Two servers, one request each: first token at 0.125, two steps more: 0.140625.
  const ServedSummary two = simulate_colocated(server, load, requests, 2);
  CHECK(two.completed == 2u);
  CHECK(two.ttft_s.mean == doctest::Approx(0.125));
  CHECK(two.e2el_s.mean == doctest::Approx(0.140625));
  // One server: the second prompt prefills 0.125-0.25, then both decode two steps together,
  // ending at 0.265625.
  const ServedSummary one = simulate_colocated(server, load, requests, 1);
  CHECK(one.ttft_s.mean == doctest::Approx((0.125 + 0.25) / 2));
  CHECK(one.e2el_s.mean == doctest::Approx(0.265625));
  // The split (one prefill, one decode worker): the first ends at 0.1796875, the second prefills
  // 0.125-0.25, crosses to 0.28125 and ends two steps after its first at 0.3046875.
  PdServingResult split = simulate_pd_serving(model(), requests);
  CHECK(split.e2el_s.mean == doctest::Approx((0.1796875 + 0.3046875) / 2));
  CHECK(split.link_s.mean == doctest::Approx(kTransfer));
  const ServedSummary s = summarize_served(split, requests);
  CHECK(s.e2el_s.mean == doctest::Approx(split.e2el_s.mean));
  CHECK(s.tpot_s.mean == doctest::Approx(kStep));
  CHECK(pd_choice(s, two) == PdChoice::colocate);  // 0.2421875 against 0.140625
  CHECK(pd_choice(s, one) == PdChoice::split);     // against 0.265625
  CHECK(std::string(pd_choice_name(PdChoice::split)) == "split");
}

TEST_CASE("streamed layer by layer, the transfer overlaps the prefill; the link takes pieces as they are ready") {
  PdServerModel m = model();
  m.stream_pieces = 4;  // four layers: a piece of 7.8125 ms ready every 31.25 ms of the prefill
  const std::vector<ServingRequest> one{{0.0, 100, 3}};
  const PdServingResult r = simulate_pd_serving(m, one);
  const PdRequestTimes& t = r.requests[0];
  CHECK(t.transfer_start_s == 0.03125);     // the first layer's piece, ready at a quarter
  CHECK(t.transfer_end_s == 0.1328125);     // the last, ready at 0.125, over the link by 0.1328125
  CHECK(t.link_s == doctest::Approx(kTransfer));  // four pieces, the whole transfer's time on the link
  CHECK(t.first_token_s == 0.140625);       // instead of 0.1640625 without streaming
  CHECK(r.link_s.mean == doctest::Approx(kTransfer));
  // Two prefill workers: both prompts' pieces are ready at the same times; the link alternates
  // them in arrival order, so the second's last piece leaves at 0.140625.
  PdServerModel two = model(2, 1);
  two.stream_pieces = 4;
  const std::vector<ServingRequest> both{{0.0, 100, 3}, {0.0, 100, 3}};
  const PdServingResult b = simulate_pd_serving(two, both);
  CHECK(b.requests[0].transfer_end_s == 0.1328125);
  CHECK(b.requests[1].transfer_end_s == 0.140625);
  CHECK(b.requests[1].link_s == doctest::Approx(kTransfer));
  // Each layer's K and V final a quarter of the way through the layer: the k-th piece is ready at
  // (k + 1/4) / 4 of the 125 ms prefill, the last at 101.5625 ms, over the link by 109.375 ms, before
  // the prefill's last FFN ends (the decode side recomputes the last position anyway).
  m.stream_ready_share = 0.25;
  const PdServingResult streamed = simulate_pd_serving(m, one);
  const PdRequestTimes& early = streamed.requests[0];
  CHECK(early.transfer_start_s == 0.0078125);
  CHECK(early.transfer_end_s == 0.109375);
  CHECK(early.transfer_end_s < early.prefill_end_s);
}

TEST_CASE("streamed over several forward passes: each layer sends the pages each pass completed") {
  PdServerModel m = model();
  m.stream_pieces = 2;  // two layers
  m.decode.kv_page_tokens = 16;
  m.prefill_pass_tokens = 40;
  // 100 tokens in passes of 40, 40 and 20 (at 0-40%, 40-80%, 80-100% of the prefill): whole pages
  // 2, then 5, then all 7 (the last part-filled); each layer's piece at its half and end of a pass.
  const std::vector<PdServerModel::StreamPiece> p = m.pieces(100);
  REQUIRE(p.size() == 6u);
  const double ready[] = {0.2, 0.4, 0.6, 0.8, 0.9, 1.0};
  const double bytes[] = {1.0 / 7, 1.0 / 7, 1.5 / 7, 1.5 / 7, 1.0 / 7, 1.0 / 7};  // pages / 7 / 2 layers
  for (size_t i = 0; i < p.size(); ++i) {
    CHECK(p[i].ready_share == doctest::Approx(ready[i]));
    CHECK(p[i].bytes_share == doctest::Approx(bytes[i]));
  }
  // The link carries them as the 125 ms prefill makes them: the last, ready at its end, takes 1/7
  // of the 31.25 ms transfer; every piece pays the latency: 6 of them.
  const PdRequestTimes t = simulate_pd_serving(m, {{0.0, 100, 3}}).requests[0];
  CHECK(t.transfer_start_s == doctest::Approx(0.025));
  CHECK(t.transfer_end_s == doctest::Approx(0.125 + kTransfer / 7));
  CHECK(t.link_s == doctest::Approx(kTransfer));
  m.message_s = 0.001;
  CHECK(m.link_s(100) == doctest::Approx(kTransfer + 6 * 0.001));
  // A pass that completes no page sends nothing: 20 tokens in passes of 8 send after the second
  // (page 1) and the last (page 2), two pieces each.
  m.prefill_pass_tokens = 8;
  const std::vector<PdServerModel::StreamPiece> q = m.pieces(20);
  REQUIRE(q.size() == 4u);
  CHECK(q[0].ready_share == doctest::Approx(12.0 / 20));  // (8 + 8 / 2) / 20
  CHECK(q[3].ready_share == doctest::Approx(1.0));
  CHECK(q[0].bytes_share == doctest::Approx(0.25));
  // Not streamed: one piece, whole, when the prefill ends.
  m.stream_pieces = 1;
  REQUIRE(m.pieces(100).size() == 1u);
  CHECK(m.pieces(100)[0].ready_share == 1.0);
}

TEST_CASE("each transfer pays the link's latency: once whole, once a piece streamed") {
  PdServerModel m = model();
  m.message_s = 0.001953125;  // 1/512 s, so that the sums stay exact
  const std::vector<ServingRequest> one{{0.0, 100, 3}};
  const PdRequestTimes whole = simulate_pd_serving(m, one).requests[0];
  CHECK(whole.transfer_end_s == 0.158203125);  // 0.125 + 0.001953125 + 0.03125
  CHECK(m.link_s(100) == doctest::Approx(0.033203125));
  // Four pieces of 7.8125 ms, each after 1.953125 ms: ready every 31.25 ms, each is over the link
  // 9.765625 ms later, the last (ready at 0.125) at 0.134765625; on the link 4 x 9.765625 ms.
  m.stream_pieces = 4;
  const PdServingResult streamed = simulate_pd_serving(m, one);
  CHECK(streamed.requests[0].transfer_end_s == 0.134765625);
  CHECK(streamed.requests[0].link_s == doctest::Approx(0.0390625));
  CHECK(m.link_s(100) == doctest::Approx(0.0390625));
}

TEST_CASE("a link transfer: the link's latency per message beside the bytes at its bandwidth") {
  const LinkProfile link = load_link("25gbe");  // 3.125 GB/s, 35 us (qperf, its profile's source)
  CHECK(link.message_latency_s == doctest::Approx(35e-6).scale(0));
  // 1 MB: 35 us + 1e6 / 3.125e9 s = 35 + 320 us; streamed in 36 layers: 36 x 35 + 320 us
  CHECK(link_transfer_s(1'000'000, 1, link) == doctest::Approx(355e-6).scale(0));
  CHECK(link_transfer_s(1'000'000, 36, link) == doctest::Approx(1580e-6).scale(0));
  CHECK(link_transfer_s(1'000'000, 1, load_link("100gbe")) == doctest::Approx(80e-6).scale(0));  // latency not stated: 0
}

TEST_CASE("a layer's K and V are final once its attention's projections are done") {
  // Qwen3-8B's layer: q 4096 x 4096, k and v 4096 x 1024 each, output 4096 x 4096, and an FFN of
  // 3 x 4096 x 12288: (16.78 + 8.39 + 16.78) / (41.94 + 150.99) = 0.2174 of its products.
  CHECK(pd_kv_written_share(load_model("qwen3-8b")) == doctest::Approx(41943040.0 / 192937984.0));
}
