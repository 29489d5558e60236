// The disaggregated server on a tiny model: the pages a prefill worker hands over are the bytes
// the planner counts, the decode side continues each request as one server would, the link is
// paced to the plan's, and every request ends on both the split and the colocated servers.
#include <doctest/doctest.h>

#include <map>
#include <vector>

#include "planner/core/input_error.hpp"
#include "planner/cost/pd_disaggregation.hpp"
#include "planner/plan/plan.hpp"
#include "planner/plan/predict.hpp"
#include "runtime/cpu_backend.hpp"
#include "runtime/forward_pass.hpp"
#include "runtime/model_weights.hpp"
#include "runtime/paged_kv_cache.hpp"
#include "runtime/pd_server.hpp"
#include "runtime/server.hpp"
#include "runtime/thread_pool.hpp"

using namespace infer_plan;
using namespace infer_plan::runtime;

namespace {
Plan tiny_pd_plan() {
  Plan p;  // Qwen3-0.6B at 0.1: 3 layers, 256 wide, 1 KV head of 128
  p.model = "qwen3-0.6b";
  p.scale = 0.1;
  p.weights = "Q8_0";
  p.kv.k = GgmlType::Q8_0;
  p.kv.v = GgmlType::Q4_0;
  p.context = 48;
  p.output = 8;  // 40-token prompts: 3 pages
  p.requests = 3;
  p.load = LoadPlan{};
  p.load->rate_per_s = 40;
  p.load->requests = 6;
  p.pd = PdPlan{};
  p.pd->link = "25gbe";
  p.pd->link_scale = 1e-3;  // 3.125 MB/s: 3 pages of ~1 KiB rows cross in about 3 ms, after 35 ms
  return p;
}
}  // namespace

TEST_CASE("paged KV: a sequence's pages exported are the planner's bytes, and import writes them back") {
  CpuBackend backend;
  const ResolvedPlan rp = resolve_plan(tiny_pd_plan());
  PagedKvCache from(backend, rp.spec, rp.plan.kv, 4), to(backend, rp.spec, rp.plan.kv, 6);
  REQUIRE(from.reserve(7, 33));
  std::vector<float> k(rp.spec.kv_k_values()), v(rp.spec.kv_v_values());
  for (uint64_t layer = 0; layer < rp.spec.layers; ++layer)
    for (uint64_t t = 0; t < 33; ++t) {
      for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<float>((layer * 31 + t * 7 + i) % 19) - 9.0f;
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((layer * 17 + t * 5 + i) % 23) - 11.0f;
      from.store(7, layer, t, k.data(), v.data());
    }
  std::vector<uint8_t> bytes;
  from.export_pages(7, 33, bytes);
  // 33 tokens are 3 whole pages of every layer's K and V: the prompt's cache as pd counts it
  CHECK(bytes.size() == 3 * from.page_bytes());
  CHECK(bytes.size() == pd_kv_bytes_per_request(rp.spec, rp.plan.kv, 33));
  REQUIRE(to.reserve(2, 40));
  REQUIRE(to.reserve(9, 48));  // pages that are not the first of the pool
  to.import_pages(9, bytes);
  std::vector<uint8_t> again;
  to.export_pages(9, 33, again);
  CHECK(again == bytes);
  CHECK_THROWS_AS(to.import_pages(2, std::vector<uint8_t>(4 * to.page_bytes())), std::logic_error);  // 3 pages held
  CHECK_THROWS_AS(from.export_pages(7, 49, again), std::logic_error);
}

TEST_CASE("a pass of the blocks only writes the pages a whole pass writes, and the next token is the same") {
  CpuBackend backend;
  const ResolvedPlan rp = resolve_plan(tiny_pd_plan());
  ThreadPool pool(1);
  const ModelWeights weights = plan_model_weights(rp, backend, pool, 7);
  PagedKvCache whole(backend, rp.spec, rp.plan.kv, 4), layers(backend, rp.spec, rp.plan.kv, 4);
  const std::unique_ptr<ForwardPass> a = make_forward_pass(backend, weights, whole, pool);
  const std::unique_ptr<ForwardPass> b = make_forward_pass(backend, weights, layers, pool);
  std::vector<uint32_t> prompt(40);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<uint32_t>((i * 37 + 11) % rp.spec.vocab);
  REQUIRE(whole.reserve(1, 41));
  REQUIRE(layers.reserve(1, 41));
  // 32 tokens: two whole pages (a page's unwritten rows are not compared)
  const SequenceChunk chunk{1, std::span<const uint32_t>(prompt.data(), 32), 0};
  std::vector<uint32_t> picked;
  a->forward_argmax(std::span<const SequenceChunk>(&chunk, 1), picked);
  b->forward_layers(std::span<const SequenceChunk>(&chunk, 1));
  std::vector<uint8_t> from_whole, from_layers;
  whole.export_pages(1, 32, from_whole);
  layers.export_pages(1, 32, from_layers);
  CHECK(from_whole.size() == 2 * whole.page_bytes());
  CHECK(from_whole == from_layers);
  const SequenceChunk last{1, std::span<const uint32_t>(prompt.data() + 32, 1), 32};
  std::vector<std::vector<float>> la, lb;
  a->forward(std::span<const SequenceChunk>(&last, 1), la);
  b->forward(std::span<const SequenceChunk>(&last, 1), lb);
  CHECK(la == lb);
}

