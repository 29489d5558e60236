// The one place that picks the decoder and the offload copier by backend.
#include "runtime/forward_pass.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "kernels/cpu/sampling.hpp"

#include "runtime/decoder.hpp"
#include "runtime/offload_prefetcher.hpp"
#if INFER_PLAN_HAVE_CUDA
#include "runtime/cuda_backend.hpp"
#include "runtime/cuda_decoder.hpp"
#include "runtime/cuda_offload.hpp"
#endif

namespace infer_plan::runtime {

void check_within_reservation(const SequenceChunk& chunk, uint64_t reserved_tokens) {
  if (chunk.past + chunk.tokens.size() > reserved_tokens)
    throw std::logic_error(fmt::format("forward pass: sequence {} would hold {} tokens (past {} + {} new) but "
                                       "reserved {}", chunk.seq, chunk.past + chunk.tokens.size(), chunk.past,
                                       chunk.tokens.size(), reserved_tokens));
}

void ForwardPass::forward_argmax(std::span<const SequenceChunk> chunks, std::vector<uint32_t>& tokens) {
  forward(chunks, argmax_logits_);
  tokens.resize(argmax_logits_.size());
  for (size_t r = 0; r < tokens.size(); ++r) tokens[r] = kernels::argmax(argmax_logits_[r]);
}

void ForwardPass::forward_layers(std::span<const SequenceChunk> chunks) { forward(chunks, argmax_logits_); }

std::unique_ptr<ForwardPass> make_forward_pass([[maybe_unused]] Backend& backend, const ModelWeights& weights,
                                               PagedKvCache& cache, ThreadPool& pool, uint64_t layers,
                                               OffloadPrefetcher* prefetcher) {  // backend: read with CUDA only
#if INFER_PLAN_HAVE_CUDA
  if (auto* cuda = dynamic_cast<CudaBackend*>(&backend))
    return std::make_unique<CudaDecoder>(*cuda, weights, cache, layers, prefetcher);
#endif
  return std::make_unique<Decoder>(weights, cache, pool, layers, prefetcher);
}

std::unique_ptr<OffloadPrefetcher> make_offload_prefetcher(Backend& backend, const ModelWeights& weights,
                                                           uint64_t slots) {
  std::vector<OffloadGroupSource> sources;
  uint64_t slot_bytes = 0;
  for (const OffloadGroup& g : weights.offload_groups()) {
    sources.push_back({static_cast<const uint8_t*>(g.host.data), g.host.bytes});
    slot_bytes = std::max(slot_bytes, g.host.bytes);
  }
#if INFER_PLAN_HAVE_CUDA
  if (auto* cuda = dynamic_cast<CudaBackend*>(&backend))
    return make_cuda_offload_prefetcher(*cuda, std::move(sources), slots, slot_bytes);
#endif
  return std::make_unique<OffloadPrefetcher>(backend, std::move(sources), slots, slot_bytes);
}

}  // namespace infer_plan::runtime
