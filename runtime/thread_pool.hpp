// A fixed set of worker threads that split a range of work items among themselves and the
// caller: every projection of a decode step splits its rows this way, so the threads read
// disjoint parts of the weights and the step is bound by memory bandwidth, not by one core.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace infer_plan::runtime {

class ThreadPool {
 public:
  // threads == 0: one per hardware thread. The caller counts as one of them.
  explicit ThreadPool(unsigned threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned threads() const { return static_cast<unsigned>(workers_.size()) + 1; }

  // Calls fn(begin, end) on contiguous chunks covering [0, n), one chunk per thread (fewer when
  // n is small), and returns when all are done. `grain` rounds chunk boundaries to multiples of
  // it (e.g. 32 rows, so chunks do not share cache lines of the output). Not reentrant.
  void parallel_for(uint64_t n, const std::function<void(uint64_t begin, uint64_t end)>& fn,
                    uint64_t grain = 1);

 private:
  void worker_loop(unsigned index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_, done_;
  const std::function<void(uint64_t, uint64_t)>* job_ = nullptr;
  std::vector<std::pair<uint64_t, uint64_t>> chunks_;  // [0] is the caller's
  uint64_t generation_ = 0;
  unsigned pending_ = 0;
  bool stop_ = false;
};

}  // namespace infer_plan::runtime
