// What each extra token costs a product: one weight matrix (96 MiB, far beyond the caches) times
// 1..9 activation rows, the shapes of a speculative verify pass (m drafts + 1) and of a small
// decode batch. With the weights streamed once per pass, a pass over T tokens should cost about
// max(read, T x arithmetic), not read + (T - 1) x arithmetic: the figure that decides whether a
// verify pass is nearly free (an interior optimum over the block length) or not. Threads split
// the rows, as the runtime does. Each benchmark is TYPE/tokens:T; the extra cost per token is
// (time at T - time at 1) / (T - 1), and the counter weight_GBps is the weights read per second.
// Each pass is the runtime's own projection (runtime/projection: activations converted, rows
// split over its thread pool), as ggml's MUL_MAT converts its src1 and splits its rows.
//
//   bench_tokens [--cols=N] [--rows=N] [--threads=N] [Google Benchmark's flags]   (default 640
//   columns, the CI spec plan's width, rows filling 96 MiB, and 2 threads; --cols=14336 --rows=4096
//   is ggml's test-backend-ops MUL_MAT perf shape, which tools/bench-vs-ggml.sh compares)
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_flags.hpp"
#include "kernels/cpu/aligned_bytes.hpp"
#include "kernels/cpu/matmul.hpp"
#include "kernels/cpu/quantize.hpp"
#include "runtime/projection.hpp"
#include "runtime/thread_pool.hpp"

using namespace infer_plan;
using namespace infer_plan::kernels;
using infer_plan::bench::take_flag;

namespace {

constexpr uint64_t kMatrixBytes = 96ull << 20;
constexpr uint64_t kMaxTokens = 9;

std::vector<float> random_values(uint64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<float> v(n);
  for (float& f : v) f = static_cast<float>(gen() >> 8) * 0x1p-23f - 1.0f;
  return v;
}

// One matrix per type, quantized once (64 distinct rows, tiled: quantizing 96 MiB of Q2_K is slow).
struct Matrix {
  uint64_t rows = 0;
  AlignedBytes w;  // on a cache line, as the runtime's weight buffers
  RowOrder order = RowOrder::ggml;
};
Matrix make_matrix(GgmlType type, uint64_t cols, uint64_t rows) {
  Matrix m;
  const uint64_t row_bytes = ggml_row_bytes(type, cols, "bench");
  m.rows = rows ? rows : kMatrixBytes / row_bytes / kInterleavedRows * kInterleavedRows;
  m.w.resize(m.rows * row_bytes);
  const uint64_t distinct = 64;
  std::vector<uint8_t> block(distinct * row_bytes);
  quantize_row(type, random_values(distinct * cols, 1), block, "bench");
  for (uint64_t r = 0; r < m.rows; ++r)
    std::memcpy(m.w.data() + r * row_bytes, block.data() + (r % distinct) * row_bytes, row_bytes);
  // in the order the decoder keeps this type in (runtime/model_weights)
  if (prefers_interleaved(type, m.rows)) {
    interleave_rows(type, m.w.data(), m.rows, cols);
    m.order = RowOrder::interleaved;
  }
  return m;
}

void BM_product(benchmark::State& state, GgmlType type, uint64_t cols, uint64_t rows, int threads) {
  static std::vector<std::pair<GgmlType, Matrix>> matrices;  // built on first use, kept across token counts
  const Matrix* m = nullptr;
  for (const auto& [t, matrix] : matrices)
    if (t == type) m = &matrix;
  if (m == nullptr) {
    matrices.clear();  // one matrix alive at a time
    matrices.emplace_back(type, make_matrix(type, cols, rows));
    m = &matrices.back().second;
  }
  const auto tokens = static_cast<uint64_t>(state.range(0));
  const std::vector<float> xf = random_values(tokens * cols, 2);
  static runtime::ThreadPool pool(static_cast<unsigned>(threads));
  Activations act;
  std::vector<float> y(tokens * m->rows);
  for (auto _ : state) {
    runtime::project(pool, type, m->w.data(), m->rows, cols, xf.data(), tokens, y.data(), act, m->order);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["weight_GBps"] = benchmark::Counter(static_cast<double>(m->w.size()) * 1e-9 *
                                                         static_cast<double>(state.iterations()),
                                                     benchmark::Counter::kIsRate);
}


}  // namespace

int main(int argc, char** argv) {
  const uint64_t cols = std::strtoull(take_flag(argc, argv, "cols", "640").c_str(), nullptr, 10);
  const uint64_t rows = std::strtoull(take_flag(argc, argv, "rows", "0").c_str(), nullptr, 10);  // 0: fill 96 MiB
  const int threads = std::atoi(take_flag(argc, argv, "threads", "2").c_str());
  if (cols == 0 || cols % 32 != 0 || cols > (1u << 20) || rows > (1u << 20) || threads < 1 || threads > 64) {
    std::fprintf(stderr, "bench_tokens: --cols must be a multiple of 32 up to 2^20 (the K-quants run at multiples of "
                         "256), --rows up to 2^20, --threads 1..64\n");
    return 2;
  }
  benchmark::AddCustomContext("dots", std::string(matmul_implementation()));
  benchmark::AddCustomContext("cols", std::to_string(cols));
  benchmark::AddCustomContext("threads", std::to_string(threads));
  for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q5_0,
                        GgmlType::Q4_1, GgmlType::Q5_1, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K,
                        GgmlType::Q6_K, GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::MXFP4}) {
    if (cols % ggml_type_info(type).block_values != 0) continue;  // not whole blocks
    benchmark::RegisterBenchmark(("product/" + std::string(ggml_type_info(type).name)).c_str(), BM_product, type, cols,
                                 rows, threads)
        ->ArgName("tokens")
        ->DenseRange(1, static_cast<int64_t>(kMaxTokens))
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
