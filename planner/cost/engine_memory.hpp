// What an engine allocates on the device beside weights and KV, so that `fit --engine` does not
// assume zero overhead. Each figure is a named reserve with the rule that sized it:
//   llama.cpp: the compute buffer, the ggml graph allocator's peak over the worst-case graph of
//     n_ubatch = min(n_ctx, 512) tokens (n_ctx: every slot's context, one unified cache): the
//     larger of the attention phase, 4 n_ub (1 + 4 n_embd + n_ctx (1 + n_head)) bytes (F32 KQ
//     and mask, flash attention off), and the output phase, 4 n_ub (n_embd + n_vocab) bytes
//     (every token's logits). This is Ollama's GraphSize for llama models; it reproduces
//     llama.cpp's "CUDA0 compute buffer size" lines to 0.01 MiB (Mistral 7B at n_ctx 2048:
//     164.00 MiB; 32768: 2144.00 MiB). With flash attention (-fa, on by default) no KQ matrix is
//     kept: the attention phase is 4 n_ub (1 + 4 n_embd) + 2 n_ub n_ctx (the F16 mask) bytes.
//     n_ub = min(n_ctx, -b 2048, -ub 512).
//   vllm (V1, as 0.11 and later profile it): KV gets gpu_memory_utilization (0.9) of the memory CUDA
//     reports (nvidia-smi's total less about 450 MiB: 79.19 GiB on an H100) less, per rank, the
//     weights, non-torch memory (0.25 GiB; with TP over NVLink the NCCL and custom all-reduce buffers:
//     2.0 GiB + 0.04 GiB per rank; over PCIe as alone) and the activation peak of the profiling run. That peak is the larger
//     of the forward pass of max_num_batched_tokens tokens, T (3 n_ff / tp + 4 n_embd) x 2 B, and
//     the dummy sampler's max_num_seqs x n_vocab fp32 rows (3.73 x 4 B each, the logits and their
//     softmax and sorting copies) beside the T hidden states; MoE adds the fused experts' cache,
//     T k (2 n_ff_exp / tp + n_embd) x 2 B. T and max_num_seqs are the engine's defaults
//     (serving/engine_policy). Before 0.20 CUDA graphs are captured after the pool is sized, in the
//     headroom. From 0.20 (the default here) gpu_memory_utilization defaults to 0.92 and the pool also
//     loses vLLM's estimate of its graphs: it captures the two largest of each mode's sizes and
//     extrapolates; over 13 published logs (TP 1, up to 35B) that is 0.52 GiB + 0.002 GiB per graph
//     past two, the graphs being the piecewise sizes up to min(2 max_num_seqs, 512) (1, 2, 4, every 8
//     to 256, every 16 beyond) and the full ones up to max_num_seqs. None with enforce_eager, or off
//     NVIDIA devices.
//   sglang (0.5.4 and later): weights and the KV pool get mem_fraction_static of the memory free
//     once CUDA and torch are up (0.40 GiB beside the context; with TP over NVLink, NCCL's and the
//     all-reduce's buffers as vLLM's); by default (capacity - reserved) / capacity, rounded to
//     0.001, reserved = 512 MiB + 1.5 x max(chunked_prefill_size, 2048) + 2 x cuda_graph_max_bs +
//     128 MiB x TP, at least 10 GiB on a device of more than 60 GiB; both sizes by the device's
//     memory (engine_policy, sglang_cuda_graph_max_bs). Activations and CUDA graphs use the rest.
//   trtllm (PyTorch backend, 1.x): KV gets free_gpu_memory_fraction (0.9) of what is left after the
//     weights, non-torch memory (1.57 GiB, with TP over NVLink the NCCL buffers as vLLM's) and the activation peak
//     of a profiling run of max_num_tokens (8192) tokens, the forward pass as vLLM's; blocks of 32.
//   llama.cpp and vllm, on an NVIDIA device (the profile's description says so): the CUDA context, 450 MiB
//     (0.3-0.5 GiB reported with lazy module loading; llama.cpp's "unaccounted" 466 MiB).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "planner/model/hw_profile.hpp"
#include "planner/model/model_spec.hpp"

