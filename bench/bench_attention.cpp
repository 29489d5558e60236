// Decode attention speed against the memory it must read: a Qwen3-8B-like layer (32 query heads,
// 8 KV heads of 128) over 4096 cached tokens in shuffled 16-token pages, for each KV type and each
// code path this CPU runs. Warm-up, then repeats; prints the median time, the spread, and the K+V
// bytes read per second (the kernel's roofline is this machine's memory or cache bandwidth).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/quantize.hpp"

using namespace infer_plan;
using namespace infer_plan::kernels;

namespace {

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

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 21;
  const uint64_t n_tokens = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 4096;
  const AttentionShape shape{32, 8, 128};
  const uint64_t row_values = shape.n_kv_head * shape.head_dim;
  std::printf("decode attention: %llu query heads, %llu KV heads x %llu, %llu tokens, %d repeats\n",
              static_cast<unsigned long long>(shape.n_head), static_cast<unsigned long long>(shape.n_kv_head),
              static_cast<unsigned long long>(shape.head_dim), static_cast<unsigned long long>(n_tokens), repeats);
  std::vector<float> q(shape.n_head * shape.head_dim), out(q.size()), scratch;
  std::mt19937 gen(1);
  for (float& x : q) x = static_cast<float>(gen() >> 8) * 0x1p-21f - 4.0f;
  for (const GgmlType type : {GgmlType::BF16, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0}) {
    const Cache k = make_cache(type, row_values, n_tokens, 16, 2), v = make_cache(type, row_values, n_tokens, 16, 3);
    const double kv_bytes = 2.0 * static_cast<double>(k.view.row_bytes * n_tokens);
    for (const AttentionPath path : {AttentionPath::portable, AttentionPath::avx2}) {
      if (!attention_path_available(path)) continue;
      attention_decode_on(path, shape, q.data(), k.view, v.view, n_tokens, out.data(), scratch);  // warm-up
      std::vector<double> seconds;
      for (int r = 0; r < repeats; ++r) {
        const auto start = std::chrono::steady_clock::now();
        attention_decode_on(path, shape, q.data(), k.view, v.view, n_tokens, out.data(), scratch);
        seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
      std::sort(seconds.begin(), seconds.end());
      const double median = seconds[seconds.size() / 2];
      std::printf("  %-5s %-8s  KV %6.2f MB  median %8.3f ms  (min %8.3f, max %8.3f)  %6.2f GB/s of KV\n",
                  std::string(ggml_type_info(type).name).c_str(), path == AttentionPath::avx2 ? "avx2" : "portable",
                  kv_bytes / 1e6, median * 1e3, seconds.front() * 1e3, seconds.back() * 1e3, kv_bytes / median / 1e9);
    }
  }
  return 0;
}
