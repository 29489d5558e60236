#include "runtime/thread_pool.hpp"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define INFER_PLAN_PAUSE() _mm_pause()
#else
#define INFER_PLAN_PAUSE() std::this_thread::yield()
#endif

namespace infer_plan::runtime {
namespace {
// How long a worker spins for the next job before it sleeps: longer than the gaps between the
// projections of a decode step (norms, RoPE, attention bookkeeping on the caller), much shorter
// than the gaps between steps of an idle server.
constexpr auto kSpin = std::chrono::microseconds(2000);
constexpr uint64_t kGenerationMask = 0xffffffffu, kFieldMask = 0xffffu;
constexpr int kChunksShift = 32, kNextShift = 48;
}  // namespace

ThreadPool::ThreadPool(unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  start_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::parallel_for(uint64_t n, const std::function<void(uint64_t, uint64_t)>& fn, uint64_t grain) {
  if (n == 0) return;
  grain = std::max<uint64_t>(grain, 1);
  const uint64_t units = (n + grain - 1) / grain;
  const uint64_t chunks = std::min<uint64_t>(units, threads() * kChunksPerThread);
  if (threads() == 1 || chunks <= 1) {
    fn(0, n);
    return;
  }
  job_ = &fn;
  n_ = n;
  grain_ = grain;
  units_ = units;
  chunks_ = chunks;
  done_.store(0, std::memory_order_relaxed);
  const uint64_t generation = (generation_.load(std::memory_order_relaxed) + 1) & kGenerationMask;
  claim_.store(generation | chunks << kChunksShift, std::memory_order_release);  // publishes the job
  {
    std::lock_guard lock(mutex_);  // a worker about to sleep either sees the new generation or is woken
    generation_.store(generation, std::memory_order_release);
  }
  start_.notify_all();
  run_chunks(generation);
  while (done_.load(std::memory_order_acquire) != chunks) INFER_PLAN_PAUSE();
}

void ThreadPool::run_chunks(uint64_t generation) {
  uint64_t claim = claim_.load(std::memory_order_acquire);
  for (;;) {
    const uint64_t chunks = (claim >> kChunksShift) & kFieldMask, c = claim >> kNextShift;
    if ((claim & kGenerationMask) != generation || c >= chunks) return;
    if (!claim_.compare_exchange_weak(claim, claim + (uint64_t{1} << kNextShift), std::memory_order_acquire))
      continue;  // `claim` now holds the word as it is
    // Chunk c is this thread's: the job's fields stay as they are until it is done.
    const uint64_t b = std::min(n_, units_ * c / chunks_ * grain_);
    const uint64_t e = std::min(n_, units_ * (c + 1) / chunks_ * grain_);
    if (b < e) (*job_)(b, e);
    done_.fetch_add(1, std::memory_order_release);
    claim = claim_.load(std::memory_order_acquire);
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    // Spin for the next job, then sleep.
    const auto spin_until = std::chrono::steady_clock::now() + kSpin;
    uint64_t spins = 0;
    while (generation_.load(std::memory_order_acquire) == seen && !stop_.load(std::memory_order_relaxed)) {
      INFER_PLAN_PAUSE();
      if (++spins % 256 == 0 && std::chrono::steady_clock::now() > spin_until) {
        std::unique_lock lock(mutex_);
        start_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
      }
    }
    if (stop_.load()) return;
    seen = generation_.load(std::memory_order_acquire);
    run_chunks(seen);
  }
}

}  // namespace infer_plan::runtime
