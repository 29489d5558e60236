// Sources of the constants: llama.cpp src/llama-context.cpp (the worst-case graph of
// min(n_ctx, n_ubatch) tokens, every output kept) and ggml-alloc (a peak, not a sum, over one
// layer); Ollama fs/ggml/ggml.go GraphSize; vLLM vllm/v1/worker/gpu_worker.py
// determine_available_memory and its "model weights take ... activation peak memory takes ..." logs
// (vllm PR #10511: Llama-3-8B on an H100); pytorch issues #107667 and #20532 for the CUDA context.
#include "planner/cost/engine_memory.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fmt/format.h>

#include "planner/core/input_error.hpp"
#include "planner/core/units.hpp"
#include "planner/cost/engine_capabilities.hpp"
#include "planner/serving/engine_policy.hpp"

namespace infer_plan {
namespace {

constexpr uint64_t kLlamaCppUbatch = 512;            // llama.cpp's default n_ubatch
constexpr uint64_t kLlamaCppBatch = 2048;            // ... and n_batch
constexpr uint64_t kLlamaCppSwaPad = 256;            // its sliding-window cache's cells, padded to this
constexpr uint64_t kF16 = 2;
constexpr uint64_t kCudaContextBytes = uint64_t{450} << 20;
constexpr double kVllmGpuMemoryUtilization = 0.9;    // vLLM's default gpu_memory_utilization before 0.20
constexpr double kVllmGpuMemoryUtilizationGraphs = 0.92;  // ... and from 0.20, when it began counting CUDA graphs
constexpr std::pair<unsigned, unsigned> kVllmGraphEstimateSince{0, 20};
// vLLM's CUDA-graph estimate, from 38 published logs of 0.17-0.28: 0.52 GiB + 0.002 GiB per graph past
// two, fitted to 13 logs at TP 1 (models up to 35B, any quantization), within 0.2 GiB. Two logs of 0.19
// (dense models on FlashAttention 2: Qwen3-8B on an A100 40GB, Qwen2.5-72B TP 4 on L40S) estimated 2.35
// and 2.73 GiB, but an RTX A5000 with Qwen3-8B on 0.21 estimated 0.52: not a rule of the device.
constexpr double kVllmGraphBaseGib = 0.52, kVllmGraphEachGib = 0.002;
constexpr uint64_t kVllmMaxCaptureSize = 512;
constexpr uint64_t kVllmBlockTokens = 16;            // vLLM's KV block
// Fitted to vLLM 0.19.0's start-up logs on an H100 (llm-d-incubation/llm-d-planner, accuracy/results/
// v0.19.0/logs, commit d3121e05): non-torch memory 0.24-0.27 GiB alone, 2.06-2.11 at TP 2 and
// 2.13-2.21 at TP 4; the activation peak over 11 dense models (0.75-3.99 GiB) gives 3.68-3.90 fp32
// copies of each sampler row.
constexpr double kVllmNonTorchGib = 0.25;
constexpr double kVllmCollectiveGib = 2.0, kVllmCollectivePerRankGib = 0.04;
constexpr double kVllmSamplerCopies = 3.73;
constexpr uint64_t kVllmMaxBatchedTokensFallback = 8192;  // a policy without a budget (vLLM always has one)
// TensorRT-LLM (PyTorch backend, 1.x): its pool takes free_gpu_memory_fraction of what the profiling
// run leaves, in blocks of 32 tokens (KvCacheConfig's defaults). Its non-torch memory (CUDA context,
// cuBLAS and attention workspaces, the CUDA graphs captured while profiling) fitted to one published
// log: Qwen3-0.6B BF16 on an H100, 1.2.1, 68.69 GiB / 643,136 tokens (staging: trtllm points).
constexpr double kTrtllmFreeFraction = 0.9;
constexpr uint64_t kTrtllmBlockTokens = 32;
constexpr double kTrtllmNonTorchGib = 1.57;
constexpr uint64_t kSglangChunkFallback = 4096;          // SGLang's chunked_prefill_size on an unknown device
// SGLang's memory taken before its free-memory probe beside the CUDA context (torch's and NCCL's
// start-up): "Load weight begin. avail mem=78.81 GB" on an H100 (79.65 GiB, less the 0.44 the context
// holds), v0.4.1's documentation run.
constexpr double kSglangStartGib = 0.40;
constexpr uint64_t kF32 = 4, kBf16 = 2;

bool is_nvidia(const HwProfile& hw) { return hw.description.find("NVIDIA") != std::string::npos; }

uint64_t gib_bytes(double gib) { return static_cast<uint64_t>(gib * static_cast<double>(uint64_t{1} << 30)); }

// What a worker holds beside the CUDA context before its weights: `alone` (torch's and NCCL's start-up,
// the engine's own), or in a TP group over NVLink NCCL's and the custom all-reduce's buffers (vLLM
// 0.19's non-torch memory at TP 2-4 on H100s: 2.0 + 0.04 TP GiB). Over PCIe the engines keep no custom
// all-reduce and NCCL's buffers are small: SGLang 0.4.3 on 4 x L4 logs 0.13 GB for its distributed
// start-up and 0.86 GB in all before weights, as one H100 alone (0.84 GB, v0.4.1).
uint64_t worker_start_bytes(const HwProfile& hw, uint64_t tp, double alone_gib) {
  if (tp > 1 && hw.device_link)
    return gib_bytes(kVllmCollectiveGib + kVllmCollectivePerRankGib * static_cast<double>(tp));
  return gib_bytes(alone_gib);
}

// A profiling pass of `tokens` tokens at its widest (vLLM's and TensorRT-LLM's dummy forward): the
// FFN's gate, up and product and four hidden-wide tensors in BF16, per device; MoE adds the fused
// experts' cache of every routed token.
uint64_t forward_activation_bytes(const ModelSpec& s, uint64_t tokens, uint64_t tp) {
  return tokens * (3 * s.intermediate / tp + 4 * s.hidden) * kBf16;
}
uint64_t expert_activation_bytes(const ModelSpec& s, uint64_t tokens, uint64_t tp) {
  return s.is_moe() ? tokens * s.experts_active * (2 * s.moe_intermediate / tp + s.hidden) * kBf16 : 0;
}

// vLLM's captured CUDA graphs: its default capture sizes (1, 2, 4, every 8 below 256, every 16 from
// 256) up to min(2 max_num_seqs, 512), piecewise, and those up to max_num_seqs again as full graphs.
uint64_t vllm_cuda_graph_count(uint64_t max_num_seqs) {
  const uint64_t cap = std::min(2 * max_num_seqs, kVllmMaxCaptureSize);
  uint64_t piecewise = 0, full = 0;
  for (uint64_t size = 1; size <= cap; size = size < 4 ? 2 * size : size < 256 ? size + 8 - size % 8 : size + 16) {
    ++piecewise;
    if (size <= max_num_seqs) ++full;
  }
  return piecewise + full;
}

}  // namespace

std::optional<std::pair<unsigned, unsigned>> engine_version_number(std::string_view text) {
  if (text.starts_with('v')) text.remove_prefix(1);
  unsigned major = 0, minor = 0;
  const auto [dot, ec] = std::from_chars(text.data(), text.data() + text.size(), major);
  if (ec != std::errc() || dot == text.data() + text.size() || *dot != '.') return std::nullopt;
  const auto [end, ec2] = std::from_chars(dot + 1, text.data() + text.size(), minor);
  if (ec2 != std::errc() || (end != text.data() + text.size() && *end != '.' && !std::isalpha(static_cast<unsigned char>(*end))))
    return std::nullopt;
  return std::pair{major, minor};
}

uint64_t sglang_cuda_graph_max_bs(uint64_t capacity_bytes, uint64_t tp) {
  const uint64_t mib = capacity_bytes >> 20;
  const bool wide = tp >= 4;
  if (mib < 20 * 1024) return 8;
  if (mib < 35 * 1024) return wide ? 80 : 24;
  if (mib < 60 * 1024) return wide ? 160 : 32;
  if (mib < 160 * 1024) return wide ? 512 : 256;
  return 512;
}

const std::vector<std::string>& known_engines() {
  static const std::vector<std::string> engines = [] {
    std::vector<std::string> names;
    for (const EngineCapabilities& e : engine_capability_table()) names.emplace_back(e.name);
    return names;
  }();
  return engines;
}

uint64_t llama_cpp_micro_batch(const EngineSettings& settings) {
  return std::min(settings.batch.value_or(kLlamaCppBatch), settings.ubatch.value_or(kLlamaCppUbatch));
}

ModelSpec engine_model_spec(ModelSpec spec, std::string_view engine, const EngineSettings& settings) {
  if (engine != "llama.cpp" || !spec.sliding_window) return spec;
  if (!llama_cpp_applies_windows(spec.gguf_arch)) {
    spec.ignored_window = spec.sliding_window;
    spec.sliding_window = 0;
    spec.window_layers.clear();
    return spec;
  }
  const uint64_t n_ub = llama_cpp_micro_batch(settings);
  spec.window_cache_tokens = (spec.sliding_window + n_ub + kLlamaCppSwaPad - 1) / kLlamaCppSwaPad * kLlamaCppSwaPad;
  return spec;
}

EngineMemory engine_memory(const std::string& engine, const ModelSpec& s, const HwProfile& hw,
                           uint64_t context_tokens, uint64_t requests, uint64_t tp, const EngineSettings& settings) {
  EngineMemory m;
  if (engine.empty() || engine == kNoEngine) {
    m.assumption = fmt::format("no engine: weights, KV and the reserves given only (the plan's engine, one of {}, "
                               "counts what it allocates beside them)",
                               fmt::join(known_engines(), ", "));
    return m;
  }
  if (std::find(known_engines().begin(), known_engines().end(), engine) == known_engines().end())
    throw InputError(fmt::format("--engine: '{}' is not an engine infer-plan knows; expected {}, or none (the bare "
                                 "ceiling)", engine, fmt::join(known_engines(), ", ")));
  const uint64_t cuda = is_nvidia(hw) ? kCudaContextBytes : 0;
  if (engine == "llama.cpp") {
    const uint64_t n_ctx = context_tokens * requests;  // one unified cache over every slot
    const uint64_t n_ub = std::min(n_ctx, llama_cpp_micro_batch(settings));
    const bool flash = settings.flash_attention.value_or(true);
    // Without flash attention: the F32 mask and the KQ scores of every head; with it: the F16 mask.
    const uint64_t attention = flash ? kF32 * n_ub * (1 + 4 * s.hidden) + kF16 * n_ub * n_ctx
                                     : kF32 * n_ub * (1 + 4 * s.hidden + n_ctx * (1 + s.heads));
    // The output phase: the last hidden state and every token's logits, placed (ggml's allocator) after
    // the F16 mask's place, which the layers kept until the last one.
    const uint64_t output = kF32 * n_ub * (s.hidden + s.vocab) + (flash ? kF16 * n_ub * n_ctx : 0);
    m.reserves.push_back({"llama.cpp compute buffer", std::max(attention, output)});
    if (cuda) m.reserves.push_back({"CUDA context", cuda});
    const std::string attention_rule =
        flash ? fmt::format("4 x {} x (1 + 4 x {}) + 2 x {} x {}", n_ub, s.hidden, n_ub, n_ctx)
              : fmt::format("4 x {} x (1 + 4 x {} + {} x (1 + {}))", n_ub, s.hidden, n_ctx, s.heads);
    const std::string output_rule =
        fmt::format("4 x {} x ({} + {}){}", n_ub, s.hidden, s.vocab, flash ? fmt::format(" + 2 x {} x {}", n_ub, n_ctx) : "");
    m.assumption = fmt::format(
        "llama.cpp: compute buffer = max(attention {}, output {}) B = {} (n_ubatch {}, n_ctx {}, flash "
        "attention {}){}",
        attention_rule, output_rule, format_bytes(std::max(attention, output)), n_ub, n_ctx,
        flash ? (settings.flash_attention ? "on" : "on: llama.cpp's auto") : "off",
        cuda ? fmt::format("; CUDA context {}", format_bytes(cuda)) : "");
    return m;
  }
  if (engine == "sglang") {
    tp = std::max<uint64_t>(tp, 1);
    const uint64_t mib = hw.memory_capacity_bytes >> 20;
    const uint64_t prefill = engine_policy(engine, hw, settings).step_token_budget.value_or(kSglangChunkFallback);
    const uint64_t graphs = settings.cuda_graph_max_bs.value_or(sglang_cuda_graph_max_bs(hw.memory_capacity_bytes, tp));
    double reserved_mib = 512 + 1.5 * static_cast<double>(std::max<uint64_t>(prefill, 2048)) +
                          2 * static_cast<double>(graphs) + 128 * static_cast<double>(tp);
    if (mib > 60 * 1024) reserved_mib = std::max(reserved_mib, 10.0 * 1024);
    const double fraction =
        settings.mem_fraction_static.value_or(std::round((static_cast<double>(mib) - reserved_mib) / static_cast<double>(mib) * 1000) / 1000);
    m.usable_fraction = fraction;
    m.unseen_bytes = cuda + worker_start_bytes(hw, tp, kSglangStartGib);
    m.pool_block_tokens = 1;
    m.assumption = fmt::format(
        "SGLang: weights and KV get mem_fraction_static {} of the memory free after CUDA{} ({}){}; activations and "
        "CUDA graphs use the rest",
        fraction, tp > 1 && hw.device_link ? fmt::format(" and NCCL over NVLink at TP {}", tp) : " and torch's start-up", format_bytes(hw.memory_capacity_bytes - m.unseen_bytes),
        settings.mem_fraction_static
            ? ": the plan's"
            : fmt::format(": its default, ({} MiB - {:.0f} MiB reserved) / {} MiB, reserved = 512 + 1.5 x max({}, 2048) + 2 x "
                          "{} + 128 x {}{} MiB (chunked_prefill_size {}, cuda_graph_max_bs {})",
                          mib, reserved_mib, mib, prefill, graphs, tp, mib > 60 * 1024 ? ", at least 10240" : "", prefill, graphs));
    return m;
  }
  if (engine == "trtllm") {
    tp = std::max<uint64_t>(tp, 1);
    const uint64_t tokens = engine_policy(engine, hw, settings).step_token_budget.value_or(kVllmMaxBatchedTokensFallback);
    const uint64_t non_torch = gib_bytes(kTrtllmNonTorchGib) + (tp > 1 ? worker_start_bytes(hw, tp, 0) : 0);
    const uint64_t activations = forward_activation_bytes(s, tokens, tp) + expert_activation_bytes(s, tokens, tp);
    if (cuda) m.reserves.push_back({"CUDA driver", cuda});
    m.reserves.push_back({"TensorRT-LLM non-torch memory", non_torch});
    m.reserves.push_back({"TensorRT-LLM activation peak", activations});
    m.kv_share = settings.free_gpu_memory_fraction.value_or(kTrtllmFreeFraction);
    m.pool_block_tokens = kTrtllmBlockTokens;
    m.assumption = fmt::format(
        "TensorRT-LLM (PyTorch backend): KV gets free_gpu_memory_fraction {}{} of what is left after weights, "
        "non-torch memory {}{} and the activation peak of its profiling run, {} tokens x (3 x {} / {} + 4 x {}) x 2 B{} "
        "= {} (max_num_tokens {}); the pool in blocks of {} tokens",
        m.kv_share, settings.free_gpu_memory_fraction ? " (the plan's)" : "", format_bytes(non_torch),
        tp > 1 && hw.device_link ? fmt::format(" (with NCCL and all-reduce buffers over NVLink at TP {})", tp) : "", tokens,
        s.intermediate, tp,
        s.hidden,
        s.is_moe() ? fmt::format(" + experts {} x {} x (2 x {} / {} + {}) x 2 B", tokens, s.experts_active,
                                 s.moe_intermediate, tp, s.hidden)
                   : "",
        format_bytes(activations), tokens, kTrtllmBlockTokens);
    return m;
  }
  // vllm
  const EnginePolicy policy = engine_policy(engine, hw, settings);
  const uint64_t seqs = policy.max_batch, tokens = policy.step_token_budget.value_or(kVllmMaxBatchedTokensFallback);
  const bool counts_graphs =
      !settings.engine_version || engine_version_number(*settings.engine_version) >= kVllmGraphEstimateSince;
  m.usable_fraction =
      settings.gpu_memory_utilization.value_or(counts_graphs ? kVllmGpuMemoryUtilizationGraphs : kVllmGpuMemoryUtilization);
  m.unseen_bytes = cuda;
  m.pool_block_tokens = kVllmBlockTokens;
  tp = std::max<uint64_t>(tp, 1);
  const uint64_t non_torch = worker_start_bytes(hw, tp, kVllmNonTorchGib);
  const uint64_t forward = forward_activation_bytes(s, tokens, tp);
  const auto sampler = static_cast<uint64_t>(static_cast<double>(seqs * s.vocab * kF32) * kVllmSamplerCopies) +
                       tokens * s.hidden * kBf16;
  const uint64_t experts = expert_activation_bytes(s, tokens, tp);
  const uint64_t activations = std::max(forward, sampler) + experts;
  m.reserves.push_back({"vLLM non-torch memory", non_torch});
  m.reserves.push_back({"vLLM activation peak", activations});
  std::string graphs_rule;
  if (!counts_graphs) {
    graphs_rule = fmt::format("; vLLM {} captures its CUDA graphs in what gpu_memory_utilization leaves", *settings.engine_version);
  } else if (settings.enforce_eager || !cuda) {
    graphs_rule = settings.enforce_eager ? "; no CUDA graphs (enforce_eager)" : "; no CUDA-graph estimate off NVIDIA devices";
  } else {
    const uint64_t n = vllm_cuda_graph_count(seqs);
    const uint64_t graphs = gib_bytes(kVllmGraphBaseGib + kVllmGraphEachGib * static_cast<double>(n - 2));
    m.reserves.push_back({"vLLM CUDA graphs (estimated)", graphs});
    const double torch_total = static_cast<double>(hw.memory_capacity_bytes - cuda);
    graphs_rule = fmt::format(
        "; CUDA graphs, as vLLM 0.20 and later estimate them: 0.52 + 0.002 x ({} graphs - 2) GiB = {} (as "
        "gpu_memory_utilization {:.4f} without them)",
        n, format_bytes(graphs),
        m.usable_fraction - static_cast<double>(graphs) / torch_total);
  }
  m.assumption = fmt::format(
      "vLLM: KV gets gpu_memory_utilization {} of the memory CUDA reports{}; per device, non-torch memory {}{}; "
      "activation peak = max(forward {} tokens x (3 x {} / {} + 4 x {}) x 2 B, sampler {} sequences x {} x 4 B x {} + "
      "{} x {} x 2 B){} = {} (max_num_batched_tokens {}, max_num_seqs {}{}){}; the pool "
      "in blocks of {} tokens",
      m.usable_fraction, cuda ? fmt::format(" (the capacity less {} the driver keeps)", format_bytes(cuda)) : "",
      format_bytes(non_torch), tp > 1 && hw.device_link ? fmt::format(" (NCCL and all-reduce buffers over NVLink at TP {})", tp) : "", tokens,
      s.intermediate, tp, s.hidden, seqs, s.vocab, kVllmSamplerCopies, tokens, s.hidden,
      experts ? fmt::format(" + experts {} x {} x (2 x {} / {} + {}) x 2 B", tokens, s.experts_active, s.moe_intermediate,
                            tp, s.hidden)
              : "",
      format_bytes(activations), tokens, seqs,
      settings.max_num_seqs || settings.max_num_batched_tokens ? ": the plan's" : ": vLLM's defaults on this device",
      graphs_rule, kVllmBlockTokens);
  return m;
}

}  // namespace infer_plan
