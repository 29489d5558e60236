// ThreadPool::parallel_for: every item of the range is handed out exactly once, in chunks whose
// boundaries are multiples of the grain, whichever threads take them, and back-to-back jobs
// (the ~70 projections of a decode step) do not leak chunks into each other.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/thread_pool.hpp"

using infer_plan::runtime::ThreadPool;

namespace {

struct Calls {
  std::mutex mutex;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  std::set<std::thread::id> threads;
};

void check_cover(ThreadPool& pool, uint64_t n, uint64_t grain) {
  CAPTURE(pool.threads());
  CAPTURE(n);
  CAPTURE(grain);
  std::vector<std::atomic<int>> seen(n);
  Calls calls;
  pool.parallel_for(
      n,
      [&](uint64_t b, uint64_t e) {
        for (uint64_t i = b; i < e; ++i) seen[i].fetch_add(1, std::memory_order_relaxed);
        std::lock_guard lock(calls.mutex);
        calls.ranges.emplace_back(b, e);
        calls.threads.insert(std::this_thread::get_id());
      },
      grain);
  int wrong = 0;
  for (uint64_t i = 0; i < n; ++i) wrong += seen[i].load() != 1;
  CHECK(wrong == 0);
  const uint64_t units = grain == 0 ? n : (n + grain - 1) / grain;
  // Chunks: at most kChunksPerThread per thread, never more than the whole units, none empty.
  CHECK(calls.ranges.size() <= pool.threads() * ThreadPool::kChunksPerThread);
  CHECK(calls.ranges.size() <= std::max<uint64_t>(units, 1));
  for (const auto& [b, e] : calls.ranges) {
    CHECK(b < e);
    if (grain > 1) CHECK(b % grain == 0);
    if (grain > 1 && e != n) CHECK(e % grain == 0);
  }
}

}  // namespace

TEST_CASE("parallel_for hands out every item exactly once, on grain boundaries") {
  for (unsigned threads : {1u, 2u, 3u}) {
    ThreadPool pool(threads);
    for (uint64_t n : {1, 2, 7, 16, 17, 100, 4096, 14337}) {
      for (uint64_t grain : {0, 1, 16, 64}) check_cover(pool, n, grain);
    }
  }
}

TEST_CASE("parallel_for of nothing calls nothing; one item runs on the caller") {
  ThreadPool pool(2);
  int calls = 0;
  pool.parallel_for(0, [&](uint64_t, uint64_t) { ++calls; });
  CHECK(calls == 0);
  std::thread::id who;
  pool.parallel_for(1, [&](uint64_t b, uint64_t e) {
    ++calls;
    who = std::this_thread::get_id();
    CHECK(b == 0);
    CHECK(e == 1);
  });
  CHECK(calls == 1);
  CHECK(who == std::this_thread::get_id());
}

TEST_CASE("a thousand back-to-back jobs each sum their own range") {
  // Each job's sum of 0..n-1 must be n (n - 1) / 2: a chunk taken by a worker still finishing the
  // previous job, or a chunk counter not reset, would add a wrong or missing range.
  ThreadPool pool(2);
  for (uint64_t job = 0; job < 1000; ++job) {
    const uint64_t n = 1 + job % 97;
    std::atomic<uint64_t> sum{0};
    pool.parallel_for(n, [&](uint64_t b, uint64_t e) {
      uint64_t s = 0;
      for (uint64_t i = b; i < e; ++i) s += i;
      sum.fetch_add(s);
    });
    REQUIRE(sum.load() == n * (n - 1) / 2);
  }
}
