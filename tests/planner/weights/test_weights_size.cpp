// Uniform weight sizes: every matrix at the type, norms in F32 (hand-checked on Qwen3-8B).
#include <doctest/doctest.h>

#include "planner/catalog/catalog.hpp"
#include "planner/core/input_error.hpp"
#include "planner/model/tensor_inventory.hpp"
#include "planner/weights/weights_size.hpp"


using namespace infer_plan;

TEST_CASE("Qwen3-8B uniform sizes") {
  const ModelSpec s = load_model("qwen3-8b");
  // vectors: 36 x (2 x 4096 + 2 x 128) + 4096 = 308,224 values, 4 B each in F32
  const uint64_t vectors = 36 * (2 * 4096 + 2 * 128) + 4096;
  const uint64_t matrices = 8'190'735'360ull - vectors;
  const WeightsSize bf16 = uniform_weights_size(s, "BF16");
  CHECK(bf16.bytes == matrices * 2 + vectors * 4);
  CHECK(bf16.meta_bytes == 0);
  const WeightsSize q8 = uniform_weights_size(s, "q8_0");
  CHECK(q8.bytes == matrices / 32 * 34 + vectors * 4);
  CHECK(q8.meta_bytes == matrices / 32 * 2);
  CHECK(q8.code_bytes + q8.meta_bytes == q8.bytes);
  // SPEC 8: a 7B FP16 model is about 14 GB of weights
  CHECK(uniform_weights_size(load_model("llama-2-7b"), "F16").bytes / 1e9 == doctest::Approx(13.5).epsilon(0.01));
}

TEST_CASE("Q2_K: metadata is 20/84 of the quantized blocks") {
  const WeightsSize w = uniform_weights_size(load_model("qwen3-235b-a22b"), "Q2_K");
  CHECK(w.fallback_tensors == 0);  // every row length is a multiple of 256
  CHECK(static_cast<double>(w.meta_bytes) / static_cast<double>(w.bytes) == doctest::Approx(20.0 / 84).epsilon(0.01));
}

TEST_CASE("uniform: mixed file types (recipes, test_gguf_recipe) and activation types are refused") {
  const ModelSpec s = load_model("qwen3-8b");
  CHECK_THROWS_WITH_AS(uniform_weights_size(s, "Q4_K_M"), doctest::Contains("recipe"), InputError);
  CHECK_THROWS_AS(uniform_weights_size(s, "Q8_K"), InputError);
  CHECK_THROWS_AS(uniform_weights_size(s, "Q7"), InputError);
}

TEST_CASE("checkpoint formats quantize the blocks' linear layers; embeddings, head, norms stay BF16 (by hand)") {
  const ModelSpec s = load_model("llama-3.1-70b");
  // token_embd and output: 2 x 128256 x 8192 values; norms (2 x 80 + 1) x 8192; the rest are the
  // 80 x 7 linear matrices, each with one F32 scale in per-tensor FP8.
  const uint64_t embeddings = 2ull * 128256 * 8192, norms = 161ull * 8192;
  const uint64_t linear = 70'553'706'496ull - embeddings - norms;
  CHECK(uniform_weights_size(s, "FP8").bytes == linear + 80 * 7 * 4 + 2 * (embeddings + norms));
  // AWQ g128: 4.125 bits per value plus zeros: every linear K here is a multiple of 128.
  const PlanWeights awq = plan_weights(s, "AWQ-INT4-G128", std::nullopt);
  uint64_t expect = 2 * (embeddings + norms);
  for (const TensorInfo& t : tensor_inventory(s)) {
    if (t.role == TensorRole::token_embd || t.role == TensorRole::output || t.is_vector()) continue;
    const uint64_t k = t.shape[0], n = t.shape[1];
    expect += k * n / 2 + (k / 128) * n * 2 + (k / 128) * (n / 8) * 4;  // qweight, scales, qzeros
  }
  CHECK(awq.bytes == expect);
  CHECK(uniform_weights_layout(s, "FP8").fallback_tensors == 0);
}

TEST_CASE("GPT-OSS as published: MXFP4 experts, BF16 elsewhere = the card's 60.8 GiB and 12.8 GiB") {
  struct Card { const char* name; double gib; };
  for (const Card card : {Card{"gpt-oss-120b", 60.8}, Card{"gpt-oss-20b", 12.8}}) {
    CAPTURE(card.name);  // (a structured binding cannot be captured by clang 14's lambdas)
    const ModelSpec s = load_model(card.name);
    // By hand: the expert matrices at 17 B per 32 values, every other parameter 2 B.
    uint64_t expert_values = 0;
    for (const TensorInfo& t : tensor_inventory(s))
      if (t.is_expert() && t.is_matrix()) expert_values += t.elements();
    const uint64_t by_hand = expert_values / 32 * 17 + (parameter_count(s).total - expert_values) * 2;
    const PlanWeights w = plan_weights(s, "MXFP4_EXPERTS", std::nullopt);
    CHECK(w.bytes == by_hand);
    CHECK(static_cast<double>(w.bytes) / (1024.0 * 1024 * 1024) == doctest::Approx(card.gib).epsilon(0.005));
  }
}
