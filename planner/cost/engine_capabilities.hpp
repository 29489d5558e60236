// What each serving engine runs: the one table that knows it (weight formats, KV cache types,
// parallelism, prefill/decode disaggregation, speculative methods, weights in host memory,
// multi-node launch), from the engines' documentation as of late 2026 (each row names its pages).
// fit, roofline and the rest refuse, naming why, a plan its engine cannot run; advise searches only
// what a plan's engine runs.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "planner/core/ggml_type.hpp"
#include "planner/model/device_arch.hpp"
#include "planner/cost/kv_cache.hpp"
#include "planner/weights/weights_size.hpp"

namespace infer_plan {

struct EngineCapabilities {
  std::string_view name;            // as --engine takes it: "vllm"
  std::string_view title;           // "vLLM"
  bool gguf_weights = false;        // every llama.cpp file type and GGML type
  std::vector<GgmlType> weights;    // else the formats it loads (F16, BF16, checkpoint formats)
  std::vector<GgmlType> kv;         // its KV cache types
  bool tensor_parallel = false;     // every layer over identical devices
  bool layer_split = false;         // whole layers per device, run in turn (llama.cpp's -sm layer)
  bool pipeline_parallel = false, expert_parallel = false, data_parallel = false;
  bool pd_disaggregation = false;   // prefill and decode on separate workers, the KV sent between
  bool draft_model = false;         // speculative decoding with a separate small model
  bool draft_heads = false;         // ... with EAGLE or MTP heads
  bool ngram = false;               // ... with prompt-lookup n-grams
  bool host_layers = false;         // layers (and routed experts) kept and computed in host memory
  bool weight_offload = false;      // weights in host memory copied in every step (--cpu-offload-gb)
  bool multi_node = false;          // one model over several machines
  std::vector<std::string_view> vendors;  // the device vendors it serves (DeviceArch::vendor); empty: every one
  std::string_view source;          // the pages the row was read from
};

// The four engines, in the order --engine lists them.
std::span<const EngineCapabilities> engine_capability_table();
// nullptr for a name the table does not hold ("", "none").
const EngineCapabilities* find_engine_capabilities(std::string_view engine);

// Why `engine` cannot run these weights and KV types ("vLLM has no q8_0 KV cache (its types: ...)"),
// nullopt when it can, or when `engine` is not in the table.
std::optional<std::string> engine_refuses_types(std::string_view engine, const WeightsLayout& weights, KvTypes kv);
// Why `engine` does not serve a device of this architecture (HwProfile::arch; "" serves), nullopt when it does.
std::optional<std::string> engine_refuses_device(std::string_view engine, std::string_view arch);

}  // namespace infer_plan
