// Size of a model's weights: a per-tensor layout (type and bytes of every tensor) and its sums.
// A plan names a llama.cpp file type (Q4_K_M, Q8_0, ...: per-tensor recipes, planner/weights/gguf_recipe)
// or a bare GGML type stored throughout ("uniform", llama-quantize --pure); vectors (norms,
// biases) and the MoE router stay F32 either way, as llama.cpp keeps them.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/core/ggml_type.hpp"
#include "planner/model/model_spec.hpp"
#include "planner/model/tensor_inventory.hpp"

namespace infer_plan {

// One tensor with the type it is stored in and its bytes: what the roofline reads per step,
// what offload moves, what the runtime allocates.
struct TensorPlacement {
  TensorInfo tensor;
  GgmlType type;
  uint64_t bytes = 0;
};

struct WeightsLayout {
  std::string file_type;     // "Q4_K_M", "Q4_K (uniform)"
  std::vector<TensorPlacement> tensors;
  uint64_t fallback_tensors = 0;  // matrices whose rows are not whole blocks of the chosen type
};

struct WeightsSize {
  std::string file_type;
  uint64_t bytes = 0;        // tensor data, all tensors
  uint64_t code_bytes = 0;   // quantized codes plus unquantized floats
  uint64_t meta_bytes = 0;   // scales and mins of the quantized blocks
  uint64_t fallback_tensors = 0;
};

// `type_name` is a GGML type usable for a whole file (F32, F16, BF16, Q4_0, ... Q6_K); matrices
// whose rows are not whole blocks are kept in F16. llama.cpp file type names (Q4_K_M) are refused.
WeightsLayout uniform_weights_layout(const ModelSpec& spec, std::string_view type_name);
WeightsSize weights_size(const WeightsLayout& layout);
// GPT-OSS's published checkpoint (vLLM's mxfp4): the experts' matrices in MXFP4, every other
// tensor in BF16 as the checkpoint stores it (a dense model: all BF16). --weights MXFP4_EXPERTS.
WeightsLayout mxfp4_experts_layout(const ModelSpec& spec);
WeightsSize uniform_weights_size(const ModelSpec& spec, std::string_view type_name);

// The weights a plan names: a llama.cpp file type (its recipe), a GGML type not named by any file
// type (Q3_K, Q4_K, Q5_K: uniform), any GGML type with ":pure" (uniform, as llama-quantize --pure
// writes it: "Q4_0:pure" keeps the output head in Q4_0 where the Q4_0 recipe uses Q6_K), "file" (the types of the .gguf the spec was read from), or a
// given file size (then the BF16 layout is scaled to that
// size, so the roofline and offload keep the proportions between tensors).
struct PlanWeights {
  WeightsLayout layout;
  double scale = 1.0;     // multiply layout bytes by this
  uint64_t bytes = 0;     // the whole model
  std::string label;      // "Q4_K_M", "Q4_K (uniform)", "79.81 GiB (given)"
};
PlanWeights plan_weights(const ModelSpec& spec, const std::string& type_name, std::optional<uint64_t> given_bytes);

}  // namespace infer_plan
