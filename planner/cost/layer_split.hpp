// llama.cpp's layer split (-ngl N, --n-gpu-layers): the device holds the last N of the model's
// repeating layers, and the output head as one more "layer" when N exceeds them; the token
// embeddings, the first layers and their KV cache stay in host memory, where the CPU runs them at
// the host's bandwidth (llama.cpp's layout: the host's layers are not copied to the device per
// step). N = layers + 1 (or more) is every layer on the device: the plan without a split.
// --n-cpu-moe M (--cpu-moe: every layer) keeps the routed experts of the first M layers in host
// memory too, whose CPU multiplies the ones a step routes to (llama.cpp's -ot ffn_.*_exps=CPU); -ot
// REGEX=BUFFER places any tensor by its name.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "planner/cost/kv_cache.hpp"
#include "planner/cost/roofline.hpp"
#include "planner/model/hw_profile.hpp"
#include "planner/model/model_spec.hpp"
#include "planner/weights/weights_size.hpp"

namespace infer_plan {

// llama.cpp's -ot REGEX=BUFFER (--override-tensor): a tensor whose GGUF name the pattern finds
// (std::regex_search, ECMAScript, as llama.cpp matches) goes to that buffer; of several, the first
// pattern that finds it decides (src/llama-model.cpp). "CPU" or a host buffer (CUDA_Host) is host
// memory; a device's buffer (CUDA0, ROCm0, Vulkan0, SYCL0, MTL0, Metal) is the device.
struct TensorOverride {
  std::string pattern, buffer;
  bool host = false;
  bool operator==(const TensorOverride&) const = default;
};
// "REGEX=BUFFER[,REGEX=BUFFER...]" as llama.cpp splits it (at commas, then at the first '='); InputError
// naming `what` for an empty or invalid pattern or an unknown buffer.
std::vector<TensorOverride> parse_tensor_overrides(std::string_view text, std::string_view what);
// "blk\.[0-9]+\.ffn_.*_exps=CPU,..." as given
std::string tensor_overrides_text(const std::vector<TensorOverride>& overrides);

// What stays in host memory beside the layers -ngl leaves there.
struct HostTensors {
  uint64_t cpu_moe_layers = 0;      // --n-cpu-moe: the first layers' routed experts
  std::vector<signed char> forced;  // per weights.layout tensor, by -ot: 1 host, 0 device, -1 its layer decides
  bool any_host() const;            // some tensor of a device layer may go to the host
};
HostTensors host_tensors(const PlanWeights& weights, uint64_t cpu_moe_layers,
                         const std::vector<TensorOverride>& overrides);

struct LayerSplit {
  uint64_t gpu_layers = 0;        // N as llama.cpp counts it: repeating layers, then the output head
  uint64_t device_blocks = 0;     // repeating layers on the device: the last min(N, layers)
  bool head_on_device = false;    // N > layers: output norm and head on the device too
  uint64_t device_weights_bytes = 0;
  uint64_t host_weights_bytes = 0;  // token_embd, the first layers, and the head unless on the device
  uint64_t embd_bytes = 0;          // token_embd's (a step reads one row of it per token)
  uint64_t cpu_moe_layers = 0;      // --n-cpu-moe: the first layers whose routed experts stay on the host
  uint64_t host_expert_bytes = 0;   // ... those of the device's layers (in host_weights_bytes)
  uint64_t expert_bytes = 0;        // every routed expert's
  HostTensors host_tensors;         // what it was made with
  uint64_t override_host_tensors = 0, override_host_bytes = 0;  // -ot's on the host (in host_weights_bytes)
  ModelSpec device_part;          // the spec with only the device's layers (their windows): its KV
  ModelSpec host_part;            // ... and the host's
};

// The most -ngl counts for `spec`: its layers and the output head.
uint64_t split_layer_count(const ModelSpec& spec);

// The split at `gpu_layers` (clamped to split_layer_count) of the plan's weights.
LayerSplit layer_split(const ModelSpec& spec, const PlanWeights& weights, uint64_t gpu_layers,
                       const HostTensors& host = {});

// llama.cpp's devices under -sm layer with every layer offloaded: the L + 1 slots (the layers, then
// the output head) dealt in order by the devices' cumulative shares (-ts; default equal): slot i
// goes to the first device whose cumulative share exceeds i / (L + 1) (src/llama-model.cpp). The
// token embeddings stay in host memory. Two equal devices of an 80-layer model: 41 and 39 + head.
struct DeviceLayers {
  uint64_t first = 0, end = 0;     // its repeating layers [first, end)
  bool head = false;               // the output norm and head (the last device)
  uint64_t weights_bytes = 0;
  ModelSpec part;                  // the spec with only its layers: its KV
};
std::vector<DeviceLayers> device_layers(const ModelSpec& spec, const PlanWeights& weights,
                                        const std::vector<double>& shares);
// "layers 0-40" or "layers 41-79 and the output head"
std::string device_layers_label(const DeviceLayers& d);

// A decode step (or prefill) with the split: `whole` is the roofline's step for every layer on the
// device. The host's share of what the step reads (its layers' part of the weights read per step,
// token_embd aside, and of the KV) is read at the host's achieved bandwidth; the rest keeps its
// share of the device's time. Returns seconds.
double split_step_s(const StepCost& whole, const LayerSplit& split, const ModelSpec& spec, const HostProfile& host);
// Of that, the seconds the host's layers take: their share of the reads at the host's bandwidth.
double split_host_s(const StepCost& whole, const LayerSplit& split, const ModelSpec& spec, const HostProfile& host);
// The host's share of a step's weight reads (its layers'), of its expert reads (the experts kept
// on the host of the device's layers) and of its KV reads.
double split_host_weight_share(const LayerSplit& split);
double split_host_expert_share(const LayerSplit& split);
double split_host_kv_share(const LayerSplit& split, const ModelSpec& spec);

// "40/81 layers on the device (the last 40 blocks; token_embd, blocks 0-39 and the head in host memory)"
std::string layer_split_label(const LayerSplit& split, const ModelSpec& spec);

}  // namespace infer_plan
