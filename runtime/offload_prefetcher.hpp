// Offload's prefetcher: offloaded weight groups live in a host pool, and compute reads
// each from one of `slots` device buffers. A copy thread copies group after group into slot
// after slot, as far ahead as free slots allow. On the CPU backend a copy is a memcpy and
// compute is synchronous. On the CUDA backend (runtime/cuda_offload) a copy is cudaMemcpyAsync
// on a copy stream, waited for on the copy thread, and compute is asynchronous: release() only
// means compute's reads of the slot are enqueued, so a fence (an event recorded on the compute
// stream at release, which the copy thread waits on before the next copy into that slot) keeps
// rule 2 on the device.
//
// Passes read the groups in order 0..G-1, pass after pass. Ticket n = pass x G + group uses slot
// n % slots, so the first group of the next pass is copied while the current pass finishes.
// The two rules hold by construction, whatever the caller does:
//  - wait(g) returns only once the copy of g's ticket has completed;
//  - the copy of ticket n starts only after ticket n - slots was released.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/backend.hpp"

namespace infer_plan::runtime {

struct OffloadGroupSource {
  const uint8_t* host = nullptr;  // the group's tensors, packed, in the host pool
  uint64_t bytes = 0;
};

// One forward pass (a decode round or a prefill chunk): the copies of its G groups.
struct OffloadPassRecord {
  uint64_t bytes = 0;  // copied into slots for this pass
  double copy_s = 0;   // the copy thread's busy time on them (start to end of each copy)
  double wait_s = 0;   // time compute spent blocked in wait() for them: the stall
};

// dst, src, bytes: the copy of one group into its slot.
using OffloadCopyFn = std::function<void(void* dst, const void* src, uint64_t bytes)>;

// For asynchronous compute: `released(slot)` runs inside release() (compute's thread) and marks
// the point compute's reads of the slot were enqueued; `before_copy(slot)` runs on the copy thread
// before the next copy into the slot is timed and blocks until those reads are done. Empty on
// the CPU backend.
struct OffloadSlotFence {
  std::function<void(uint64_t slot)> released;
  std::function<void(uint64_t slot)> before_copy;
};

class OffloadPrefetcher {
 public:
  // Allocates slots x slot_bytes (MemoryCategory::offload_buffers; slot_bytes >= every group)
  // and starts copying. `copy` replaces memcpy through the backend (tests slow it down).
  OffloadPrefetcher(Backend& backend, std::vector<OffloadGroupSource> groups, uint64_t slots, uint64_t slot_bytes,
                    OffloadCopyFn copy = {}, OffloadSlotFence fence = {});
  ~OffloadPrefetcher();
  OffloadPrefetcher(const OffloadPrefetcher&) = delete;
  OffloadPrefetcher& operator=(const OffloadPrefetcher&) = delete;

  uint64_t groups() const { return groups_.size(); }
  uint64_t slots() const { return slots_.size(); }

  // Blocks until `group` (the next in order; std::logic_error otherwise) is in its slot and
  // returns the slot's bytes, readable until release(group).
  const uint8_t* wait(uint64_t group);
  // Compute is done with `group`'s slot (the one last waited for, in order): it may be overwritten.
  void release(uint64_t group);
  // The most recent pass whose G groups have all been released; zeros before the first.
  OffloadPassRecord last_pass() const;

 private:
  void copy_loop();

  Backend& backend_;
  std::vector<OffloadGroupSource> groups_;
  std::vector<DeviceBuffer> slots_;
  OffloadCopyFn copy_;
  OffloadSlotFence fence_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;  // a copy completed, a slot was released, or stop
  uint64_t copied_ = 0;              // tickets below have completed copies
  uint64_t waited_ = 0;              // tickets below have been handed to compute
  uint64_t released_ = 0;            // tickets below have been released by compute
  bool stop_ = false;
  std::exception_ptr copy_error_;
  std::map<uint64_t, OffloadPassRecord> open_passes_;  // by pass, until its last group is released
  OffloadPassRecord last_pass_;
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace infer_plan::runtime
