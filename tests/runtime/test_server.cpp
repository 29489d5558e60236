// The runtime on a tiny model: memory equals the planner's to the byte, every request ends,
// pages come and go, and batching does not change what a sequence computes.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <cmath>
#include <vector>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "planner/weights/gguf_writer.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/json_fields.hpp"
#include "planner/cost/memory_fit.hpp"
#include "planner/plan/plan.hpp"
#include "planner/plan/predict.hpp"
#include "runtime/cpu_backend.hpp"
#if INFER_PLAN_HAVE_CUDA
#include "runtime/cuda_decoder.hpp"
#endif
#include "kernels/cpu/sampling.hpp"
#include "runtime/decoder.hpp"
#include "runtime/interrupt.hpp"
#include "runtime/offload_prefetcher.hpp"
#include "runtime/paged_kv_cache.hpp"
#include "runtime/server.hpp"
#include "runtime/thread_pool.hpp"

using namespace infer_plan;
using namespace infer_plan::runtime;

namespace {
Plan tiny_plan() {
  Plan p;  // Qwen3-0.6B at 0.1: 3 layers, 256 wide, 2 query heads / 1 KV head of 128, FFN 256
  p.model = "qwen3-0.6b";
  p.scale = 0.1;
  p.weights = "Q8_0";
  p.kv.k = GgmlType::Q8_0;
  p.kv.v = GgmlType::Q4_0;
  p.context = 40;
  p.output = 8;
  p.requests = 3;
  return p;
}
}  // namespace

TEST_CASE("thread pool: every index exactly once, for any n and grain") {
  ThreadPool pool(3);
  for (uint64_t n : {1, 2, 15, 16, 17, 1000}) {
    for (uint64_t grain : {1, 16}) {
      std::vector<std::atomic<int>> hits(n);
      pool.parallel_for(n, [&](uint64_t b, uint64_t e) { for (uint64_t i = b; i < e; ++i) ++hits[i]; }, grain);
      for (uint64_t i = 0; i < n; ++i) CHECK(hits[i] == 1);
    }
  }
}

TEST_CASE("paged KV: pages for the whole life at admission, returned on release") {
  CpuBackend backend;
  const ResolvedPlan rp = resolve_plan(tiny_plan());
  PagedKvCache cache(backend, rp.spec, rp.plan.kv, 5);
  // bytes = pages x 16 tokens x kv_bytes_per_token: what fit counts
  CHECK(backend.allocated(MemoryCategory::kv_cache) == 5 * 16 * kv_bytes_per_token(rp.spec, rp.plan.kv));
  CHECK(cache.reserve(1, 33));  // 33 tokens = 3 pages
  CHECK(cache.pages_free() == 2);
  CHECK(cache.tokens_reserved(1) == 48);
  CHECK_FALSE(cache.reserve(2, 40));  // 3 pages needed, 2 free: nothing changes
  CHECK(cache.pages_free() == 2);
  cache.release(1);
  CHECK(cache.pages_free() == 5);
  CHECK(cache.reserve(2, 40));
}

TEST_CASE("the runtime decides as the planner's scheduler replayed on its arrivals and times, for each policy") {
  CpuBackend backend;
  Plan plan = tiny_plan();
  plan.context = 96;  // 32-token prompts (2 pages), 64 tokens out: 6 pages each over its life
  plan.output = 64;
  plan.load = LoadPlan{};
  plan.load->rate_per_s = 60;  // requests queue for KV pages and batch slots
  plan.load->requests = 10;
  plan.load->seed = 5;
  ResolvedPlan rp = resolve_plan(plan);
  struct Policy {
    std::optional<uint64_t> budget;
    bool mix_decodes = true, chunk_prompts = true, kv_on_demand = false;
  };
  // whole prompts alone; vLLM V1 with whole-life pages, then on demand (as vLLM); SGLang;
  // TensorRT-LLM; vLLM V0 (whole prompts, on demand). On demand, the 18-page pool (3 requests of
  // 96 tokens) admits up to 9 prompts of 2 pages, which grow to 6 pages each: preemptions.
  for (const Policy& policy : {Policy{}, Policy{12}, Policy{12, true, true, true}, Policy{12, false, true},
                               Policy{12, true, false}, Policy{std::nullopt, true, true, true}}) {
    const std::optional<uint64_t> budget = policy.chunk_prompts ? policy.budget : std::nullopt;
    CAPTURE(policy.budget.value_or(0));
    CAPTURE(policy.mix_decodes);
    CAPTURE(policy.chunk_prompts);
    CAPTURE(policy.kv_on_demand);
    rp.server.step_token_budget = policy.budget;
    rp.server.mix_decodes = policy.mix_decodes;
    rp.server.chunk_prompts = policy.chunk_prompts;
    rp.server.kv_on_demand = policy.kv_on_demand;
    RunOptions o;
    o.threads = 2;
    const RunResult r = run_plan(rp, backend, o);
    const auto m = measured_figures(r);
    CHECK(m.completed == 10);
    REQUIRE(m.schedule_replay);
    CHECK(m.schedule_replay->identical);
    CHECK(m.schedule_replay->first_difference == "");
    CHECK(m.schedule_replay->steps == r.schedule.size());
    CHECK(m.steps > 10);
    // 32-token prompts in a 12-token budget: every prompt over several steps (none without one)
    if (budget) CHECK(m.chunks_continued >= 20);
    else CHECK(m.chunks_continued == 0);
    // (how many are preempted depends on the machine's speed against the arrivals; the next test
    // makes them certain)
    if (!policy.kv_on_demand) CHECK((m.preemptions == 0 && m.recomputed_tokens == 0));
    CHECK(r.kv_peak_pages <= r.kv_pages);
  }
}

TEST_CASE("preemption by recompute: each request's tokens are those of a run that never preempts") {
  CpuBackend backend;
  Plan plan = tiny_plan();
  plan.context = 96;  // as above: 2 pages at admission, 6 over a request's life
  plan.output = 64;
  plan.load = LoadPlan{};
  plan.load->rate_per_s = 1e4;  // all within a millisecond: pages run out on any machine
  plan.load->requests = 8;
  plan.load->seed = 2;
  const auto tokens_of = [&](bool kv_on_demand, std::optional<uint64_t> budget) {
    ResolvedPlan rp = resolve_plan(plan);
    rp.server.kv_on_demand = kv_on_demand;
    rp.server.step_token_budget = budget;
    std::map<uint64_t, std::vector<uint32_t>> out;
    RunOptions o;
    o.threads = 2;
    o.on_token = [&](const TokenEvent& e) {
      CHECK(e.step == out[e.request].size());  // in order within a request, none twice
      out[e.request].push_back(e.token);
    };
    const RunResult r = run_plan(rp, backend, o);
    return std::pair{out, r.preemptions};
  };
  const auto reserved = tokens_of(false, std::nullopt);
  CHECK(reserved.second == 0);
  REQUIRE(reserved.first.size() == 8);
  for (const std::optional<uint64_t> budget : {std::optional<uint64_t>{}, std::optional<uint64_t>{12}}) {
    CAPTURE(budget.value_or(0));
    const auto preempted = tokens_of(true, budget);
    CHECK(preempted.second > 0);
    CHECK(preempted.first == reserved.first);
  }
}

