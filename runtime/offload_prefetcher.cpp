// One copy thread, one mutex, one condition variable: the copy thread blocks only on a slot that
// compute still holds, compute blocks only on a copy that has not completed. Times are the
// host's steady clock, taken by the thread that does the work (the backend's clock may drain the
// compute stream).
#include "runtime/offload_prefetcher.hpp"

#include <fmt/format.h>

#include <chrono>
#include <stdexcept>

namespace infer_plan::runtime {
namespace {

uint64_t steady_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

}  // namespace

OffloadPrefetcher::OffloadPrefetcher(Backend& backend, std::vector<OffloadGroupSource> groups, uint64_t slots,
                                     uint64_t slot_bytes, OffloadCopyFn copy, OffloadSlotFence fence)
    : backend_(backend), groups_(std::move(groups)), copy_(std::move(copy)), fence_(std::move(fence)) {
  if (groups_.empty() || slots == 0) throw std::logic_error("OffloadPrefetcher: needs at least one group and one slot");
  for (const OffloadGroupSource& g : groups_)
    if (g.bytes > slot_bytes)
      throw std::logic_error(fmt::format("OffloadPrefetcher: a group of {} B does not fit a slot of {} B", g.bytes, slot_bytes));
  for (uint64_t s = 0; s < slots; ++s) slots_.push_back(backend_.allocate(slot_bytes, MemoryCategory::offload_buffers));
  if (!copy_)
    copy_ = [this](void* dst, const void* src, uint64_t bytes) {
      DeviceBuffer view{dst, bytes, MemoryCategory::offload_buffers};
      backend_.copy_to_device(view, src, bytes);
    };
  thread_ = std::thread([this] { copy_loop(); });
}

OffloadPrefetcher::~OffloadPrefetcher() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();  // a copy in flight finishes first: its slot is freed only after
  for (DeviceBuffer& s : slots_) backend_.free(s);
}

void OffloadPrefetcher::copy_loop() {
  const uint64_t S = slots_.size(), G = groups_.size();
  for (uint64_t n = 0;; ++n) {
    {
      std::unique_lock lock(mutex_);
      // Rule 2: slot n % S last held ticket n - S; compute must have released it.
      changed_.wait(lock, [&] { return stop_ || n < S || released_ > n - S; });
      if (stop_) return;
    }
    const OffloadGroupSource& g = groups_[n % G];
    uint64_t t0 = 0;
    try {
      if (fence_.before_copy && n >= S) fence_.before_copy(n % S);  // compute's reads of ticket n - S are done
      t0 = steady_ns();
      copy_(slots_[n % S].data, g.host, g.bytes);
    } catch (...) {
      std::lock_guard lock(mutex_);
      copy_error_ = std::current_exception();
      changed_.notify_all();
      return;
    }
    const uint64_t t1 = steady_ns();
    {
      std::lock_guard lock(mutex_);
      OffloadPassRecord& pass = open_passes_[n / G];
      pass.bytes += g.bytes;
      pass.copy_s += static_cast<double>(t1 - t0) * 1e-9;
      copied_ = n + 1;  // rule 1: from here on compute may read the slot
    }
    changed_.notify_all();
  }
}

const uint8_t* OffloadPrefetcher::wait(uint64_t group) {
  const uint64_t S = slots_.size(), G = groups_.size();
  std::unique_lock lock(mutex_);
  const uint64_t n = waited_;
  if (n % G != group)
    throw std::logic_error(fmt::format("OffloadPrefetcher: wait for group {}, but group {} is next", group, n % G));
  if (waited_ - released_ >= S)
    throw std::logic_error("OffloadPrefetcher: every slot is held by compute; waiting for another would never end");
  const uint64_t t0 = steady_ns();
  changed_.wait(lock, [&] { return copied_ > n || copy_error_; });  // rule 1
  if (copy_error_) std::rethrow_exception(copy_error_);
  open_passes_[n / G].wait_s += static_cast<double>(steady_ns() - t0) * 1e-9;
  ++waited_;
  return static_cast<const uint8_t*>(slots_[n % S].data);
}

void OffloadPrefetcher::release(uint64_t group) {
  const uint64_t G = groups_.size();
  {
    std::lock_guard lock(mutex_);
    const uint64_t n = released_;
    if (n >= waited_ || n % G != group)
      throw std::logic_error(fmt::format("OffloadPrefetcher: release of group {}, which compute does not hold", group));
    if (fence_.released) fence_.released(n % slots_.size());  // before the copy thread can see the release
    ++released_;
    if ((n + 1) % G == 0) {  // the pass's last group: its figures are complete
      auto it = open_passes_.find(n / G);
      last_pass_ = it->second;
      open_passes_.erase(it);
    }
  }
  changed_.notify_all();
}

OffloadPassRecord OffloadPrefetcher::last_pass() const {
  std::lock_guard lock(mutex_);
  return last_pass_;
}

}  // namespace infer_plan::runtime
