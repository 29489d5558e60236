// The Plan: one configuration that the planner predicts and the runtime executes. Assembled
// from a plan.json or from CLI flags; every field has a default. (Fields for offload,
// speculation and load arrive with the features that use them.)
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "planner/model/hw_profile.hpp"
#include "planner/core/json_fields.hpp"
#include "planner/core/limits.hpp"
#include "planner/cost/kv_cache.hpp"
#include "planner/cost/memory_fit.hpp"

namespace infer_plan {

// The offload lever; see planner/cost/offload.hpp.
struct OffloadPlan {
  std::string part = "ffn";   // ffn, attn or layer
  uint64_t every = 4;         // one layer in every k
  uint64_t buffers = 2;       // device prefetch slots
  std::string link;           // link name or path; empty = the profile's first host link
};

// The speculative decoding lever; see planner/cost/speculative.hpp. Times are given, or
// derived from the rooflines of the target (the plan's model) and `draft`.
struct SpeculativePlan {
  std::vector<double> accept{0.75};  // one i.i.d. rate, or one per position
  std::string draft;                 // draft model; empty: draft_layers, or verify_ms and draft_ms
  std::optional<uint64_t> draft_layers;  // the draft is the target's first N layers and its head
  float temperature = 0.0f;          // the runtime's acceptance: 0 greedy, else rejection sampling
  std::optional<double> verify_ms;
  std::optional<double> draft_ms;
  uint64_t max_block = 8;
  uint64_t group = 1;
  std::optional<uint64_t> block;     // the block length the plan runs (figures at that m)
};

// Load on the server: Little's law from any two of rate, sojourn and in-system; and, with
// `simulate`, Poisson arrivals on a continuous-batching server timed by the roofline.
struct LoadPlan {
  std::optional<double> rate_per_s;
  std::optional<double> sojourn_s;
  std::optional<double> in_system;
  bool simulate = false;
  uint64_t requests = 200;   // simulated arrivals
  uint64_t seed = 1;
  uint64_t max_batch = 256;  // running requests at most
  // The first this many tokens of every prompt are the same (a shared system prompt): what the
  // engine's prefix caching computes once.
  uint64_t shared_prefix = 0;
};

// Prefill/decode disaggregation (planner/serving/pd_serving.hpp): prompts on prefill workers,
// their KV over a link to decode workers; compared with as many colocated servers under the same load.
struct PdPlan {
  uint64_t prefill_workers = 1;
  uint64_t decode_workers = 1;
  std::string link = "25gbe";  // a built-in link name or a link JSON path (hwprofiles/links)
  double link_scale = 1.0;     // the link's bandwidth times this: a CPU's slower steps want a slower link
  bool stream = false;         // the KV crosses layer by layer as the prefill makes it, not after it
};

struct Plan {
  std::string model = "qwen3-8b";          // built-in name, config.json path
  double scale = 1.0;                      // shrink the model for a CPU run (planner/model/model_scale)
  std::string hw = "h200";                 // built-in name or profile path
  std::string engine;                      // "llama.cpp": the profile's built-in calibration for
                                           // that engine (planner/calibration/calibration); empty: the profile's own
  std::string weights;                     // llama.cpp file type or GGML type; empty = the default:
                                           // "file" for a .gguf model, BF16 otherwise
  std::optional<uint64_t> weights_bytes;   // a known file size overrides `weights`
  KvTypes kv;                              // K and V cache types
  uint64_t context = 8192;                 // tokens per request
  uint64_t output = 256;                   // generated tokens per request
  uint64_t requests = 4;                   // concurrent requests
  uint64_t tp = 1;                         // tensor-parallel devices
  // The link between them that tensor parallel's all-reduce (llama.cpp's hand-over) crosses: a link
  // name or path, replacing the profile's device link (two PCIe cards without a bridge: the host
  // link's); empty: the profile's device link, else its first host link.
  std::string tp_link;
  EngineSettings engine_settings;          // the engine's own knobs (JSON: gpu_memory_utilization)
  // llama.cpp's layer split (planner/cost/layer_split): layers on the device, counting the output
  // head as the last; nullopt: every layer. gpu_layers_auto: the most that fit (-ngl auto).
  std::optional<uint64_t> gpu_layers;
  bool gpu_layers_auto = false;
  // llama.cpp's --n-cpu-moe: the first layers whose routed experts stay in host memory;
  // kAllLayers: every layer's (--cpu-moe)
  std::optional<uint64_t> cpu_moe_layers;
  static constexpr uint64_t kAllLayers = ~uint64_t{0};
  // llama.cpp's -ot REGEX=BUFFER: tensors placed by name (planner/cost/layer_split), in order
  std::vector<TensorOverride> override_tensor;
  std::optional<uint64_t> host_memory_bytes;          // override or supply the profile's host memory
  // Apple silicon: the GPU's working-set limit raised with `sysctl iogpu.wired_limit_mb` (the
  // profile's reserve keeps Metal's default, recommendedMaxWorkingSetSize)
  std::optional<uint64_t> gpu_wired_limit_bytes;
  // llama.cpp's -ts: each device's share of the layers (over `tp` devices; empty: equal shares)
  std::vector<double> tensor_split;
  // llama.cpp's -dev: its devices in order, by profile name, when they differ (a 4090 beside a 3090);
  // `hw` is the first and `tp` their number. Empty: `tp` devices of `hw`.
  std::vector<std::string> devices;
  std::optional<double> host_bandwidth_bytes_per_s;   // ... and its bandwidth (as achieved by a CPU decode)
  std::vector<NamedBytes> reserves;        // runtime reserves on top of the profile's
  std::optional<Json> hw_inline;           // a profile object given inside the plan
  std::optional<double> decode_ms;         // a measured decode iteration, instead of the roofline
  std::optional<double> deadline_s;        // per-request deadline for generation / admission
  std::optional<OffloadPlan> offload;
  std::optional<SpeculativePlan> speculative;
  std::optional<LoadPlan> load;
  std::optional<PdPlan> pd;
};

// llama.cpp's -fa value: on, off, or auto (nullopt: the engine decides); InputError naming `what`.
std::optional<bool> flash_attention_setting(std::string_view value, std::string_view what);

// Reads a plan.json object; unknown keys are refused. `where` names the file for errors.
Plan plan_from_json(const Json& j, const std::string& where);
// The plan as plan_from_json reads it back (plan_from_json(plan_to_json(p)) == p): the fields
// that differ from a default Plan's, with an inline profile, offload, speculative and load sections.
Json plan_to_json(const Plan& plan);
// Checks ranges (planner/core/limits: context, requests, output, scale, tp, the load's requests
// and max_batch); the InputError names the field as `name` says (the CLI: the flag that set it).
void validate_plan(const Plan& plan, const std::function<std::string(std::string_view field)>& name);
// The same, naming "where: field 'context'".
void validate_plan(const Plan& plan, std::string_view where);

// What the memory fit reads of the plan.
FitRequest fit_request(const Plan& plan);
// llama.cpp's -ts text, "3,1": positive shares; InputError naming `what` otherwise.
std::vector<double> parse_tensor_split(const std::string& text, const std::string& what);
// The plan's ranges checked (validate_plan), then fit_memory of what it asks.
FitResult fit_memory(const ModelSpec& spec, const HwProfile& hw, const Plan& plan, uint64_t weights_bytes,
                     const std::string& weights_label, bool with_derivation = true,
                     const OffloadMemory* offload = nullptr, const LayerSplit* split = nullptr,
                     const DeviceLayers* device = nullptr);

}  // namespace infer_plan
