#include "planner/cost/engine_capabilities.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>

namespace infer_plan {
namespace {

using T = GgmlType;

// The checkpoint formats the datacenter engines load beside 16-bit weights (vLLM's and SGLang's
// --quantization methods fp8, compressed-tensors, awq, gptq, modelopt_fp4, mxfp4; TensorRT-LLM's
// QuantAlgo FP8, FP8_PER_CHANNEL_PER_TOKEN, FP8_BLOCK_SCALES, W8A8_SQ, W4A16_AWQ, W4A16_GPTQ, NVFP4,
// W4A16_MXFP4).
const std::vector<GgmlType> kCheckpointWeights{T::F32, T::F16, T::BF16, T::FP8, T::FP8_CHANNEL, T::FP8_BLOCK128,
                                               T::INT8_W8A8, T::AWQ_INT4_G128, T::GPTQ_INT4_G128, T::NVFP4, T::MXFP4};

// The datacenter engines alike: checkpoint formats, 16-bit or fp8 KV, every kind of parallelism,
// disaggregated prefill, three speculative methods, multi-node.
EngineCapabilities datacenter_engine(std::string_view name, std::string_view title, std::string_view source) {
  EngineCapabilities e;
  e.name = name;
  e.title = title;
  e.weights = kCheckpointWeights;
  e.kv = {T::F32, T::F16, T::BF16, T::FP8};
  e.tensor_parallel = e.pipeline_parallel = e.expert_parallel = e.data_parallel = true;
  e.pd_disaggregation = e.draft_model = e.draft_heads = e.ngram = e.multi_node = true;
  e.source = source;
  e.vendors = {"nvidia", "amd"};
  return e;
}

const std::vector<EngineCapabilities>& table() {
  static const std::vector<EngineCapabilities> rows = [] {
    EngineCapabilities llama;
    llama.name = llama.title = "llama.cpp";
    llama.gguf_weights = true;
    llama.kv = {T::F32, T::F16, T::BF16, T::Q8_0, T::Q4_0, T::Q4_1, T::Q5_0, T::Q5_1, T::IQ4_NL};
    llama.layer_split = llama.draft_model = llama.draft_heads = llama.ngram = llama.host_layers = true;
    llama.source = "github.com/ggml-org/llama.cpp: tools/server/README.md (the KV cache types, a draft model, layers "
                   "and experts in host memory, tensor overrides), common/speculative.cpp (draft-simple, draft-eagle3, "
                   "draft-mtp, ngram-simple), docs/multi-gpu.md (the layer split; row deprecated), 2026";
    EngineCapabilities vllm = datacenter_engine(
        "vllm", "vLLM",
        "docs.vllm.ai: features/quantization, features/quantization/quantized_kvcache (KV auto, fp8, fp8_e4m3, "
        "fp8_e5m2), serving/parallelism_scaling, features/disagg_prefill, features/spec_decode, engine_args (CPU "
        "offload of weights); v0.11-0.20");
    vllm.weight_offload = true;
    EngineCapabilities sglang = datacenter_engine(
        "sglang", "SGLang",
        "docs.sglang.ai: advanced_features/server_arguments (KV auto, fp8_e5m2, fp8_e4m3; quantization methods; CPU "
        "offload of weights; several nodes), pd_disaggregation, speculative_decoding (EAGLE, EAGLE3, MTP, STANDALONE, "
        "NGRAM); v0.5");
    sglang.weight_offload = true;
    EngineCapabilities trtllm = datacenter_engine(
        "trtllm", "TensorRT-LLM",
        "nvidia.github.io/TensorRT-LLM: features/quantization (QuantAlgo), features/kvcache (KvCacheConfig dtype), "
        "features/disagg-serving, features/speculative-decoding (draft-target, EAGLE3, MTP, N-gram), "
        "features/parallel-strategy; 1.x");
    trtllm.kv = {T::F16, T::BF16, T::FP8};
    trtllm.vendors = {"nvidia"};
    return std::vector<EngineCapabilities>{llama, vllm, sglang, trtllm};
  }();
  return rows;
}

std::string lower_name(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string type_list(const std::vector<GgmlType>& types, bool as_kv) {
  std::string text;
  for (GgmlType t : types)
    text += (text.empty() ? "" : ", ") + (as_kv ? lower_name(ggml_type_info(t).name) : std::string(ggml_type_info(t).name));
  return text;
}

}  // namespace

std::span<const EngineCapabilities> engine_capability_table() { return table(); }

const EngineCapabilities* find_engine_capabilities(std::string_view engine) {
  for (const EngineCapabilities& e : table())
    if (e.name == engine) return &e;
  return nullptr;
}

std::optional<std::string> engine_refuses_types(std::string_view engine, const WeightsLayout& weights, KvTypes kv) {
  const EngineCapabilities* e = find_engine_capabilities(engine);
  if (!e) return std::nullopt;
  for (const TensorPlacement& t : weights.tensors) {
    const GgmlTypeInfo& info = ggml_type_info(t.type);
    const bool runs = e->gguf_weights ? info.gguf : std::find(e->weights.begin(), e->weights.end(), t.type) != e->weights.end();
    if (runs) continue;
    return e->gguf_weights
               ? fmt::format("{} loads GGUF files; {} is a checkpoint format (vLLM, SGLang and TensorRT-LLM load it)",
                             e->title, info.name)
               : fmt::format("{} does not load {} weights ({} holds {}: a GGUF type, llama.cpp's); it loads {}", e->title,
                             info.name, weights.file_type, t.tensor.name, type_list(e->weights, false));
  }
  for (GgmlType t : {kv.k, kv.v})
    if (std::find(e->kv.begin(), e->kv.end(), t) == e->kv.end())
      return fmt::format("{} has no {} KV cache; its KV types: {}", e->title, lower_name(ggml_type_info(t).name),
                         type_list(e->kv, true));
  return std::nullopt;
}

std::optional<std::string> engine_refuses_device(std::string_view engine, std::string_view arch) {
  const EngineCapabilities* e = find_engine_capabilities(engine);
  const DeviceArch* a = find_device_arch(arch);
  if (!e || !a || e->vendors.empty() || std::find(e->vendors.begin(), e->vendors.end(), a->vendor) != e->vendors.end())
    return std::nullopt;
  return fmt::format("{} serves {} devices; {} is {}'s", e->title, fmt::join(e->vendors, " and "), arch, a->vendor);
}

}  // namespace infer_plan
