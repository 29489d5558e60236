// The CUDA decoder against the CPU decoder on the same synthetic weights (the same bytes: rows are
// generated from (seed, tensor, row) wherever they live), pass by pass: a long prefill (cuBLAS,
// attention across split-K blocks), a short one (matvec), batched decode steps (captured and
// replayed as graphs), and a verify pass with every token's logits. Then graphs against no graphs,
// offload against no offload (both exact), MoE routing, and greedy speculative decoding on the
// GPU. Skipped (77) without a device (cuda_test_main.cpp).
//
// Tolerance: the two decoders do not compute the same products. The CPU converts each projection's
// activations to the weight type's vec_dot type first (Q8_0 for Q8_0/Q4_0, Q8_K for Q2_K, BF16
// for BF16: a relative error up to 2^-8 per element, about 0.3% on a product of thousands of
// terms with random signs); the GPU multiplies F32 activations (matvec) or BF16 ones (cuBLAS,
// prefill). Over 3 layers of ~7 products each and the head, the difference of the logits stays
// at a few tenths of a percent of their RMS; 3% bounds it with margin and still catches any
// layout, indexing or masking slip (which gives differences of the order of the logits
// themselves). The greedy pick must agree unless the CPU's top two logits are closer than that.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cpu/sampling.hpp"
#include "planner/plan/predict.hpp"
#include "runtime/cpu_backend.hpp"
#include "runtime/cuda_backend.hpp"
#include "runtime/cuda_decoder.hpp"
#include "runtime/decoder.hpp"
#include "runtime/forward_pass.hpp"
#include "runtime/model_weights.hpp"
#include "runtime/offload_prefetcher.hpp"
#include "runtime/paged_kv_cache.hpp"
#include "runtime/speculative.hpp"
#include "runtime/thread_pool.hpp"

using namespace infer_plan;
using namespace infer_plan::runtime;

namespace {

constexpr double kRelRms = 0.03;

ResolvedPlan tiny(const std::string& model, const std::string& weights, double scale = 0.1) {
  Plan plan;  // qwen3-0.6b at 0.1: 3 layers, 256 wide, head_dim 128
  plan.model = model;
  plan.scale = scale;
  plan.weights = weights;
  return resolve_plan(plan);
}

double rms(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += static_cast<double>(x) * x;
  return std::sqrt(s / static_cast<double>(v.size()));
}

// ||got - ref|| / ||ref|| and the greedy check; prints the first offending rows.
void check_logits(const std::vector<std::vector<float>>& got, const std::vector<std::vector<float>>& ref,
                  const std::string& what) {
  REQUIRE(got.size() == ref.size());
  for (size_t r = 0; r < ref.size(); ++r) {
    REQUIRE(got[r].size() == ref[r].size());
    double diff = 0, norm = 0;
    for (size_t i = 0; i < ref[r].size(); ++i) {
      const double d = static_cast<double>(got[r][i]) - ref[r][i];
      diff += d * d;
      norm += static_cast<double>(ref[r][i]) * ref[r][i];
    }
    const double rel = std::sqrt(diff / norm);
    const uint32_t top_ref = kernels::argmax(ref[r]), top_got = kernels::argmax(got[r]);
    const double gap = ref[r][top_ref] - ref[r][top_got];  // >= 0: how much the GPU's pick loses on the CPU
    if (rel > kRelRms || gap > kRelRms * rms(ref[r]))
      std::printf("%s, row %zu: relative RMS difference %.4f, argmax %u (cpu) vs %u (gpu), gap %.4g\n", what.c_str(),
                  r, rel, top_ref, top_got, gap);
    CHECK(rel <= kRelRms);
    CHECK(gap <= kRelRms * rms(ref[r]));
  }
}

// The same passes on any decoder: returns every pass's logits, in order.
std::vector<std::vector<std::vector<float>>> run_passes(ForwardPass& d, PagedKvCache& cache, uint64_t long_prompt) {
  std::vector<std::vector<std::vector<float>>> out;
  std::vector<uint32_t> a(long_prompt), b{9, 9, 41, 7, 1000 % static_cast<uint32_t>(d.spec().vocab)};
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint32_t>((i * 7919 + 13) % d.spec().vocab);
  REQUIRE(cache.reserve(1, long_prompt + 16));
  REQUIRE(cache.reserve(2, long_prompt + 16));
  std::vector<std::vector<float>> logits;
  const SequenceChunk ca{1, a, 0}, cb{2, b, 0};
  d.forward(std::span(&ca, 1), logits);  // > 8 tokens: cuBLAS on the GPU
  out.push_back(logits);
  d.forward(std::span(&cb, 1), logits);  // 5 tokens: matvec
  out.push_back(logits);
  uint64_t pa = a.size(), pb = b.size();
  // Fixed tokens rather than each decoder's own argmax: a near tie must not send the two decoders
  // down different sequences.
  std::vector<uint32_t> ta{17}, tb{23};
  for (uint32_t step = 0; step < 4; ++step) {  // batch-2 decode steps: captured once, then replayed
    ta[0] = 17 + step;
    tb[0] = 23 + 2 * step;
    const std::vector<SequenceChunk> both{{1, ta, pa}, {2, tb, pb}};
    d.forward(both, logits);
    out.push_back(logits);
    ++pa;
    ++pb;
  }
  const std::vector<uint32_t> verify{4, 5, 6};  // a verify pass: logits for every token
  const SequenceChunk cv{1, verify, pa};
  d.forward(std::span(&cv, 1), logits, true);
  out.push_back(logits);
  return out;
}

}  // namespace