TEST_CASE("prefix caching: requests that begin on the cached prefix's pages give the tokens of whole prefills") {
  CpuBackend backend;
  Plan plan = tiny_plan();  // 32-token prompts, 8 out; their first 20 tokens shared (one whole page)
  plan.load = LoadPlan{};
  plan.load->rate_per_s = 1e4;  // all within a millisecond
  plan.load->requests = 8;
  plan.load->seed = 4;
  plan.load->shared_prefix = 20;
  const auto run_with = [&](bool prefix_caching, std::optional<uint64_t> budget, bool kv_on_demand) {
    ResolvedPlan rp = resolve_plan(plan);
    rp.server.prefix_caching = prefix_caching;
    rp.server.step_token_budget = budget;
    rp.server.kv_on_demand = kv_on_demand;
    std::map<uint64_t, std::vector<uint32_t>> out;
    RunOptions o;
    o.threads = 2;
    o.on_token = [&](const TokenEvent& e) { out[e.request].push_back(e.token); };
    const RunResult r = run_plan(rp, backend, o);
    const auto m = measured_figures(r);
    REQUIRE(m.schedule_replay);
    CHECK(m.schedule_replay->identical);
    CHECK(m.schedule_replay->first_difference == "");
    CHECK(m.completed == 8);
    return std::tuple{out, m.prefix_hit_tokens, m.preemptions};
  };
  const auto [whole, no_hits, unused] = run_with(false, std::nullopt, false);
  CHECK(no_hits == 0);
  REQUIRE(whole.size() == 8);
  for (const bool on_demand : {false, true})
    for (const std::optional<uint64_t> budget : {std::optional<uint64_t>{}, std::optional<uint64_t>{12}}) {
      CAPTURE(on_demand);
      CAPTURE(budget.value_or(0));
      const auto [tokens, hits, preempted] = run_with(true, budget, on_demand);
      // Every admission after the first prefill passed the cached page begins after it: the 7 other
      // requests, and each preempted one again (less any preempted before the cache existed).
      CHECK(hits % 16 == 0);
      CHECK(hits >= 16 * 7);
      CHECK(hits <= 16 * (7 + preempted));
      CHECK(tokens == whole);
    }
}

TEST_CASE("chunked prefill: a prompt over several steps, mixed with decodes, gives the tokens of one pass") {
  CpuBackend backend;
  const auto tokens_of = [&](std::optional<uint64_t> budget, bool mix_decodes) {
    ResolvedPlan rp = resolve_plan(tiny_plan());  // 3 requests, 32-token prompts, 8 tokens out
    rp.server.step_token_budget = budget;
    rp.server.mix_decodes = mix_decodes;
    std::map<uint64_t, std::vector<uint32_t>> out;
    RunOptions o;
    o.threads = 2;
    o.on_token = [&](const TokenEvent& e) {
      CHECK(e.step == out[e.request].size());  // in order within a request
      out[e.request].push_back(e.token);
    };
    const RunResult r = run_plan(rp, backend, o);
    return std::pair{out, r.chunks_continued};
  };
  const auto whole = tokens_of(std::nullopt, true);
  CHECK(whole.second == 0);
  REQUIRE(whole.first.size() == 3);
  // 7 tokens a step: chunks that end across pages (16 tokens) and beside the others' decodes.
  for (const uint64_t budget : {7, 20}) {
    CAPTURE(budget);
    const auto chunked = tokens_of(budget, true);
    CHECK(chunked.second > 0);
    CHECK(chunked.first == whole.first);
    const auto alone = tokens_of(budget, false);  // SGLang's: chunks in steps of their own
    CHECK(alone.second > 0);
    CHECK(alone.first == whole.first);
  }
}

TEST_CASE("closed batch: memory equals fit to the byte; every request completes with its tokens") {
  CpuBackend backend;
  const Plan plan = tiny_plan();
  const ResolvedPlan rp = resolve_plan(plan);
  RunOptions o;
  o.threads = 2;
  const RunResult r = run_plan(rp, backend, o);
  const FitResult& fit = rp.fit;
  CHECK(r.weights_bytes == fit.weights_bytes);
  CHECK(r.kv_bytes == fit.kv_bytes);  // 3 requests x 48 tokens (40 rounded up to pages)
  REQUIRE(r.requests.size() == 3);
  uint64_t decode_steps = 0;
  for (const StepRecord& s : r.steps) decode_steps += s.prefill ? 0 : 1;
  // Prefill first: all three prompts run, then 7 iterations of the batch of 3 (output - 1).
  CHECK(decode_steps == 7);
  for (const RequestRecord& q : r.requests) {
    CHECK(q.rejected.empty());
    CHECK(q.finish_s >= q.first_token_s);
    CHECK(q.first_token_s > q.start_s);
  }
  const auto m = measured_figures(r);
  CHECK(m.completed == 3);
  CHECK(m.decode_iteration_ms.count == 7);
  // Little's law on the records: 3 requests present from 0 to their finish.
  CHECK(m.littles_law_in_system > 0);
  // Memory is returned when the run ends.
  CHECK(backend.allocated(MemoryCategory::weights) == 0);
  CHECK(backend.allocated(MemoryCategory::kv_cache) == 0);
}

TEST_CASE("Poisson load: the planner's arrivals, every request accounted for") {
  CpuBackend backend;
  Plan plan = tiny_plan();
  plan.load = LoadPlan{};
  plan.load->rate_per_s = 200;  // faster than the server: requests queue for KV pages
  plan.load->requests = 12;
  const ResolvedPlan rp = resolve_plan(plan);
  const RunResult r = run_plan(rp, backend, {});
  const std::vector<ServingRequest> drawn = serving_requests(plan_serving_load(plan));
  REQUIRE(r.requests.size() == drawn.size());
  uint64_t most_running = 0;
  for (size_t i = 0; i < drawn.size(); ++i) {
    CHECK(r.requests[i].arrival_s == drawn[i].arrival_s);
    CHECK(r.requests[i].start_s >= r.requests[i].arrival_s);
    CHECK(r.requests[i].finish_s > 0);
  }
  for (const StepRecord& s : r.steps) most_running = std::max(most_running, s.batch);
  CHECK(most_running <= plan.requests);  // the KV pool holds `requests` requests at a time
  CHECK(measured_figures(r).completed == 12);
}

TEST_CASE("deadline: arrivals the planner predicts late are rejected; none is lost") {
  CpuBackend backend;
  Plan plan = tiny_plan();
  plan.load = LoadPlan{};
  plan.load->rate_per_s = 2000;  // a burst: later arrivals would wait behind the first ones
  plan.load->requests = 20;
  plan.deadline_s = 1e-9;  // less than any request's own prefill on the roofline: all rejected
  ResolvedPlan rp = resolve_plan(plan);
  RunResult r = run_plan(rp, backend, {});
  auto m = measured_figures(r);
  CHECK(m.rejected_by_reason["deadline"] == 20);
  CHECK(m.completed == 0);
  plan.deadline_s = 1e6;  // nobody is late
  rp = resolve_plan(plan);
  r = run_plan(rp, backend, {});
  m = measured_figures(r);
  CHECK(m.completed == 20);
  CHECK(m.rejected == 0);
  CHECK(m.completed_late == 0);
}

