// Qwen3-MoE's router: softmax over every expert (not only the chosen ones), top k by probability,
// then optionally scale the k weights to sum to 1 (config norm_topk_prob).
#include "kernels/cpu/moe_routing.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <functional>
#include <utility>

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

std::vector<ExpertChoice> route_sigmoid_grouped(std::span<const float> router_logits, std::span<const float> bias,
                                                uint32_t k, uint64_t groups, uint64_t groups_used,
                                                bool normalize_top_k, float scale) {
  const uint64_t n = router_logits.size();
  assert(k >= 1 && k <= n && groups >= 1 && n % groups == 0 && groups_used >= 1 && groups_used <= groups);
  assert(bias.empty() || bias.size() == n);
  std::vector<float> score(n), choice(n);
  for (uint64_t e = 0; e < n; ++e) {
    score[e] = 1.0f / (1.0f + std::exp(-router_logits[e]));
    choice[e] = score[e] + (bias.empty() ? 0.0f : bias[e]);
  }
  if (groups > 1) {  // keep the groups_used groups whose two best choice values sum highest
    const uint64_t per = n / groups;
    assert(per >= 2);
    std::vector<std::pair<float, uint64_t>> group_score(groups);
    for (uint64_t g = 0; g < groups; ++g) {
      std::vector<float> members(choice.begin() + static_cast<std::ptrdiff_t>(g * per),
                                 choice.begin() + static_cast<std::ptrdiff_t>((g + 1) * per));
      std::partial_sort(members.begin(), members.begin() + 2, members.end(), std::greater<>());
      group_score[g] = {members[0] + members[1], g};
    }
    std::partial_sort(group_score.begin(), group_score.begin() + static_cast<std::ptrdiff_t>(groups_used),
                      group_score.end(), [](const auto& a, const auto& b) {
                        return a.first > b.first || (a.first == b.first && a.second < b.second);
                      });
    std::vector<bool> kept(groups, false);
    for (uint64_t i = 0; i < groups_used; ++i) kept[group_score[i].second] = true;
    for (uint64_t e = 0; e < n; ++e)
      if (!kept[e / per]) choice[e] = -INFINITY;
  }
  std::vector<uint32_t> order(n);
  for (uint32_t e = 0; e < n; ++e) order[e] = e;
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](uint32_t a, uint32_t b) {
    return choice[a] > choice[b] || (choice[a] == choice[b] && a < b);
  });
  std::vector<ExpertChoice> chosen(k);
  float sum = 0.0f;
  for (uint32_t i = 0; i < k; ++i) {
    chosen[i] = {order[i], score[order[i]]};
    sum += score[order[i]];
  }
  for (ExpertChoice& c : chosen) {
    if (normalize_top_k) c.weight /= std::max(sum, 6.103515625e-5f);
    c.weight *= scale;
  }
  return chosen;
}

}  // namespace infer_plan::kernels
