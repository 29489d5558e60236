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
#include <optional>
#include <span>
#include <string>

#include "runtime/forward_pass.hpp"
#include "runtime/model_weights.hpp"

namespace infer_plan::runtime {

class CudaBackend;

// What the CUDA decoder cannot run, known from the model's shape and types alone (no device, nothing
// loaded): sliding-window layers, a head_dim its attention does not take, K/V types its cache
// kernels do not store, a tensor whose type its kernels do not read. The reason, saying what it
// takes, or nullopt. check_runnable asks before any weights are written; the decoder asks again of
// the weights and cache it is given.
std::optional<std::string> cuda_decoder_refusal(const ModelSpec& spec, KvTypes kv,
                                                std::span<const TensorPlacement> tensors);

// The first tensor not in GGML's row order (the CPU backend interleaves the matrices it multiplies
// faster so, kernels/cpu/interleave), named with the reason, or nullopt: kernels/cuda reads each
// row's blocks one after another.
std::optional<std::string> cuda_row_order_refusal(std::span<const WeightTensor> tensors);

// Device bytes the decoder's working buffers take (category activations) once it has run passes
// up to `pass`, by part: its capacities are powers of two of at least 8 tokens, head rows and
// pages, grown and never shrunk. Passes of more than kMatvecTokensMax tokens add the BF16 copies
// cuBLAS multiplies and cuBLAS's own workspace (allocated by cuBLAS, not by the backend).
struct CudaDecoderScratch {
  uint64_t activations = 0;  // per token: x, xn, q, k, v, att, gate, up, out; MoE's router, xe, down, routing
  uint64_t logits = 0;       // per head row: its hidden state, its vocabulary of logits, its argmax
  uint64_t meta = 0;         // per token ids, positions, contexts, page starts; head rows; the page table
  uint64_t attention = 0;    // split-K partials
  uint64_t gemm = 0;         // x and the widest layer matrix in BF16
  uint64_t cublas_workspace = 0;
  uint64_t total() const { return activations + logits + meta + attention + gemm + cublas_workspace; }
};
CudaDecoderScratch cuda_decoder_scratch(const ModelSpec& spec, std::span<const TensorPlacement> tensors,
                                        const PassShape& pass);

struct CudaDecoderOptions {
  bool graphs = true;  // replay decode steps as CUDA graphs
};

class CudaDecoder final : public ForwardPass {
 public:
  // The weights and the cache must live in `backend`'s memory; `layers` and `prefetcher` as the
  // CPU Decoder's. InputError with cuda_decoder_refusal's or cuda_row_order_refusal's reason.
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
