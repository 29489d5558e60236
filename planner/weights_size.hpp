// Size of a model's weights stored at one GGML type throughout ("uniform"): every matrix at that
// type, vectors (norms, biases) and the MoE router in F32 as llama.cpp keeps them. llama.cpp's
// mixed file types (Q4_K_M, ...) need its per-tensor recipes and are refused here.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "planner/ggml_type.hpp"
#include "planner/model_spec.hpp"

namespace infer_plan {

struct WeightsSize {
  std::string file_type;     // "Q8_0 (uniform)"
  uint64_t bytes = 0;        // tensor data, all tensors
  uint64_t code_bytes = 0;   // quantized codes plus unquantized floats
  uint64_t meta_bytes = 0;   // scales and mins of the quantized blocks
  uint64_t fallback_tensors = 0;  // matrices whose rows are not whole blocks, kept in F16
};

// `type_name` is a GGML type usable for a whole file (F32, F16, BF16, Q4_0, ... Q6_K).
WeightsSize uniform_weights_size(const ModelSpec& spec, std::string_view type_name);

}  // namespace infer_plan
