#include "planner/serving/engine_policy.hpp"

#include <fmt/format.h>

#include "planner/core/input_error.hpp"
#include "planner/core/limits.hpp"

namespace infer_plan {
namespace {

constexpr uint64_t kLargeDeviceBytes = uint64_t{70} << 30;  // vLLM's threshold for its larger defaults
// vLLM's V1 engine, the default from 0.8.0, chunks prefills by default; V0 prefilled each prompt in a
// step of its own (chunking on only past 32K of context) with 256 sequences at most.
constexpr std::pair<unsigned, unsigned> kVllmV1Since{0, 8};

EnginePolicy engine_defaults(std::string_view engine, const HwProfile& hw, const EngineSettings& settings) {
  const auto version = settings.engine_version ? engine_version_number(*settings.engine_version) : std::nullopt;
  constexpr uint64_t kVllmBlock = 16, kTrtllmBlock = 32;
  if (engine == "vllm" && version && *version < kVllmV1Since) return {256, std::nullopt, true, true, kVllmBlock, true, false, 0};
  if (engine == "vllm") {
    const bool large = hw.memory_capacity_bytes >= kLargeDeviceBytes && !hw.name.starts_with("a100");
    return large ? EnginePolicy{1024, 8192, true, true, kVllmBlock, true, true, 8192}
                 : EnginePolicy{256, 2048, true, true, kVllmBlock, true, true, 2048};
  }
  if (engine == "sglang") {  // chunked_prefill_size by the device's memory (server_args, 0.5.4 and later)
    const uint64_t mib = hw.memory_capacity_bytes >> 20;
    const uint64_t chunk = mib < 35 * 1024 ? 2048 : mib < 60 * 1024 ? 4096 : mib < 160 * 1024 ? 8192 : 16384;
    return {kMaxConcurrentRequests, chunk, /*mix_decodes=*/false, /*chunk_prompts=*/true, 1, false, true, chunk};
  }
  if (engine == "llama.cpp") {  // llama-server: the slots' new tokens, then prompts' tokens, within n_batch (-b)
    constexpr uint64_t kLlamaBatch = 2048;
    return {EnginePolicy{}.max_batch, settings.batch.value_or(kLlamaBatch), true, true, 1, false, false,
            llama_cpp_micro_batch(settings)};
  }
  if (engine == "trtllm") return {2048, 8192, /*mix_decodes=*/true, /*chunk_prompts=*/false, kTrtllmBlock, false, true, 0};
  return {};
}

// Knobs only the datacenter engines have: InputError for llama.cpp (its name, then `llama_cpp_has`) or no engine.
void require_datacenter_engine(std::string_view engine, std::string_view knob, std::string_view llama_cpp_has) {
  if (engine == "vllm" || engine == "sglang" || engine == "trtllm") return;
  throw InputError(fmt::format("{}; {}", knob,
                               engine.empty() ? std::string("a plan without an engine has none (field 'engine')")
                                              : fmt::format("{}{}", engine, llama_cpp_has)));
}

}  // namespace

EnginePolicy engine_policy(std::string_view engine, const HwProfile& hw, const EngineSettings& settings) {
  EnginePolicy p = engine_defaults(engine, hw, settings);
  if (settings.enable_prefix_caching) {
    require_datacenter_engine(engine,
                              "field 'enable_prefix_caching' switches vLLM's prefix caching (SGLang's radix cache, "
                              "TensorRT-LLM's block reuse)",
                              "'s slots reuse only their own last prompt, which is not modelled");
    p.prefix_caching = *settings.enable_prefix_caching;
  }
  if (!settings.max_num_seqs && !settings.max_num_batched_tokens) return p;
  require_datacenter_engine(engine,
                            "fields 'max_num_seqs' and 'max_num_batched_tokens' are the limits of vLLM's scheduler "
                            "(SGLang's and TensorRT-LLM's too)",
                            " has none: its running requests are its slots (field 'requests')");
  if (settings.max_num_seqs) p.max_batch = *settings.max_num_seqs;
  if (settings.max_num_batched_tokens) {
    p.step_token_budget = *settings.max_num_batched_tokens;
    if (p.chunk_prompts && p.prefill_pass_tokens) p.prefill_pass_tokens = *p.step_token_budget;
  }
  return p;
}

}  // namespace infer_plan
