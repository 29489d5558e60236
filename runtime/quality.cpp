#include "runtime/quality.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "planner/core/input_error.hpp"
#include "runtime/forward_pass.hpp"
#include "runtime/paged_kv_cache.hpp"

namespace infer_plan::runtime {
namespace {

// log softmax of a row, in double.
void log_softmax(const std::vector<float>& logits, std::vector<double>& out) {
  const double top = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (const float l : logits) sum += std::exp(static_cast<double>(l) - top);
  const double log_sum = top + std::log(sum);
  out.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) out[i] = static_cast<double>(logits[i]) - log_sum;
}

struct Stream {
  double sum = 0, sum_sq = 0;
  uint64_t n = 0;
  void add(double x) {
    sum += x;
    sum_sq += x * x;
    ++n;
  }
  double mean() const { return n ? sum / static_cast<double>(n) : 0.0; }
  double stderr_of_mean() const {
    if (n < 2) return 0.0;
    const double m = mean(), var = std::max(0.0, (sum_sq - static_cast<double>(n) * m * m) / static_cast<double>(n - 1));
    return std::sqrt(var / static_cast<double>(n));
  }
};

}  // namespace

QualityFigures compare_quality(Backend& backend, ThreadPool& pool, const QualityModel& reference,
                               const QualityModel& quantized, std::span<const uint32_t> tokens, uint64_t ctx,
                               uint64_t max_chunks, const std::function<void(uint64_t, uint64_t)>& progress) {
  const ModelSpec& a = reference.weights->spec();
  const ModelSpec& b = quantized.weights->spec();
  if (a.hidden != b.hidden || a.layers != b.layers || a.vocab != b.vocab || a.heads != b.heads)
    throw InputError("quality: the reference and the quantized model have different shapes");
  if (ctx < 4) throw InputError(fmt::format("quality: --ctx-size {} is too short; expected at least 4 tokens", ctx));
  if (tokens.size() < ctx)
    throw InputError(fmt::format("quality: the text is {} tokens, less than one chunk of --ctx-size {}; give a longer "
                                 "text or a shorter context", tokens.size(), ctx));
  uint64_t chunks = tokens.size() / ctx;
  if (max_chunks) chunks = std::min(chunks, max_chunks);
  for (const uint32_t id : tokens)
    if (id >= a.vocab) throw InputError(fmt::format("quality: token {} is beyond the vocabulary ({} ids)", id, a.vocab));

  Stream nll_ref, nll_quant, ratio, kld, same;
  std::vector<double> klds;
  std::vector<double> lp_ref, lp_quant;
  const auto run = [&](const QualityModel& m, std::span<const uint32_t> chunk) {
    PagedKvCache cache(backend, m.weights->spec(), m.kv, PagedKvCache::pages_for(ctx));
    if (!cache.reserve(1, ctx)) throw std::logic_error("quality: the KV pool cannot hold one chunk");
    const std::unique_ptr<ForwardPass> pass = make_forward_pass(backend, *m.weights, cache, pool);
    std::vector<std::vector<float>> logits;
    const SequenceChunk c{1, chunk, 0};
    pass->forward(std::span(&c, 1), logits, true);
    return logits;
  };
  for (uint64_t k = 0; k < chunks; ++k) {
    const std::span<const uint32_t> chunk = tokens.subspan(k * ctx, ctx);
    const auto ref = run(reference, chunk), quant = run(quantized, chunk);
    // Positions ctx/2 .. ctx-2 predict tokens ctx/2+1 .. ctx-1 (llama-perplexity's second half).
    for (uint64_t i = ctx / 2; i + 1 < ctx; ++i) {
      log_softmax(ref[i], lp_ref);
      log_softmax(quant[i], lp_quant);
      const uint32_t next = chunk[i + 1];
      nll_ref.add(-lp_ref[next]);
      nll_quant.add(-lp_quant[next]);
      ratio.add(lp_ref[next] - lp_quant[next]);
      double d = 0;
      for (size_t v = 0; v < lp_ref.size(); ++v) d += std::exp(lp_ref[v]) * (lp_ref[v] - lp_quant[v]);
      d = std::max(0.0, d);  // >= 0 in exact arithmetic; rounding can leave -1e-17
      kld.add(d);
      klds.push_back(d);
      const auto top = [](const std::vector<double>& lp) { return std::max_element(lp.begin(), lp.end()) - lp.begin(); };
      same.add(top(lp_ref) == top(lp_quant) ? 1.0 : 0.0);
    }
    if (progress) progress(k + 1, chunks);
  }
  QualityFigures f;
  f.chunks = chunks;
  f.positions = kld.n;
  f.ppl_reference = std::exp(nll_ref.mean());
  f.ppl_quantized = std::exp(nll_quant.mean());
  f.ln_ppl_ratio = ratio.mean();  // ln PPL(Q) - ln PPL(ref) = mean(ln p_ref - ln p_q)
  f.ln_ppl_ratio_stderr = ratio.stderr_of_mean();
  f.kld_mean = kld.mean();
  f.kld_stderr = kld.stderr_of_mean();
  std::sort(klds.begin(), klds.end());
  f.kld_p99 = klds[std::min(klds.size() - 1, static_cast<size_t>(0.99 * static_cast<double>(klds.size())))];
  f.kld_max = klds.back();
  f.top1_agreement = same.mean();
  f.top1_stderr = std::sqrt(f.top1_agreement * (1 - f.top1_agreement) / static_cast<double>(same.n));
  return f;
}

}  // namespace infer_plan::runtime
