// Decode-step matrix-vector products (batch 1) over a weight matrix far larger than the last-level
// cache, against the speed of light of this machine: a plain read of a buffer of the same size
// with the same threads (a STREAM-like read-only sum). A batch-1 GEMV reads each weight byte once
// and does a few operations per byte, so it should run near that read bandwidth; target >= 70%
// for the quantized types. The runtime's thread pool splits the rows (runtime/projection). Read and GEMV passes
// alternate and the fraction is the mean of each pair's ratio (the median over
// --benchmark_repetitions), so a machine whose bandwidth drifts (a shared VM) still gives a fair
// fraction.
//
//   bench_gemv [--gib=N] [Google Benchmark's flags]   (weights per matrix, default 1; one matrix alive at a time)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#ifdef __linux__
#include <sys/mman.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "bench/bench_flags.hpp"
#include "kernels/cpu/matmul.hpp"
#include "kernels/cpu/quantize.hpp"
#include "kernels/cpu/stream_read.hpp"
#include "runtime/projection.hpp"
#include "runtime/thread_pool.hpp"

using namespace infer_plan;
using namespace infer_plan::kernels;
using infer_plan::bench::take_flag;

namespace {

constexpr uint64_t kCols = 4096;      // a 4096-wide projection (hidden size of 7-8B models)
constexpr int kRepeats = 10;          // timed passes after one warm-up pass
constexpr uint64_t kDistinctRows = 64;  // quantized once, then tiled: quantizing 1 GiB of Q2_K takes minutes
constexpr uint64_t kHugePage = 2ull << 20;

// A page-aligned buffer, backed by transparent huge pages where the kernel offers them (fewer TLB
// misses on a 1 GiB sweep, for the read bench and the GEMV alike), touched so no page faults land
// inside a timed pass.
struct BigBuffer {
  uint8_t* data = nullptr;
  uint64_t bytes = 0;
  explicit BigBuffer(uint64_t n) : bytes((n + kHugePage - 1) / kHugePage * kHugePage) {
    data = static_cast<uint8_t*>(std::aligned_alloc(kHugePage, bytes));
    if (data == nullptr) {
      std::fprintf(stderr, "bench_gemv: cannot allocate %llu bytes\n", static_cast<unsigned long long>(bytes));
      std::exit(1);
    }
#ifdef __linux__
    madvise(data, bytes, MADV_HUGEPAGE);  // advice only: a refusal leaves 4 KiB pages
#endif
    std::memset(data, 1, bytes);
  }
  ~BigBuffer() { std::free(data); }
  BigBuffer(const BigBuffer&) = delete;
  BigBuffer& operator=(const BigBuffer&) = delete;
};

// One pass of work on the pool; seconds.
double time_pass(const std::function<void()>& work) {
  const auto t0 = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<float> random_values(uint64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<float> v(n);
  for (float& f : v) f = static_cast<float>(gen() >> 8) * 0x1p-23f - 1.0f;
  return v;
}

uint64_t g_target_bytes = 1ull << 30;
double g_checksum = 0;

// Each iteration is a pair: a read pass over a buffer of the weights' size, then the GEMV pass;
// the time is the GEMV's, and the counters are each pair's GB/s and their ratio, averaged.
void BM_gemv(benchmark::State& state, GgmlType type, int threads) {
  static BigBuffer read_buf(g_target_bytes);
  runtime::ThreadPool pool(static_cast<unsigned>(threads));
  const uint64_t words = read_buf.bytes / 8;
  const auto* words_p = reinterpret_cast<const uint64_t*>(read_buf.data);
  std::atomic<uint64_t> sink{0};
  auto read = [&] {
    pool.parallel_for(words, [&](uint64_t b, uint64_t e) { sink.fetch_add(read_sum(words_p + b, e - b)); }, 512);
  };
  const uint64_t row_bytes = ggml_row_bytes(type, kCols, "bench");
  const uint64_t rows = g_target_bytes / row_bytes / kInterleavedRows * kInterleavedRows;
  const uint64_t weight_bytes = rows * row_bytes;
  BigBuffer w(weight_bytes);
  {
    const std::vector<float> values = random_values(kDistinctRows * kCols, 1);
    std::vector<uint8_t> distinct(kDistinctRows * row_bytes);
    quantize_row(type, values, distinct, "bench");
    for (uint64_t r = 0; r < rows; ++r)
      std::memcpy(w.data + r * row_bytes, distinct.data() + (r % kDistinctRows) * row_bytes, row_bytes);
  }
  // in the order the decoder keeps this type in (runtime/model_weights)
  const RowOrder order = prefers_interleaved(type, rows) ? RowOrder::interleaved : RowOrder::ggml;
  if (order == RowOrder::interleaved) interleave_rows(type, w.data, rows, kCols);
  const std::vector<float> xf = random_values(kCols, 2);
  Activations act;
  std::vector<float> y(rows);
  auto gemv = [&] { runtime::project(pool, type, w.data, rows, kCols, xf.data(), 1, y.data(), act, order); };
  time_pass(read);  // warm-up
  time_pass(gemv);
  double read_gbps = 0, gemv_gbps = 0, fraction = 0;
  for (auto _ : state) {
    const double r = static_cast<double>(read_buf.bytes) / time_pass(read) / 1e9;
    const double seconds = time_pass(gemv);
    const double g = static_cast<double>(weight_bytes) / seconds / 1e9;
    state.SetIterationTime(seconds);
    read_gbps += r;
    gemv_gbps += g;
    fraction += g / r;
  }
  state.counters["read_GBps"] = benchmark::Counter(read_gbps, benchmark::Counter::kAvgIterations);
  state.counters["gemv_GBps"] = benchmark::Counter(gemv_gbps, benchmark::Counter::kAvgIterations);
  state.counters["fraction"] = benchmark::Counter(fraction, benchmark::Counter::kAvgIterations);
  g_checksum += static_cast<double>(y[rows / 2]) + static_cast<double>(sink.load());
}


}  // namespace

int main(int argc, char** argv) {
  const double gib = std::atof(take_flag(argc, argv, "gib", "1").c_str());
  if (!(gib > 0 && gib <= 1.5)) {
    std::fprintf(stderr, "bench_gemv: --gib=N: weights per matrix, 0 < N <= 1.5 (twice that is allocated)\n");
    return 2;
  }
  g_target_bytes = static_cast<uint64_t>(gib * static_cast<double>(1ull << 30));
  benchmark::AddCustomContext("dots", std::string(matmul_implementation()));
  benchmark::AddCustomContext("weights_gib", std::to_string(gib));
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q4_1, GgmlType::Q5_1, GgmlType::Q2_K,
                        GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_NL,
                        GgmlType::IQ4_XS, GgmlType::MXFP4,
                        GgmlType::BF16, GgmlType::F16, GgmlType::F32})
    for (int threads : {1, 2})
      benchmark::RegisterBenchmark(("gemv/" + std::string(ggml_type_info(type).name) + "/threads:" +
                                    std::to_string(threads)).c_str(),
                                   BM_gemv, type, threads)
          ->Iterations(kRepeats)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::fprintf(stderr, "(checksum %.6g)\n", g_checksum);  // printed, so the products are not optimised away
  return 0;
}
