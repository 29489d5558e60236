#include <doctest/doctest.h>

#include "planner/catalog/catalog.hpp"
#include "planner/core/input_error.hpp"
#include "planner/model/model_scale.hpp"
#include "planner/plan/predict.hpp"
#include "planner/weights/weights_size.hpp"

using namespace infer_plan;

TEST_CASE("scale 0.25 shrinks Qwen3-8B to the shape a CPU run executes") {
  const ModelSpec full = load_model("qwen3-8b");  // 36 layers, 4096 wide, 32 / 8 heads of 128, FFN 12288
  const ModelSpec s = scale_model_spec(full, 0.25, "scale");
  CHECK(s.name == "qwen3-8b@0.25");
  CHECK(s.layers == 9);           // 36 x 0.25
  CHECK(s.hidden == 1024);        // 4096 x 0.25 = 4 blocks of 256
  CHECK(s.intermediate == 3072);  // 12288 x 0.25 = 12 blocks of 256
  CHECK(s.head_dim == 128);       // kept
  CHECK(s.kv_heads == 2);         // 8 x 0.25
  CHECK(s.heads == 8);            // the group of 4 query heads per KV head is kept
  CHECK(s.vocab == 37984);        // 151936 x 0.25
  CHECK(s.qk_norm);
  // Widths round to whole 256-value blocks: 4096 x 0.1 = 409.6 -> 2 blocks = 512.
  CHECK(scale_model_spec(full, 0.1, "scale").hidden == 512);
  CHECK(scale_model_spec(full, 1.0, "scale").name == "qwen3-8b");
  CHECK_THROWS_AS(scale_model_spec(full, 0.0, "--scale"), InputError);
  CHECK_THROWS_WITH_AS(scale_model_spec(full, 1.5, "--scale"), doctest::Contains("--scale: 1.5 is out of range"), InputError);
}

TEST_CASE("MoE: experts scale but never below the active count") {
  const ModelSpec full = load_model("qwen3-235b-a22b");  // 128 experts, 8 active
  const ModelSpec s = scale_model_spec(full, 0.05, "scale");
  CHECK(s.experts_active == 8);
  CHECK(s.experts == 8);  // 128 x 0.05 = 6.4 -> at least the 8 active
  CHECK(s.moe_intermediate % 256 == 0);
}

TEST_CASE("DeepSeek-V3's expert groups stay whole when its experts scale") {
  // 256 experts in 8 groups, 8 per token from the best 4 groups: at 0.1, 25.6 experts round to 3
  // per group (24); at 0.01 the floor is 2 per group (a group scores by its best two, and 4 groups
  // x 2 hold the 8 a token takes): 16.
  const ModelSpec full = load_model("deepseek-v3");
  CHECK(full.sigmoid_routing);
  CHECK(full.expert_groups == 8);
  CHECK(full.expert_groups_used == 4);
  CHECK(full.expert_weights_scale == 2.5);
  CHECK(full.moe_norm_top_k);
  CHECK(scale_model_spec(full, 0.1, "scale").experts == 24);
  CHECK(scale_model_spec(full, 0.01, "scale").experts == 16);
  const ModelSpec lite = load_model("deepseek-v2-lite");  // softmax, no groups, not renormalised
  CHECK_FALSE(lite.sigmoid_routing);
  CHECK(lite.expert_groups == 1);
  CHECK_FALSE(lite.moe_norm_top_k);
}

TEST_CASE("a plan's scale reaches the planner: weights of the shrunk model") {
  Plan plan;
  plan.scale = 0.25;
  plan.weights = "Q8_0";
  const ResolvedPlan rp = resolve_plan(plan);
  CHECK(rp.spec.hidden == 1024);
  CHECK(rp.weights.bytes == uniform_weights_size(rp.spec, "Q8_0").bytes);  // the Q8_0 recipe is Q8_0 throughout
}

TEST_CASE("':pure' stores one type throughout, the output head included") {
  const ModelSpec s = load_model("qwen3-0.6b");
  const PlanWeights recipe = plan_weights(s, "Q4_0", std::nullopt);
  const PlanWeights pure = plan_weights(s, "Q4_0:pure", std::nullopt);
  CHECK(pure.bytes == uniform_weights_size(s, "Q4_0").bytes);
  CHECK(pure.bytes < recipe.bytes);  // the recipe keeps a larger type for some tensors
  for (const TensorPlacement& t : pure.layout.tensors)
    if (!t.tensor.is_vector()) CHECK(t.type == GgmlType::Q4_0);
  CHECK_THROWS_WITH_AS(plan_weights(s, "Q4_K_M:pure", std::nullopt), doctest::Contains("not a GGML type"), InputError);
}
