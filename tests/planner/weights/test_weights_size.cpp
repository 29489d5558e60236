// Uniform weight sizes: every matrix at the type, norms in F32 (hand-checked on Qwen3-8B).
#include <doctest/doctest.h>

#include "planner/catalog/catalog.hpp"
#include "planner/core/input_error.hpp"
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
