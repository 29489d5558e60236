// Decode attention speed against the memory it must read: a Qwen3-8B-like layer (32 query heads,
// 8 KV heads of 128) over 4096 cached tokens in shuffled 16-token pages, for each KV type and each
// code path this CPU runs. bytes_per_second is K+V read per second (the kernel's roofline is this
// machine's memory or cache bandwidth: 6.3 MiB of BF16 KV fits a 32 MiB last-level cache).
//   bench_attention [--benchmark_repetitions=5 ...]   (Google Benchmark's flags)
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/quantize.hpp"

using namespace infer_plan;
using namespace infer_plan::kernels;

namespace {

constexpr uint64_t kTokens = 4096;

struct Cache {
  std::vector<uint8_t> storage;
  std::vector<const uint8_t*> pages;
  KvRowsView view;
};

// n_tokens rows of seeded values in [-1, 1), pages placed in a shuffled order.
Cache make_cache(GgmlType type, uint64_t row_values, uint64_t n_tokens, uint64_t block_tokens, uint32_t seed) {
  Cache c;
  const uint64_t row_bytes = ggml_row_bytes(type, row_values, "bench");
  const uint64_t n_pages = (n_tokens + block_tokens - 1) / block_tokens;
  c.storage.resize(n_pages * block_tokens * row_bytes);
  std::vector<uint64_t> slot(n_pages);
  for (uint64_t p = 0; p < n_pages; ++p) slot[p] = p;
  std::mt19937 gen(seed);
  for (uint64_t p = n_pages; p > 1; --p) std::swap(slot[p - 1], slot[gen() % p]);
  c.pages.resize(n_pages);
  for (uint64_t p = 0; p < n_pages; ++p) c.pages[p] = c.storage.data() + slot[p] * block_tokens * row_bytes;
  c.view = {type, row_bytes, block_tokens, c.pages.data()};
  std::vector<float> row(row_values);
  for (uint64_t t = 0; t < n_tokens; ++t) {
    for (float& x : row) x = static_cast<float>(gen() >> 8) * 0x1p-23f - 1.0f;
    quantize_row(type, row, {const_cast<uint8_t*>(c.view.row(t)), row_bytes}, "bench");
  }
  return c;
}

void BM_attention_decode(benchmark::State& state, GgmlType type, AttentionPath path) {
  if (!attention_path_available(path)) {
    state.SkipWithError("this CPU does not run that path");
    return;
  }
  const AttentionShape shape{32, 8, 128};
  const uint64_t row_values = shape.n_kv_head * shape.head_dim;
  const Cache k = make_cache(type, row_values, kTokens, 16, 2), v = make_cache(type, row_values, kTokens, 16, 3);
  std::vector<float> q(shape.n_head * shape.head_dim), out(q.size()), scratch;
  std::mt19937 gen(1);
  for (float& x : q) x = static_cast<float>(gen() >> 8) * 0x1p-21f - 4.0f;
  for (auto _ : state) {
    attention_decode_on(path, shape, q.data(), k.view, v.view, kTokens, out.data(), scratch);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(2 * k.view.row_bytes * kTokens) * state.iterations());
}

}  // namespace

int main(int argc, char** argv) {
  for (const GgmlType type : {GgmlType::BF16, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0})
    for (const AttentionPath path : {AttentionPath::portable, AttentionPath::avx2})
      benchmark::RegisterBenchmark(("attention_decode/" + std::string(ggml_type_info(type).name) + "/" +
                                    (path == AttentionPath::avx2 ? "avx2" : "portable"))
                                       .c_str(),
                                   BM_attention_decode, type, path)
          ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
