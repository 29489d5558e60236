// A dense two-layer Qwen3 toy written as a GGUF with one metadata key set to a given (often
// hostile) value: the reader's shape tests and the CLI battery's mutated files.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "planner/model/model_spec.hpp"
#include "planner/weights/gguf_recipe.hpp"
#include "planner/weights/gguf_writer.hpp"

namespace infer_plan::test_support {

// Each of `overrides` replaces its key in the metadata the writer derives from the spec (added
// when absent); tensors at F16, every byte 0x3c.
inline void write_toy_gguf_with(const std::string& path, const std::vector<GgufKeyValue>& overrides) {
  ModelSpec s;
  s.name = "toy";
  s.model_type = "qwen3";
  s.gguf_arch = "qwen3";
  s.hidden = 64; s.layers = 2; s.heads = 2; s.kv_heads = 1; s.head_dim = 32; s.intermediate = 128;
  s.vocab = 32; s.qk_norm = true; s.tied_embeddings = true; s.max_context = 256;
  std::vector<GgufKeyValue> meta = gguf_metadata_for(s);
  for (const GgufKeyValue& o : overrides) {
    bool replaced = false;
    for (GgufKeyValue& kv : meta)
      if (kv.key == o.key) {
        kv.value = o.value;
        replaced = true;
      }
    if (!replaced) meta.push_back(o);
  }
  std::vector<GgufTensorData> tensors;
  for (const TensorPlacement& p : recipe_weights_layout(s, LlamaFileType::F16).tensors)
    tensors.push_back({p.tensor.name, p.tensor.shape, p.type, std::vector<uint8_t>(p.bytes, 0x3c)});
  write_gguf(path, meta, tensors);
}

inline void write_toy_gguf_with(const std::string& path, const std::string& key, const GgufValue& value) {
  write_toy_gguf_with(path, std::vector<GgufKeyValue>{{key, value}});
}

}  // namespace infer_plan::test_support
