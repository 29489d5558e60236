// Model specs against published figures: the model cards' parameter counts (rounded, checked
// to their stated precision) and exact counts where a hand calculation gives them.
#include <doctest/doctest.h>

#include "planner/catalog/catalog.hpp"
#include "planner/core/input_error.hpp"
#include "planner/model/model_spec.hpp"

using namespace infer_plan;

TEST_CASE("Qwen3-8B shapes and an exact hand count") {
  const ModelSpec s = load_model("qwen3-8b");
  CHECK(s.layers == 36);
  CHECK(s.kv_heads == 8);
  CHECK(s.head_dim == 128);
  CHECK(s.qk_norm);
  CHECK_FALSE(s.tied_embeddings);
  // per layer: q 4096x4096 + k,v 4096x1024 each + o 4096x4096 = 41,943,040; FFN 3 x 4096 x 12288
  // = 150,994,944; norms 2 x 4096 + q/k norm 2 x 128 = 8,448 -> 192,946,432 x 36 = 6,946,071,552;
  // + token_embd and output 2 x 151936 x 4096 = 1,244,659,712 + output_norm 4096 = 8,190,735,360
  const ParameterCount p = parameter_count(s);
  CHECK(p.total == 8'190'735'360ull);
  CHECK(p.active == p.total);
  CHECK(p.non_embedding() == 6'946'075'648ull);  // model card: "Non-Embedding: 6.95B"
}

TEST_CASE("Qwen3-235B-A22B: attention width is not hidden; 235B total, 22B active") {
  const ModelSpec s = load_model("qwen3-235b-a22b");
  CHECK(s.is_moe());
  CHECK(s.hidden == 4096);
  CHECK(s.q_width() == 64 * 128);  // 8192, not 4096
  CHECK(s.experts == 128);
  CHECK(s.experts_active == 8);
  CHECK(s.moe_intermediate == 1536);
  CHECK(s.layer_is_moe(0));
  const ParameterCount p = parameter_count(s);
  CHECK(p.total / 1e9 == doctest::Approx(235.0).epsilon(0.005));   // card: 235B total
  CHECK(p.active / 1e9 == doctest::Approx(22.0).epsilon(0.02));    // card: 22B activated
  CHECK(p.non_embedding() / 1e9 == doctest::Approx(234.0).epsilon(0.005));  // card: 234B
}

TEST_CASE("published parameter counts of every built-in model") {
  struct Expect { const char* name; double billions; double tolerance; };
  // Exact safetensors totals where known (Llama, Mistral); model-card roundings otherwise.
  const Expect expected[] = {
      {"qwen3-0.6b", 0.6, 0.01},      {"qwen3-4b", 4.0, 0.02},       {"qwen3-8b", 8.2, 0.01},
      {"llama-3.1-8b", 8.030261248, 1e-9}, {"llama-3.1-70b", 70.553706496, 1e-9},
      {"qwen2.5-7b", 7.61, 0.002},    {"mistral-7b-v0.1", 7.241732096, 1e-9},
      {"llama-2-7b", 6.738415616, 1e-9},  {"llama-2-13b", 13.015864320, 1e-9},
      {"llama-2-70b", 68.976648192, 1e-9}};
  for (const auto& e : expected) {
    CAPTURE(e.name);
    const ParameterCount p = parameter_count(load_model(e.name));
    CHECK(p.total / 1e9 == doctest::Approx(e.billions).epsilon(e.tolerance));
  }
  // non-embedding counts from the Qwen cards
  CHECK(parameter_count(load_model("qwen3-0.6b")).non_embedding() / 1e9 == doctest::Approx(0.44).epsilon(0.01));
  CHECK(parameter_count(load_model("qwen2.5-7b")).non_embedding() / 1e9 == doctest::Approx(6.53).epsilon(0.002));
}

TEST_CASE("architecture details") {
  CHECK(load_model("qwen3-0.6b").tied_embeddings);
  CHECK(load_model("qwen2.5-7b").qkv_bias);
  CHECK(load_model("llama-3.1-8b").rope_freqs_tensor);
  CHECK(load_model("mistral-7b-v0.1").gguf_arch == "llama");
  CHECK(load_model("mistral-7b-v0.1").sliding_window == 4096);
  CHECK(load_model("qwen2.5-7b").sliding_window == 0);  // use_sliding_window: false
  CHECK(load_model("llama-2-7b").kv_heads == 32);       // MHA
}

TEST_CASE("bad configs name the file and the field") {
  Json c = {{"model_type", "qwen3"}, {"hidden_size", 1024}, {"num_hidden_layers", 2},
            {"num_attention_heads", 16}, {"num_key_value_heads", 8}, {"intermediate_size", 3072},
            {"vocab_size", 1000}};
  CHECK(model_spec_from_hf_config(c, "t", "c.json").head_dim == 64);
  Json bad = c;
  bad.erase("hidden_size");
  CHECK_THROWS_WITH_AS(model_spec_from_hf_config(bad, "t", "c.json"),
                       doctest::Contains("c.json: field 'hidden_size' is missing"), InputError);
  bad = c;
  bad["num_hidden_layers"] = -2;
  CHECK_THROWS_WITH_AS(model_spec_from_hf_config(bad, "t", "c.json"),
                       doctest::Contains("'num_hidden_layers' is -2"), InputError);
  bad = c;
  bad["num_hidden_layers"] = "two";
  CHECK_THROWS_WITH_AS(model_spec_from_hf_config(bad, "t", "c.json"),
                       doctest::Contains("expected a non-negative integer"), InputError);
  bad = c;
  bad["model_type"] = "gpt2";
  CHECK_THROWS_WITH_AS(model_spec_from_hf_config(bad, "t", "c.json"), doctest::Contains("supported: qwen3"), InputError);
  bad = c;
  bad["num_key_value_heads"] = 5;
  CHECK_THROWS_WITH_AS(model_spec_from_hf_config(bad, "t", "c.json"), doctest::Contains("divide"), InputError);
  CHECK_THROWS_WITH_AS(load_model("qwen9"), doctest::Contains("built-in: "), InputError);
  CHECK_THROWS_WITH_AS(load_model("/nonexistent/config.json"), doctest::Contains("cannot open"), InputError);
}
