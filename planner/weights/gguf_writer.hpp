// Writes GGUF v3 files (ggml docs/gguf.md): metadata key-values, tensor infos, aligned tensor
// data. Used by tests (write, read back, compare) and by the runtime for synthetic models.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "planner/core/ggml_type.hpp"
#include "planner/weights/gguf_reader.hpp"
#include "planner/model/model_spec.hpp"

namespace infer_plan {

struct GgufTensorData {
  std::string name;
  std::vector<uint64_t> shape;  // ne[0] first
  GgmlType type;
  std::vector<uint8_t> data;    // exactly the type's bytes for the shape
};

// Writes `path`; the alignment is metadata's general.alignment (u32) when present, else 32.
// Throws InputError when a tensor's data does not match its shape and type, or names repeat.
void write_gguf(const std::string& path, const std::vector<GgufKeyValue>& metadata,
                const std::vector<GgufTensorData>& tensors, uint32_t version = 3);

// The architecture keys llama.cpp reads for `spec` (general.architecture, <arch>.block_count,
// ...), so that model_spec_from_gguf gives the spec back.
std::vector<GgufKeyValue> gguf_metadata_for(const ModelSpec& spec);

}  // namespace infer_plan