namespace infer_plan {

struct EngineMemory {
  std::vector<NamedBytes> reserves;  // per device, on top of the profile's and the plan's
  double usable_fraction = 1.0;      // of the capacity the engine lets KV use (vLLM: 0.9)
  double kv_share = 1.0;             // of what weights and reserves leave, the share its pool takes (TensorRT-LLM: 0.9)
  uint64_t unseen_bytes = 0;         // of the capacity the engine's fraction is not taken of (vLLM: the
                                     // driver's share, which CUDA does not report)
  std::optional<uint64_t> pool_block_tokens;  // the engine's KV pool is whole blocks of this many tokens (vLLM: 16)
  std::string assumption;            // one line: what was counted and how
};

// What a plan sets of the engine's own knobs; nullopt: the engine's default.
struct EngineSettings {
  std::optional<double> gpu_memory_utilization;  // vLLM: its share of the device's memory (0.9)
  std::optional<double> mem_fraction_static;     // SGLang: weights' and KV's share (by the device's memory)
  std::optional<double> free_gpu_memory_fraction;  // TensorRT-LLM: the pool's share of what the rest leave (0.9)
  // The scheduler's limits, vLLM's names (SGLang: max_running_requests and chunked_prefill_size;
  // TensorRT-LLM: max_batch_size and max_num_tokens): requests running at once, tokens one step carries.
  std::optional<uint64_t> max_num_seqs;
  std::optional<uint64_t> max_num_batched_tokens;
  // llama.cpp's -fa (nullopt: auto, which turns it on wherever the backend has the kernel: CUDA,
  // Metal, Vulkan, ROCm and the CPU since 2025), -ub and -b.
  std::optional<bool> flash_attention;
  std::optional<uint64_t> ubatch, batch;
  // vLLM's version, MAJOR.MINOR[.PATCH] (nullopt: the current one): from 0.20 it subtracts its CUDA
  // graphs' estimated memory from the KV pool and defaults gpu_memory_utilization to 0.92.
  std::optional<std::string> engine_version;
  bool enforce_eager = false;  // vLLM's --enforce-eager: no CUDA graphs
  // Prefix caching (vLLM's --enable-prefix-caching, SGLang's radix cache, TensorRT-LLM's block
  // reuse; nullopt: the engine's default, planner/serving/engine_policy).
  std::optional<bool> enable_prefix_caching;
  // SGLang's --cuda-graph-max-bs: the largest batch it captures a CUDA graph for (nullopt: its default by
  // the device's memory and TP), two MiB of its reserve each
  std::optional<uint64_t> cuda_graph_max_bs;
  bool operator==(const EngineSettings&) const = default;
};
// The tokens of one llama.cpp graph evaluation: -ub clamped to -b (512 and 2048 by default). A
// longer prompt runs in such micro-batches, each reading the weights again.
uint64_t llama_cpp_micro_batch(const EngineSettings& settings);


// `engine` empty or "none": nothing counted, and the assumption says so. InputError for an unknown engine.
// The model as the engine runs it. llama.cpp applies a declared sliding window only in the
// architectures it implements one for (gemma2, gemma3, gpt-oss); in the others (llama, which
// Mistral converts to; qwen2; phi3, where it is disabled) every layer caches the whole context, and the window is kept in
// ignored_window for fit's warning. Where it applies one, each window layer's cache holds
// n_swa + n_ubatch cells per sequence, padded to 256 (llama-kv-cache-iswa.cpp; one stream per slot,
// as llama-server keeps them with -np N), and attention reads them all: window_cache_tokens. Other
// engines run the model as declared.
ModelSpec engine_model_spec(ModelSpec spec, std::string_view engine, const EngineSettings& settings = {});

// The engine name that asks for no engine at all: the bare datasheet (or probe) ceiling, no memory.
inline constexpr std::string_view kNoEngine = "none";

// `tp`: the devices each holding 1/tp of the weights (the reserves are per device).
EngineMemory engine_memory(const std::string& engine, const ModelSpec& spec, const HwProfile& hw,
                           uint64_t context_tokens, uint64_t requests, uint64_t tp = 1,
                           const EngineSettings& settings = {});

const std::vector<std::string>& known_engines();

// MAJOR.MINOR of a version as engines print it ("0.19", "v0.20.1", "0.23.1rc1.dev531+ga65f93fb2");
// nullopt when `text` does not start so.
std::optional<std::pair<unsigned, unsigned>> engine_version_number(std::string_view text);

// SGLang's cuda_graph_max_bs default for a device of `capacity_bytes` at `tp` (0.5.4 and later).
uint64_t sglang_cuda_graph_max_bs(uint64_t capacity_bytes, uint64_t tp);  // "llama.cpp", "vllm", "sglang", "trtllm"

}  // namespace infer_plan
