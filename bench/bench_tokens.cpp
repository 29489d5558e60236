// What each extra token costs a product: one weight matrix (96 MiB, far beyond the caches) times
// 1..9 activation rows, the shapes of a speculative verify pass (m drafts + 1) and of a small
// decode batch. With the weights streamed once per pass, a pass over T tokens should cost about
// max(read, T x arithmetic), not read + (T - 1) x arithmetic: the figure that decides whether a
// verify pass is nearly free (an interior optimum over the block length) or not. Threads split
// the rows, as the runtime does.
//
//   bench_tokens [cols [threads]]   (default 640 columns, the CI spec plan's width; 2 threads)
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cpu/matmul.hpp"
#include "kernels/cpu/quantize.hpp"

using namespace infer_plan;
using namespace infer_plan::kernels;

namespace {

constexpr uint64_t kMatrixBytes = 96ull << 20;
constexpr int kRepeats = 15;  // timed passes per token count after one warm-up; the median is printed
constexpr uint64_t kMaxTokens = 9;

std::vector<float> random_values(uint64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<float> v(n);
  for (float& f : v) f = static_cast<float>(gen() >> 8) * 0x1p-23f - 1.0f;
  return v;
}

// One pass of the product on `threads` threads, each on its slice of the rows; seconds.
double time_pass(GgmlType type, const std::vector<uint8_t>& w, uint64_t rows, const Activations& x,
                 std::vector<float>& y, int threads) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  auto slice = [&](int t) { return rows * static_cast<uint64_t>(t) / static_cast<uint64_t>(threads); };
  for (int t = 1; t < threads; ++t)
    pool.emplace_back([&, t] { matmul_rows(type, w.data(), rows, x, slice(t), slice(t + 1), y.data()); });
  matmul_rows(type, w.data(), rows, x, slice(0), slice(1), y.data());
  for (std::thread& th : pool) th.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t cols = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 640;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  if (cols == 0 || cols % 32 != 0 || threads < 1 || threads > 64) {
    std::fprintf(stderr, "usage: bench_tokens [cols, a multiple of 32 (Q2_K runs at multiples of 256) [threads, 1..64]]\n");
    return 2;
  }
  std::printf("bench_tokens: %llu MiB of weights, %llu columns, %d thread%s, %s dots; median of %d passes\n"
              "  per token count T: ms per pass, and ms over T = 1 per extra token\n",
              static_cast<unsigned long long>(kMatrixBytes >> 20), static_cast<unsigned long long>(cols), threads,
              threads > 1 ? "s" : "", std::string(matmul_implementation()).c_str(), kRepeats);
  double checksum = 0;
  for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q2_K}) {
    if (cols % ggml_type_info(type).block_values != 0) {
      std::printf("  %-5s  skipped: %llu columns are not whole blocks of %u\n", std::string(ggml_type_info(type).name).c_str(),
                  static_cast<unsigned long long>(cols), ggml_type_info(type).block_values);
      continue;
    }
    const uint64_t row_bytes = ggml_row_bytes(type, cols, "bench");
    const uint64_t rows = kMatrixBytes / row_bytes;
    std::vector<uint8_t> w(rows * row_bytes);
    {
      const uint64_t distinct = 64;  // quantized once, then tiled: quantizing 96 MiB of Q2_K is slow
      std::vector<uint8_t> block(distinct * row_bytes);
      quantize_row(type, random_values(distinct * cols, 1), block, "bench");
      for (uint64_t r = 0; r < rows; ++r)
        std::copy_n(block.data() + (r % distinct) * row_bytes, row_bytes, w.data() + r * row_bytes);
    }
    const std::vector<float> xf = random_values(kMaxTokens * cols, 2);
    std::printf("  %-5s", std::string(ggml_type_info(type).name).c_str());
    double one_token_ms = 0;
    for (uint64_t tokens = 1; tokens <= kMaxTokens; ++tokens) {
      Activations x;
      convert_activations(type, xf.data(), tokens, cols, x);
      std::vector<float> y(tokens * rows);
      time_pass(type, w, rows, x, y, threads);
      std::vector<double> ms;
      for (int rep = 0; rep < kRepeats; ++rep) ms.push_back(1e3 * time_pass(type, w, rows, x, y, threads));
      std::sort(ms.begin(), ms.end());
      const double median = ms[ms.size() / 2];
      if (tokens == 1) {
        one_token_ms = median;
        std::printf("  T=1 %.2f", median);
      } else {
        std::printf("  T=%llu %.2f (+%.2f)", static_cast<unsigned long long>(tokens), median,
                    (median - one_token_ms) / static_cast<double>(tokens - 1));
      }
      std::fflush(stdout);
      checksum += static_cast<double>(y[rows / 2]);
    }
    std::printf("\n");
  }
  std::printf("  (checksum %.6g)\n", checksum);  // printed, so the products are not optimised away
  return 0;
}
