#include "runtime/thread_pool.hpp"

#include <algorithm>

namespace infer_plan::runtime {

ThreadPool::ThreadPool(unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  chunks_.resize(threads);
  for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
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
  const uint64_t parts = std::min<uint64_t>(threads(), (n + grain - 1) / grain);
  if (parts <= 1) {
    fn(0, n);
    return;
  }
  // Chunk i covers [units * i / parts, units * (i + 1) / parts) in units of `grain`.
  const uint64_t units = (n + grain - 1) / grain;
  for (uint64_t i = 0; i < threads(); ++i) {
    const uint64_t b = i < parts ? std::min(n, units * i / parts * grain) : n;
    const uint64_t e = i < parts ? std::min(n, units * (i + 1) / parts * grain) : n;
    chunks_[i] = {b, e};
  }
  {
    std::lock_guard lock(mutex_);
    job_ = &fn;
    pending_ = static_cast<unsigned>(workers_.size());
    ++generation_;
  }
  start_.notify_all();
  if (chunks_[0].first < chunks_[0].second) fn(chunks_[0].first, chunks_[0].second);
  std::unique_lock lock(mutex_);
  done_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
}

void ThreadPool::worker_loop(unsigned index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(uint64_t, uint64_t)>* job;
    std::pair<uint64_t, uint64_t> chunk;
    {
      std::unique_lock lock(mutex_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      chunk = chunks_[index];
    }
    if (chunk.first < chunk.second) (*job)(chunk.first, chunk.second);
    {
      std::lock_guard lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

}  // namespace infer_plan::runtime
