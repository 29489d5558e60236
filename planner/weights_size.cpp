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

WeightsSize uniform_weights_size(const ModelSpec& spec, std::string_view type_name) {
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

  WeightsSize w;
  w.file_type = fmt::format("{} (uniform)", t.name);
  const GgmlTypeInfo& f32 = ggml_type_info(GgmlType::F32);
  const GgmlTypeInfo& f16 = ggml_type_info(GgmlType::F16);
  for (const TensorInfo& tensor : tensor_inventory(spec)) {
    const GgmlTypeInfo* type = &t;
    if (tensor.is_vector() || tensor.role == TensorRole::ffn_gate_inp) type = &f32;
    else if (tensor.row_length() % t.block_values != 0) {
      type = &f16;
      ++w.fallback_tensors;
    }
    const uint64_t blocks = tensor.elements() / type->block_values;
    w.bytes += blocks * type->block_bytes;
    w.code_bytes += blocks * type->code_bytes;
    w.meta_bytes += blocks * type->meta_bytes;
  }
  return w;
}

}  // namespace infer_plan