TEST_CASE("overload at twice the planner's capacity: every request accounted for; peak memory within the fit") {
  Plan plan = tiny_plan();
  ResolvedPlan rp = resolve_plan(plan);
  // The planner's capacity: a full batch of `requests` sequences every prefill + output x step.
  const double request_s = rp.server.prefill_s(plan.context - plan.output) +
                           static_cast<double>(plan.output) * rp.server.decode_iteration_s(plan.requests, plan.context);
  const double capacity_per_s = static_cast<double>(plan.requests) / request_s;
  plan.load = LoadPlan{};
  plan.load->rate_per_s = 2 * capacity_per_s;
  plan.load->requests = 30;
  for (const std::optional<double> deadline : {std::optional<double>{}, std::optional<double>{4 * request_s}}) {
    plan.deadline_s = deadline;
    rp = resolve_plan(plan);
    CpuBackend backend;
    const RunResult r = run_plan(rp, backend, {});
    const runtime::MeasuredFigures m = measured_figures(r);
    CHECK(m.completed + m.rejected == 30);  // arrived = completed + rejected: none lost, none twice
    CHECK(m.requests == 30);
    CHECK_FALSE(m.interrupted);
    CHECK(r.kv_peak_pages >= 1);
    CHECK(r.kv_peak_pages <= r.kv_pages);  // never more pages than the pool fit sized
    // every category's peak is what the setup allocated: nothing grows while serving
    CHECK(r.peak_bytes.at(MemoryCategory::kv_cache) == rp.fit.kv_bytes);
    CHECK(r.peak_bytes.at(MemoryCategory::weights) == r.weights_bytes);
    CHECK(m.peak_bytes.at("kv_cache") == rp.fit.kv_bytes);
  }
}

TEST_CASE("SIGINT during a run: the step ends, the figures so far come back marked interrupted") {
  Plan plan = tiny_plan();
  plan.load = LoadPlan{};
  plan.load->rate_per_s = 20;  // 400 arrivals over about 20 s: the signal comes long before the end
  plan.load->requests = 400;
  const ResolvedPlan rp = resolve_plan(plan);
  CpuBackend backend;
  const InterruptGuard guard;
  std::thread signaller([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    kill(getpid(), SIGINT);
  });
  const RunResult r = run_plan(rp, backend, {});
  signaller.join();
  CHECK(r.interrupted);
  CHECK(interrupt_requested());
  CHECK(r.unfinished > 0);
  CHECK(r.requests.size() + r.unfinished == 400);
  for (const RequestRecord& q : r.requests) CHECK((q.finish_s >= 0 || !q.rejected.empty()));  // only ended ones
  const runtime::MeasuredFigures m = measured_figures(r);
  CHECK(m.interrupted);
  CHECK(m.completed + m.rejected + m.unfinished == m.requests);
  CHECK(measured_json(m).at("interrupted") == true);
}

TEST_CASE("decoder: a sequence computes the same logits alone and in a batch") {
  CpuBackend backend;
  const ResolvedPlan rp = resolve_plan(tiny_plan());
  ThreadPool pool(2);
  ModelWeights w(backend, rp.spec, rp.weights.layout, 7, pool);
  PagedKvCache cache(backend, rp.spec, rp.plan.kv, 8);
  Decoder d(w, cache, pool);
  const std::vector<uint32_t> a{5, 17, 300, 2}, b{9, 9, 41};
  std::vector<std::vector<float>> alone_a, alone_b, together;
  for (SequenceId s : {1, 2, 3, 4}) REQUIRE(cache.reserve(s, 16));
  const SequenceChunk ca{1, a, 0}, cb{2, b, 0};
  d.forward(std::span(&ca, 1), alone_a);
  d.forward(std::span(&cb, 1), alone_b);
  const std::vector<SequenceChunk> both{{3, a, 0}, {4, b, 0}};
  d.forward(both, together);
  REQUIRE(together.size() == 2);
  // Each token's activations are converted and multiplied on their own, so batching is exact.
  CHECK(together[0] == alone_a[0]);
  CHECK(together[1] == alone_b[0]);
  // Decoding one more token after the prompt (KV read back from the pages) also agrees.
  const std::vector<uint32_t> next{11};
  std::vector<std::vector<float>> step_alone, step_batch;
  const SequenceChunk na{1, next, a.size()};
  d.forward(std::span(&na, 1), step_alone);
  const std::vector<SequenceChunk> nb{{3, next, a.size()}, {4, next, b.size()}};
  d.forward(nb, step_batch);
  CHECK(step_batch[0] == step_alone[0]);
  // And the prompt in two chunks equals it in one (chunked prefill).
  REQUIRE(cache.reserve(5, 16));
  std::vector<std::vector<float>> part;
  const SequenceChunk first{5, std::span(a).first(2), 0}, second{5, std::span(a).subspan(2), 2};
  d.forward(std::span(&first, 1), part);
  d.forward(std::span(&second, 1), part);
  REQUIRE(part[0].size() == alone_a[0].size());
  double worst = 0;
  for (size_t i = 0; i < part[0].size(); ++i) worst = std::max(worst, static_cast<double>(std::abs(part[0][i] - alone_a[0][i])));
  CHECK(worst == 0);  // row by row, the same operations in the same order
}

TEST_CASE("every architecture runs: Qwen3 MoE (top-k experts), Llama 3.1 (normal RoPE, rope_freqs), Qwen3 tied") {
  for (const char* model : {"qwen3-235b-a22b", "llama-3.1-8b", "qwen3-0.6b"}) {
    CAPTURE(model);
    CpuBackend backend;
    Plan plan = tiny_plan();
    plan.model = model;
    plan.scale = 0.03;  // 235B: 3 layers, 256 wide, 8 of 8 experts (128 x 0.03 = 4 < 8 active)
    const ResolvedPlan rp = resolve_plan(plan);
    const RunResult r = run_plan(rp, backend, {});
    const FitResult& fit = rp.fit;
    CHECK(r.weights_bytes == fit.weights_bytes);
    CHECK(measured_figures(r).completed == plan.requests);
    // Batching leaves each sequence's logits unchanged, the MoE routing included.
    ThreadPool pool(2);
    ModelWeights w(backend, rp.spec, rp.weights.layout, 3, pool);
    PagedKvCache cache(backend, rp.spec, plan.kv, 4);
    Decoder d(w, cache, pool);
    for (SequenceId s : {1, 2, 3}) REQUIRE(cache.reserve(s, 16));
    const std::vector<uint32_t> a{1, 2, 3}, b{7, 8};
    std::vector<std::vector<float>> alone, together;
    const SequenceChunk ca{1, a, 0};
    d.forward(std::span(&ca, 1), alone);
    const std::vector<SequenceChunk> both{{2, a, 0}, {3, b, 0}};
    d.forward(both, together);
    CHECK(together[0] == alone[0]);
    bool finite = true;
    for (float v : alone[0]) finite = finite && std::isfinite(v);
    CHECK(finite);
  }
}