TEST_CASE("CUDA decoder: logits agree with the CPU decoder for every weight and KV type") {
  CpuBackend cpu;
  CudaBackend gpu;
  ThreadPool pool(2);
  const GgmlType kv_types[] = {GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0};
  for (const char* weights : {"BF16", "Q8_0", "Q4_0:pure", "Q2_K:pure"}) {
    const ResolvedPlan rp = tiny("qwen3-0.6b", weights);
    const ModelWeights wc(cpu, rp.spec, rp.weights.layout, 5, pool), wg(gpu, rp.spec, rp.weights.layout, 5, pool);
    CHECK(gpu.allocated(MemoryCategory::weights) == rp.weights.bytes);  // the planner's bytes, exactly
    for (GgmlType kv : kv_types) {
      const std::string what = std::string(weights) + ", KV " + std::string(ggml_type_info(kv).name);
      CAPTURE(what);
      const KvTypes types{kv, kv};
      // 300 prompt tokens: attention crosses a split-K block (256 positions) and 19 pages.
      PagedKvCache cc(cpu, rp.spec, types, 64), cg(gpu, rp.spec, types, 64);
      Decoder dc(wc, cc, pool);
      CudaDecoder dg(gpu, wg, cg);
      const auto ref = run_passes(dc, cc, 300), got = run_passes(dg, cg, 300);
      REQUIRE(got.size() == ref.size());
      for (size_t p = 0; p < ref.size(); ++p) check_logits(got[p], ref[p], what + ", pass " + std::to_string(p));
      CHECK(dg.graphs_captured() == 1);  // the batch-2 decode shape
      CHECK(dg.graph_replays() == 3);
    }
  }
}

