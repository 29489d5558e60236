// A matrix whose row length is not a multiple of the block size cannot be quantized to that
// type; llama.cpp then falls back to another type. The uniform estimate keeps such rows in F16
// and counts them, so the caller can say so.
#include "planner/weights_size.hpp"

#include <fmt/format.h>

#include "planner/input_error.hpp"
#include "planner/tensor_inventory.hpp"

namespace infer_plan {
namespace {

constexpr std::string_view kMixedFileTypes[] = {"Q2_K_S", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S",
                                                "Q4_K_M", "Q5_K_S", "Q5_K_M"};

}  // namespace

WeightsLayout uniform_weights_layout(const ModelSpec& spec, std::string_view type_name) {
  for (std::string_view mixed : kMixedFileTypes)
    if (type_name.size() == mixed.size() &&
        std::equal(mixed.begin(), mixed.end(), type_name.begin(),
                   [](char a, char b) { return a == std::toupper(static_cast<unsigned char>(b)); }))
      throw InputError(fmt::format(
          "--weights: '{}' is a mixed llama.cpp file type whose per-tensor recipe is not modelled "
          "yet; give a uniform type (F16, BF16, Q8_0, Q4_0, Q4_K, ...) or the file size with "
          "--weights-size", type_name));
  const GgmlTypeInfo& t = ggml_type_by_name(type_name, "--weights");
  if (t.type == GgmlType::Q8_K)
    throw InputError("--weights: Q8_K is ggml's activation type, not a weight file type");

  WeightsLayout layout;
  layout.file_type = fmt::format("{} (uniform)", t.name);
  for (const TensorInfo& tensor : tensor_inventory(spec)) {
    GgmlType type = t.type;
    if (tensor.is_vector() || tensor.role == TensorRole::ffn_gate_inp) type = GgmlType::F32;
    else if (tensor.row_length() % t.block_values != 0) {
      type = GgmlType::F16;
      ++layout.fallback_tensors;
    }
    const GgmlTypeInfo& info = ggml_type_info(type);
    layout.tensors.push_back({tensor, type, tensor.elements() / info.block_values * info.block_bytes});
  }
  return layout;
}

WeightsSize weights_size(const WeightsLayout& layout) {
  WeightsSize w;
  w.file_type = layout.file_type;
  w.fallback_tensors = layout.fallback_tensors;
  for (const TensorPlacement& p : layout.tensors) {
    const GgmlTypeInfo& info = ggml_type_info(p.type);
    const uint64_t blocks = p.tensor.elements() / info.block_values;
    w.bytes += p.bytes;
    w.code_bytes += blocks * info.code_bytes;
    w.meta_bytes += blocks * info.meta_bytes;
  }
  return w;
}

WeightsSize uniform_weights_size(const ModelSpec& spec, std::string_view type_name) {
  return weights_size(uniform_weights_layout(spec, type_name));
}

PlanWeights plan_weights(const ModelSpec& spec, const std::string& type_name,
                         std::optional<uint64_t> given_bytes) {
  PlanWeights w;
  if (!given_bytes) {
    w.layout = uniform_weights_layout(spec, type_name);
    w.bytes = weights_size(w.layout).bytes;
    w.label = w.layout.file_type;
    return w;
  }
  if (*given_bytes == 0) throw InputError("--weights-size: expected a positive size");
  w.layout = uniform_weights_layout(spec, "BF16");
  w.bytes = *given_bytes;
  w.scale = static_cast<double>(*given_bytes) / static_cast<double>(weights_size(w.layout).bytes);
  w.label = fmt::format("{:.2f} GiB (given)", static_cast<double>(*given_bytes) / (1024.0 * 1024 * 1024));
  return w;
}

}  // namespace infer_plan
