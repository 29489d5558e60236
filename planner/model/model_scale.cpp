#include "planner/model/model_scale.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "planner/core/input_error.hpp"
#include "planner/core/limits.hpp"

namespace infer_plan {
namespace {

constexpr uint64_t kWidthQuantum = 256;  // QK_K: the largest block any supported type uses

uint64_t scaled_count(uint64_t n, double scale, uint64_t floor_value) {
  return std::max<uint64_t>(floor_value, static_cast<uint64_t>(std::llround(static_cast<double>(n) * scale)));
}

uint64_t scaled_width(uint64_t n, double scale) {
  if (n == 0) return 0;
  const double blocks = std::round(static_cast<double>(n) * scale / kWidthQuantum);
  return std::max<uint64_t>(1, static_cast<uint64_t>(blocks)) * kWidthQuantum;
}

}  // namespace

ModelSpec scale_model_spec(const ModelSpec& spec, double scale, std::string_view what) {
  if (!(scale >= kMinModelScale && scale <= 1))
    throw InputError(fmt::format("{}: {} is out of range; expected a factor from {} to 1, e.g. 0.25 (below {} every "
                                 "width is at its floor)", what, scale, kMinModelScale, kMinModelScale));
  if (scale == 1) return spec;
  ModelSpec s = spec;
  s.name = fmt::format("{}@{}", spec.name, scale);
  s.layers = scaled_count(spec.layers, scale, 1);
  s.hidden = scaled_width(spec.hidden, scale);
  s.intermediate = scaled_width(spec.intermediate, scale);
  s.moe_intermediate = scaled_width(spec.moe_intermediate, scale);
  s.shared_intermediate = scaled_width(spec.shared_intermediate, scale);
  if (spec.is_hybrid()) {  // the linear-attention heads as the attention heads, each value head group kept
    const uint64_t per_key = spec.linear.value_heads / std::max<uint64_t>(spec.linear.key_heads, 1);
    s.linear.key_heads = scaled_count(spec.linear.key_heads, scale, 1);
    s.linear.value_heads = s.linear.key_heads * per_key;
  }
  const uint64_t group = spec.heads / std::max<uint64_t>(spec.kv_heads, 1);
  s.kv_heads = scaled_count(spec.kv_heads, scale, 1);
  s.heads = s.kv_heads * group;
  s.vocab = scaled_count(spec.vocab, scale, 256);
  if (spec.experts) {
    s.experts_active = spec.experts_active;
    s.experts = scaled_count(spec.experts, scale, spec.experts_active);
    if (spec.expert_groups > 1) {  // whole groups of at least two (a group scores by its best two),
      // enough in the chosen groups for the experts a token takes
      const uint64_t g = spec.expert_groups;
      const uint64_t floor_per_group =
          std::max<uint64_t>(2, (spec.experts_active + spec.expert_groups_used - 1) / spec.expert_groups_used);
      s.experts = std::max<uint64_t>(floor_per_group, (s.experts + g / 2) / g) * g;
    }
  }
  // Layers listed as dense-only must still exist; the window layers keep their pattern's prefix.
  std::erase_if(s.mlp_only_layers, [&](uint64_t l) { return l >= s.layers; });
  if (!s.window_layers.empty()) s.window_layers.resize(s.layers);
  if (s.is_hybrid()) {  // the linear layers likewise, keeping one attention layer at least
    s.linear_layers.resize(s.layers);
    if (s.attention_layers() == 0) s.linear_layers.back() = false;
  }
  return s;
}

}  // namespace infer_plan
