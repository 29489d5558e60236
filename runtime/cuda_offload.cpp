// The copy stream and the per-slot events outlive the prefetcher's thread: its copy function and
// fence share ownership of them.
#include "runtime/cuda_offload.hpp"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "kernels/cuda/check.hpp"
#include "runtime/cuda_backend.hpp"

namespace infer_plan::runtime {
namespace {

class CopyLink {
 public:
  CopyLink(CudaBackend& backend, uint64_t slots)
      : device_(backend.device()), compute_(static_cast<cudaStream_t>(backend.stream())) {
    // The copy stream and the events belong to the device current when they are made: the
    // backend's, whichever device the constructing thread had selected.
    CUDA_CHECK(cudaSetDevice(device_));
    CUDA_CHECK(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
    events_.resize(slots);
    for (cudaEvent_t& e : events_) CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  ~CopyLink() {
    for (cudaEvent_t e : events_) (void)cudaEventDestroy(e);
    if (const cudaError_t e = cudaStreamDestroy(copy_); e != cudaSuccess)
      fmt::print(stderr, "{}:{}: cudaStreamDestroy: {}\n", __FILE__, __LINE__, cudaGetErrorName(e));
  }
  CopyLink(const CopyLink&) = delete;
  CopyLink& operator=(const CopyLink&) = delete;

  // The copy thread: the group's bytes into the slot, returning once they are there (rule 1).
  void copy(void* dst, const void* src, uint64_t bytes) {
    on_device();
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, copy_));
    CUDA_CHECK(cudaStreamSynchronize(copy_));
  }
  // Compute's thread, at release: the kernels enqueued so far include every reader of the slot.
  void released(uint64_t slot) { CUDA_CHECK(cudaEventRecord(events_.at(slot), compute_)); }
  // The copy thread, before overwriting the slot: those readers have run (rule 2).
  void before_copy(uint64_t slot) {
    on_device();
    CUDA_CHECK(cudaEventSynchronize(events_.at(slot)));
  }

 private:
  // The current device is per host thread (device 0 until set): the copy thread makes the
  // backend's device its own before its first call.
  void on_device() const {
    thread_local int bound = -1;
    if (bound != device_) {
      CUDA_CHECK(cudaSetDevice(device_));
      bound = device_;
    }
  }

  int device_ = 0;
  cudaStream_t compute_ = nullptr;
  cudaStream_t copy_ = nullptr;
  std::vector<cudaEvent_t> events_;
};

}  // namespace

std::unique_ptr<OffloadPrefetcher> make_cuda_offload_prefetcher(CudaBackend& backend,
                                                                std::vector<OffloadGroupSource> groups,
                                                                uint64_t slots, uint64_t slot_bytes) {
  auto link = std::make_shared<CopyLink>(backend, slots);
  OffloadSlotFence fence{[link](uint64_t slot) { link->released(slot); },
                         [link](uint64_t slot) { link->before_copy(slot); }};
  return std::make_unique<OffloadPrefetcher>(
      backend, std::move(groups), slots, slot_bytes,
      [link](void* dst, const void* src, uint64_t bytes) { link->copy(dst, src, bytes); }, std::move(fence));
}

}  // namespace infer_plan::runtime
