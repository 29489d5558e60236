// What an engine allocates on the device beside weights and KV, so that `fit --engine` does not
// assume zero overhead. Each figure is a named reserve with the rule that sized it:
//   llama.cpp: the compute buffer, the ggml graph allocator's peak over the worst-case graph of
//     n_ubatch = min(n_ctx, 512) tokens (n_ctx: every slot's context, one unified cache): the
//     larger of the attention phase, 4 n_ub (1 + 4 n_embd + n_ctx (1 + n_head)) bytes (F32 KQ
//     and mask, flash attention off), and the output phase, 4 n_ub (n_embd + n_vocab) bytes
//     (every token's logits). This is Ollama's GraphSize for llama models; it reproduces
//     llama.cpp's "CUDA0 compute buffer size" lines to 0.01 MiB (Mistral 7B at n_ctx 2048:
//     164.00 MiB; 32768: 2144.00 MiB). With -fa the attention term drops: pass --reserve.
//   vllm: KV gets gpu_memory_utilization (0.9) x capacity less weights, the profiled activation
//     peak and non-torch memory. The peak is estimated as max_num_batched_tokens (8192) x (3 n_ff
//     + 4 n_embd) x 2 B of FFN and attention activations + max_num_seqs (256) x n_vocab x 4 B of
//     logits: Qwen2.5-1.5B at 32768 tokens 2.02 GiB (vLLM logged 2.02), Llama-3-8B at 8192
//     1.03 GiB (logged 1.26).
//   sglang: weights and KV get mem_fraction_static (0.88, its TP-1 default in 0.3-0.4) of the capacity.
//   trtllm: the CUDA context only; its pool (0.9 of what weights and activations leave) is not
//     modelled yet.
//   llama.cpp and vllm, on an NVIDIA device (the profile's description says so): the CUDA context, 450 MiB
//     (0.3-0.5 GiB reported with lazy module loading; llama.cpp's "unaccounted" 466 MiB).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "planner/model/hw_profile.hpp"
#include "planner/model/model_spec.hpp"

namespace infer_plan {

struct EngineMemory {
  std::vector<NamedBytes> reserves;  // per device, on top of the profile's and the plan's
  double usable_fraction = 1.0;      // of the capacity the engine lets KV use (vLLM: 0.9)
  std::string assumption;            // one line: what was counted and how
};

// `engine` empty or "none": nothing counted, and the assumption says so. InputError for an unknown engine.
// The model as the engine runs it. llama.cpp applies a declared sliding window only in the
// architectures it implements one for (gemma2, gemma3, gpt-oss); in the others (llama, which
// Mistral converts to; qwen2; phi3, where it is disabled) every layer caches the whole context, and the window is kept in
// ignored_window for fit's warning. Other engines run the model as declared.
ModelSpec engine_model_spec(ModelSpec spec, std::string_view engine);

// The engine name that asks for no engine at all: the bare datasheet (or probe) ceiling, no memory.
inline constexpr std::string_view kNoEngine = "none";

EngineMemory engine_memory(const std::string& engine, const ModelSpec& spec, const HwProfile& hw,
                           uint64_t context_tokens, uint64_t requests);

const std::vector<std::string>& known_engines();  // "llama.cpp", "vllm", "sglang", "trtllm"

}  // namespace infer_plan
