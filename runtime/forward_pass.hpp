// What the server and speculative decoding ask of a model: one forward pass over a batch of
// sequences, each bringing one or more new tokens, returning logits on the host. The CPU Decoder
// (runtime/decoder) and the CUDA decoder (runtime/cuda_decoder) implement it; make_forward_pass
// picks by backend, so run, report and the speculative sweep are the same code on both.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "planner/model/model_spec.hpp"
#include "runtime/paged_kv_cache.hpp"

namespace infer_plan::runtime {

class Backend;
class ModelWeights;
class OffloadPrefetcher;
class ThreadPool;

struct SequenceChunk {
  SequenceId seq = 0;
  std::span<const uint32_t> tokens;  // new tokens, at positions past, past + 1, ...
  uint64_t past = 0;                 // tokens of this sequence already in the cache
};

// The largest forward pass a run makes, counted as the decoders count a pass: its tokens, its head
// rows (one per chunk, or one per token with every_token), the page-table entries of its chunks'
// sequences, and the longest reservation among them in tokens (whole pages). A device decoder
// sizes its working buffers from these.
struct PassShape {
  uint64_t tokens = 1;
  uint64_t rows = 1;
  uint64_t pages = 1;
  uint64_t context = kKvPageTokens;
};

// Throws std::logic_error when a chunk would write past its sequence's reserved tokens (a caller's
// bug: the scheduler reserves each sequence's whole life at admission). Both decoders check it
// before any kernel runs: the pages would otherwise be overrun (CPU) or cut short in silence (CUDA).
void check_within_reservation(const SequenceChunk& chunk, uint64_t reserved_tokens);

class ForwardPass {
 public:
  virtual ~ForwardPass() = default;
  // Runs the chunks as one batch; logits gets one row of vocab floats per chunk, for its last
  // token, or with `every_token` one row per token, chunk after chunk (a verify pass needs them
  // all). The chunks' sequences must have reserved cache pages for past + tokens.
  virtual void forward(std::span<const SequenceChunk> chunks, std::vector<std::vector<float>>& logits,
                       bool every_token = false) = 0;
  // The greedy pick of each row forward() would return (the server decodes greedily). Here: from
  // forward()'s logits on the host; the CUDA decoder picks on the device and copies back one token
  // per row instead of a vocabulary of floats.
  virtual void forward_argmax(std::span<const SequenceChunk> chunks, std::vector<uint32_t>& tokens);
  // The blocks only: the chunks' K and V rows written, no head, for a pass whose tokens emit
  // nothing (a long prompt's chunks before its last, a disaggregated prefill's passes), as
  // llama.cpp multiplies the head only for the tokens that ask for logits. Here: forward() with
  // its logits dropped; the CPU decoder skips the head (the CUDA decoder still runs it).
  virtual void forward_layers(std::span<const SequenceChunk> chunks);
  virtual uint64_t layers() const = 0;  // blocks run before the head (a draft runs the first few)
  virtual const ModelSpec& spec() const = 0;
  // Called during a pass, on its thread, as soon as layer `layer` has written the pass's K and V
  // rows (what a disaggregated prefill streams). The CPU decoder calls it; the CUDA decoder does
  // not (the disaggregated server runs on the CPU).
  void on_layer_written(std::function<void(uint64_t layer)> hook) { layer_written_ = std::move(hook); }

 protected:
  std::function<void(uint64_t)> layer_written_;

 private:
  std::vector<std::vector<float>> argmax_logits_;  // forward_argmax's and forward_layers', reused across passes
};

// The decoder for `backend` ("cpu": runtime/decoder on `pool`; "cuda": runtime/cuda_decoder).
// `layers` > 0 runs only the first `layers` blocks (a draft made from the target); `prefetcher`
// reads offloaded groups from its slots.
std::unique_ptr<ForwardPass> make_forward_pass(Backend& backend, const ModelWeights& weights, PagedKvCache& cache,
                                               ThreadPool& pool, uint64_t layers = 0,
                                               OffloadPrefetcher* prefetcher = nullptr);

// The prefetcher for `weights`' offloaded groups in `slots` slots of the largest group's bytes
// (the planner's buffer_bytes): a copy thread with memcpy on the CPU, a copy stream on CUDA.
std::unique_ptr<OffloadPrefetcher> make_offload_prefetcher(Backend& backend, const ModelWeights& weights,
                                                           uint64_t slots);

}  // namespace infer_plan::runtime
