// Mixture-of-experts routing as Qwen3-MoE does it (and DeepSeek-V3's grouped sigmoid router below): softmax over all experts' router logits, keep
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

// DeepSeek-V3's router, as llama.cpp's build_moe_ffn runs it: scores sigmoid(logit); the choice on
// score + bias (bias may be empty); with groups > 1 only within the groups_used groups whose two best
// biased scores sum highest (ties to the lower group); weights the unbiased scores of the k chosen,
// renormalised to sum to 1 (the sum kept >= 2^-14, as ggml clamps it) if asked, then times `scale`.
std::vector<ExpertChoice> route_sigmoid_grouped(std::span<const float> router_logits, std::span<const float> bias,
                                                uint32_t k, uint64_t groups, uint64_t groups_used,
                                                bool normalize_top_k, float scale);

}  // namespace infer_plan::kernels
