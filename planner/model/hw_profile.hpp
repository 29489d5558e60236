// Hardware profiles: one device (memory, bandwidth, compute per precision, links) or one link
// (bandwidth per direction). Datasheet figures are written with units and parsed strictly.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "planner/core/json_fields.hpp"
#include "planner/model/step_model.hpp"

namespace infer_plan {

struct LinkProfile {
  std::string name;                  // "pcie-gen5-x16"
  std::string description;
  double bandwidth_bytes_per_s = 0;  // per direction
  // The fixed cost of one all-reduce over this link (profile field "latency_us"); without it,
  // tensor parallel counts kDefaultAllReduceLatencyS (planner/cost/roofline).
  std::optional<double> all_reduce_latency_s;
  // The fixed time of one transfer over this link beside its bytes, from the sender's call to the
  // last byte's arrival (profile field "message_latency_us"; 0 where the profile does not state it).
  // A request's KV crossing whole is one message; streamed layer by layer, one per layer.
  double message_latency_s = 0;
};

struct NamedBytes {
  std::string name;  // "cuda_context", "compute_buffer"
  uint64_t bytes = 0;
};

// Figures measured on a real device by `infer-plan probe`; they override the datasheet.
struct MeasuredFigures {
  std::optional<double> memory_bandwidth_bytes_per_s;   // achieved device read/copy bandwidth
  std::map<std::string, double> compute_ops_per_s;      // achieved dense throughput per precision
  std::optional<double> host_to_device_bytes_per_s;     // pinned copies over the host link
  std::optional<double> device_to_host_bytes_per_s;     // the other direction (CUDA probe; KV spill, results)
  // Per weight type ("Q8_0"): the rate a batch-1 matrix-vector product reads that type's weights
  // (bytes/s), and the rate a batched product multiplies it (ops/s, 2 per weight per token).
  // The roofline times each tensor by its own type's rates when present.
  std::map<std::string, double> matvec_bytes_per_s;
  std::map<std::string, double> matmul_ops_per_s;
  // Fixed cost of one kernel launch (on the CPU: one parallel projection, dispatch and join),
  // from a least-squares fit of time = overhead + bytes / rate over projections of several
  // sizes. A decode step pays it once per kernel, which small models feel.
  std::optional<double> launch_overhead_s;
  // What one launch is in the runtime the probe measured for: "projection" (the CPU runtime: one
  // parallel product; the small steps run inline) or "kernel" (the CUDA decoder: every kernel of
  // its pass, norms, RoPE and adds included, each a node of the step's graph).
  std::string launch_unit = "projection";
  std::string source;                                   // "probe on <device>, <date>"
};

// The host a device sits in, for llama.cpp's layer split (-ngl): the layers left in host memory
// are read there by the CPU. Profile field "host": {"description", "memory": {"capacity",
// "reserved", "bandwidth"}, "efficiency"} (bandwidth the datasheet's, efficiency the achieved
// fraction a CPU decode reads at).
struct HostProfile {
  std::string description;
  uint64_t memory_capacity_bytes = 0;
  uint64_t memory_reserved_bytes = 0;
  double memory_bandwidth_bytes_per_s = 0;
  double memory_efficiency = 1.0;
  uint64_t usable_bytes() const { return memory_capacity_bytes - memory_reserved_bytes; }
  double achieved_bandwidth() const { return memory_bandwidth_bytes_per_s * memory_efficiency; }
};

struct HwProfile {
  std::string name;
  std::string source;  // "built-in" or a path
  std::string description;
  std::string arch;    // a planner/model/device_arch name ("ampere"); empty: not stated
  uint64_t memory_capacity_bytes = 0;
  uint64_t memory_reserved_bytes = 0;  // held back for the OS / driver, never usable
  double memory_bandwidth_bytes_per_s = 0;
  std::map<std::string, double> compute_ops_per_s;  // "bf16" -> 989e12
  std::vector<LinkProfile> host_links;               // first = the default host link
  std::optional<LinkProfile> device_link;            // GPU-to-GPU (NVLink), for tensor parallel
  uint64_t devices_per_node = 0;                     // devices one machine holds (0: not stated, no limit)
  std::optional<LinkProfile> node_link;              // between machines, per device (RDMA): TP past one node
  std::vector<NamedBytes> reserves;                  // runtime reserves (context, buffers)
  std::optional<HostProfile> host;                   // the host's memory, for a layer split
  std::optional<double> price_per_hour;              // US dollars per device-hour (advise's cost)
  std::optional<double> board_power_w;               // the datasheet's board power (TDP), watts
  std::vector<std::string> sources;                  // where the figures come from
  // Achieved fractions of the datasheet figures (used when no measured block is present).
  double memory_efficiency = 1.0;
  double compute_efficiency = 1.0;
  std::optional<MeasuredFigures> measured;
  // An engine's step model fitted to measurements (`calibrate`): the roofline then predicts
  // fixed time + achieved reads + extra tokens, and keeps its ceiling beside (planner/model/step_model).
  std::optional<StepCalibration> calibration;
  std::string uncalibrated_note;  // why an engine asked for has no calibration here (shown with the ceiling)

  uint64_t usable_bytes() const { return memory_capacity_bytes - memory_reserved_bytes; }
};

// Precisions a profile may list under "compute".
const std::vector<std::string>& compute_precisions();

using LinkResolver = std::function<LinkProfile(const std::string& name)>;

// `where` names the file for errors; `resolve_link` turns a link name in "host_links" into a
// profile. Unknown keys are refused (a typo would otherwise silently read as a default).
HwProfile hw_profile_from_json(const Json& j, const std::string& name, const std::string& where,
                               const LinkResolver& resolve_link);
LinkProfile link_profile_from_json(const Json& j, const std::string& name, const std::string& where);

}  // namespace infer_plan
