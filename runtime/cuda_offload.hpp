// Offload's copies on the GPU: the prefetcher's copy thread issues
// cudaMemcpyAsync from the pinned host pool on a stream of its own (non-blocking, so copies run
// beside the compute stream's kernels) and waits for it; compute's release of a slot records an
// event on the compute stream, and the next copy into that slot first waits for that event (the
// kernels reading the slot have finished, not merely been enqueued). Plain C++ header.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/offload_prefetcher.hpp"

namespace infer_plan::runtime {

class CudaBackend;

// The prefetcher for `groups` in `slots` device slots of `slot_bytes`, copying on its own stream.
std::unique_ptr<OffloadPrefetcher> make_cuda_offload_prefetcher(CudaBackend& backend,
                                                                std::vector<OffloadGroupSource> groups,
                                                                uint64_t slots, uint64_t slot_bytes);

}  // namespace infer_plan::runtime