TEST_CASE("GGUF: the runtime runs a file's own tensors, byte for byte") {
  // Write a small Qwen3 as a GGUF (the synthetic tensors of seed 9), then run the file. At Q4_0 the
  // CPU keeps the matrices interleaved (kernels/cpu/interleave): the file gets GGML's order back
  // (ggml_bytes), and loading it interleaves them again, to the same bytes.
  for (const char* weights : {"Q8_0", "Q4_0:pure"}) {
    CAPTURE(weights);
    CpuBackend backend;
    Plan plan = tiny_plan();
    plan.weights = weights;
    const ResolvedPlan rp = resolve_plan(plan);
    ThreadPool pool(2);
    const ModelWeights synthetic(backend, rp.spec, rp.weights.layout, 9, pool);
    std::vector<GgufTensorData> tensors;
    uint64_t interleaved = 0;
    for (const WeightTensor& w : synthetic.tensors()) {
      tensors.push_back({w.placement.tensor.name, w.placement.tensor.shape, w.type(), w.ggml_bytes()});
      interleaved += w.order == kernels::RowOrder::interleaved ? 1 : 0;
    }
    // Every matrix but the embedding (3 layers x q, k, v, output, gate, up, down), where AVX2 runs
    const bool q4 = std::string(weights) != "Q8_0";
    CHECK(interleaved == (q4 && kernels::prefers_interleaved(GgmlType::Q4_0, 256) ? 21u : 0u));
    const std::string path = (std::filesystem::temp_directory_path() / "infer-plan-runtime-tiny.gguf").string();
    write_gguf(path, gguf_metadata_for(rp.spec), tensors);

    plan.model = path;
    plan.scale = 1;
    plan.weights = "file";
    const ResolvedPlan from_file = resolve_plan(plan);
    const ModelWeights loaded(backend, from_file.spec, from_file.weights.layout, path, pool);
    REQUIRE(loaded.tensors().size() == synthetic.tensors().size());
    for (size_t i = 0; i < loaded.tensors().size(); ++i) {
      const WeightTensor &a = loaded.tensors()[i], &b = synthetic.tensors()[i];
      CHECK(a.placement.tensor.name == b.placement.tensor.name);
      CHECK(a.order == b.order);
      CHECK(std::equal(a.data(), a.data() + a.placement.bytes, b.data()));
    }
    CpuBackend fresh;  // its accounting sees only the run's own buffers
    const RunResult r = run_plan(from_file, fresh, {});
    CHECK(measured_figures(r).completed == plan.requests);
    CHECK(r.weights_bytes == from_file.weights.bytes);
    // A .gguf runs at its own size.
    plan.scale = 0.5;
    CHECK_THROWS_AS(run_plan(resolve_plan(plan), backend, {}), InputError);
    std::filesystem::remove(path);
  }
}

TEST_CASE("GGUF: a Llama 3.1 file's rope_freqs are applied") {
  // The synthetic weights hold llama3's factors (pair 0's, a fast one, is 1). A file whose
  // rope_freqs.weight holds 2s must give the
  // same logits for a token at position 0 (an angle of 0 is 0 whatever divides it) and different
  // ones once positions > 0 are rotated.
  CpuBackend backend;
  Plan plan = tiny_plan();
  plan.model = "llama-3.1-8b";
  plan.scale = 0.03;
  plan.weights = "F32";
  const ResolvedPlan rp = resolve_plan(plan);
  REQUIRE(rp.spec.rope_freqs_tensor);
  ThreadPool pool(2);
  const ModelWeights synthetic(backend, rp.spec, rp.weights.layout, 9, pool);
  REQUIRE(synthetic.rope_freqs());
  CHECK(synthetic.rope_freqs()->floats()[0] == 1.0f);
  std::vector<GgufTensorData> tensors;
  for (const WeightTensor& w : synthetic.tensors()) {
    std::vector<uint8_t> bytes = w.ggml_bytes();
    if (w.placement.tensor.role == TensorRole::rope_freqs) {
      const std::vector<float> twos(w.cols, 2.0f);
      std::memcpy(bytes.data(), twos.data(), bytes.size());
    }
    tensors.push_back({w.placement.tensor.name, w.placement.tensor.shape, w.type(), std::move(bytes)});
  }
  const std::string path = (std::filesystem::temp_directory_path() / "infer-plan-runtime-llama3.gguf").string();
  write_gguf(path, gguf_metadata_for(rp.spec), tensors);
  Plan file_plan = plan;
  file_plan.model = path;
  file_plan.scale = 1;
  file_plan.weights = "file";
  const ResolvedPlan from_file = resolve_plan(file_plan);
  const ModelWeights loaded(backend, from_file.spec, from_file.weights.layout, path, pool);
  REQUIRE(loaded.rope_freqs());
  CHECK(loaded.rope_freqs()->floats()[0] == 2.0f);

  auto logits_of = [&](const ModelWeights& w, const ModelSpec& spec, const std::vector<uint32_t>& prompt) {
    PagedKvCache cache(backend, spec, plan.kv, 4);
    REQUIRE(cache.reserve(1, 16));
    Decoder d(w, cache, pool);
    std::vector<std::vector<float>> logits;
    const SequenceChunk c{1, prompt, 0};
    d.forward(std::span(&c, 1), logits);
    return logits.back();
  };
  CHECK(logits_of(loaded, from_file.spec, {5}) == logits_of(synthetic, rp.spec, {5}));
  CHECK(logits_of(loaded, from_file.spec, {5, 6, 7}) != logits_of(synthetic, rp.spec, {5, 6, 7}));
  std::filesystem::remove(path);
}

TEST_CASE("offload: the same logits token for token, with and without offload (any part, 1 or 2 slots)") {
  // Offload only moves bytes: each step's logits must be bit-identical to the plain decoder's,
  // greedy token after token (a wrong slot, a stale group or a half copy would change them).
  // Q4_0 too: its matrices are interleaved inside the host groups and read from the slots so.
  for (const char* weights : {"Q8_0", "Q4_0:pure"})
    for (OffloadPart part : {OffloadPart::ffn, OffloadPart::attn, OffloadPart::layer})
      for (uint64_t every : {1, 2})
        for (uint64_t slots : {1, 2}) {
          Plan plan = tiny_plan();  // 3 layers
          plan.weights = weights;
          const ResolvedPlan rp = resolve_plan(plan);
          CAPTURE(weights);
          CAPTURE(offload_part_name(part));
          CAPTURE(every);
          CAPTURE(slots);
          CpuBackend backend;
          ThreadPool pool(2);
          ModelWeights plain(backend, rp.spec, rp.weights.layout, 7, pool);
          ModelWeights moved(backend, rp.spec, rp.weights.layout, 7, pool, WeightsOffload{part, every});
          CHECK(moved.offload_groups().size() == rp.spec.layers / every);
          std::vector<OffloadGroupSource> groups;
          uint64_t slot_bytes = 0;
          for (const OffloadGroup& g : moved.offload_groups()) {
            groups.push_back({static_cast<const uint8_t*>(g.host.data), g.host.bytes});
            slot_bytes = std::max(slot_bytes, g.host.bytes);
          }
          OffloadPrefetcher pf(backend, groups, slots, slot_bytes);
          PagedKvCache cache_a(backend, rp.spec, rp.plan.kv, 2), cache_b(backend, rp.spec, rp.plan.kv, 2);
          REQUIRE(cache_a.reserve(1, 16));
          REQUIRE(cache_b.reserve(1, 16));
          Decoder a(plain, cache_a, pool), b(moved, cache_b, pool, 0, &pf);
          std::vector<uint32_t> tokens{5, 17, 300, 2};
          std::vector<std::vector<float>> la, lb;
          uint64_t past = 0, differing = 0;
          for (int step = 0; step < 6; ++step) {  // the prompt, then five greedy tokens
            const SequenceChunk c{1, std::span(tokens).subspan(past), past};
            a.forward(std::span(&c, 1), la);
            b.forward(std::span(&c, 1), lb);
            differing += la[0] == lb[0] ? 0 : 1;
            past = tokens.size();
            tokens.push_back(kernels::argmax(la[0]));
          }
          CHECK(differing == 0);
        }
}

