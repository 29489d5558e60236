// The RoPE a model asks for, from config.json and GGUF to the kernels' parameters (issue 17):
// YaRN's ramp and magnitude, linear's scale, llama3's factors against a hand calculation, the
// types the runtime does not apply refused by key, and a YaRN model decoding differently from the
// same weights unscaled.
#include <doctest/doctest.h>

#include <cmath>
#include <span>
#include <vector>

#include "planner/core/input_error.hpp"
#include "planner/catalog/catalog.hpp"
#include "planner/model/model_spec.hpp"
#include "runtime/cpu_backend.hpp"
#include "runtime/decoder.hpp"
#include "runtime/model_weights.hpp"
#include "runtime/paged_kv_cache.hpp"
#include "runtime/rope_params.hpp"
#include "runtime/thread_pool.hpp"
#include "planner/weights/gguf_recipe.hpp"

using namespace infer_plan;
using namespace infer_plan::runtime;

namespace {
Json tiny_config(const Json& rope_scaling) {
  Json c = {{"model_type", "qwen3"}, {"hidden_size", 256}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
            {"num_key_value_heads", 2}, {"head_dim", 64}, {"intermediate_size", 512}, {"vocab_size", 1024},
            {"tie_word_embeddings", true}, {"max_position_embeddings", 1024}, {"rope_theta", 10000.0}};
  if (!rope_scaling.is_null()) c["rope_scaling"] = rope_scaling;
  return c;
}
}  // namespace

TEST_CASE("config.json YaRN: factor, original context, magnitude, and the context it serves") {
  const ModelSpec s = model_spec_from_hf_config(
      tiny_config({{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 256}}), "t", "c.json");
  CHECK(s.rope_scaling.type == "yarn");
  CHECK(s.rope_scaling.key == "c.json: rope_scaling.rope_type");
  CHECK(s.max_context == 1024);  // vLLM: original 256 x factor 4
  const kernels::RopeParams p = rope_params(s, nullptr);
  CHECK(p.layout == kernels::RopeLayout::neox);
  CHECK(p.freq_scale == 0.25f);
  CHECK(p.ext_factor == 1.0f);
  // dim(r) = 64 ln(256 / (2 pi r)) / (2 ln 10000): dim(32) = -0.80 -> 0; dim(1) = 12.9 -> 13.
  CHECK(p.corr_low == 0.0f);
  CHECK(p.corr_high == 13.0f);
  CHECK(p.magnitude == doctest::Approx(0.1 * std::log(4.0) + 1.0));
  // attention_factor replaces the formula, as in transformers.
  const ModelSpec given = model_spec_from_hf_config(
      tiny_config({{"type", "yarn"}, {"factor", 4.0}, {"attention_factor", 1.25}, {"beta_fast", 16}}), "t", "c.json");
  CHECK(rope_params(given, nullptr).magnitude == 1.25f);
  CHECK(given.rope_scaling.original_context == 1024);  // max_position_embeddings when not given
  CHECK(given.rope_scaling.beta_fast == 16.0);
  CHECK_THROWS_WITH_AS(model_spec_from_hf_config(tiny_config({{"rope_type", "yarn"}}), "t", "c.json"),
                       doctest::Contains("needs field 'factor'"), InputError);
  // DeepSeek's magnitude terms outside latent attention are refused by the runtime.
  const ModelSpec not_mla = model_spec_from_hf_config(
      tiny_config({{"rope_type", "yarn"}, {"factor", 40}, {"mscale_all_dim", 1.0}}), "t", "c.json");
  CHECK_THROWS_WITH_AS(rope_params(not_mla, nullptr), doctest::Contains("latent attention only"), InputError);
}

TEST_CASE("config.json linear scaling, partial RoPE, and a type the runtime does not apply") {
  const ModelSpec linear =
      model_spec_from_hf_config(tiny_config({{"type", "linear"}, {"factor", 2.0}}), "t", "c.json");
  CHECK(rope_params(linear, nullptr).freq_scale == 0.5f);
  CHECK(rope_params(linear, nullptr).ext_factor == 0.0f);
  CHECK(linear.max_context == 2048);
  Json half = tiny_config(nullptr);
  half["partial_rotary_factor"] = 0.5;
  CHECK(rope_params(model_spec_from_hf_config(half, "t", "c.json"), nullptr).rotated() == 32);
  const ModelSpec longrope = model_spec_from_hf_config(tiny_config({{"rope_type", "longrope"}}), "t", "c.json");
  CHECK_THROWS_WITH_AS(rope_params(longrope, nullptr), doctest::Contains("c.json: rope_scaling.rope_type = 'longrope'"),
                       InputError);
  CHECK(rope_params(model_spec_from_hf_config(tiny_config({{"rope_type", "default"}}), "t", "c.json"), nullptr).freq_scale ==
        1.0f);
}

