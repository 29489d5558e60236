// `probe --backend cpu`: measure what the planner's roofline needs on this machine, with the
// runtime's own code paths: memory read and copy bandwidth (STREAM-like, all threads), each
// weight type's batch-1 matrix-vector rate over a matrix far larger than the caches (bytes/s of
// weights), and each type's batched product rate on a cache-resident matrix (ops/s). Written as
// a hardware profile whose `measured` block the roofline prefers to datasheet figures; and what
// products of 2, 4, 8 and 32 tokens cost beyond one token's, per type, over a DRAM-sized matrix,
// written as the profile's calibration (planner/model/step_model: the CPU runtime's step model).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "planner/core/ggml_type.hpp"
#include "planner/core/json_fields.hpp"

namespace infer_plan::runtime {

struct ProbeOptions {
  unsigned threads = 0;                        // 0: one per hardware thread (as `run`)
  uint64_t stream_bytes = uint64_t{512} << 20; // read / copy buffer
  uint64_t matvec_bytes = uint64_t{256} << 20; // weights per matrix-vector matrix
  int repeats = 9;                             // timed passes; the median is kept
  uint64_t copy_chunk_bytes = 0;               // the copy thread's memcpy size (an offload group); 0: whole buffer
  GgmlType copy_beside_type = GgmlType::Q8_0;  // the compute the copy runs beside: this type's (a
  uint64_t copy_beside_tokens = 1;             // probed one, else Q8_0) products of 1..32 tokens
  // The several-token products (the step model's extra-token curve): rows of this many columns
  // (a plan's projection width; 0: 4096), over a matrix of at least 4x the last-level cache.
  uint64_t product_cols = 0;
  double product_point_s = 0.5;                // each T's pairs are timed for at least this long
  // The weight types probed (with copy_beside_type): a plan's; empty: every type the CPU multiplies.
  std::vector<GgmlType> types;
  std::function<void(const std::string&)> progress;
};

struct RateSample {
  double median = 0, min = 0, max = 0;  // per pass
};

struct ProbeResult {
  std::string device;       // the CPU model
  unsigned threads = 0;
  uint64_t memory_bytes = 0;  // physical memory
  RateSample read_bytes_per_s, copy_bytes_per_s;
  // One extra thread copying while the `threads` run a decode's products: the offload copy
  // thread beside decode (runtime/offload_prefetcher.hpp). On a CPU host and "device" memory are
  // the same DRAM, so this, not an idle machine's copy, is the rate the copy gets during decode.
  // On a 2-core EPYC VM (10 MB pieces, one compute thread): alone 11 GB/s; beside a pure read
  // stream 5.2-6.9; beside Q8_0 products of 4 tokens 6.7-7.6; the runtime's copy during the
  // batch-4 decode of scenarios/plans/cpu-offload.json 6.2-7.7 GB/s.
  RateSample copy_beside_compute_bytes_per_s;
  std::string copy_beside;  // how it was measured
  std::map<std::string, RateSample> matvec_bytes_per_s;  // weights read by a batch-1 product
  std::map<std::string, RateSample> matmul_ops_per_s;    // 2 ops per weight per token, batch kMatmulBatch
  // time = launch_overhead_s + bytes / launch_fit_rate, fitted over Q8_0 projections of 64 to
  // 4096 rows (each streamed from memory, as a decode step's are).
  double launch_overhead_s = 0;
  double launch_fit_rate = 0;
  // Per type, per T in kProbeProductTokens: what a product of T tokens costs beyond one token's,
  // in seconds per weight byte: the median of (T-token pass - 1-token pass) over interleaved
  // pairs, so the machine's drift cancels. Over `product_bytes` of `product_cols`-wide rows.
  std::map<std::string, std::map<uint64_t, double>> extra_product_s_per_byte;
  uint64_t product_cols = 0, product_bytes = 0, last_level_cache_bytes = 0;
  // The same matrix read one token at a time, one projection of product_cols rows after another
  // (the 1-token halves of those pairs): the read rate in the plan's shape.
  std::map<std::string, RateSample> projection_bytes_per_s;
  bool averaged = false;  // average_probes of a probe before and one after a run
  std::string date;
};

inline constexpr uint64_t kProbeMatmulBatch = 32;  // tokens per product when measuring ops/s (a prompt chunk)
// The batch sizes and verify passes of a decode (2..8) and a prompt chunk (32).
inline constexpr uint64_t kProbeProductTokens[] = {2, 4, 8, 32};

ProbeResult probe_cpu(const ProbeOptions& options);

// Two probes of one machine, one before and one after a run, as one: each rate's median is the
// mean of the two (min and max span both), each curve point the mean. A shared machine's speed
// drifts by tens of percent within minutes; the run sits between the probes, so the mean is what
// it saw on average, where one probe before it is what it saw at its start.
// `weight_after` weighs the second (a running mean over several probes: 1 / n for the n-th).
ProbeResult average_probes(const ProbeResult& before, const ProbeResult& after, double weight_after = 0.5);

// A device profile (hwprofiles/ format): capacity = physical memory, bandwidth and compute from
// the probe, and the `measured` block (memory_bandwidth, matvec, matmul, host_to_device = the copy
// beside compute); its one host link, "cpu-copy-thread", has that same bandwidth (offload's link).
Json probe_profile_json(const ProbeResult& r, const std::string& name);

}  // namespace infer_plan::runtime
