// Greedy and seeded nucleus sampling. The nucleus is found by sorting only as many of the most
// likely tokens as it needs (a partial sort of 64, then 4x more each time the mass falls short):
// a full sort of a 150k vocabulary per token would cost more than a small model's decode step.
#include "kernels/cpu/sampling.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>

#include "kernels/cpu/softmax.hpp"

namespace infer_plan::kernels {

uint64_t SamplerRng::next_u64() {
  // splitmix64 (Steele, Lea, Flood 2014; Vigna's reference constants).
  state_ += 0x9e3779b97f4a7c15ull;
  uint64_t z = state_;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double SamplerRng::uniform() {
  constexpr double kTwoToMinus53 = 1.0 / 9007199254740992.0;  // 2^-53: the top 53 bits as [0, 1)
  return static_cast<double>(next_u64() >> 11) * kTwoToMinus53;
}

uint32_t argmax(std::span<const float> logits) {
  assert(!logits.empty());
  uint32_t best = 0;
  for (uint32_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[best]) best = i;  // strict: an equal later logit does not win
  return best;
}

void sampling_probabilities(std::span<const float> logits, const SamplingParams& params,
                            std::vector<float>& probs) {
  assert(params.temperature > 0.0f && !logits.empty());
  const uint64_t n = logits.size();
  probs.resize(n);
  for (uint64_t i = 0; i < n; ++i) probs[i] = logits[i] / params.temperature;
  softmax(probs.data(), n);
  if (params.top_p >= 1.0f) return;

  // Most likely first; equal probabilities in index order, so the nucleus does not depend on the
  // sort algorithm.
  thread_local std::vector<uint32_t> order;
  order.resize(n);
  std::iota(order.begin(), order.end(), 0u);
  const auto more_likely = [&](uint32_t a, uint32_t b) {
    return probs[a] > probs[b] || (probs[a] == probs[b] && a < b);
  };
  uint64_t kept = n;  // if rounding keeps the total below top_p, the nucleus is everything
  double mass = 0.0;
  for (uint64_t sorted = std::min<uint64_t>(64, n), done = 0;; sorted = std::min(4 * sorted, n)) {
    std::partial_sort(order.begin() + static_cast<std::ptrdiff_t>(done),
                      order.begin() + static_cast<std::ptrdiff_t>(sorted), order.end(), more_likely);
    for (; done < sorted; ++done) {
      mass += probs[order[done]];
      if (mass >= params.top_p) break;
    }
    if (done < sorted) {
      kept = done + 1;
      break;
    }
    if (sorted == n) break;
  }

  for (uint64_t r = kept; r < n; ++r) probs[order[r]] = 0.0f;
  double kept_mass = 0.0;
  for (uint64_t r = 0; r < kept; ++r) kept_mass += probs[order[r]];
  const float inv = static_cast<float>(1.0 / kept_mass);
  for (uint64_t r = 0; r < kept; ++r) probs[order[r]] *= inv;
}

uint32_t sample_from(std::span<const float> probs, SamplerRng& rng) {
  assert(!probs.empty());
  const double u = rng.uniform();
  double cumulative = 0.0;
  uint32_t last_nonzero = 0;
  for (uint32_t i = 0; i < probs.size(); ++i) {
    if (probs[i] <= 0.0f) continue;
    last_nonzero = i;
    cumulative += probs[i];
    if (u < cumulative) return i;
  }
  // The probabilities summed to a little under u (rounding): the draw belongs to the last token
  // that can be drawn at all, never to a zero-probability one.
  return last_nonzero;
}

uint32_t sample_token(std::span<const float> logits, const SamplingParams& params,
                      SamplerRng& rng, std::vector<float>& scratch) {
  if (params.temperature == 0.0f) return argmax(logits);  // greedy draws no random number
  sampling_probabilities(logits, params, scratch);
  return sample_from(scratch, rng);
}

SpecVerdict speculative_verdict(std::span<const float> p, std::span<const float> q, uint32_t drafted,
                                SamplerRng& rng, std::vector<float>& scratch) {
  assert(p.size() == q.size() && drafted < p.size());
  // One uniform number per verdict, drawn even when the ratio is >= 1, so that a run's random
  // stream does not depend on which way a comparison of floats went.
  const double u = rng.uniform();
  const double px = p[drafted], qx = q[drafted];
  // q(x) > 0 because the draft drew x; u < p/q is tested as u * q < p (no division).
  if (u * qx < px) return {true, drafted};
  scratch.resize(p.size());
  double mass = 0.0;
  for (size_t i = 0; i < p.size(); ++i) {
    scratch[i] = std::max(0.0f, p[i] - q[i]);
    mass += scratch[i];
  }
  // A rejection implies p(x) < q(x), so sum(max(0, p - q)) = sum(max(0, q - p)) > 0 in exact
  // arithmetic; if rounding left no mass, p and q are equal to float precision and p is the answer.
  if (!(mass > 0.0)) return {false, sample_from(p, rng)};
  const float inv = static_cast<float>(1.0 / mass);
  for (float& v : scratch) v *= inv;
  return {false, sample_from(scratch, rng)};
}

}  // namespace infer_plan::kernels
