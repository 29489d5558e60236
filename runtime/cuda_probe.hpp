// `probe --backend cuda`: measure what the planner's roofline and offload model need on one GPU:
// device-to-device copy bandwidth, pinned host-to-device and device-to-host bandwidth, BF16 GEMM
// throughput through cuBLAS, the batch-1 matrix-vector rate per weight type (kernels/cuda/matvec),
// and the cost of one kernel launch; all timed with CUDA events, the
// median of several passes kept. Written as a profile whose `measured` block has the CPU probe's
// keys (runtime/probe.hpp) plus device_to_host. Plain C++ header; compiled only with CUDA.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "planner/core/json_fields.hpp"
#include "runtime/probe.hpp"

namespace infer_plan::runtime {

struct CudaProbeOptions {
  int device = 0;
  uint64_t device_copy_bytes = uint64_t{1} << 30;  // far beyond the 50-60 MiB L2 of Hopper
  uint64_t host_copy_bytes = uint64_t{512} << 20;  // pinned; ~10 ms per pass over PCIe gen5
  int gemm_size = 8192;                            // M = N = K: large enough to reach the tensor-core peak
  int gemms_per_pass = 8;                          // ~1.5 ms each on an H200: a pass of ~12 ms
  uint64_t matvec_bytes = uint64_t{1} << 30;       // weights per matrix-vector matrix, far beyond L2
  int matvecs_per_pass = 4;                        // ~0.25 ms each for 1 GiB on an H200: a pass of ~1 ms
  int launches = 2000;                             // empty kernels per launch-overhead pass
  int repeats = 9;                                 // timed passes; the median is kept
  std::function<void(const std::string&)> progress;
};

struct CudaProbeResult {
  std::string device;  // cudaDeviceProp::name
  int sm_major = 0, sm_minor = 0;
  uint64_t memory_total_bytes = 0;
  uint64_t memory_free_bytes = 0;  // before the probe's buffers: total - free is the CUDA context
  // cudaMemcpyAsync device to device, counted as bytes read + bytes written (2x the copy's size):
  // HBM serves both, so this is the rate a weight-reading decode can approach (H200: ~4.3 TB/s of
  // the datasheet's 4.8).
  RateSample device_copy_bytes_per_s;
  RateSample host_to_device_bytes_per_s;  // pinned host memory, the copy's size (one direction)
  RateSample device_to_host_bytes_per_s;
  RateSample gemm_bf16_ops_per_s;  // 2 * M * N * K per GEMM, BF16 in and out, fp32 accumulation
  int gemm_size = 0;
  std::map<std::string, RateSample> matvec_bytes_per_s;  // probe_cuda_matvec's, by type name ("Q8_0")
  uint64_t matvec_cols = 0;                               // the matrices' width (their rows fill matvec_bytes)
  // Per empty kernel, launched back to back on a stream, and replayed as nodes of a CUDA graph
  // (the runtime captures decode steps as graphs, so the profile carries the graph figure).
  double launch_overhead_stream_s = 0;
  double launch_overhead_graph_s = 0;
  std::string date;
};

CudaProbeResult probe_cuda(const CudaProbeOptions& options);

// The batch-1 rate of kernels/cuda/matvec per weight type ("BF16", "Q8_0", "Q4_0", "Q2_K") in bytes
// of weights read per second: a kCudaProbeMatvecCols-wide matrix of options.matvec_bytes per type,
// timed with events as probe_cuda's other figures (median pass kept), after one element of the
// product is checked against a double reference. The profile's measured.matvec carries them, and
// the roofline reads each type's weights at its rate. Needs the current device set (probe_cuda
// sets it).
constexpr uint64_t kCudaProbeMatvecCols = 4096;  // a Qwen3-8B-wide row, as the CPU probe's
std::map<std::string, RateSample> probe_cuda_matvec(const CudaProbeOptions& options);

// A device profile (hwprofiles/ format): capacity and reserve from cudaMemGetInfo, bandwidth =
// the device copy, compute.bf16 = the GEMM, one host link "pcie-probed" (host to device), and
// the `measured` block.
Json cuda_probe_profile_json(const CudaProbeResult& r, const std::string& name);

}  // namespace infer_plan::runtime
