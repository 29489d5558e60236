// KV cache sizes: every SPEC 3 figure.
#include <doctest/doctest.h>

#include "planner/catalog/catalog.hpp"
#include "planner/core/input_error.hpp"
#include "planner/cost/kv_cache.hpp"
#include "planner/core/units.hpp"

using namespace infer_plan;

TEST_CASE("SPEC 3: Qwen3-8B 144 KiB/token; 8K = 1152 / 612 / 324 MiB") {
  const ModelSpec s = load_model("qwen3-8b");
  const KvTypes bf16{GgmlType::BF16, GgmlType::BF16}, q8{GgmlType::Q8_0, GgmlType::Q8_0},
      q4{GgmlType::Q4_0, GgmlType::Q4_0};
  CHECK(kv_bytes_per_token(s, bf16) == 144 * KiB);  // 2 x 36 x 8 x 128 x 2 B = 147456
  CHECK(kv_bytes_per_token(s, bf16) * 8192 == 1152 * MiB);
  CHECK(kv_bytes_per_token(s, q8) * 8192 == 612 * MiB);  // 1152 x 34/64
  CHECK(kv_bytes_per_token(s, q4) * 8192 == 324 * MiB);  // 1152 x 18/64
  CHECK((kv_bytes_per_token(s, bf16) - kv_bytes_per_token(s, q8)) * 8192 == 540 * MiB);
  CHECK((kv_bytes_per_token(s, bf16) - kv_bytes_per_token(s, q4)) * 8192 == 828 * MiB);
  // K and V chosen separately: K q8_0 + V q4_0 = (34 + 18) / 2 per 32 values
  CHECK(kv_bytes_per_token(s, {GgmlType::Q8_0, GgmlType::Q4_0}) * 8192 == (612 + 324) / 2 * MiB);
}

TEST_CASE("SPEC 3: Qwen3-235B-A22B 188 KiB/token; 8K = 1.47 GiB; 32K = 5.88 GiB") {
  const ModelSpec s = load_model("qwen3-235b-a22b");
  const KvTypes bf16{};
  CHECK(kv_bytes_per_token(s, bf16) == 188 * KiB);  // 2 x 94 x 4 x 128 x 2 = 192512
  CHECK(to_gib(kv_bytes_per_token(s, bf16) * 8192) == doctest::Approx(1.47).epsilon(0.003));
  CHECK(to_gib(kv_bytes_per_token(s, bf16) * 32768) == doctest::Approx(5.88).epsilon(0.001));
}

TEST_CASE("SPEC 3: seed 002's 7B MHA example, 0.5 MiB/token, 8K x 32 = 128 GiB") {
  const ModelSpec s = load_model("llama-2-7b");
  const KvTypes f16{GgmlType::F16, GgmlType::F16};
  // batch x seq x layers x 2 x hidden x 2 B = 32 x 2 x 4096 x 2 = 524288 per token
  CHECK(kv_bytes_per_token(s, f16) == MiB / 2);
  CHECK(kv_bytes_per_token(s, f16) * 8192 * 32 == 128 * GiB);
}

TEST_CASE("tensor parallel splits KV heads, replicating when there are fewer than devices") {
  const ModelSpec s = load_model("qwen3-235b-a22b");  // 4 KV heads, 64 query heads
  CHECK(kv_bytes_per_token(s, {}, 2) == 94 * KiB);
  CHECK(kv_heads_per_device(s, 8) == 1);
  CHECK(kv_bytes_per_token(s, {}, 8) == 47 * KiB);
  CHECK_NOTHROW(check_tensor_parallel(s, 8, "--tp"));
  CHECK_THROWS_WITH_AS(check_tensor_parallel(s, 3, "--tp"), doctest::Contains("--tp"), InputError);
  CHECK_THROWS_AS(check_tensor_parallel(s, 0, "--tp"), InputError);
}

TEST_CASE("KV types") {
  CHECK(kv_cache_type("q8_0", "--kv").type == GgmlType::Q8_0);
  CHECK(kv_cache_type("BF16", "--kv").type == GgmlType::BF16);
  CHECK_THROWS_WITH_AS(kv_cache_type("q2_k", "--kv"), doctest::Contains("--kv: 'q2_k' is not a KV cache type"), InputError);
  CHECK_THROWS_AS(kv_cache_type("int3", "--kv-k"), InputError);
}