TEST_CASE("disaggregated: every request ends; the decode side gives each request one server's tokens") {
  CpuBackend backend;
  const ResolvedPlan rp = resolve_plan(tiny_pd_plan());
  std::map<uint64_t, std::vector<uint32_t>> split_tokens, one_server;
  RunOptions options;
  options.threads = 2;
  options.prefill_chunk = 16;  // a prompt in three passes on its prefill worker
  options.on_token = [&](const TokenEvent& e) {
    CHECK(e.step == split_tokens[e.request].size());
    split_tokens[e.request].push_back(e.token);
  };
  const PdRunResult r = run_pd_plan(rp, backend, options);
  REQUIRE_FALSE(r.interrupted);
  CHECK(r.threads_per_worker == 1u);
  const uint64_t bytes = pd_kv_bytes_per_request(rp.spec, rp.plan.kv, 40);
  const MeasuredPd m = measured_pd(r);
  CHECK(m.split.completed == 6u);
  CHECK(m.colocated.completed == 6u);
  CHECK(m.kv_transfer_bytes == bytes);
  CHECK(m.kv_transfer_bytes_min == bytes);
  CHECK(r.prefill_steps.size() == 6u * 3u);
  for (size_t i = 0; i < r.arrivals.size(); ++i) {
    const PdRequestTimes& t = r.split.requests[i];
    CHECK(t.prefill_start_s >= t.arrival_s);
    CHECK(t.transfer_start_s >= t.prefill_end_s);
    // the link is paced: a crossing takes the link's latency (25 GbE's 35 us, slowed as the link)
    // and its bytes over the link's bandwidth at least
    CHECK(r.link_message_s == doctest::Approx(0.035));
    CHECK(t.transfer_end_s - t.transfer_start_s >=
          (r.link_message_s + static_cast<double>(bytes) / r.link_bytes_per_s) * (1 - 1e-9));
    CHECK(t.first_token_s > t.transfer_end_s);
    CHECK(t.finish_s > t.first_token_s);
    CHECK(split_tokens[i].size() == rp.plan.output);
  }
  CHECK(r.colocated.size() == 2u);
  CHECK(r.colocated[0].requests.size() == 3u);  // requests 0, 2, 4
  // The same arrivals on one server: the same tokens for every request (greedy, same weights).
  RunOptions single;
  single.threads = 1;
  single.arrivals = r.arrivals;
  single.on_token = [&](const TokenEvent& e) { one_server[e.request].push_back(e.token); };
  run_plan(rp, backend, single);
  CHECK(one_server == split_tokens);
  const Json j = measured_pd_json(r, m);
  CHECK(j.at("kv_transfer_bytes") == bytes);
  CHECK(j.at("split").at("completed") == 6u);
}

TEST_CASE("disaggregated, streamed layer by layer: the same pages and the same tokens") {
  CpuBackend backend;
  Plan p = tiny_pd_plan();
  p.pd->stream = true;
  const ResolvedPlan rp = resolve_plan(p);
  std::map<uint64_t, std::vector<uint32_t>> streamed, whole;
  RunOptions options;
  options.threads = 2;
  options.prefill_chunk = 24;  // two passes: the first sends each layer's first page, the second the rest
  options.on_token = [&](const TokenEvent& e) { streamed[e.request].push_back(e.token); };
  const PdRunResult r = run_pd_plan(rp, backend, options);
  const uint64_t bytes = pd_kv_bytes_per_request(rp.spec, rp.plan.kv, 40);
  // the planner cuts the transfer as the runtime's passes do: 3 layers x 2 passes
  PdServerModel planned = plan_pd_server(rp);
  planned.prefill_pass_tokens = options.prefill_chunk;
  CHECK(planned.pieces(40).size() == 6u);
  CHECK(plan_pd_server(rp).prefill_pass_tokens == RunOptions{}.prefill_chunk);  // the runtime's pass, by default
  for (size_t i = 0; i < r.arrivals.size(); ++i) {
    CHECK(r.kv_transfer_bytes[i] == bytes);
    // each of the 3 layers crosses once a pass: 6 transfers, each after the link's latency
    CHECK(r.split.requests[i].link_s >=
          (6 * r.link_message_s + static_cast<double>(bytes) / r.link_bytes_per_s) * (1 - 1e-9));
  }
  RunOptions single;
  single.threads = 1;
  single.arrivals = r.arrivals;
  single.on_token = [&](const TokenEvent& e) { whole[e.request].push_back(e.token); };
  run_plan(rp, backend, single);
  CHECK(streamed.size() == r.arrivals.size());
  CHECK(whole == streamed);
}

TEST_CASE("disaggregated: what the split cannot carry yet is refused, naming it") {
  CpuBackend backend;
  Plan p = tiny_pd_plan();
  p.offload = OffloadPlan{};
  p.offload->every = 2;
  CHECK_THROWS_WITH_AS(run_pd_plan(resolve_plan(p), backend, {}), doctest::Contains("'offload'"), InputError);
  p = tiny_pd_plan();
  p.model = "gemma-2-9b";
  p.scale = 0.05;
  CHECK_THROWS_WITH_AS(run_pd_plan(resolve_plan(p), backend, {}), doctest::Contains("window"), InputError);
  p = tiny_pd_plan();
  p.pd.reset();
  CHECK_THROWS_WITH_AS(run_pd_plan(resolve_plan(p), backend, {}), doctest::Contains("'pd'"), InputError);
}
