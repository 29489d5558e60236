// An empty kernel, for measuring what one launch costs (the probe's launch_overhead_us): a decode
// step launches hundreds of small kernels, so at batch 1 this fixed cost is a visible share.
// Plain C++ header (streams as void*); implemented in empty_kernel.cu when the CUDA build is on.
#pragma once

namespace infer_plan::kernels::cuda {

// Enqueues `count` launches of an empty one-thread kernel on `stream` (a cudaStream_t; nullptr is
// the legacy default stream). Asynchronous; throws std::runtime_error (file:line) on a launch error.
void launch_empty_kernels(int count, void* stream);

}  // namespace infer_plan::kernels::cuda