TEST_CASE("llama3 factors for Llama 3.1 as convert_hf_to_gguf derives them") {
  // head_dim 128, theta 500000, factor 8, low 1, high 4, original 8192: pair i's wavelength is
  // 2 pi 500000^(i / 64); under 8192 / 4 = 2048 (pairs 0..28) kept at 1, over 8192 (35..63) 8,
  // between smooth = (8192 / wavelength - 1) / 3 and 1 / ((1 - smooth) / 8 + smooth):
  // pair 29: wavelength 2401.74 -> 1.207484; 30: 2948.30 -> 1.553415; 34: 6695.11 -> 5.257327.
  const std::vector<float> f = llama3_rope_factors(load_model("llama-3.1-8b"));
  REQUIRE(f.size() == 64);
  CHECK(f[0] == 1.0f);
  CHECK(f[28] == 1.0f);
  CHECK(f[29] == doctest::Approx(1.207484).epsilon(1e-6));
  CHECK(f[30] == doctest::Approx(1.553415).epsilon(1e-6));
  CHECK(f[34] == doctest::Approx(5.257327).epsilon(1e-6));
  CHECK(f[35] == 8.0f);
  CHECK(f[63] == 8.0f);
}

TEST_CASE("a YaRN model decodes differently from the same weights unscaled, from the second token") {
  // One token attends only to itself (softmax of one score is 1), so its logits ignore RoPE; the
  // rest see scaled angles and a magnitude of 1.139 on q and k.
  CpuBackend backend;
  ThreadPool pool(2);
  const auto logits_of = [&](const ModelSpec& spec) {
    const WeightsLayout layout = recipe_weights_layout(spec, LlamaFileType::F16);
    const ModelWeights w(backend, spec, layout, 3, pool);
    PagedKvCache cache(backend, spec, {GgmlType::F32, GgmlType::F32}, 4);
    REQUIRE(cache.reserve(1, 16));
    Decoder d(w, cache, pool);
    std::vector<std::vector<float>> logits;
    const std::vector<uint32_t> prompt = {5, 6, 7, 8};
    const SequenceChunk c{1, prompt, 0};
    d.forward(std::span(&c, 1), logits, true);
    return logits;
  };
  const ModelSpec plain = model_spec_from_hf_config(tiny_config(nullptr), "t", "c.json");
  const ModelSpec yarn = model_spec_from_hf_config(
      tiny_config({{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 256}}), "t", "c.json");
  const auto a = logits_of(plain), b = logits_of(yarn);
  REQUIRE(a.size() == 4);
  REQUIRE(b.size() == 4);
  CHECK(a[0] == b[0]);
  for (size_t t = 1; t < 4; ++t) CHECK(a[t] != b[t]);
}

TEST_CASE("MLA: the RoPE part of DeepSeek-V2-Lite's heads and its YaRN score scale") {
  // DeepSeek-V2-Lite: qk_rope 64 of 192-wide heads, adjacent pairs (llama.cpp's deepseek2), YaRN
  // factor 40 with mscale = mscale_all_dim = 0.707: the RoPE's magnitude is 1 and the scores take
  // g^2 / sqrt(192), g = 0.1 x 0.707 x ln 40 + 1 = 1.2608036 (ln 40 = 3.6888795): 0.1147219.
  const ModelSpec lite = load_model("deepseek-v2-lite");
  const kernels::RopeParams p = rope_params(lite, nullptr);
  CHECK(p.layout == kernels::RopeLayout::normal);
  CHECK(p.head_dim == 192);
  CHECK(p.rotated() == 64);
  CHECK(p.magnitude == 1.0f);
  CHECK(p.freq_scale == doctest::Approx(1.0 / 40));
  CHECK(mla_score_scale(lite) == doctest::Approx(0.1147219).epsilon(1e-6));
  // Without its YaRN, 1 / sqrt(192) = 0.0721688; plain YaRN x4 (no mscale): the RoPE's magnitude
  // m = 0.1 ln 4 + 1 = 1.1386294 on cos and sin, and m^2 = 1.2964768 on the scores too, as llama.cpp.
  ModelSpec plain = lite;
  plain.rope_scaling = {};
  CHECK(mla_score_scale(plain) == doctest::Approx(0.0721688).epsilon(1e-6));
  plain.rope_scaling.type = "yarn";
  plain.rope_scaling.factor = 4.0;
  plain.rope_scaling.original_context = 4096;
  CHECK(rope_params(plain, nullptr).magnitude == doctest::Approx(1.1386294));
  CHECK(mla_score_scale(plain) == doctest::Approx(1.2964768 * 0.0721688).epsilon(1e-6));
}
