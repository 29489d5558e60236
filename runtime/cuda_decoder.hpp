// The decoder on the GPU: the same forward pass as runtime/decoder (embed; per layer RMSNorm,
// q/k/v projections, biases, Qwen3's q/k norms, RoPE, K/V rows into the paged cache, attention,
// output projection, RMSNorm, SwiGLU FFN or routed experts; the head on each sequence's last
// token), with kernels/cuda: matvec for up to kMatvecTokensMax tokens, cuBLAS for more (prefill),
// paged attention with split-K. Logits come back to the host (the sampler runs there).
// - Decode steps (one token per sequence, dense FFN, no offload) are captured once per (batch,
//   cache capacity) as a CUDA graph and replayed: at batch 1 an H200 finishes a layer's kernels
//   faster than the host launches them. Only the per-token arrays (ids, positions, pages) change
//   between replays; they are copied to fixed device addresses before each launch.
// - Offload: the layer's offloaded part is read from the prefetcher's slot (runtime/cuda_offload
//   copies on its own stream; release records the fence the next copy into the slot waits on).
// - MoE routing runs on the host from the router's logits (one synchronization per MoE layer).
// Plain C++ header: no CUDA type is visible (the state lives in cuda_decoder.cpp).
#pragma once
#include <cstdint>
#include <memory>

#include "runtime/forward_pass.hpp"
#include "runtime/model_weights.hpp"

namespace infer_plan::runtime {

class CudaBackend;

struct CudaDecoderOptions {
  bool graphs = true;  // replay decode steps as CUDA graphs
};

class CudaDecoder final : public ForwardPass {
 public:
  // The weights and the cache must live in `backend`'s memory; `layers` and `prefetcher` as the
  // CPU Decoder's. InputError when a matrix has a type kernels/cuda cannot multiply.
  CudaDecoder(CudaBackend& backend, const ModelWeights& weights, PagedKvCache& cache, uint64_t layers = 0,
              OffloadPrefetcher* prefetcher = nullptr, CudaDecoderOptions options = {});
  ~CudaDecoder() override;
  CudaDecoder(const CudaDecoder&) = delete;
  CudaDecoder& operator=(const CudaDecoder&) = delete;

  void forward(std::span<const SequenceChunk> chunks, std::vector<std::vector<float>>& logits,
               bool every_token = false) override;
  // The argmax on the device (kernels/cuda/elementwise's argmax_rows): 4 bytes per row come back.
  void forward_argmax(std::span<const SequenceChunk> chunks, std::vector<uint32_t>& tokens) override;
  uint64_t layers() const override;
  const ModelSpec& spec() const override;
  uint64_t graphs_captured() const;  // distinct decode shapes captured so far
  uint64_t graph_replays() const;    // forward passes that replayed a captured graph

 private:
  // Enqueues the pass up to the head's logits on the device; returns the number of rows.
  uint64_t run(std::span<const SequenceChunk> chunks, bool every_token);

  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace infer_plan::runtime
