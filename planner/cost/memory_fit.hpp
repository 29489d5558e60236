// Does it fit? usable = capacity - reserved; need = weights + runtime reserves + KV for every
// request at its context. With an offload the device holds the weights less the groups
// moved to host memory, plus the prefetch slots. Also: the margin, what is left after weights, the most requests at
// this context and the longest context at this request count. All figures are per device.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "planner/model/hw_profile.hpp"
#include "planner/cost/engine_memory.hpp"
#include "planner/cost/kv_cache.hpp"
#include "planner/cost/layer_split.hpp"
#include "planner/model/model_spec.hpp"
#include "planner/cost/offload.hpp"

namespace infer_plan {

// With a layer split: the host memory's side of the fit (its layers' weights and KV).
struct HostFit {
  std::string description;
  uint64_t capacity_bytes = 0;
  uint64_t reserved_bytes = 0;  // the host profile's, for the OS
  uint64_t usable_bytes = 0;
  uint64_t weights_bytes = 0;
  uint64_t kv_bytes = 0;        // all requests, the host's layers
  int64_t headroom_bytes = 0;
  bool fits = false;
};

struct FitResult {
  uint64_t tp = 1;
  uint64_t context = 0;
  uint64_t requests = 0;
  uint64_t capacity_bytes = 0;
  uint64_t system_reserved_bytes = 0;  // the profile's memory.reserved
  uint64_t usable_bytes = 0;           // capacity - system reserved
  std::string weights_label;           // "79.81 GiB (given)", "BF16 (uniform)"
  uint64_t weights_bytes = 0;          // the model's, per device (before any offload)
  std::optional<OffloadMemory> offload;  // per device, when the plan offloads
  std::optional<LayerSplit> split;       // a layer split (-ngl below every layer): the device's part below
  std::optional<HostFit> host;           // ... and the host's
  uint64_t device_weights_bytes = 0;   // weights - offloaded + prefetch slots (= weights without offload)
  uint64_t kv_bytes_per_token = 0;     // K + V, all layers on this device (with a split: the device's)
  uint64_t kv_bytes_per_request = 0;   // at `context`
  uint64_t kv_bytes = 0;               // all requests
  std::vector<NamedBytes> reserves;    // runtime reserves (profile + plan)
  uint64_t reserved_bytes = 0;         // their sum
  int64_t free_after_weights_bytes = 0;  // usable - device weights (negative: short before any KV)
  int64_t headroom_bytes = 0;            // usable - weights - reserves - KV (the margin)
  uint64_t kv_room_bytes = 0;  // usable - device weights - reserves (0 when negative): the most any KV pool can take
  // The engine's KV pool in tokens, as it logs it (vLLM: "GPU KV cache size"): kv_room_bytes /
  // kv_bytes_per_token (each device holds its share of every token's heads) in whole blocks;
  // nullopt for an engine without blocks.
  std::optional<uint64_t> kv_pool_tokens;
  bool fits = false;
  uint64_t max_requests = 0;   // at `context`
  uint64_t max_context = 0;    // tokens per request at `requests`, limited by memory only
  bool context_unbounded = false;  // every layer keeps only its window: max_context is the limit, not memory's
  std::string engine_assumption;       // what the engine (--engine) adds, or that none was counted
  double kv_share = 1.0;               // of what weights and reserves leave, the engine's pool's share (TensorRT-LLM)
  bool layer_split = false;             // the devices hold whole layers (llama.cpp), not a share of each
  std::string device_note;             // llama.cpp over several devices: which one the figures are, and what it holds
  std::vector<std::string> warnings;
  std::vector<std::string> derivation;  // --explain: each step with its numbers substituted

  // Tokens of requests like this plan's (their context's mix of full and window layers) that
  // `bytes` of KV hold: bytes / kv_bytes_per_token when no layer has a window.
  uint64_t kv_tokens_in(uint64_t bytes) const;
};

// What the fit reads of a deployment (a Plan gives it: plan/plan's fit_request).
struct FitRequest {
  uint64_t tp = 1;                    // tensor-parallel devices
  uint64_t context = 0;               // tokens per request
  uint64_t requests = 0;              // concurrent requests
  KvTypes kv;                         // K and V cache types
  std::vector<NamedBytes> reserves;   // runtime reserves on top of the profile's
  std::string engine;                 // "llama.cpp", "vllm": what the engine allocates; empty: none
  EngineSettings engine_settings;     // the engine's own knobs the plan sets
};

// `weights_bytes` is for the whole model (split evenly across request.tp devices), and so is
// `offload` (offload_memory of the plan's offload section; nullptr: none). `split` (nullptr: every
// layer on the device) puts its host layers' weights and KV in hw.host's memory: InputError
// without a host, or with tp > 1 or an offload beside it.
// `with_derivation` = false skips the --explain lines and the warnings (sweeps evaluate millions).
FitResult fit_memory(const ModelSpec& spec, const HwProfile& hw, const FitRequest& request,
                     uint64_t weights_bytes, const std::string& weights_label, bool with_derivation = true,
                     const OffloadMemory* offload = nullptr, const LayerSplit* split = nullptr,
                     const DeviceLayers* device = nullptr);

// llama.cpp's -ngl auto: the most layers (split_layer_count when all fit) whose split fits the
// device's memory; 0 when not even the device's reserves and one request's nothing fit. The
// host side is not asked (it only grows as layers leave the device).
uint64_t auto_gpu_layers(const ModelSpec& spec, const HwProfile& hw, const FitRequest& request,
                         const PlanWeights& weights, const HostTensors& host = {});

// Lines explaining kv_bytes_per_token for --explain (shared by fit and kv).
std::vector<std::string> kv_per_token_derivation(const ModelSpec& spec, KvTypes types, uint64_t tp);

}  // namespace infer_plan
