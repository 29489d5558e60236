// MoE routing: a hand example (softmax over all experts, top k, renormalised or not) and ties.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/moe_routing.hpp"

using namespace infer_plan::kernels;

TEST_CASE("route_top_k by hand") {
  // Logits log(p) for p = [0.1, 0.4, 0.2, 0.3]: the softmax gives back p. Top 2: expert 1 (0.4),
  // then expert 3 (0.3); renormalised 4/7 and 3/7. Float exp and sum: epsilon 1e-6.
  const std::vector<float> logits = {std::log(0.1f), std::log(0.4f), std::log(0.2f), std::log(0.3f)};
  const std::vector<ExpertChoice> raw = route_top_k(logits, 2, false);
  REQUIRE(raw.size() == 2);
  CHECK(raw[0].expert == 1);
  CHECK(raw[0].weight == doctest::Approx(0.4).epsilon(1e-6));
  CHECK(raw[1].expert == 3);
  CHECK(raw[1].weight == doctest::Approx(0.3).epsilon(1e-6));
  const std::vector<ExpertChoice> norm = route_top_k(logits, 2, true);
  REQUIRE(norm.size() == 2);
  CHECK(norm[0].expert == 1);
  CHECK(norm[0].weight == doctest::Approx(4.0 / 7.0).epsilon(1e-6));
  CHECK(norm[1].expert == 3);
  CHECK(norm[1].weight == doctest::Approx(3.0 / 7.0).epsilon(1e-6));
  const std::vector<ExpertChoice> all = route_top_k(logits, 4, true);
  REQUIRE(all.size() == 4);
  CHECK(all[3].expert == 0);
  CHECK(all[3].weight == doctest::Approx(0.1).epsilon(1e-6));  // all 4 already sum to 1
}

TEST_CASE("route_top_k breaks ties toward the lower expert index") {
  // Experts 1, 3 and 4 tie at the top: k = 2 keeps 1 and 3, each weighted e^3 / (e + 3e^3 + e^2)
  // before renormalising and 1/2 after.
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f, 3.0f};
  const std::vector<ExpertChoice> raw = route_top_k(logits, 2, false);
  const double e3_share = std::exp(3.0) / (std::exp(1.0) + 3 * std::exp(3.0) + std::exp(2.0));
  REQUIRE(raw.size() == 2);
  CHECK(raw[0].expert == 1);
  CHECK(raw[1].expert == 3);
  CHECK(raw[0].weight == doctest::Approx(e3_share).epsilon(1e-6));
  const std::vector<ExpertChoice> norm = route_top_k(logits, 2, true);
  CHECK(norm[0].weight == 0.5f);
  CHECK(norm[1].weight == 0.5f);
}

TEST_CASE("route_sigmoid_grouped by hand: DeepSeek-V3's groups, bias, renormalisation and scale") {
  // 8 experts in 4 groups of 2, the best 2 groups kept, k = 2. Logits ln(p / (1 - p)) give sigmoid
  // scores p = [0.9, 0.1 | 0.6, 0.6 | 0.5, 0.2 | 0.8, 0.7] and no bias. Group sums (the two best of
  // each): 1.0, 1.2, 0.7, 1.5: groups 3 and 1 are kept, so expert 0 (0.9, the best alone) is out;
  // top 2 of {2: 0.6, 3: 0.6, 6: 0.8, 7: 0.7}: 6 and 7, weights 0.8 and 0.7 renormalised (8/15,
  // 7/15) then times 2.5: 4/3 and 7/6.
  const std::vector<float> p = {0.9f, 0.1f, 0.6f, 0.6f, 0.5f, 0.2f, 0.8f, 0.7f};
  std::vector<float> logits(p.size());
  for (size_t i = 0; i < p.size(); ++i) logits[i] = std::log(p[i] / (1.0f - p[i]));
  const std::vector<ExpertChoice> got = route_sigmoid_grouped(logits, {}, 2, 4, 2, true, 2.5f);
  REQUIRE(got.size() == 2);
  CHECK(got[0].expert == 6);
  CHECK(got[1].expert == 7);
  CHECK(got[0].weight == doctest::Approx(4.0 / 3.0).epsilon(1e-6));
  CHECK(got[1].weight == doctest::Approx(7.0 / 6.0).epsilon(1e-6));
  // A bias of +0.5 on expert 4 lifts group 2 to 1.2 (ties group 1 at 1.2: the lower index, 1, is
  // kept beside 3) and does not change the weights, which are the unbiased scores: unnormalised,
  // unscaled, expert 6 keeps 0.8.
  const std::vector<float> bias = {0, 0, 0, 0, 0.5f, 0, 0, 0};
  const std::vector<ExpertChoice> biased = route_sigmoid_grouped(logits, bias, 2, 4, 2, false, 1.0f);
  CHECK(biased[0].expert == 6);
  CHECK(biased[0].weight == doctest::Approx(0.8).epsilon(1e-6));
  // One group: plain top k on score + bias; expert 4's bias of +0.5 makes it the best (1.0)
  const std::vector<ExpertChoice> flat = route_sigmoid_grouped(logits, bias, 2, 1, 1, false, 1.0f);
  CHECK(flat[0].expert == 4);
  CHECK(flat[0].weight == doctest::Approx(0.5).epsilon(1e-6));
  CHECK(flat[1].expert == 0);
}
