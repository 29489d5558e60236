// Quantization blocks run along head_dim, one row per KV head, so a block never straddles two
// heads; head_dim must be a multiple of the block length (32 for q8_0/q4_0).
#include "planner/cost/kv_cache.hpp"

#include <array>
#include <fmt/format.h>

#include "planner/core/input_error.hpp"

namespace infer_plan {

const GgmlTypeInfo& kv_cache_type(std::string_view name, std::string_view what) {
  constexpr std::array allowed{GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q8_0,
                               GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1};
  const GgmlTypeInfo* found = nullptr;
  try {
    found = &ggml_type_by_name(name, what);
  } catch (const InputError&) {
  }
  for (GgmlType t : allowed)
    if (found && found->type == t) return *found;
  throw InputError(fmt::format("{}: '{}' is not a KV cache type; expected one of: f32, f16, bf16, "
                               "q8_0, q4_0, q4_1, q5_0, q5_1", what, name));
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
  return s.layers * kv_heads_per_device(s, tp) * head_row_bytes(s, k, "K");
}

uint64_t kv_v_bytes_per_token(const ModelSpec& s, GgmlType v, uint64_t tp) {
  if (s.is_mla()) return 0;
  return s.layers * kv_heads_per_device(s, tp) * head_row_bytes(s, v, "V");
}

uint64_t kv_cache_tokens(uint64_t context) {
  return (context + kKvPageTokens - 1) / kKvPageTokens * kKvPageTokens;
}

uint64_t kv_bytes_per_token(const ModelSpec& s, KvTypes types, uint64_t tp) {
  return kv_k_bytes_per_token(s, types.k, tp) + kv_v_bytes_per_token(s, types.v, tp);
}

}  // namespace infer_plan
