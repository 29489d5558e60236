// Quantization blocks run along head_dim, one row per KV head, so a block never straddles two
// heads; head_dim must be a multiple of the block length (32 for q8_0/q4_0).
#include "planner/cost/kv_cache.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "planner/core/input_error.hpp"
#include "planner/core/suggest.hpp"
#include "planner/core/limits.hpp"

namespace infer_plan {

namespace {

// llama.cpp's --cache-type-k/-v types, and vLLM's --kv-cache-dtype fp8 (E4M3, one scale per layer)
constexpr std::array kKvCacheTypes{GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q8_0,  GgmlType::Q4_0,
                                   GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::IQ4_NL, GgmlType::FP8};
// vLLM's fp8_e4m3 and fp8_e5m2: one byte per value either way
constexpr std::array kFp8Aliases{"fp8_e4m3", "fp8_e5m2"};

std::string lower_name(GgmlType t) {
  std::string n(ggml_type_info(t).name);
  for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return n;
}

}  // namespace

const std::vector<std::string>& kv_cache_type_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (GgmlType t : kKvCacheTypes) out.push_back(lower_name(t));
    for (const char* alias : kFp8Aliases) out.emplace_back(alias);
    return out;
  }();
  return names;
}

const GgmlTypeInfo& kv_cache_type(std::string_view name, std::string_view what) {
  for (const char* alias : kFp8Aliases)
    if (name == alias) name = "fp8";
  const GgmlTypeInfo* found = nullptr;
  try {
    found = &ggml_type_by_name(name, what);
  } catch (const InputError&) {
  }
  for (GgmlType t : kKvCacheTypes)
    if (found && found->type == t) return *found;
  throw InputError(fmt::format("{}: '{}' is not a KV cache type{}; expected one of: {}", what, name,
                               did_you_mean(name, kv_cache_type_names()), fmt::join(kv_cache_type_names(), ", ")));
}

void check_tensor_parallel(const ModelSpec& s, uint64_t tp, std::string_view what) {
  if (tp == 0 || tp > 64)
    throw InputError(fmt::format("{}: {} devices; expected 1 to 64", what, tp));
  if (s.heads % tp != 0)
    throw InputError(fmt::format("{}: {} devices cannot split {}'s {} attention heads evenly", what,
                                 tp, s.name, s.heads));
  if (s.kv_heads % tp != 0 && tp % s.kv_heads != 0)
    throw InputError(fmt::format("{}: {} devices cannot split or replicate {}'s {} KV heads", what,
                                 tp, s.name, s.kv_heads));
  if (s.is_hybrid() && (s.linear.key_heads % tp != 0 || s.linear.value_heads % tp != 0))
    throw InputError(fmt::format("{}: {} devices cannot split {}'s {} key and {} value heads of linear attention evenly",
                                 what, tp, s.name, s.linear.key_heads, s.linear.value_heads));
}

std::string kv_types_label(KvTypes t) {
  return t.k == t.v ? std::string(ggml_type_info(t.k).name)
                    : fmt::format("K {} / V {}", ggml_type_info(t.k).name, ggml_type_info(t.v).name);
}

uint64_t kv_heads_per_device(const ModelSpec& s, uint64_t tp) {
  return s.kv_heads >= tp ? s.kv_heads / tp : 1;
}

namespace {

// One head's row of head_dim values; the message is built only on failure (this runs in sweeps).
uint64_t head_row_bytes(const ModelSpec& s, GgmlType type, const char* which) {
  const GgmlTypeInfo& t = ggml_type_info(type);
  if (s.head_dim % t.block_values != 0)
    return ggml_row_bytes(type, s.head_dim, fmt::format("{} cache row of {} (head_dim)", which, s.name));
  return s.head_dim / t.block_values * t.block_bytes;
}

}  // namespace

// MLA's cache is one latent row per layer (kv_lora_rank + qk_rope_dim values), the same on every
// device under tensor parallelism (vLLM replicates it), and no V row.
uint64_t kv_k_bytes_per_token(const ModelSpec& s, GgmlType k, uint64_t tp) {
  if (s.is_mla()) return s.layers * ggml_row_bytes(k, s.kv_k_values(), "K cache latent row");
  return s.attention_layers() * kv_heads_per_device(s, tp) * head_row_bytes(s, k, "K");
}

uint64_t kv_v_bytes_per_token(const ModelSpec& s, GgmlType v, uint64_t tp) {
  if (s.is_mla()) return 0;
  return s.attention_layers() * kv_heads_per_device(s, tp) * head_row_bytes(s, v, "V");
}

KvTypes with_state_types(KvTypes kv, const ModelSpec& s, std::string_view engine) {
  const bool llama_cpp = engine.empty() || engine == "llama.cpp";
  kv.conv_state = llama_cpp ? GgmlType::F32 : GgmlType::BF16;
  kv.recurrent_state = llama_cpp || s.linear.state_f32 ? GgmlType::F32 : GgmlType::BF16;
  return kv;
}

