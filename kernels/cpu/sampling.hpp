// Choosing the next token from logits: argmax (greedy) or seeded sampling with temperature and
// top-p (nucleus). The filtered distribution is exposed because speculative decoding's rejection
// sampling needs the target's and the draft's probabilities, not only a draw.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace infer_plan::kernels {

// A small, portable generator (splitmix64): the same seed gives the same tokens on every
// platform and standard library (std::uniform_real_distribution does not promise that).
class SamplerRng {
 public:
  explicit SamplerRng(uint64_t seed) : state_(seed) {}
  uint64_t next_u64();
  double uniform();  // in [0, 1), 53 random bits
 private:
  uint64_t state_;
};

struct SamplingParams {
  float temperature = 0.0f;  // 0: greedy (argmax)
  float top_p = 1.0f;        // keep the smallest set of most likely tokens whose mass >= top_p
};

// Index of the largest logit; the lowest index wins ties.
uint32_t argmax(std::span<const float> logits);

// The distribution sampling draws from: softmax(logits / temperature), restricted to the top-p
// nucleus and renormalised (zeros outside it). temperature must be > 0.
void sampling_probabilities(std::span<const float> logits, const SamplingParams& params,
                            std::vector<float>& probs);

// One draw from a probability vector (sums to 1 up to rounding) with one uniform number.
uint32_t sample_from(std::span<const float> probs, SamplerRng& rng);

// argmax when temperature == 0, else a draw from sampling_probabilities.
uint32_t sample_token(std::span<const float> logits, const SamplingParams& params,
                      SamplerRng& rng, std::vector<float>& scratch);

// Speculative sampling's acceptance rule (Leviathan et al. 2023; Chen et al. 2023): the draft drew
// `drafted` from q; keep it with probability min(1, p(x) / q(x)), else draw a replacement from
// normalize(max(0, p - q)). Whatever q is, the token returned is distributed exactly as p. `p` and
// `q` are sampling_probabilities of the target and the draft at the same position (same vocabulary).
struct SpecVerdict {
  bool accepted = false;
  uint32_t token = 0;  // the draft's token when accepted, else the replacement
};
SpecVerdict speculative_verdict(std::span<const float> p, std::span<const float> q, uint32_t drafted,
                                SamplerRng& rng, std::vector<float>& scratch);

}  // namespace infer_plan::kernels