TEST_CASE("offload: host pool, slots and bytes per round equal the offload planner's to the byte") {
  for (const char* part : {"ffn", "attn", "layer"}) {
    CAPTURE(part);
    CpuBackend backend;
    Plan plan = tiny_plan();
    plan.offload = OffloadPlan{part, 2, 2, ""};  // layer 1 of 3
    const ResolvedPlan rp = resolve_plan(plan);
    RunOptions o;
    o.threads = 2;
    const RunResult r = run_plan(rp, backend, o);
    const OffloadResult p = plan_offload(rp.spec, rp.weights.layout, rp.weights.scale, plan.kv, plan_offload_input(rp),
                                         nullptr, 0);
    const FitResult& fit = rp.fit;
    REQUIRE(p.layers_offloaded == 1);
    CHECK(r.offload_host_bytes == p.freed_bytes);
    CHECK(r.offload_buffer_bytes == p.buffer_bytes);
    CHECK(r.weights_bytes + r.offload_host_bytes == fit.weights_bytes);  // fit counts every weight
    uint64_t rounds = 0;
    for (const StepRecord& s : r.steps) {
      CHECK(s.offload_bytes == p.bytes_per_round);  // prefill passes move the same groups
      rounds += s.prefill ? 0 : 1;
    }
    const auto m = measured_figures(r);
    REQUIRE(m.offload);
    CHECK(m.offload->rounds == rounds);
    CHECK(m.offload->bytes_per_round.max == static_cast<double>(p.bytes_per_round));
    CHECK(m.offload->round_ms.p50 > 0);
    CHECK(m.offload->bandwidth_bytes_per_s > 0);
    CHECK(measured_figures(r).completed == plan.requests);
    CHECK(backend.allocated(MemoryCategory::offload_host) == 0);
    CHECK(backend.allocated(MemoryCategory::offload_buffers) == 0);
  }
}

TEST_CASE("offload: bad fields are refused with the field named") {
  struct Case {
    OffloadPlan offload;
    const char* message;
  };
  const Case cases[] = {
      {{"mlp", 2, 2, ""}, "offload.part: 'mlp' is not an offload part; expected ffn, attn or layer"},
      {{"ffn", 0, 2, ""}, "offload.every (--every): 0 is out of range; expected 1 (every layer) to 3"},
      {{"ffn", 4, 2, ""}, "offload.every (--every): 4 is out of range"},
      {{"ffn", 2, 0, ""}, "offload.buffers (--buffers): 0 is out of range; expected 1 to 3"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.message);
    CpuBackend backend;
    Plan plan = tiny_plan();
    plan.offload = c.offload;
    std::string what;
    try {  // resolve_plan checks the section (the fit counts what it moves)
      run_plan(resolve_plan(plan), backend, {});
    } catch (const InputError& e) {
      what = e.what();
    }
    CHECK(what.find(c.message) != std::string::npos);
    CHECK(backend.allocated(MemoryCategory::weights) == 0);  // refused before anything is allocated
  }
}

TEST_CASE("a given prompt, emitted tokens and logits: what the decoder computes teacher-forced") {
  // run_plan with a prompt of 5 ids, 6 outputs, greedy, logits emitted: one event per token in
  // order, at positions 4..9, each token the argmax of its logits, and those logits the same as
  // one pass of the decoder over prompt + the first five outputs (every_token), row by row: the
  // runtime's continuous batching computes what a teacher-forced pass computes.
  Plan plan = tiny_plan();
  plan.requests = 1;
  plan.output = 6;
  plan.context = 11;
  const ResolvedPlan rp = resolve_plan(plan);
  RunOptions o;
  o.prompt = {3, 14, 15, 92, 65};
  o.token_logits = true;
  std::vector<TokenEvent> events;
  std::vector<std::vector<float>> rows;
  o.on_token = [&](const TokenEvent& e) {
    events.push_back(e);
    rows.emplace_back(e.logits.begin(), e.logits.end());
  };
  CpuBackend backend;
  const RunResult r = run_plan(rp, backend, o);
  REQUIRE(events.size() == 6);
  std::vector<uint32_t> sequence = o.prompt;
  for (size_t i = 0; i < events.size(); ++i) {
    CHECK(events[i].request == 0);
    CHECK(events[i].step == i);
    CHECK(events[i].position == 4 + i);
    CHECK(events[i].token == kernels::argmax(rows[i]));
    sequence.push_back(events[i].token);
  }
  CHECK(r.requests.at(0).prompt_tokens == 5);
  ThreadPool pool(2);
  const ModelWeights w(backend, rp.spec, rp.weights.layout, o.seed, pool);
  PagedKvCache cache(backend, rp.spec, rp.plan.kv, 2);
  REQUIRE(cache.reserve(1, 16));
  Decoder d(w, cache, pool);
  std::vector<std::vector<float>> forced;
  const SequenceChunk all{1, std::span(sequence).first(10), 0};
  d.forward(std::span(&all, 1), forced, true);
  REQUIRE(forced.size() == 10);
  for (size_t i = 0; i < 6; ++i) CHECK(forced[4 + i] == rows[i]);

  // Bad prompts are refused before any weight is written.
  o.prompt = {3, static_cast<uint32_t>(rp.spec.vocab)};
  CHECK_THROWS_WITH_AS(run_plan(rp, backend, o), doctest::Contains("is not in the vocabulary"), InputError);
  o.prompt = std::vector<uint32_t>(6, 1);
  CHECK_THROWS_WITH_AS(run_plan(rp, backend, o), doctest::Contains("need 12 tokens of context; the plan has 11"),
                       InputError);
}

TEST_CASE("sampling: a seed gives the same tokens, and a request's tokens do not depend on its batch") {
  Plan plan = tiny_plan();
  plan.output = 12;
  plan.context = 16;
  const auto tokens_of = [&](uint64_t requests, float temperature, uint64_t seed) {
    plan.requests = requests;
    RunOptions o;
    o.prompt = {7, 8, 9, 10};
    o.seed = seed;
    o.sampling.temperature = temperature;
    std::map<uint64_t, std::vector<uint32_t>> tokens;
    o.on_token = [&](const TokenEvent& e) { tokens[e.request].push_back(e.token); };
    CpuBackend backend;
    run_plan(resolve_plan(plan), backend, o);
    return tokens;
  };
  const auto alone = tokens_of(1, 1.5f, 5), batched = tokens_of(3, 1.5f, 5), again = tokens_of(3, 1.5f, 5);
  REQUIRE(alone.at(0).size() == 12);
  CHECK(batched.at(0) == alone.at(0));
  CHECK(again == batched);
  // Requests 0..2 share the prompt but not the generator: at temperature 1.5 over 12 draws they
  // do not all agree (their first tokens are drawn independently).
  CHECK((batched.at(1) != batched.at(0) || batched.at(2) != batched.at(0)));
  const auto greedy = tokens_of(3, 0.0f, 5);
  CHECK(greedy.at(1) == greedy.at(0));  // greedy: the same prompt gives the same tokens
}

