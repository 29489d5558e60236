// A model's weights in backend memory, one buffer per tensor of the planner's layout (so the
// bytes allocated are the planner's weights_bytes to the byte). Synthetic weights are
// deterministic: every row is generated from (seed, tensor, row), whatever the thread count.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "planner/model_spec.hpp"
#include "planner/weights_size.hpp"
#include "runtime/backend.hpp"
#include "runtime/thread_pool.hpp"

namespace infer_plan::runtime {

struct WeightTensor {
  TensorPlacement placement;
  DeviceBuffer buffer;
  uint64_t cols = 0;       // values per row (shape[0])
  uint64_t rows = 0;       // all rows (experts stacked: experts x rows per expert)
  uint64_t row_bytes = 0;
  GgmlType type() const { return placement.type; }
  const uint8_t* data() const { return static_cast<const uint8_t*>(buffer.data); }
  const float* floats() const { return static_cast<const float*>(buffer.data); }  // F32 vectors
};

// Per layer, the tensors the decoder uses; absent ones are null (biases, q/k norms, MoE or dense).
struct LayerWeights {
  const WeightTensor *attn_norm = nullptr, *attn_q = nullptr, *attn_k = nullptr, *attn_v = nullptr;
  const WeightTensor *attn_output = nullptr, *attn_q_norm = nullptr, *attn_k_norm = nullptr;
  const WeightTensor *attn_q_bias = nullptr, *attn_k_bias = nullptr, *attn_v_bias = nullptr;
  const WeightTensor *ffn_norm = nullptr, *ffn_gate = nullptr, *ffn_up = nullptr, *ffn_down = nullptr;
  const WeightTensor *ffn_gate_inp = nullptr, *ffn_gate_exps = nullptr, *ffn_up_exps = nullptr,
                     *ffn_down_exps = nullptr;
};

class ModelWeights {
 public:
  // Allocates every tensor of `layout` (category weights) and fills it with synthetic values:
  // matrices uniform in +-sqrt(3 / cols) (unit-variance outputs for unit-variance inputs),
  // written as valid blocks of their type; norms 1; biases small. InputError when a matrix's
  // type has no CPU product (kernels/cpu/matmul) or a vector is not F32.
  ModelWeights(Backend& backend, const ModelSpec& spec, const WeightsLayout& layout, uint64_t seed,
               ThreadPool& pool);
  // The same tensors read from a GGUF file instead (every tensor of `layout` must be in the file
  // with the same type and bytes; InputError naming the tensor otherwise).
  ModelWeights(Backend& backend, const ModelSpec& spec, const WeightsLayout& layout, const std::string& gguf_path,
               ThreadPool& pool);
  ~ModelWeights();
  ModelWeights(const ModelWeights&) = delete;
  ModelWeights& operator=(const ModelWeights&) = delete;

  const ModelSpec& spec() const { return spec_; }
  const WeightTensor& token_embd() const { return *token_embd_; }
  const std::vector<WeightTensor>& tensors() const { return tensors_; }
  const WeightTensor& output_norm() const { return *output_norm_; }
  const WeightTensor& output() const { return *output_; }  // token_embd when tied
  const LayerWeights& layer(uint64_t l) const { return layers_[l]; }
  uint64_t bytes() const { return bytes_; }

 private:
  // Allocates every tensor of `layout` and calls fill(tensor, data) to write it; then indexes them.
  void build(const WeightsLayout& layout, const std::function<void(WeightTensor&, uint8_t*)>& fill);

  Backend& backend_;
  ModelSpec spec_;
  std::vector<WeightTensor> tensors_;
  std::vector<LayerWeights> layers_;
  const WeightTensor *token_embd_ = nullptr, *output_norm_ = nullptr, *output_ = nullptr;
  uint64_t bytes_ = 0;
};

// Writes one row of synthetic values of `type` (a whole number of blocks) from `rng_seed`:
// quantized types get random codes and scales directly (a valid block, no quantizer pass), float
// types random values; all uniform-ish in +-amplitude. Exposed for tests.
void fill_synthetic_row(GgmlType type, uint64_t cols, float amplitude, uint64_t rng_seed, uint8_t* row);

}  // namespace infer_plan::runtime
