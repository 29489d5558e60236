// KV cache size: 2 (K and V) x layers x kv_heads x head_dim values per token, each row stored
// in its own GGML type (llama.cpp's --cache-type-k / --cache-type-v). Quantized caches use
// dynamic per-block scales (q8_0: 34 B per 32 values), never a static calibration.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "planner/core/ggml_type.hpp"
#include "planner/model/model_spec.hpp"

namespace infer_plan {

struct KvTypes {
  GgmlType k = GgmlType::BF16;
  GgmlType v = GgmlType::BF16;
  // Linear-attention layers' state per sequence (ModelSpec::linear): the engine's, not the user's
  // choice (recurrent_state_types); llama.cpp keeps both in F32.
  GgmlType conv_state = GgmlType::F32;
  GgmlType recurrent_state = GgmlType::F32;
};

// The state types `engine` keeps for `spec`'s linear-attention layers: llama.cpp F32 (its recurrent
// memory); vLLM, SGLang and TensorRT-LLM the model's dtype (BF16), the temporal state in F32 where
// the config asks for it (mamba_ssm_dtype).
KvTypes with_state_types(KvTypes kv, const ModelSpec& spec, std::string_view engine);

// The types llama.cpp accepts for its KV cache (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL)
// and vLLM's fp8 (E4M3; its per-layer scales are not cache bytes).
const GgmlTypeInfo& kv_cache_type(std::string_view name, std::string_view what);
// The names kv_cache_type accepts, in its table's order (f32 ... fp8, then vLLM's fp8_e4m3 and fp8_e5m2).
const std::vector<std::string>& kv_cache_type_names();

// "BF16", or "K Q8_0 / V Q4_0" when the two differ.
std::string kv_types_label(KvTypes types);

// KV heads held by one device under tensor parallelism: heads split across `tp` devices, and
// replicated (one per device) when there are fewer KV heads than devices.
uint64_t kv_heads_per_device(const ModelSpec& spec, uint64_t tp);

// The KV cache is held in pages of this many tokens (vLLM's default block size); a request's
// cache is a whole number of pages, so its context is rounded up to one (llama.cpp pads its cache
// likewise, to 32 or 256 tokens). The runtime allocates exactly these pages.
inline constexpr uint64_t kKvPageTokens = 16;
uint64_t kv_cache_tokens(uint64_t context);  // context rounded up to whole pages

// Bytes of the linear-attention layers' state for one sequence, whatever its context, on one
// device (the heads split over `tp`): per layer the convolution's last conv_kernel - 1 inputs of
// q, k and v, and per value head a key_head_dim x value_head_dim matrix. 0 without such layers.
uint64_t recurrent_state_bytes(const ModelSpec& spec, KvTypes types, uint64_t tp = 1);

// Bytes of K and V for one token, all layers, on one device (tp = 1: the whole cache); the
// attention layers only (ModelSpec::attention_layers).
uint64_t kv_bytes_per_token(const ModelSpec& spec, KvTypes types, uint64_t tp = 1);
uint64_t kv_k_bytes_per_token(const ModelSpec& spec, GgmlType k, uint64_t tp = 1);
uint64_t kv_v_bytes_per_token(const ModelSpec& spec, GgmlType v, uint64_t tp = 1);

// Sliding windows (ModelSpec::layer_window): a window layer caches at most its last `window`
// tokens (whole pages, as vLLM frees the pages that slide out), the others the whole context.
// Without window layers these are kv_bytes_per_token x kv_cache_tokens(context), exactly; a
// hybrid model's recurrent state is added once per sequence.
uint64_t kv_bytes_for_context(const ModelSpec& spec, KvTypes types, uint64_t context, uint64_t tp = 1);
// The longest context (whole pages) one sequence's cache holds in `bytes`; 0 when not one page
// fits. Past every window only the full layers grow; with no full layer at all the answer is
// kMaxContextTokens (memory does not bound the context).
uint64_t kv_context_for_bytes(const ModelSpec& spec, KvTypes types, uint64_t bytes, uint64_t tp = 1);
// The layers grouped by window: `full` see the whole context, `windows` lists (window, layers),
// each window what the engine caches and reads of it (ModelSpec::cached_window).
// Built once per shape (a roofline keeps one) for the per-step sums below.
struct KvLayerWindows {
  uint64_t full = 0;
  std::vector<std::pair<uint64_t, uint64_t>> windows;
};
KvLayerWindows kv_layer_windows(const ModelSpec& spec);
// Cached positions attended by one query at `context`, summed over the layers (min(context,
// window) each): what a decode step reads of the cache per sequence, in layer-rows.
double kv_attended_positions(const KvLayerWindows& layers, uint64_t context);
// The same for a causal prompt of `prompt` tokens: sum over i < prompt of kv_attended_positions(i + 1).
double kv_prefill_attended_positions(const KvLayerWindows& layers, uint64_t prompt);

// Checks that `tp` devices can split the model's heads (the query heads and KV heads divide
// evenly, or the KV heads are replicated); throws InputError naming `what` otherwise.
void check_tensor_parallel(const ModelSpec& spec, uint64_t tp, std::string_view what);

}  // namespace infer_plan