TEST_CASE("CUDA decoder: graphs replay exactly what the stream runs, and offload reads the same bytes") {
  CudaBackend gpu;
  ThreadPool pool(2);
  const ResolvedPlan rp = tiny("qwen3-0.6b", "Q8_0");
  const ModelWeights w(gpu, rp.spec, rp.weights.layout, 5, pool);
  PagedKvCache c1(gpu, rp.spec, {}, 64), c2(gpu, rp.spec, {}, 64), c3(gpu, rp.spec, {}, 64);
  CudaDecoder graphs(gpu, w, c1), stream(gpu, w, c2, 0, nullptr, CudaDecoderOptions{false});
  const auto a = run_passes(graphs, c1, 40), b = run_passes(stream, c2, 40);
  CHECK(a == b);  // the same kernels on the same data, launched either way: bit for bit
  CHECK(stream.graphs_captured() == 0);
  // Offload: the FFN of every second layer in pinned host memory, two slots, copies on their own
  // stream; the layers read the slots, which hold the same bytes.
  const ModelWeights wo(gpu, rp.spec, rp.weights.layout, 5, pool, WeightsOffload{OffloadPart::ffn, 2});
  CHECK(gpu.allocated(MemoryCategory::offload_host) > 0);
  const auto prefetcher = make_offload_prefetcher(gpu, wo, 2);
  CudaDecoder offloaded(gpu, wo, c3, 0, prefetcher.get());
  const auto o = run_passes(offloaded, c3, 40);
  CHECK(o == b);
  CHECK(prefetcher->last_pass().bytes > 0);
}

TEST_CASE("CUDA decoder: the argmax on the device picks what the host picks from the logits") {
  CudaBackend gpu;
  ThreadPool pool(2);
  const ResolvedPlan rp = tiny("qwen3-0.6b", "Q4_0:pure");
  const ModelWeights w(gpu, rp.spec, rp.weights.layout, 5, pool);
  PagedKvCache cache(gpu, rp.spec, {}, 16);
  CudaDecoder d(gpu, w, cache);
  (void)run_passes(d, cache, 12);
  // The same step twice (its K/V rows are rewritten with the same values): logits, then the argmax.
  const std::vector<uint32_t> ta{31}, tb{32};
  const std::vector<SequenceChunk> both{{1, ta, 16}, {2, tb, 9}};
  std::vector<std::vector<float>> logits;
  std::vector<uint32_t> picked;
  d.forward(both, logits);
  d.forward_argmax(both, picked);
  REQUIRE(picked.size() == 2);
  CHECK(picked[0] == kernels::argmax(logits[0]));
  CHECK(picked[1] == kernels::argmax(logits[1]));
}

TEST_CASE("CUDA decoder: MoE routing and a Llama (normal RoPE) agree with the CPU decoder") {
  CpuBackend cpu;
  CudaBackend gpu;
  ThreadPool pool(2);
  for (const char* model : {"qwen3-235b-a22b", "llama-3.1-8b"}) {
    CAPTURE(model);
    const ResolvedPlan rp = tiny(model, "Q8_0", 0.03);
    const ModelWeights wc(cpu, rp.spec, rp.weights.layout, 3, pool), wg(gpu, rp.spec, rp.weights.layout, 3, pool);
    PagedKvCache cc(cpu, rp.spec, {}, 16), cg(gpu, rp.spec, {}, 16);
    Decoder dc(wc, cc, pool);
    CudaDecoder dg(gpu, wg, cg);
    const auto ref = run_passes(dc, cc, 20), got = run_passes(dg, cg, 20);
    for (size_t p = 0; p < ref.size(); ++p) check_logits(got[p], ref[p], std::string(model) + ", pass " + std::to_string(p));
  }
}

