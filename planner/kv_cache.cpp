// Quantization blocks run along head_dim, one row per KV head, so a block never straddles two
// heads; head_dim must be a multiple of the block length (32 for q8_0/q4_0).
#include "planner/kv_cache.hpp"

#include <array>
#include <fmt/format.h>

#include "planner/input_error.hpp"

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

uint64_t kv_heads_per_device(const ModelSpec& s, uint64_t tp) {
  return s.kv_heads >= tp ? s.kv_heads / tp : 1;
}

uint64_t kv_k_bytes_per_token(const ModelSpec& s, GgmlType k, uint64_t tp) {
  const uint64_t row = ggml_row_bytes(k, s.head_dim, fmt::format("K cache row of {} (head_dim)", s.name));
  return s.layers * kv_heads_per_device(s, tp) * row;
}

uint64_t kv_v_bytes_per_token(const ModelSpec& s, GgmlType v, uint64_t tp) {
  const uint64_t row = ggml_row_bytes(v, s.head_dim, fmt::format("V cache row of {} (head_dim)", s.name));
  return s.layers * kv_heads_per_device(s, tp) * row;
}

uint64_t kv_bytes_per_token(const ModelSpec& s, KvTypes types, uint64_t tp) {
  return kv_k_bytes_per_token(s, types.k, tp) + kv_v_bytes_per_token(s, types.v, tp);
}

}  // namespace infer_plan
