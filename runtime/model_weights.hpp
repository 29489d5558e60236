// A model's weights in backend memory, one buffer per tensor of the planner's layout (so the
// bytes allocated are the planner's weights_bytes to the byte). Synthetic weights are
// deterministic: every row is generated from (seed, tensor, row), whatever the thread count.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cpu/interleave.hpp"
#include "planner/model/model_spec.hpp"
#include "planner/cost/offload.hpp"
#include "planner/weights/weights_size.hpp"
#include "runtime/backend.hpp"
#include "runtime/thread_pool.hpp"

namespace infer_plan::runtime {

struct WeightTensor {
  TensorPlacement placement;
  DeviceBuffer buffer;
  uint64_t cols = 0;       // values per row (shape[0])
  uint64_t rows = 0;       // all rows (experts stacked: experts x rows per expert)
  uint64_t row_bytes = 0;
  // The CPU backend keeps the matrices it multiplies faster interleaved (kernels/cpu/interleave)
  // in that order: the same bytes, rearranged in groups of eight rows (per expert when stacked).
  // Recorded per tensor so that a reader of another order refuses it (cuda_row_order_refusal).
  kernels::RowOrder order = kernels::RowOrder::ggml;
  GgmlType type() const { return placement.type; }
  const uint8_t* data() const { return static_cast<const uint8_t*>(buffer.data); }
  const float* floats() const { return static_cast<const float*>(buffer.data); }  // F32 vectors
  // The bytes in GGML's order, as a file stores them (a copy; the buffer must be host memory).
  std::vector<uint8_t> ggml_bytes() const;
};

// Per layer, the tensors the decoder uses; absent ones are null (biases, q/k norms, MoE or dense).
struct LayerWeights {
  const WeightTensor *attn_norm = nullptr, *attn_q = nullptr, *attn_k = nullptr, *attn_v = nullptr;
  const WeightTensor* attn_qkv = nullptr;  // Phi-3/4: q, k and v rows in one matrix (then no attn_q/k/v)
  // Gemma: RMSNorm of the attention's and the FFN's outputs before they join the residual
  const WeightTensor *attn_post_norm = nullptr, *ffn_post_norm = nullptr;
  const WeightTensor *attn_output = nullptr, *attn_q_norm = nullptr, *attn_k_norm = nullptr;
  const WeightTensor *attn_q_bias = nullptr, *attn_k_bias = nullptr, *attn_v_bias = nullptr;
  // Phi-3/4 have no ffn_gate: their ffn_up holds the gate's rows, then the up projection's
  const WeightTensor *ffn_norm = nullptr, *ffn_gate = nullptr, *ffn_up = nullptr, *ffn_down = nullptr;
  const WeightTensor *ffn_gate_inp = nullptr, *ffn_gate_exps = nullptr, *ffn_up_exps = nullptr,
                     *ffn_down_exps = nullptr;
  // GPT-OSS: attn_output's bias, a sink logit per head, and biases on the router and on each expert's
  // projections (one row per expert)
  const WeightTensor *attn_output_bias = nullptr, *attn_sinks = nullptr;
  const WeightTensor *ffn_gate_inp_bias = nullptr, *ffn_gate_exps_bias = nullptr, *ffn_up_exps_bias = nullptr,
                     *ffn_down_exps_bias = nullptr;
  // DeepSeek's latent attention: q through attn_q_a, its norm and attn_q_b (or a plain attn_q), the
  // latent and the shared RoPE key from attn_kv_a_mqa, the latent's norm, and per head the latent's
  // key and value maps; shared experts beside the routed ones
  const WeightTensor *attn_q_a = nullptr, *attn_q_a_norm = nullptr, *attn_q_b = nullptr, *attn_kv_a_mqa = nullptr,
                     *attn_kv_a_norm = nullptr, *attn_k_b = nullptr, *attn_v_b = nullptr;
  const WeightTensor *ffn_gate_shexp = nullptr, *ffn_up_shexp = nullptr, *ffn_down_shexp = nullptr;
  const WeightTensor* ffn_exp_probs_b = nullptr;  // DeepSeek-V3: a bias on the scores that choose experts
};

// Which tensors live in the host pool (planner/cost/offload.hpp): `part` of layers k-1, 2k-1, ...
struct WeightsOffload {
  OffloadPart part = OffloadPart::ffn;
  uint64_t every = 4;
};

// One offloaded group: the part of one layer, its tensors packed in layout order in one host
// buffer (MemoryCategory::offload_host), so one copy moves it; `bytes` is the planner's
// offload_group_bytes to the byte.
struct OffloadGroup {
  uint64_t layer = 0;
  DeviceBuffer host;
  std::vector<const WeightTensor*> tensors;  // their buffers point into `host`
  std::vector<uint64_t> offsets;             // of each tensor in the group
};

// Replaces every pointer equal to `from` in `L` with `to`.
void replace_tensor(LayerWeights& L, const WeightTensor* from, const WeightTensor* to);

class ModelWeights {
 public:
  // Allocates every tensor of `layout` (category weights) and fills it with synthetic values:
  // matrices uniform in +-sqrt(3 / cols) (unit-variance outputs for unit-variance inputs),
  // written as valid blocks of their type; norms 1; biases small. InputError when a matrix's
  // type has no CPU product (kernels/cpu/matmul) or a vector is not F32.
  // With `offload`, the offloaded groups are written to the host pool instead of device weights
  // (the same values: a tensor's values depend on its index in the layout, not on where it lives).
  ModelWeights(Backend& backend, const ModelSpec& spec, const WeightsLayout& layout, uint64_t seed,
               ThreadPool& pool, std::optional<WeightsOffload> offload = std::nullopt);
  // The same tensors read from a GGUF file instead: every tensor of `layout` must be in the file
  // with the same shape (InputError naming the tensor otherwise); one stored as another type than
  // the layout's is dequantized and quantized again with kernels/cpu/quantize.
  ModelWeights(Backend& backend, const ModelSpec& spec, const WeightsLayout& layout, const std::string& gguf_path,
               ThreadPool& pool, std::optional<WeightsOffload> offload = std::nullopt);
  // `source`'s tensors at `layout`'s types (the same shape): copied where the type is the same,
  // else dequantized and quantized again (quality's quantized model, made from its reference).
  // The source must be in host memory.
  ModelWeights(Backend& backend, const ModelWeights& source, const WeightsLayout& layout, ThreadPool& pool);
  ~ModelWeights();
  ModelWeights(const ModelWeights&) = delete;
  ModelWeights& operator=(const ModelWeights&) = delete;

