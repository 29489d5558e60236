// Mixture-of-experts routing as Qwen3-MoE does it: softmax over all experts' router logits, keep
// the top k, and (norm_topk_prob) renormalise their weights to sum to 1.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace infer_plan::kernels {

struct ExpertChoice {
  uint32_t expert = 0;
  float weight = 0;
};

// router_logits: one per expert. Ties go to the lower expert index. Returns k choices, largest
// weight first.
std::vector<ExpertChoice> route_top_k(std::span<const float> router_logits, uint32_t k,
                                      bool normalize_top_k);

}  // namespace infer_plan::kernels