TEST_CASE("CUDA decoder: greedy speculative decoding equals plain greedy decoding on the GPU") {
  CudaBackend gpu;
  ThreadPool pool(2);
  const ResolvedPlan rp = tiny("qwen3-0.6b", "BF16");
  const ModelWeights w(gpu, rp.spec, rp.weights.layout, 11, pool);
  const std::vector<uint32_t> prompt{3, 141, 59, 26, 535};
  const uint64_t n = 24, block = 3;
  PagedKvCache plain_cache(gpu, rp.spec, {}, 4);
  CudaDecoder plain(gpu, w, plain_cache);
  REQUIRE(plain_cache.reserve(1, prompt.size() + n));
  const std::vector<uint32_t> expected = generate(plain, 1, prompt, n, {});
  ModelSpec draft_spec = rp.spec;
  draft_spec.layers = 1;
  PagedKvCache target_cache(gpu, rp.spec, {}, 4), draft_cache(gpu, draft_spec, {}, 4);
  CudaDecoder target(gpu, w, target_cache), draft(gpu, w, draft_cache, 1);
  REQUIRE(target_cache.reserve(1, prompt.size() + n + block + 1));
  REQUIRE(draft_cache.reserve(1, prompt.size() + n + block + 1));
  SpecDecodeStats stats;
  SpecOptions spec;
  spec.block = block;
  CHECK(generate_speculative(target, 1, draft, 1, prompt, n, spec, stats) == expected);
}

TEST_CASE("CUDA decoder: a longer reservation replaces the captured graphs (one shape, one graph)") {
  CudaBackend gpu;
  ThreadPool pool(2);
  const ResolvedPlan rp = tiny("qwen3-0.6b", "Q8_0");
  const ModelWeights w(gpu, rp.spec, rp.weights.layout, 5, pool);
  PagedKvCache cache(gpu, rp.spec, {}, 64);
  CudaDecoder d(gpu, w, cache);
  std::vector<std::vector<float>> logits;
  const std::vector<uint32_t> prompt{3, 4, 5}, next{6};
  // Batch 1 over a short reservation, then over a longer one: the same decode shape (one token),
  // whose graph bakes in the attention's context capacity, so the first is dropped.
  REQUIRE(cache.reserve(1, 16));
  const SequenceChunk p1{1, prompt, 0}, n1{1, next, prompt.size()};
  d.forward(std::span(&p1, 1), logits);
  d.forward(std::span(&n1, 1), logits);
  CHECK(d.graphs_captured() == 1);
  REQUIRE(cache.reserve(2, 512));
  const SequenceChunk p2{2, prompt, 0}, n2{2, next, prompt.size()};
  d.forward(std::span(&p2, 1), logits);
  d.forward(std::span(&n2, 1), logits);
  CHECK(d.graphs_captured() == 1);
  // A pass beyond a sequence's reservation is refused on the host, before any kernel.
  const std::vector<uint32_t> many(20, 1);
  const SequenceChunk over{1, many, 0};
  CHECK_THROWS_AS(d.forward(std::span(&over, 1), logits), std::logic_error);
}

TEST_CASE("CUDA decoder: its working buffers take what cuda_decoder_scratch counts, dense and MoE") {
  CudaBackend gpu;
  ThreadPool pool(2);
  for (const auto& [model, scale, prompt] : {std::tuple{"qwen3-0.6b", 0.1, uint64_t{40}},
                                            std::tuple{"qwen3-235b-a22b", 0.03, uint64_t{20}}}) {
    CAPTURE(model);
    const ResolvedPlan rp = tiny(model, "Q8_0", scale);
    const ModelWeights w(gpu, rp.spec, rp.weights.layout, 5, pool);
    PagedKvCache cache(gpu, rp.spec, {}, 16);
    CudaDecoder d(gpu, w, cache);
    (void)run_passes(d, cache, prompt);
    // run_passes' largest pass: the prompt (more than 8 tokens: cuBLAS); the most rows, 3 (the
    // verify pass); the most pages, the batch-2 step's two reservations of prompt + 16 tokens.
    const uint64_t pages = PagedKvCache::pages_for(prompt + 16);
    const CudaDecoderScratch counted =
        cuda_decoder_scratch(rp.spec, rp.weights.layout.tensors, {prompt, 3, 2 * pages, pages * kKvPageTokens});
    CHECK(gpu.allocated(MemoryCategory::activations) == counted.total() - counted.cublas_workspace);
    CHECK(counted.gemm > 0);
  }
}
