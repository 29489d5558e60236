// A matrix whose row length is not a multiple of the block size cannot be quantized to that
// type. The uniform layout keeps such rows in F16 and counts them, so the caller can say so;
// the recipes (gguf_recipe.cpp) follow llama.cpp's own fallbacks.
#include "planner/weights/weights_size.hpp"

#include <cctype>
#include <fmt/format.h>

#include "planner/weights/gguf_reader.hpp"
#include "planner/weights/gguf_recipe.hpp"
#include "planner/core/input_error.hpp"
#include "planner/model/tensor_inventory.hpp"

namespace infer_plan {
namespace {

constexpr std::string_view kPureSuffix = ":pure";  // llama-quantize --pure: one type throughout
constexpr std::string_view kImatrixSuffix = ":imatrix";  // llama-quantize --imatrix: a file type's imatrix rules

// File types whose name is no GGML type: their tensors are mixed by design.
bool is_mixed_file_type(std::string_view name) {
  const auto f = find_llama_file_type(name);
  return f && f->name != ggml_type_info(f->default_type).name;
}

bool is_known_ggml_type(std::string_view name) { return find_ggml_type(name) != nullptr; }

// "file": the tensor types of the .gguf the model was read from (exact for any recipe).
bool is_file_weights(std::string_view name) {
  return name.size() == 4 && std::tolower(static_cast<unsigned char>(name[0])) == 'f' &&
         std::tolower(static_cast<unsigned char>(name[1])) == 'i' &&
         std::tolower(static_cast<unsigned char>(name[2])) == 'l' &&
         std::tolower(static_cast<unsigned char>(name[3])) == 'e';
}

}  // namespace

WeightsLayout uniform_weights_layout(const ModelSpec& spec, std::string_view type_name) {
  if (is_mixed_file_type(type_name))
    throw InputError(fmt::format(
        "--weights: '{}' is a llama.cpp file type with per-tensor rules, not one GGML type; "
        "use its recipe (recipe_weights_layout)", type_name));
  const GgmlTypeInfo& t = ggml_type_by_name(type_name, "--weights");
  if (t.type == GgmlType::Q8_K)
    throw InputError("--weights: Q8_K is ggml's activation type, not a weight file type");

  WeightsLayout layout;
  layout.file_type = fmt::format("{} (uniform)", t.name);
  for (const TensorInfo& tensor : tensor_inventory(spec)) {
    if (!t.gguf && tensor.role == TensorRole::rope_freqs) continue;  // a GGUF-only table, not in a checkpoint
    GgmlType type = t.type;
    if (!t.gguf && (tensor.kept_f32() || tensor.role == TensorRole::token_embd || tensor.role == TensorRole::output))
      type = GgmlType::BF16;  // a checkpoint format quantizes the blocks' linear layers; the rest stays BF16
    else if (tensor.kept_f32()) type = GgmlType::F32;
    else if (tensor.row_length() % t.block_values != 0) {
      type = t.gguf ? GgmlType::F16 : GgmlType::BF16;
      ++layout.fallback_tensors;
    }
    layout.tensors.push_back({tensor, type, ggml_tensor_bytes(type, tensor.shape, tensor.name)});
  }
  return layout;
}

WeightsLayout mxfp4_experts_layout(const ModelSpec& spec) {
  WeightsLayout layout;
  layout.file_type = "MXFP4_EXPERTS";
  for (const TensorInfo& tensor : tensor_inventory(spec)) {
    if (tensor.role == TensorRole::rope_freqs) continue;  // a GGUF-only table, not in a checkpoint
    GgmlType type = GgmlType::BF16;
    if (tensor.is_expert() && tensor.is_matrix()) {
      if (tensor.row_length() % ggml_type_info(GgmlType::MXFP4).block_values == 0) type = GgmlType::MXFP4;
      else ++layout.fallback_tensors;
    }
    layout.tensors.push_back({tensor, type, ggml_tensor_bytes(type, tensor.shape, tensor.name)});
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
    w.meta_bytes += p.bytes - blocks * info.code_bytes;  // block metadata, and a format's scales and zeros
  }
  return w;
}

WeightsSize uniform_weights_size(const ModelSpec& spec, std::string_view type_name) {
  return weights_size(uniform_weights_layout(spec, type_name));
}

PlanWeights plan_weights(const ModelSpec& spec, const std::string& requested_type,
                         std::optional<uint64_t> given_bytes) {
  // No type named: a .gguf model is sized by its own tensors, a config.json model at BF16.
  const std::string type_name = !requested_type.empty() ? requested_type : is_gguf_path(spec.source) ? "file" : "BF16";
  PlanWeights w;
  if (!given_bytes) {
    if (is_file_weights(type_name)) {
      if (!is_gguf_path(spec.source))
        throw InputError(fmt::format("--weights file: the types come from a .gguf given as --model, not '{}'", spec.source));
      w.layout = gguf_weights_layout(read_gguf_model(spec.source));
    } else if (type_name.size() > kPureSuffix.size() && type_name.ends_with(kPureSuffix)) {
      const std::string base = type_name.substr(0, type_name.size() - kPureSuffix.size());
      if (!is_known_ggml_type(base))
        throw InputError(fmt::format("--weights: '{}' is not a GGML type to store throughout ({})", base, ggml_type_names()));
      w.layout = uniform_weights_layout(spec, base);
    } else if (type_name_equal(type_name, "MXFP4_EXPERTS")) {
      w.layout = mxfp4_experts_layout(spec);
    } else if (type_name.size() > kImatrixSuffix.size() && type_name.ends_with(kImatrixSuffix)) {
      const std::string base = type_name.substr(0, type_name.size() - kImatrixSuffix.size());
      const auto f = find_llama_file_type(base);
      if (!f)
        throw InputError(fmt::format("--weights: '{}' is not a llama.cpp file type to quantize with an importance "
                                     "matrix ({})", base, llama_file_type_names()));
      w.layout = recipe_weights_layout(spec, f->ftype, true);
    } else if (const auto f = find_llama_file_type(type_name)) w.layout = recipe_weights_layout(spec, f->ftype);
    else if (is_known_ggml_type(type_name)) w.layout = uniform_weights_layout(spec, type_name);
    else
      throw InputError(fmt::format(
          "--weights: unknown type '{}'; give a llama.cpp file type ({}; ':imatrix' after one: made with an "
          "importance matrix, as most published files are), a GGML type stored "
          "throughout (Q3_K, Q4_K, Q5_K, or any type with ':pure', e.g. Q4_0:pure), a checkpoint format "
          "(FP8, FP8_CHANNEL, FP8_BLOCK128, INT8_W8A8, AWQ_INT4_G128, GPTQ_INT4_G128, NVFP4, MXFP4_EXPERTS), or the file "
          "size with --weights-size", type_name,
          llama_file_type_names()));
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
