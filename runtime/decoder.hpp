// One forward pass of a Qwen3/Llama/Phi-3/Gemma/GPT-OSS-style decoder over a batch of sequences, each bringing one
// or more new tokens (a decode step brings one per sequence; a prefill chunk brings many): embed,
// then per layer RMSNorm, q/k/v projections (+ biases, + per-head q/k norms for Qwen3), RoPE,
// K/V rows into the paged cache, attention over each sequence's own cache, output projection,
// RMSNorm, dense SwiGLU FFN or top-k routed experts (+ shared ones), and the head on each sequence's
// last token. DeepSeek's latent attention caches one latent row per token instead of K and V.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cpu/matmul.hpp"
#include "kernels/cpu/rope.hpp"
#include "runtime/forward_pass.hpp"
#include "runtime/model_weights.hpp"
#include "runtime/offload_prefetcher.hpp"
#include "runtime/paged_kv_cache.hpp"
#include "runtime/thread_pool.hpp"

namespace infer_plan::runtime {

class Decoder final : public ForwardPass {
 public:
  // `layers` > 0 runs only the first `layers` blocks before the final norm and the head: a draft
  // made from the target itself (speculative decoding); its cache then holds those layers only.
  // With `prefetcher` (weights with offloaded groups, all layers run), an offloaded part is read
  // from the slot the prefetcher copied it into: wait before its first use, release after its
  // last. Without one, offloaded tensors are read where they live (the host pool).
  Decoder(const ModelWeights& weights, PagedKvCache& cache, ThreadPool& pool, uint64_t layers = 0,
          OffloadPrefetcher* prefetcher = nullptr);

  void forward(std::span<const SequenceChunk> chunks, std::vector<std::vector<float>>& logits,
               bool every_token = false) override;
  void forward_layers(std::span<const SequenceChunk> chunks) override;
  uint64_t layers() const override { return layers_; }
  const ModelSpec& spec() const override { return spec_; }

 private:
  // The embedding and the blocks: x_ then holds each token's last hidden state. Returns the tokens.
  uint64_t run_layers(std::span<const SequenceChunk> chunks);
  // y (tokens x w.rows) = W x (tokens x w.cols), rows split across the pool.
  void project(const WeightTensor& w, const float* x, uint64_t tokens, float* y,
               uint64_t row_offset = 0, uint64_t rows = 0);
  void attention_layer(const LayerWeights& L, uint64_t layer, std::span<const SequenceChunk> chunks);
  // DeepSeek's multi-head latent attention, absorbed as llama.cpp runs it: each head's query taken
  // into the latent's space (attn_k_b), attention over the cached latent + RoPE key rows as one
  // shared KV head, and each head's output out of the latent (attn_v_b)
  void mla_attention_layer(const LayerWeights& L, uint64_t layer, std::span<const SequenceChunk> chunks);
  void ffn_dense(const LayerWeights& L, uint64_t tokens);
  // out_ (tokens x hidden) through `norm` in place, where the layer has one (Gemma)
  void post_norm(const WeightTensor* norm, uint64_t tokens);
  void ffn_moe(const LayerWeights& L, uint64_t tokens);

  const ModelWeights& weights_;
  PagedKvCache& cache_;
  ThreadPool& pool_;
  ModelSpec spec_;
  uint64_t layers_ = 0;
  OffloadPrefetcher* prefetcher_ = nullptr;
  std::vector<WeightTensor> slot_views_;  // the offloaded tensors of the layer in flight, in its slot
  kernels::RopeParams rope_;  // the model's RoPE (runtime/rope_params)
  kernels::RopeParams rope_local_;  // a sliding-window layer's (Gemma 3: its own base, no scaling)
  // Working buffers, tokens x width, grown as needed and reused across steps.
  std::vector<float> x_, xn_, q_, k_, v_, att_, gate_, up_, out_, head_out_;
  std::vector<float> latent_q_, latent_out_;  // MLA: per token and head, latent + RoPE wide
  std::vector<uint64_t> positions_;
  std::vector<size_t> chunk_of_token_;
  kernels::Activations act_;
};

}  // namespace infer_plan::runtime