TEST_CASE("GGUF at other types: the file's weights quantized on load, not synthetic ones") {
  // A Q8_0 file run at Q4_0:pure: the logits run_plan emits equal a decoder's over the file's
  // weights converted by ModelWeights (and differ from synthetic Q4_0 weights of the same shape).
  CpuBackend backend;
  ThreadPool pool(2);
  const ResolvedPlan rp = resolve_plan(tiny_plan());  // Q8_0 weights
  const ModelWeights synthetic(backend, rp.spec, rp.weights.layout, 11, pool);
  std::vector<GgufTensorData> tensors;
  for (const WeightTensor& w : synthetic.tensors())
    tensors.push_back({w.placement.tensor.name, w.placement.tensor.shape, w.type(), w.ggml_bytes()});
  const std::string path = (std::filesystem::temp_directory_path() / "infer-plan-runtime-convert.gguf").string();
  write_gguf(path, gguf_metadata_for(rp.spec), tensors);
  Plan plan = tiny_plan();
  plan.model = path;
  plan.scale = 1;
  plan.weights = "Q4_0:pure";
  plan.requests = 1;
  plan.output = 3;
  plan.context = 8;
  const ResolvedPlan q4 = resolve_plan(plan);
  RunOptions o;
  o.prompt = {1, 2, 3, 4, 5};
  o.token_logits = true;
  std::vector<std::vector<float>> emitted;
  o.on_token = [&](const TokenEvent& e) { emitted.emplace_back(e.logits.begin(), e.logits.end()); };
  CpuBackend run_backend;
  run_plan(q4, run_backend, o);
  REQUIRE(emitted.size() == 3);
  Plan as_stored = plan;
  as_stored.weights = "file";
  const ResolvedPlan file = resolve_plan(as_stored);
  const ModelWeights loaded(backend, file.spec, file.weights.layout, path, pool);
  const ModelWeights converted(backend, loaded, q4.weights.layout, pool);
  const ModelWeights synthetic_q4(backend, q4.spec, q4.weights.layout, o.seed, pool);
  const auto first_logits = [&](const ModelWeights& w) {
    PagedKvCache cache(backend, q4.spec, q4.plan.kv, 2);
    REQUIRE(cache.reserve(1, 8));
    Decoder d(w, cache, pool);
    std::vector<std::vector<float>> logits;
    const SequenceChunk c{1, o.prompt, 0};
    d.forward(std::span(&c, 1), logits);
    return logits.back();
  };
  CHECK(first_logits(converted) == emitted[0]);
  CHECK(first_logits(synthetic_q4) != emitted[0]);
  std::filesystem::remove(path);
}

namespace {
// Qwen3-0.6B's config with sliding-window layers of `window` tokens where `sliding` says so,
// written where a plan can name it.
std::string windowed_config(uint64_t window, const std::vector<bool>& sliding, const char* file) {
  Json c = read_json_file("scenarios/models/qwen3-0.6b.json");  // at tiny_plan's scale 0.1 widths
  c["hidden_size"] = 256;
  c["intermediate_size"] = 256;
  c["num_attention_heads"] = 2;
  c["num_key_value_heads"] = 1;
  c["vocab_size"] = 15194;
  c["num_hidden_layers"] = sliding.size();
  c["sliding_window"] = window;
  c["layer_types"] = Json::array();
  for (bool s : sliding) c["layer_types"].push_back(s ? "sliding_attention" : "full_attention");
  const std::string path = (std::filesystem::temp_directory_path() / file).string();
  std::ofstream(path) << c.dump();
  return path;
}

std::vector<float> last_logits(Decoder& d, PagedKvCache& cache, SequenceId seq, std::span<const uint32_t> tokens,
                               uint64_t chunk) {
  REQUIRE(cache.reserve(seq, tokens.size()));
  std::vector<std::vector<float>> out;
  for (uint64_t from = 0; from < tokens.size(); from += chunk) {
    const SequenceChunk c{seq, tokens.subspan(from, std::min<uint64_t>(chunk, tokens.size() - from)), from};
    d.forward(std::span(&c, 1), out);
  }
  return out.back();
}
}  // namespace

TEST_CASE("sliding window: a window layer sees exactly its last W positions, from a ring of W tokens") {
  std::vector<uint32_t> tokens(40);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint32_t>((i * 37 + 11) % 200);
  // One layer, a 16-token window, F32 weights and cache: the last token's output depends only on
  // the last 16 tokens' embeddings and their relative positions, so the 40-token sequence ends as
  // the 16-token sequence of its tail does (RoPE at other absolute angles: float rounding only).
  Plan plan = tiny_plan();
  plan.model = windowed_config(16, {true}, "infer_plan_swa_1.json");
  plan.scale = 1;
  plan.weights = "F32";
  plan.kv = {GgmlType::F32, GgmlType::F32};
  const ResolvedPlan rp = resolve_plan(plan);
  REQUIRE(rp.spec.layers == 1);
  REQUIRE(rp.spec.layer_window(0) == 16);
  CpuBackend backend;
  ThreadPool pool(2);
  ModelWeights w(backend, rp.spec, rp.weights.layout, 5, pool);
  PagedKvCache cache(backend, rp.spec, plan.kv, 8);
  Decoder d(w, cache, pool);
  const std::vector<float> whole = last_logits(d, cache, 1, tokens, 40);  // one chunk: stored and attended in waves
  CHECK(cache.ring_tokens(1) == 16);  // the ring: one page-rounded window, not 48 tokens
  const std::vector<float> tail = last_logits(d, cache, 2, std::span(tokens).subspan(24), 16);
  double worst = 0, scale = 0;
  for (size_t i = 0; i < whole.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(whole[i] - tail[i])));
    scale = std::max(scale, static_cast<double>(std::abs(tail[i])));
  }
  CHECK(worst <= 1e-4 * scale);
  // Without the window the same 40 tokens end elsewhere: the check above can tell.
  Plan full = plan;
  full.model = windowed_config(16, {false}, "infer_plan_swa_0.json");
  const ResolvedPlan rf = resolve_plan(full);
  ModelWeights wf(backend, rf.spec, rf.weights.layout, 5, pool);
  PagedKvCache cf(backend, rf.spec, plan.kv, 8);
  Decoder df(wf, cf, pool);
  const std::vector<float> unwindowed = last_logits(df, cf, 1, tokens, 40);
  double apart = 0;
  for (size_t i = 0; i < whole.size(); ++i) apart = std::max(apart, static_cast<double>(std::abs(whole[i] - unwindowed[i])));
  CHECK(apart > 100 * worst);
}

