// fit's suggestions when a plan does not fit: the least change of each lever that fits.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <algorithm>

#include "planner/plan/nearest_fits.hpp"
#include "planner/plan/predict.hpp"

using namespace infer_plan;

namespace {
const FitSuggestion* find(const std::vector<FitSuggestion>& list, std::string_view lever) {
  const auto it = std::find_if(list.begin(), list.end(), [&](const FitSuggestion& f) { return f.lever == lever; });
  return it == list.end() ? nullptr : &*it;
}
}  // namespace

TEST_CASE("qwen3-8b BF16 with 8 requests of 8K on a 24 GB card: every lever has a nearest plan") {
  Plan plan;
  plan.model = "qwen3-8b";
  plan.hw = "rtx-4090";
  plan.context = 8192;
  plan.requests = 8;
  const ResolvedPlan rp = resolve_plan(plan);
  REQUIRE_FALSE(rp.fit.fits);
  const std::vector<FitSuggestion> s = nearest_fits(rp);
  // 144 KiB of BF16 KV per token (36 layers x 4096 B): 8 x 8192 tokens are 9 GiB beside 15.26 GiB
  const uint64_t room = rp.fit.usable_bytes - rp.weights.bytes, per_token = 36 * 4096;
  REQUIRE(find(s, "weights"));
  CHECK(find(s, "weights")->value == "Q8_0");  // the first type below BF16 that fits
  REQUIRE(find(s, "kv"));
  CHECK(find(s, "kv")->value == "q8_0");
  REQUIRE(find(s, "context"));
  CHECK(find(s, "context")->value == std::to_string(room / (8 * per_token) / 16 * 16));  // 7936
  REQUIRE(find(s, "requests"));
  CHECK(find(s, "requests")->value == std::to_string(room / (8192 * per_token)));  // 7
  REQUIRE(find(s, "gpu_layers"));
  CHECK(find(s, "gpu_layers")->value == "36");  // the blocks; the output head in host memory
  for (const FitSuggestion& f : s) CHECK(f.headroom_bytes >= 0);
  REQUIRE(find(s, "tp"));  // two cards, all-reducing over PCIe (no device link): 7.6 GiB of weights each
  CHECK(find(s, "tp")->value == "2");
}

TEST_CASE("a plan that fits has no suggestions; a given size has no smaller weight type") {
  Plan plan;
  plan.model = "qwen3-8b";
  plan.hw = "h200";
  CHECK(nearest_fits(resolve_plan(plan)).empty());
  plan.model = "qwen3-235b-a22b";
  plan.hw = "tests/data/profile_m2_max_seed.json";
  plan.weights_bytes = static_cast<uint64_t>(79.81 * (1ull << 30));
  plan.context = 32768;
  plan.requests = 1;
  const std::vector<FitSuggestion> s = nearest_fits(resolve_plan(plan));
  CHECK_FALSE(find(s, "weights"));
  REQUIRE(find(s, "context"));
  // the longest context the M2 Max keeps beside 79.81 GiB of weights, in whole pages
  // (tests/planner/cost/test_memory_fit.cpp derives it)
  CHECK(find(s, "context")->value == "8896");
}
