// Decode-step matrix-vector products (batch 1) over a weight matrix far larger than the last-level
// cache, against the speed of light of this machine: a plain read of a buffer of the same size
// with the same threads (a STREAM-like read-only sum). A batch-1 GEMV reads each weight byte once
// and does a few operations per byte, so it should run near that read bandwidth; target >= 70%
// for the quantized types. Threads split the rows, as the runtime does. Read and GEMV passes
// alternate and the fraction is the median of each pair's ratio, so a machine whose bandwidth
// drifts (a shared VM) still gives a fair fraction.
//
//   bench_gemv [GiB]   (weights per matrix, default 1; one matrix is alive at a time)
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#ifdef __linux__
#include <sys/mman.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/cpu/matmul.hpp"
#include "kernels/cpu/quantize.hpp"
#include "kernels/cpu/stream_read.hpp"

using namespace infer_plan;
using namespace infer_plan::kernels;

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

// One pass of work(thread, threads) on `threads` threads; seconds.
double time_pass(int threads, const std::function<void(int, int)>& work) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work, t, threads);
  work(0, threads);
  for (std::thread& th : pool) th.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Figures {
  double median, min, max;  // of the samples
};
Figures figures(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return {(v[(n - 1) / 2] + v[n / 2]) / 2, v.front(), v.back()};
}

// After one warm-up pass of each, kRepeats pairs (read pass, GEMV pass): GB/s of each and the
// ratio within each pair.
struct Paired {
  Figures read_gbps, gemv_gbps, fraction;
};
Paired time_paired(int threads, uint64_t read_bytes, const std::function<void(int, int)>& read,
                   uint64_t gemv_bytes, const std::function<void(int, int)>& gemv) {
  time_pass(threads, read);
  time_pass(threads, gemv);
  std::vector<double> r, g, f;
  for (int rep = 0; rep < kRepeats; ++rep) {
    r.push_back(static_cast<double>(read_bytes) / time_pass(threads, read) / 1e9);
    g.push_back(static_cast<double>(gemv_bytes) / time_pass(threads, gemv) / 1e9);
    f.push_back(g.back() / r.back());
  }
  return {figures(r), figures(g), figures(f)};
}

uint64_t slice_begin(uint64_t n, int t, int threads) { return n * static_cast<uint64_t>(t) / static_cast<uint64_t>(threads); }


std::vector<float> random_values(uint64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<float> v(n);
  for (float& f : v) f = static_cast<float>(gen() >> 8) * 0x1p-23f - 1.0f;
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  const double gib = argc > 1 ? std::atof(argv[1]) : 1.0;
  if (!(gib > 0 && gib <= 1.5)) {
    std::fprintf(stderr, "usage: bench_gemv [GiB of weights, 0 < GiB <= 1.5 (twice that is allocated)]\n");
    return 2;
  }
  const auto target_bytes = static_cast<uint64_t>(gib * static_cast<double>(1ull << 30));
  const int thread_counts[] = {1, 2};
  std::printf("bench_gemv: batch-1 GEMV, %llu columns, ~%.2f GiB of weights per matrix, %s dots\n"
              "  %d pairs of passes (read %.2f GiB, then GEMV) after a warm-up: median (min..max);\n"
              "  fraction = GEMV weight GB/s / read GB/s of the same pair, median (min..max)\n",
              static_cast<unsigned long long>(kCols), gib, std::string(matmul_implementation()).c_str(), kRepeats,
              gib);

  // Speed of light: read a buffer of the same size with the same threads.
  BigBuffer read_buf(target_bytes);
  const uint64_t words = read_buf.bytes / 8;
  const auto* words_p = reinterpret_cast<const uint64_t*>(read_buf.data);
  std::vector<uint64_t> sinks(2);  // one per thread, written once per pass
  auto read = [&](int th, int n) {
    const uint64_t b = slice_begin(words, th, n), e = slice_begin(words, th + 1, n);
    sinks[static_cast<size_t>(th)] += read_sum(words_p + b, e - b);
  };

  double checksum = 0;
  const GgmlType types[] = {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q2_K,
                            GgmlType::BF16, GgmlType::F16,  GgmlType::F32};
  for (GgmlType type : types) {
    const uint64_t row_bytes = ggml_row_bytes(type, kCols, "bench");
    const uint64_t rows = target_bytes / row_bytes;
    const uint64_t weight_bytes = rows * row_bytes;
    BigBuffer w(weight_bytes);
    {
      const std::vector<float> values = random_values(kDistinctRows * kCols, 1);
      std::vector<uint8_t> distinct(kDistinctRows * row_bytes);
      quantize_row(type, values, distinct, "bench");
      for (uint64_t r = 0; r < rows; ++r)
        std::memcpy(w.data + r * row_bytes, distinct.data() + (r % kDistinctRows) * row_bytes, row_bytes);
    }
    const std::vector<float> xf = random_values(kCols, 2);
    Activations x;
    convert_activations(type, xf.data(), 1, kCols, x);
    std::vector<float> y(rows);
    auto gemv = [&](int th, int n) {
      matmul_rows(type, w.data, rows, x, slice_begin(rows, th, n), slice_begin(rows, th + 1, n), y.data());
    };
    for (int threads : thread_counts) {
      const Paired p = time_paired(threads, read_buf.bytes, read, weight_bytes, gemv);
      std::printf("  %-5s %d thread%s  GEMV %6.2f GB/s (%5.2f..%5.2f)  read %6.2f GB/s (%5.2f..%5.2f)  "
                  "fraction %3.0f%% (%3.0f..%3.0f%%)\n",
                  std::string(ggml_type_info(type).name).c_str(), threads, threads > 1 ? "s" : " ",
                  p.gemv_gbps.median, p.gemv_gbps.min, p.gemv_gbps.max, p.read_gbps.median, p.read_gbps.min,
                  p.read_gbps.max, 100 * p.fraction.median, 100 * p.fraction.min, 100 * p.fraction.max);
      checksum += static_cast<double>(y[rows / 2]);
    }
  }
  checksum += static_cast<double>(sinks[0] + sinks[1]);  // printed, so the sums are not optimised away
  std::printf("  (checksum %.6g)\n", checksum);
  return 0;
}