uint64_t recurrent_state_bytes(const ModelSpec& s, KvTypes types, uint64_t tp) {
  if (!s.is_hybrid()) return 0;
  const ModelSpec::LinearAttention& a = s.linear;
  // The value heads (and the key heads they share) split over the devices, as the attention heads.
  const uint64_t conv = (a.conv_kernel - 1) * a.conv_channels() / tp;
  const uint64_t state = a.value_heads / tp * a.key_head_dim * a.value_head_dim;
  return s.linear_layer_count() * (conv * ggml_type_info(types.conv_state).block_bytes +
                                   state * ggml_type_info(types.recurrent_state).block_bytes);
}

uint64_t kv_cache_tokens(uint64_t context) {
  return (context + kKvPageTokens - 1) / kKvPageTokens * kKvPageTokens;
}

uint64_t kv_bytes_per_token(const ModelSpec& s, KvTypes types, uint64_t tp) {
  return kv_k_bytes_per_token(s, types.k, tp) + kv_v_bytes_per_token(s, types.v, tp);
}

KvLayerWindows kv_layer_windows(const ModelSpec& s) {
  KvLayerWindows w;
  if (s.window_layer_count() == 0) {  // the common case, without a pass over the layers
    w.full = s.attention_layers();
    return w;
  }
  for (uint64_t l = 0; l < s.layers; ++l) {
    if (s.layer_is_linear(l)) continue;  // no cache per token
    const uint64_t window = s.layer_window(l) ? s.cached_window() : 0;
    if (window == 0) {
      ++w.full;
      continue;
    }
    auto it = std::find_if(w.windows.begin(), w.windows.end(), [&](const auto& g) { return g.first == window; });
    if (it == w.windows.end()) w.windows.emplace_back(window, 1);
    else ++it->second;
  }
  return w;
}

namespace {

// Cached token-rows (tokens x layers) of one sequence at `context`, in whole pages.
uint64_t cached_layer_tokens(const KvLayerWindows& w, uint64_t context) {
  const uint64_t tokens = kv_cache_tokens(context);
  uint64_t rows = w.full * tokens;
  for (const auto& [window, layers] : w.windows) rows += layers * std::min(tokens, kv_cache_tokens(window));
  return rows;
}

}  // namespace

uint64_t kv_bytes_for_context(const ModelSpec& s, KvTypes types, uint64_t context, uint64_t tp) {
  // every attention layer's rows are alike (a part of a hybrid model may hold none)
  const uint64_t layers = s.attention_layers(), per_layer = layers ? kv_bytes_per_token(s, types, tp) / layers : 0;
  return per_layer * cached_layer_tokens(kv_layer_windows(s), context) + recurrent_state_bytes(s, types, tp);
}

uint64_t kv_context_for_bytes(const ModelSpec& s, KvTypes types, uint64_t bytes, uint64_t tp) {
  const uint64_t state = recurrent_state_bytes(s, types, tp);
  if (bytes < state) return 0;
  bytes -= state;
  if (s.attention_layers() == 0) return kMaxContextTokens;  // a part of a hybrid model with no KV cache
  const uint64_t per_layer = kv_bytes_per_token(s, types, tp) / s.attention_layers();
  const KvLayerWindows w = kv_layer_windows(s);
  const uint64_t rows = bytes / per_layer;
  if (w.windows.empty()) return rows / s.attention_layers() / kKvPageTokens * kKvPageTokens;
  uint64_t lo = 0, hi = kMaxContextTokens / kKvPageTokens;  // in pages: lo fits, the answer is in [lo, hi]
  if (cached_layer_tokens(w, hi * kKvPageTokens) <= rows) return hi * kKvPageTokens;
  while (lo + 1 < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    (cached_layer_tokens(w, mid * kKvPageTokens) <= rows ? lo : hi) = mid;
  }
  return lo * kKvPageTokens;
}

double kv_attended_positions(const KvLayerWindows& w, uint64_t context) {
  const double c = static_cast<double>(context);
  double positions = static_cast<double>(w.full) * c;
  for (const auto& [window, layers] : w.windows) positions += static_cast<double>(layers) * std::min(c, static_cast<double>(window));
  return positions;
}

double kv_prefill_attended_positions(const KvLayerWindows& w, uint64_t prompt) {
  const double p = static_cast<double>(prompt);
  double positions = static_cast<double>(w.full) * p * (p + 1.0) / 2.0;  // token i attends to i + 1
  for (const auto& [window, layers] : w.windows) {
    const double n = std::min(p, static_cast<double>(window));  // the first n grow, the rest see `window`
    positions += static_cast<double>(layers) * (n * (n + 1.0) / 2.0 + (p - n) * static_cast<double>(window));
  }
  return positions;
}

}  // namespace infer_plan