  const ModelSpec& spec() const { return spec_; }
  const WeightTensor& token_embd() const { return *token_embd_; }
  const std::vector<WeightTensor>& tensors() const { return tensors_; }
  const WeightTensor& output_norm() const { return *output_norm_; }
  // Llama 3.1's rope_freqs (head_dim / 2 F32 factors that divide each pair's angle), or nullptr.
  const WeightTensor* rope_freqs() const { return rope_freqs_; }
  const WeightTensor& output() const { return *output_; }  // token_embd when tied
  const LayerWeights& layer(uint64_t l) const { return layers_[l]; }
  uint64_t bytes() const { return bytes_; }  // all tensors, wherever they live

  // Offloaded groups in layer order (empty without offload), and the group of a layer.
  const std::vector<OffloadGroup>& offload_groups() const { return groups_; }
  std::optional<uint64_t> offload_group_of(uint64_t layer) const;
  std::optional<OffloadPart> offload_part() const { return offload_ ? std::optional(offload_->part) : std::nullopt; }
  // Layer `layer`'s tensors with those of group `group` read from `slot` (a device copy of the
  // group): views written into `views`, which must outlive the returned pointers' use.
  LayerWeights layer_in_slot(uint64_t layer, uint64_t group, const uint8_t* slot, std::vector<WeightTensor>& views) const;

 private:
  // Allocates every tensor of `layout` and calls fill(tensor, data) to write it; then indexes them.
  // Throws before allocating for a type the CPU cannot multiply, and frees what it allocated when
  // a later tensor fails (the constructor's caller gets the error, the backend its memory).
  void build(const WeightsLayout& layout, ThreadPool& pool, const std::function<void(WeightTensor&, uint8_t*)>& fill);
  void allocate_and_fill(const WeightsLayout& layout, ThreadPool& pool,
                         const std::function<void(WeightTensor&, uint8_t*)>& fill);
  void release();  // every buffer back to the backend
  static void convert_rows(GgmlType from, const uint8_t* source, const WeightTensor& w, uint8_t* data, ThreadPool& pool,
                           const std::string& where);

  Backend& backend_;
  ModelSpec spec_;
  std::vector<WeightTensor> tensors_;
  std::vector<LayerWeights> layers_;
  std::optional<WeightsOffload> offload_;
  std::vector<OffloadGroup> groups_;
  const WeightTensor *token_embd_ = nullptr, *output_norm_ = nullptr, *output_ = nullptr, *rope_freqs_ = nullptr;
  uint64_t bytes_ = 0;
};

// Writes one row of synthetic values of `type` (a whole number of blocks) from `rng_seed`:
// quantized types get random codes and scales directly (a valid block, no quantizer pass), float
// types random values; all uniform-ish in +-amplitude. Exposed for tests.
void fill_synthetic_row(GgmlType type, uint64_t cols, float amplitude, uint64_t rng_seed, uint8_t* row);

}  // namespace infer_plan::runtime
