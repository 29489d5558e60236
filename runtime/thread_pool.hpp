// A fixed set of worker threads that split a range of work items among themselves and the
// caller: every projection of a decode step splits its rows this way, so the threads read
// disjoint parts of the weights and the step is bound by memory bandwidth, not by one core.
// The range is cut into a few chunks per thread, which the threads take from a shared counter
// (as ggml's CPU backend does): a thread that a shared machine slows down takes fewer chunks
// instead of holding up the others with a fixed share.
// A decode step makes ~70 such calls of 0.1-2 ms each, so waking a sleeping thread (50-80 us on
// a VM) would cost as much as the work: workers spin for a while after each job before they
// sleep, and the caller spins for the chunks in flight. It waits for chunks, not for threads: a
// worker that a busy machine has descheduled before it took a chunk holds nothing up (the caller
// takes its chunks), so a step's time grows with the load, not with the scheduler's time slices.
#pragma once
#include <atomic>
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

  // Calls fn(begin, end) on contiguous chunks that cover [0, n) once each, kChunksPerThread per
  // thread (fewer when n is small), on whichever thread is free, and returns when all are done.
  // `grain` rounds chunk boundaries to multiples of it (e.g. 16 rows, so chunks do not share
  // cache lines of the output). Not reentrant.
  void parallel_for(uint64_t n, const std::function<void(uint64_t begin, uint64_t end)>& fn,
                    uint64_t grain = 1);
  static constexpr uint64_t kChunksPerThread = 4;

 private:
  void worker_loop();
  void run_chunks(uint64_t generation);  // takes that job's chunks until none is left

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_;
  const std::function<void(uint64_t, uint64_t)>* job_ = nullptr;
  uint64_t n_ = 0, grain_ = 1, units_ = 0, chunks_ = 0;  // the current job: chunk c covers units
                                                        // [units_ c / chunks_, units_ (c + 1) / chunks_)
  // The job's claims in one word: its generation (the low 32 bits), its chunks and the next chunk
  // to take (16 bits each), so a thread that comes late to a job it saw takes nothing of the next.
  std::atomic<uint64_t> claim_{0};
  std::atomic<uint64_t> done_{0};  // the current job's chunks completed
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace infer_plan::runtime