TEST_CASE("sliding window: alternating layers give the same logits in any chunking; memory equals fit") {
  std::vector<uint32_t> tokens(45);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint32_t>((i * 53 + 3) % 250);
  Plan plan = tiny_plan();
  plan.model = windowed_config(16, {true, false, true}, "infer_plan_swa_3.json");
  plan.scale = 1;
  REQUIRE(resolve_plan(plan).spec.window_layer_count() == 2);
  const ResolvedPlan rp = resolve_plan(plan);
  CpuBackend backend;
  ThreadPool pool(2);
  ModelWeights w(backend, rp.spec, rp.weights.layout, 9, pool);
  PagedKvCache cache(backend, rp.spec, plan.kv, 12);
  Decoder d(w, cache, pool);
  // One chunk (waves of one token past the ring), token by token, and chunks of 7: bit for bit.
  const std::vector<float> one = last_logits(d, cache, 1, tokens, 45);
  CHECK(last_logits(d, cache, 2, tokens, 1) == one);
  CHECK(last_logits(d, cache, 3, tokens, 7) == one);
  // A whole served run: the KV pool is the fit's, window layers at 16 tokens.
  plan.context = 48;
  plan.output = 8;
  const ResolvedPlan served = resolve_plan(plan);
  CpuBackend fresh;  // counts only this run's allocations
  const RunResult r = run_plan(served, fresh, {});
  CHECK(r.kv_bytes == served.fit.kv_bytes);
  // per layer and token: a Q8_0 K row (128 values, 136 B) and a Q4_0 V row (72 B); the full layer
  // holds 48 tokens, the two window layers 16 each
  CHECK(served.fit.kv_bytes_per_request == (136 + 72) * (48 + 2 * 16));
  CHECK(measured_figures(r).completed == plan.requests);
}

TEST_CASE("decoder: a pass beyond a sequence's reserved tokens is refused before it writes") {
  CpuBackend backend;
  const ResolvedPlan rp = resolve_plan(tiny_plan());
  ThreadPool pool(2);
  ModelWeights w(backend, rp.spec, rp.weights.layout, 7, pool);
  PagedKvCache cache(backend, rp.spec, rp.plan.kv, 4);
  Decoder d(w, cache, pool);
  REQUIRE(cache.reserve(1, 16));
  std::vector<std::vector<float>> logits;
  const std::vector<uint32_t> tokens(10, 5);
  const SequenceChunk fits{1, tokens, 6};  // 6 + 10 = 16: the whole reservation
  d.forward(std::span(&fits, 1), logits);
  const SequenceChunk over{1, tokens, 7};  // 17 tokens in 16
  CHECK_THROWS_WITH_AS(d.forward(std::span(&over, 1), logits),
                       doctest::Contains("sequence 1 would hold 17 tokens (past 7 + 10 new) but reserved 16"),
                       std::logic_error);
}

TEST_CASE("server pass shape: the largest prefill chunk or decode step, within the KV pool") {
  // tiny_plan: 3 requests of 40 tokens, a closed batch. Each reserves 3 pages (48 tokens); the pool
  // has 9. A prefill chunk is the whole 40-token prompt window (under 256), a decode step 3 rows.
  const PassShape pass = server_pass_shape(tiny_plan(), 256);
  CHECK(pass.tokens == 40);
  CHECK(pass.rows == 3);
  CHECK(pass.pages == 9);
  CHECK(pass.context == 48);
  CHECK(server_pass_shape(tiny_plan(), 16).tokens == 16);
  // Under a load, load.max_batch sequences at most, and no more than the pool has pages.
  Plan loaded = tiny_plan();
  loaded.load = LoadPlan{};
  loaded.load->rate_per_s = 1;
  loaded.load->max_batch = 256;
  const PassShape busy = server_pass_shape(loaded, 16);
  CHECK(busy.rows == 9);
  CHECK(busy.tokens == 16);
  CHECK(busy.pages == 9);
}

#if INFER_PLAN_HAVE_CUDA
namespace {
// check_runnable reads a backend's name and memory figures only: a stand-in named cuda, with as
// much free device memory as a test says, runs the CUDA decoder's checks without a device. An
// allocation would mean a refusal came after the weights started loading.
class DevicelessCuda final : public Backend {
 public:
  explicit DevicelessCuda(uint64_t free_bytes) : free_bytes_(free_bytes) {}
  std::string_view name() const override { return "cuda"; }
  DeviceBuffer allocate(size_t, MemoryCategory) override { throw std::logic_error("allocated before the checks ran"); }
  void free(DeviceBuffer&) override {}
  void copy_to_device(DeviceBuffer&, const void*, size_t) override {}
  void copy_to_host(void*, const DeviceBuffer&, size_t) override {}
  void synchronize() override {}
  uint64_t now_ns() const override { return 0; }
  bool host_addressable(MemoryCategory c) const override { return c == MemoryCategory::offload_host; }
  std::optional<uint64_t> available_bytes(MemoryCategory c) const override {
    return c == MemoryCategory::offload_host ? std::nullopt : std::optional<uint64_t>(free_bytes_);
  }

 private:
  uint64_t free_bytes_ = 0;
};

constexpr uint64_t kPlentyBytes = uint64_t{1} << 40;
}  // namespace

TEST_CASE("CUDA decoder refusals from the plan alone: window layers, head_dim, KV and weight types") {
  const ResolvedPlan rp = resolve_plan(tiny_plan());  // Q8_0 weights, Q8_0 K, Q4_0 V, head_dim 128
  const auto refusal = [](const ModelSpec& spec, KvTypes kv, const WeightsLayout& layout) {
    return cuda_decoder_refusal(spec, kv, layout.tensors).value_or("");
  };
  CHECK(refusal(rp.spec, rp.plan.kv, rp.weights.layout).empty());
  ModelSpec windowed = rp.spec;
  windowed.sliding_window = 16;
  CHECK_MESSAGE(refusal(windowed, rp.plan.kv, rp.weights.layout).find("sliding-window layers run on the CPU") !=
                    std::string::npos, refusal(windowed, rp.plan.kv, rp.weights.layout));
  ModelSpec odd = rp.spec;
  odd.head_dim = 80;
  CHECK(refusal(odd, rp.plan.kv, rp.weights.layout).find("head_dim 80; the CUDA attention takes multiples of 32 up "
                                                          "to 256") != std::string::npos);
  CHECK(refusal(rp.spec, {GgmlType::F32, GgmlType::Q8_0}, rp.weights.layout) ==
        "kv: the CUDA runtime stores K and V as BF16, F16, Q8_0 or Q4_0, not F32");
  Plan f16 = tiny_plan();
  f16.weights = "F16";
  const ResolvedPlan rf = resolve_plan(f16);
  CHECK(refusal(rf.spec, rf.plan.kv, rf.weights.layout).find("token_embd.weight is stored as F16, which the CUDA "
                                                             "runtime cannot multiply") != std::string::npos);
  // The files people download: llama.cpp's mixes (Q6_K heads, Q4_K/Q5_K/Q3_K/IQ4_XS matrices) and MXFP4.
  for (const char* weights : {"Q4_K_M", "Q5_K_M", "Q3_K_M", "Q6_K", "IQ4_XS", "IQ4_NL", "MXFP4:pure", "Q5_0:pure", "Q4_1:pure",
                              "Q5_1:pure"}) {
    Plan mix = tiny_plan();
    mix.weights = weights;
    const ResolvedPlan rm = resolve_plan(mix);
    CHECK_MESSAGE(refusal(rm.spec, rm.plan.kv, rm.weights.layout).empty(), weights);
  }
}

