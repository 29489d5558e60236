// The quality cost of quantization (the serving guide's question of what Q4 costs
// beside what it buys): a reference model and a quantized one run on the same token stream, and
// the figures llama-perplexity --kl-divergence prints. The stream is cut into chunks of `ctx`
// tokens; each chunk runs as one prompt and, as llama-perplexity scores, the second half of its
// positions count (each predicting the next token, with half a chunk of context at least):
// - perplexity of each model, exp(mean negative log-likelihood of the next token);
// - mean KL divergence KL(reference || quantized) of the next-token distributions, with its
//   standard error (standard deviation / sqrt(n));
// - top-1 agreement: how often the two pick the same most likely token, with sqrt(p (1 - p) / n).
#pragma once
#include <cstdint>
#include <functional>
#include <span>

#include "planner/plan/plan.hpp"
#include "runtime/backend.hpp"
#include "runtime/model_weights.hpp"
#include "runtime/thread_pool.hpp"

namespace infer_plan::runtime {

struct QualityModel {
  const ModelWeights* weights = nullptr;
  KvTypes kv;
};

struct QualityFigures {
  uint64_t chunks = 0, positions = 0;  // chunks run, positions scored
  double ppl_reference = 0, ppl_quantized = 0;
  double ln_ppl_ratio = 0, ln_ppl_ratio_stderr = 0;  // mean of ln p_ref - ln p_quant of the true tokens
  double kld_mean = 0, kld_stderr = 0, kld_p99 = 0, kld_max = 0;
  double top1_agreement = 0, top1_stderr = 0;          // fraction
};

// InputError when the stream has fewer than `ctx` tokens, or ctx < 4, or the two models' shapes
// differ. `max_chunks` 0: every whole chunk. `progress` (optional) is told each chunk done.
QualityFigures compare_quality(Backend& backend, ThreadPool& pool, const QualityModel& reference,
                               const QualityModel& quantized, std::span<const uint32_t> tokens, uint64_t ctx,
                               uint64_t max_chunks = 0,
                               const std::function<void(uint64_t done, uint64_t chunks)>& progress = {});

}  // namespace infer_plan::runtime
