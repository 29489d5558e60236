// Qwen3-MoE's router: softmax over every expert (not only the chosen ones), top k by probability,
// then optionally scale the k weights to sum to 1 (config norm_topk_prob).
#include "kernels/cpu/moe_routing.hpp"

#include <algorithm>
#include <cassert>

#include "kernels/cpu/softmax.hpp"

namespace infer_plan::kernels {

std::vector<ExpertChoice> route_top_k(std::span<const float> router_logits, uint32_t k,
                                      bool normalize_top_k) {
  assert(!router_logits.empty() && k >= 1 && k <= router_logits.size());
  std::vector<float> probs(router_logits.begin(), router_logits.end());
  softmax(probs.data(), probs.size());

  std::vector<ExpertChoice> all(probs.size());
  for (uint32_t e = 0; e < probs.size(); ++e) all[e] = {e, probs[e]};
  // Largest weight first, ties to the lower expert index (a strict total order).
  std::partial_sort(all.begin(), all.begin() + k, all.end(), [](const ExpertChoice& a, const ExpertChoice& b) {
    return a.weight > b.weight || (a.weight == b.weight && a.expert < b.expert);
  });
  all.resize(k);

  if (normalize_top_k) {
    float sum = 0.0f;
    for (const ExpertChoice& c : all) sum += c.weight;
    for (ExpertChoice& c : all) c.weight /= sum;
  }
  return all;
}

}  // namespace infer_plan::kernels