TEST_CASE("CUDA: run refuses what the decoder cannot run before it writes any weights") {
  DevicelessCuda cuda(kPlentyBytes);
  Plan f32_kv = tiny_plan();
  f32_kv.kv = {GgmlType::F32, GgmlType::F32};
  CHECK_THROWS_WITH_AS(run_plan(resolve_plan(f32_kv), cuda, {}),
                       "run: kv: the CUDA runtime stores K and V as BF16, F16, Q8_0 or Q4_0, not F32", InputError);
  Plan f16 = tiny_plan();
  f16.weights = "F16";
  CHECK_THROWS_WITH_AS(run_plan(resolve_plan(f16), cuda, {}), doctest::Contains("is stored as F16"), InputError);
  Plan windowed = tiny_plan();
  windowed.model = windowed_config(16, {true, false, true}, "infer_plan_swa_cuda.json");
  windowed.scale = 1;
  CHECK_THROWS_WITH_AS(run_plan(resolve_plan(windowed), cuda, {}),
                       doctest::Contains("sliding-window layers run on the CPU backend only"), InputError);
  // What the decoder can run passes the checks and reaches the weights (the stand-in then stops it).
  CHECK_THROWS_WITH_AS(run_plan(resolve_plan(tiny_plan()), cuda, {}), "allocated before the checks ran",
                       std::logic_error);
}

TEST_CASE("CUDA decoder buffers: reserve's capacities counted by hand for the tiny model") {
  const ResolvedPlan rp = resolve_plan(tiny_plan());
  // The shape the figures below use: H = 256, 2 query heads and 1 KV head of 128 (QW = 256,
  // KW = 128), FFN F = 256, vocabulary V = 15194; every layer matrix Q8_0 and 256 x 256 at most.
  REQUIRE(rp.spec.hidden == 256);
  REQUIRE(rp.spec.q_width() == 256);
  REQUIRE(rp.spec.kv_width() == 128);
  REQUIRE(rp.spec.intermediate == 256);
  REQUIRE(rp.spec.vocab == 15194);
  REQUIRE(rp.spec.heads == 2);
  REQUIRE(rp.spec.head_dim == 128);

  // Decode, 3 sequences of 48 reserved tokens: capacities 8 tokens, 8 rows, 16 pages (9 rounded up).
  // activations: 8 tokens x 4 B x (x, out 2 H + xn H + q, att 2 QW + k, v 2 KW + gate, up 2 F
  //   = 512 + 256 + 512 + 256 + 512 = 2048 floats) = 65536
  // logits: 8 rows x (head_in 256 x 4 + logits 15194 x 4 + picked 4 = 61804) = 494432
  // meta: (4 x 8 tokens + 8 rows + 16 pages) x 4 = 224
  // attention: 8 tokens x 2 heads x 1 split (48 / 256 rounded up) x (128 + 2) floats x 4 = 8320
  // no cuBLAS at 8 tokens or fewer: 65536 + 494432 + 224 + 8320 = 568512
  const CudaDecoderScratch decode = cuda_decoder_scratch(rp.spec, rp.weights.layout.tensors, {3, 3, 9, 48});
  CHECK(decode.activations == 65536);
  CHECK(decode.logits == 494432);
  CHECK(decode.meta == 224);
  CHECK(decode.attention == 8320);
  CHECK(decode.gemm == 0);
  CHECK(decode.cublas_workspace == 0);
  CHECK(decode.total() == 568512);

  // The server's largest pass: a 40-token prefill chunk, capacity 64 tokens (rows and pages as above).
  // activations 64 x 4 x 2048 = 524288; logits 494432; meta (256 + 8 + 16) x 4 = 1120;
  // attention 64 x 2 x 1 x 130 x 4 = 66560; GEMM: x (64 x 256) and the widest Q8_0 matrix
  // (256 x 256) in BF16, (16384 + 65536) x 2 = 163840; cuBLAS's workspace 32 MiB = 33554432.
  // Total 34804672.
  const CudaDecoderScratch prefill =
      cuda_decoder_scratch(rp.spec, rp.weights.layout.tensors, server_pass_shape(rp.plan, 256));
  CHECK(prefill.activations == 524288);
  CHECK(prefill.logits == 494432);
  CHECK(prefill.meta == 1120);
  CHECK(prefill.attention == 66560);
  CHECK(prefill.gemm == 163840);
  CHECK(prefill.cublas_workspace == 33554432);
  CHECK(prefill.total() == 34804672);
}

TEST_CASE("CUDA: device memory short of weights, KV and the decoder's buffers is refused, by part") {
  const ResolvedPlan rp = resolve_plan(tiny_plan());
  const PassShape pass = server_pass_shape(rp.plan, 256);
  const uint64_t buffers = cuda_decoder_scratch(rp.spec, rp.weights.layout.tensors, pass).total();
  const uint64_t need = rp.fit.device_weights_bytes + rp.fit.kv_bytes + buffers;
  check_runnable(rp, DevicelessCuda(need), pass);  // exactly enough
  // Enough for weights and KV alone (all the check counted before) but not for the buffers.
  for (const uint64_t free_bytes : {need - 1, rp.fit.device_weights_bytes + rp.fit.kv_bytes}) {
    CAPTURE(free_bytes);
    CHECK_THROWS_WITH_AS(check_runnable(rp, DevicelessCuda(free_bytes), pass),
                         doctest::Contains("KV 0.00 GiB, decoder buffers 33.19 MiB: activations 512 KiB, logits "
                                           "482.84 KiB, per-token arrays 1.09 KiB, attention 65 KiB, GEMM 160 KiB, "
                                           "cuBLAS workspace 32 MiB) but cuda has"),
                         InputError);
  }
  // The speculative sweep's two decoders count twice.
  CHECK_THROWS_WITH_AS(check_runnable(rp, DevicelessCuda(need), pass, 2),
                       doctest::Contains("decoder buffers 66.38 MiB for 2 decoders"), InputError);
}

TEST_CASE("CUDA decoder refuses weights in the CPU's interleaved row order, naming the tensor") {
  const ResolvedPlan rp = resolve_plan(tiny_plan());
  std::vector<WeightTensor> tensors(2);
  tensors[0].placement = rp.weights.layout.tensors.at(0);
  tensors[1].placement = rp.weights.layout.tensors.at(1);
  CHECK_FALSE(cuda_row_order_refusal(tensors).has_value());
  tensors[1].order = kernels::RowOrder::interleaved;
  const std::string why = cuda_row_order_refusal(tensors).value_or("");
  CHECK(why.find(tensors[1].placement.tensor.name + " is in the CPU backend's interleaved row order") !=
        std::string::npos);
  CHECK(why.find("the CUDA kernels read GGML's order, one row after another") != std::string::npos);
  // Weights the CPU backend wrote: refused exactly when it interleaved some (Q4_0 where the CPU
  // has the AVX2 product).
  Plan q4 = tiny_plan();
  q4.weights = "Q4_0:pure";
  const ResolvedPlan rq = resolve_plan(q4);
  CpuBackend cpu;
  ThreadPool pool(2);
  const ModelWeights w(cpu, rq.spec, rq.weights.layout, 3, pool);
  const bool interleaved = std::any_of(w.tensors().begin(), w.tensors().end(), [](const WeightTensor& t) {
    return t.order == kernels::RowOrder::interleaved;
  });
  CHECK(interleaved == kernels::prefers_interleaved(GgmlType::Q4_0, rq.spec.hidden));
  CHECK(cuda_row_order_refusal(w.tensors()).has_value() == interleaved);
}
#endif
