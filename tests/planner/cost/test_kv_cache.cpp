// KV cache sizes: every SPEC 3 figure.
#include <doctest/doctest.h>

#include "planner/catalog/catalog.hpp"
#include "planner/core/input_error.hpp"
#include "planner/cost/kv_cache.hpp"
#include "planner/core/limits.hpp"
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

TEST_CASE("sliding windows: a window layer caches its window, the fit's KV and longest context count per layer type") {
  const ModelSpec s = load_model("gpt-oss-120b");  // 18 full layers, 18 over a 128-token window
  const KvTypes bf16{GgmlType::BF16, GgmlType::BF16};
  // 2 (K, V) x 36 layers x 8 KV heads x 64 x 2 B = 73,728 B per token while within the window
  CHECK(kv_bytes_per_token(s, bf16) == 73'728);
  // 128K: 2048 B per token and layer x (18 x 131072 + 18 x 128) = 4,836,556,800 B, where every
  // layer in full would be 73,728 x 131072 = 9,663,676,416 B.
  CHECK(kv_bytes_for_context(s, bf16, 131072) == 2048ull * (18 * 131072 + 18 * 128));
  CHECK(kv_bytes_for_context(s, bf16, 131072) == 4'836'556'800);
  CHECK(kv_bytes_for_context(s, bf16, 100) == 73'728ull * 112);  // within the window: whole pages, every layer
  // The inverse: exactly that many bytes hold 131072 tokens, one byte fewer a page less.
  CHECK(kv_context_for_bytes(s, bf16, 4'836'556'800) == 131072);
  CHECK(kv_context_for_bytes(s, bf16, 4'836'556'799) == 131072 - kKvPageTokens);
  CHECK(kv_context_for_bytes(s, bf16, 73'728 * 16 - 1) == 0);
  // Without windows both are the per-token figure's multiples.
  const ModelSpec q = load_model("qwen3-8b");
  CHECK(kv_bytes_for_context(q, bf16, 8000) == kv_bytes_per_token(q, bf16) * kv_cache_tokens(8000));
  CHECK(kv_context_for_bytes(q, bf16, kv_bytes_per_token(q, bf16) * 8000) == 8000);
  // Every layer in a window (Mistral v0.1, 4096): memory no longer bounds the context.
  const ModelSpec m = load_model("mistral-7b-v0.1");
  CHECK(kv_bytes_for_context(m, bf16, 32768) == kv_bytes_for_context(m, bf16, 4096));
  CHECK(kv_context_for_bytes(m, bf16, kv_bytes_for_context(m, bf16, 4096)) == kMaxContextTokens);
}

TEST_CASE("sliding windows: positions attended per step (decode) and per prompt (prefill), by hand") {
  ModelSpec s = load_model("qwen3-0.6b");
  s.layers = 2;
  s.sliding_window = 4;
  s.window_layers = {false, true};
  CHECK(kv_attended_positions(kv_layer_windows(s), 3) == 6.0);   // 3 + min(3, 4)
  CHECK(kv_attended_positions(kv_layer_windows(s), 10) == 14.0);  // 10 + 4
  // Prompt of 6: the full layer 1 + ... + 6 = 21, the window layer 1 + 2 + 3 + 4 + 4 + 4 = 18.
  CHECK(kv_prefill_attended_positions(kv_layer_windows(s), 6) == 39.0);
  s.window_layers.clear();
  s.sliding_window = 0;
  CHECK(kv_prefill_attended_positions(kv_layer_windows(s), 6) == 42.0);  // 2 x P (P + 1) / 2
}
