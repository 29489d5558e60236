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
