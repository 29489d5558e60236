// Model specs against published figures: the model cards' parameter counts (rounded, checked
// to their stated precision) and exact counts where a hand calculation gives them.
#include <doctest/doctest.h>

#include <cmath>

#include "planner/catalog/catalog.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/json_fields.hpp"
#include "planner/cost/kv_cache.hpp"
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
      {"llama-2-70b", 68.976648192, 1e-9}, {"mixtral-8x7b", 46.702792704, 1e-9}};
  for (const auto& e : expected) {
    CAPTURE(e.name);
    const ParameterCount p = parameter_count(load_model(e.name));
    CHECK(p.total / 1e9 == doctest::Approx(e.billions).epsilon(e.tolerance));
  }
  // non-embedding counts from the Qwen cards
  CHECK(parameter_count(load_model("qwen3-0.6b")).non_embedding() / 1e9 == doctest::Approx(0.44).epsilon(0.01));
  CHECK(parameter_count(load_model("qwen2.5-7b")).non_embedding() / 1e9 == doctest::Approx(6.53).epsilon(0.002));
}

TEST_CASE("Mixtral 8x7B: 46.7 B parameters, 12.9 B active (model card), by hand") {
  // per layer: attention q 4096^2 + k, v 4096 x 1024 each + o 4096^2 = 41,943,040; norms 8,192;
  // router 4096 x 8 = 32,768; experts 8 x 3 x 4096 x 14336 = 1,409,286,144 -> 1,451,270,144 x 32
  // = 46,440,644,608; + embeddings and head 2 x 32000 x 4096 = 262,144,000 + output norm 4,096.
  // Active: two experts of the eight, 352,321,536 per layer instead of 1,409,286,144.
  const ModelSpec s = load_model("mixtral-8x7b");
  CHECK(s.is_moe());
  CHECK(s.gguf_arch == "llama");
  CHECK(s.experts == 8);
  CHECK(s.experts_active == 2);
  CHECK(s.moe_intermediate == 14336);
  CHECK(s.sliding_window == 0);  // "sliding_window": null
  const ParameterCount p = parameter_count(s);
  CHECK(p.total == 46'702'792'704ull);
  CHECK(p.active == 12'879'925'248ull);
  // The same config relabelled mistral is refused, not counted as a 7.24 B dense model.
  Json c = read_json_file("scenarios/models/mixtral-8x7b.json");
  c["model_type"] = "mistral";
  CHECK_THROWS_WITH_AS(model_spec_from_hf_config(c, "m", "c.json"),
                       doctest::Contains("field 'num_local_experts' (routed experts (Mixtral, GPT-OSS)) is not part of "
                                         "model_type 'mistral'"),
                       InputError);
  c["model_type"] = "qwen3";
  c.erase("num_local_experts");
  c["kv_lora_rank"] = 512;
  CHECK_THROWS_WITH_AS(model_spec_from_hf_config(c, "m", "c.json"), doctest::Contains("'kv_lora_rank'"), InputError);
}

TEST_CASE("the layers with experts in units of a layer routing to 4 experts: (8 + k) / 12 each") {
  // llama.cpp's graph of a layer with k experts: 9 nodes (router product, softmax, top-k, get_rows,
  // three expert products, GLU, weighting) and k - 1 adds of the experts' outputs: 8 + k.
  CHECK(load_model("gpt-oss-20b").moe_layer_units() == doctest::Approx(24.0));       // 24 layers, 4 experts
  CHECK(load_model("qwen3-30b-a3b").moe_layer_units() == doctest::Approx(64.0));     // 48 x (8 + 8) / 12
  CHECK(load_model("mixtral-8x7b").moe_layer_units() == doctest::Approx(32.0 * 10 / 12));  // 32 x (8 + 2) / 12
  CHECK(load_model("qwen3-8b").moe_layer_units() == 0.0);                            // dense
}

TEST_CASE("DeepSeek-V3: 671 B parameters, 37 B activated, 70,272 B of KV per token at BF16 (MLA)") {
  // Per layer, attention: q_a 7168 x 1536 = 11,010,048; q_a_norm 1,536; q_b 1536 x 128 x 192 =
  // 37,748,736; kv_a_mqa 7168 x 576 = 4,128,768; kv_a_norm 512; k_b 128 x 512 x 128 and v_b
  // 512 x 128 x 128 = 16,777,216; o 16384 x 7168 = 117,440,512 -> 187,107,328, + norms 14,336.
  // 3 dense FFNs of 3 x 7168 x 18432 = 396,361,728; 58 MoE layers: router 1,835,008 + bias 256 +
  // 256 experts x 3 x 7168 x 2048 = 11,274,289,152 + one shared 44,040,192 = 11,320,164,608.
  // Embeddings 2 x 129280 x 7168 = 1,853,358,080, output norm 7,168. Total 671,026,419,200
  // (card: 671 B). Active: 8 of the 256 experts: 398,196,992 per MoE layer -> 37,552,297,472 with
  // both embedding tables; DeepSeek's 37 B leaves the input embedding (a lookup) out: 36.63 B.
  const ModelSpec s = load_model("deepseek-v3");
  CHECK(s.is_mla());
  CHECK(s.gguf_arch == "deepseek2");
  CHECK(s.head_dim == 192);
  CHECK(s.first_dense_layers == 3);
  CHECK_FALSE(s.layer_is_moe(2));
  CHECK(s.layer_is_moe(3));
  CHECK(s.max_context == 163840);  // YaRN: 4096 x 40
  const ParameterCount p = parameter_count(s);
  CHECK(p.total == 671'026'419'200ull);
  CHECK(p.active == 37'552'297'472ull);
  CHECK((p.active - 129280ull * 7168) / 1e9 == doctest::Approx(37.0).epsilon(0.015));
  // The issue's figure: 61 layers x (512 + 64) values x 2 B.
  CHECK(kv_bytes_per_token(s, {GgmlType::BF16, GgmlType::BF16}) == 70'272);
  CHECK(kv_bytes_per_token(s, {GgmlType::Q8_0, GgmlType::Q8_0}) == 61ull * 18 * 34);  // 576 / 32 blocks of 34 B
  CHECK(kv_bytes_per_token(s, {GgmlType::BF16, GgmlType::BF16}, 8) == 70'272);  // the latent is replicated
}

TEST_CASE("Kimi-K2: DeepSeek-V3's shape with 384 experts and 64 heads; 1T parameters, 32B activated (card), by hand") {
  // Per layer, attention: q_a 7168 x 1536 = 11,010,048, its norm 1536; q_b 1536 x 64 x 192 =
  // 18,874,368; kv_a_mqa 7168 x 576 = 4,128,768, its norm 512; k_b and v_b 2 x 512 x 64 x 128 =
  // 8,388,608; o 64 x 128 x 7168 = 58,720,256 -> 101,124,096, + the two norms 14,336, x 61 layers
  // = 6,169,444,352. One dense FFN 3 x 7168 x 18432 = 396,361,728. 60 MoE layers: router 384 x 7168
  // = 2,752,512 + bias 384 + 384 experts x 3 x 7168 x 2048 = 16,911,433,728 + one shared 44,040,192
  // = 16,958,226,816. Embeddings 2 x 163840 x 7168 = 2,348,810,240, output norm 7168. Total
  // 1,026,408,232,448 (card: 1T). Active: 8 experts: 399,114,624 per MoE layer -> 32,861,500,928;
  // without the input embedding (as the card, like DeepSeek's) 31,687,095,808 (card: 32B).
  const ModelSpec s = load_model("kimi-k2");
  CHECK(s.is_mla());
  CHECK(s.gguf_arch == "deepseek2");
  CHECK(s.first_dense_layers == 1);
  CHECK(s.experts == 384);
  const ParameterCount p = parameter_count(s);
  CHECK(p.total == 1'026'408'232'448ull);
  CHECK(p.active == 32'861'500'928ull);
  CHECK(p.total / 1e12 == doctest::Approx(1.0).epsilon(0.03));
  CHECK((p.active - 163840ull * 7168) / 1e9 == doctest::Approx(32.0).epsilon(0.015));
  CHECK(kv_bytes_per_token(s, {GgmlType::BF16, GgmlType::BF16}) == 61ull * 576 * 2);  // the latent, as V3's
  // DeepSeek-R1 is the V3 base's shape: 671 B, 37 B active.
  const ParameterCount r1 = parameter_count(load_model("deepseek-r1"));
  CHECK(r1.total == parameter_count(load_model("deepseek-v3")).total);
  CHECK(r1.total / 1e9 == doctest::Approx(671.0).epsilon(0.005));
}

TEST_CASE("GLM-4.5 and GLM-4.5-Air: DeepSeek's experts beside grouped-query attention; 355B/32B and 106B/12B (README)") {
  // GLM-4.5-Air per layer, attention: q 4096 x 12288 = 50,331,648 + bias 12,288; k and v 4096 x 1024
  // = 4,194,304 each + biases 1024; o 12288 x 4096 = 50,331,648; attn_norm and post_attention_norm
  // 8192 -> 109,074,432, x 46 = 5,017,423,872. One dense FFN 3 x 4096 x 10944 = 134,479,872. 45 MoE
  // layers: router 128 x 4096 = 524,288 + bias 128 + 128 experts x 3 x 4096 x 1408 = 2,214,592,512 +
  // one shared 17,301,504 = 2,232,418,432. Embeddings 2 x 151552 x 4096 = 1,241,513,984, output norm
  // 4096: total 106,852,251,264 (README: 106B). Active: 8 experts, 156,237,952 per MoE layer ->
  // 13,424,129,664; GLM's 12B counts neither embedding table: 12,182,615,680.
  const ModelSpec air = load_model("glm-4.5-air");
  CHECK(air.gguf_arch == "glm4moe");
  CHECK_FALSE(air.is_mla());
  CHECK(air.first_dense_layers == 1);
  CHECK(air.shared_experts == 1);
  CHECK(air.expert_score_bias);
  CHECK(air.sigmoid_routing);
  CHECK(air.qkv_bias);
  CHECK(air.rope_dims == 64);  // half of the 128-wide head
  const ParameterCount a = parameter_count(air);
  CHECK(a.total == 106'852'251'264ull);
  CHECK(a.active == 13'424'129'664ull);
  CHECK((a.active - a.embedding) / 1e9 == doctest::Approx(12.0).epsilon(0.02));
  CHECK(a.total / 1e9 == doctest::Approx(106.0).epsilon(0.01));
  CHECK(kv_bytes_per_token(air, {GgmlType::BF16, GgmlType::BF16}) == 46ull * 2 * 8 * 128 * 2);
  // GLM-4.5: attention 136,339,456 per layer x 92; three dense FFNs of 188,743,680; 89 MoE layers of
  // 819,200 + 160 + 160 x 23,592,960 + 23,592,960 = 3,799,285,920; embeddings 2 x 151552 x 5120:
  // 352,797,805,472 (README: 355B, its multi-token-prediction layer counted; not here, as llama.cpp
  // skips it). Active 33,632,242,592, without either embedding table 32,080,350,112 (README: 32B).
  const ParameterCount g = parameter_count(load_model("glm-4.5"));
  CHECK(g.total == 352'797'805'472ull);
  CHECK(g.active == 33'632'242'592ull);
  CHECK(g.total / 1e9 == doctest::Approx(355.0).epsilon(0.01));
  CHECK((g.active - g.embedding) / 1e9 == doctest::Approx(32.0).epsilon(0.005));
}

TEST_CASE("MiniMax-M2: 256 experts every layer, q/k norms over the whole projections; 230B, 10B active (card)") {
  // Per layer: q 3072 x 6144 = 18,874,368; k and v 3072 x 1024 = 3,145,728 each; o 6144 x 3072 =
  // 18,874,368; q_norm 6144 and k_norm 1024 (whole projections); two norms 6144 -> 44,053,504.
  // Router 256 x 3072 = 786,432 + bias 256; 256 experts x 3 x 3072 x 1536 = 3,623,878,656. x 62
  // layers = 227,460,568,576; embeddings 2 x 200064 x 3072 = 1,229,193,216; output norm 3072:
  // total 228,689,764,864 (card: 230B). Active: 8 experts, 158,086,400 per layer -> 11,030,553,088;
  // without the input embedding 10,415,956,480 (card: 10B).
  const ModelSpec s = load_model("minimax-m2");
  CHECK(s.gguf_arch == "minimax-m2");
  CHECK(s.qk_norm_whole);
  CHECK(s.rope_dims == 64);
  CHECK(s.expert_score_bias);
  CHECK(s.sigmoid_routing);
  CHECK(s.moe_layer_count() == 62);
  const ParameterCount p = parameter_count(s);
  CHECK(p.total == 228'689'764'864ull);
  CHECK(p.active == 11'030'553'088ull);
  CHECK(p.total / 1e9 == doctest::Approx(230.0).epsilon(0.01));
  CHECK(p.active_without_lookup(s.tied_embeddings) / 1e9 == doctest::Approx(10.0).epsilon(0.045));
  CHECK(kv_bytes_per_token(s, {GgmlType::BF16, GgmlType::BF16}) == 62ull * 2 * 8 * 128 * 2);
  // a rotary_dim no head holds is refused, naming it
  Json c = Json::parse(R"({"model_type": "minimax_m2", "hidden_size": 256, "num_hidden_layers": 2,
    "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 128, "intermediate_size": 64,
    "vocab_size": 1000, "num_local_experts": 4, "num_experts_per_tok": 2, "rotary_dim": 130})");
  CHECK_THROWS_WITH_AS(model_spec_from_hf_config(c, "m", "m.json"), doctest::Contains("rotary_dim"), InputError);
}

TEST_CASE("Qwen3-Next-80B-A3B: 36 Gated DeltaNet and 12 gated attention layers; 80B, 3B activated (card)") {
  // Every layer's FFN: router 2048 x 512 = 1,048,576; 512 experts x 3 x 2048 x 512 = 1,610,612,736;
  // the shared expert 3 x 2048 x 512 = 3,145,728 and its gate 2,048; two norms 4,096.
  // Gated DeltaNet: qkv 2048 x (2 x 16 x 128 + 32 x 128 = 8192) = 16,777,216; gate 2048 x 4096 =
  // 8,388,608; conv 4 x 8192 = 32,768; dt and A 32 each; ba 2048 x 64 = 131,072; norm 128; out
  // 4096 x 2048 = 8,388,608 -> 33,718,464. Attention: q 2048 x 2 x 4096 (query and gate) =
  // 16,777,216; k and v 2048 x 512 each; o 4096 x 2048; q/k norms 256 each -> 27,263,488.
  // 36 x 1,648,531,648 + 12 x 1,642,076,672 + embeddings 2 x 151936 x 2048 + output norm 2048 =
  // 79,674,391,296: the checkpoint's own count (its safetensors, as a public test of Qwen3-Coder-Next's
  // config records it, the MTP module aside). Active: 10 experts, 31,457,280 per layer ->
  // 3,874,929,408 (the same record); without the input embedding 3,563,764,480 (card: 3B).
  const ModelSpec s = load_model("qwen3-next-80b-a3b");
  CHECK(s.gguf_arch == "qwen3next");
  CHECK(s.is_hybrid());
  CHECK(s.linear_layer_count() == 36);
  CHECK(s.attention_layers() == 12);
  CHECK(!s.layer_is_linear(3));
  CHECK(s.layer_is_linear(4));
  CHECK(s.rope_dims == 64);
  CHECK(s.attn_output_gate);
  CHECK(s.shared_expert_gate);
  const ParameterCount p = parameter_count(s);
  CHECK(p.total == 79'674'391'296ull);
  CHECK(p.active == 3'874'929'408ull);
  CHECK(p.active_without_lookup(s.tied_embeddings) == 3'563'764'480ull);
  // KV only in the 12 attention layers: 12 x 2 x 2 heads x 256 x 2 B = 24,576 B per token.
  const KvTypes bf16{GgmlType::BF16, GgmlType::BF16};
  CHECK(kv_bytes_per_token(s, bf16) == 24'576u);
  // The state per sequence, as llama.cpp keeps it (F32): per layer 3 taps x 8192 channels x 4 B =
  // 98,304 and 32 heads x 128 x 128 x 4 B = 2,097,152; x 36 = 79,036,416 B (75.4 MiB). vLLM keeps
  // it in BF16: half.
  CHECK(recurrent_state_bytes(s, bf16) == 79'036'416u);
  CHECK(recurrent_state_bytes(s, with_state_types(bf16, s, "vllm")) == 79'036'416u / 2);
  CHECK(recurrent_state_bytes(s, bf16, 2) == 79'036'416u / 2);  // heads split over two devices
  // A request's KV: its tokens' rows plus the state, whatever the context.
  CHECK(kv_bytes_for_context(s, bf16, 32'768) == 24'576ull * 32'768 + 79'036'416);
  CHECK(kv_bytes_for_context(s, bf16, 0) == 79'036'416u);
  // ... and the longest context in a budget: the state first, then whole pages of tokens.
  CHECK(kv_context_for_bytes(s, bf16, 24'576ull * 32'768 + 79'036'416) == 32'768u);
  CHECK(kv_context_for_bytes(s, bf16, 79'036'415) == 0u);
  // the config's own layer_types override the interval; a pure linear stack is refused
  Json c = Json::parse(R"({"model_type": "qwen3_next", "hidden_size": 256, "num_hidden_layers": 3,
    "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 128, "intermediate_size": 64,
    "vocab_size": 1000, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
    "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 32,
    "linear_value_head_dim": 32, "linear_conv_kernel_dim": 4,
    "layer_types": ["linear_attention", "full_attention", "linear_attention"]})");
  const ModelSpec small = model_spec_from_hf_config(c, "m", "m.json");
  CHECK(small.linear_layer_count() == 2);
  CHECK(!small.layer_is_linear(1));
  c["layer_types"] = Json::array({"linear_attention", "linear_attention", "linear_attention"});
  CHECK_THROWS_WITH_AS(model_spec_from_hf_config(c, "m", "m.json"), doctest::Contains("every layer"), InputError);
  c.erase("layer_types");
  c["num_hidden_layers"] = 4;  // the default interval: the fourth attends
  c["linear_num_value_heads"] = 3;  // not a multiple of the key heads
  CHECK_THROWS_WITH_AS(model_spec_from_hf_config(c, "m", "m.json"), doctest::Contains("linear_num_value_heads"), InputError);
}

TEST_CASE("Qwen3.5: the language model of a vision wrapper, Qwen3-Next's layers with beta and alpha apart") {
  // 35B-A3B, 40 layers (30 Gated DeltaNet, 10 attention), hidden 2048. FFN per layer: router 2048 x 256
  // = 524,288; 256 experts x 3 x 2048 x 512 = 805,306,368; shared 3,145,728 and its gate 2,048; two
  // norms 4,096 -> 808,982,528. DeltaNet 33,718,464 (Qwen3-Next's, its 2048 x 64 gates as two 2048 x
  // 32); attention 27,263,488. 30 x 842,700,992 + 10 x 836,246,016 + embeddings 2 x 248320 x 2048 +
  // 2048 = 34,660,610,688 (card: 35B). Active: 8 experts, 28,841,984 per layer -> 3,454,988,928;
  // without the input embedding 2,946,429,568 (card: 3B).
  const ModelSpec s = load_model("qwen3.5-35b-a3b");
  CHECK(s.model_type == "qwen3_5_moe_text");
  CHECK(s.gguf_arch == "qwen35moe");
  CHECK(s.hf_id == "Qwen/Qwen3.5-35B-A3B");  // the wrapper's
  CHECK(!s.tied_embeddings);
  CHECK(s.attention_layers() == 10);
  CHECK(!s.linear.fused_beta_alpha);
  CHECK(s.rope_dims == 64);  // rope_parameters' partial_rotary_factor 0.25 of 256
  CHECK(s.rope_theta == 1e7);
  CHECK(s.rope_sections == std::vector<uint64_t>{11, 11, 10});
  const ParameterCount p = parameter_count(s);
  CHECK(p.total == 34'660'610'688ull);
  CHECK(p.active == 3'454'988'928ull);
  CHECK(p.active_without_lookup(s.tied_embeddings) == 2'946'429'568ull);
  // The state: 3 taps x 8192 channels and 32 heads x 128 x 128 per layer, x 30. llama.cpp keeps both
  // in F32: 30 x 2,195,456 = 65,863,680 B; vLLM the taps in BF16 and, as the config's mamba_ssm_dtype
  // asks, the matrices in F32: 30 x (49,152 + 2,097,152) = 64,389,120 B.
  const KvTypes bf16{GgmlType::BF16, GgmlType::BF16};
  CHECK(recurrent_state_bytes(s, with_state_types(bf16, s, "llama.cpp")) == 65'863'680u);
  CHECK(recurrent_state_bytes(s, with_state_types(bf16, s, "vllm")) == 64'389'120u);
  // 397B-A17B: within 1% of the card's totals (its vision encoder is not counted here)
  const ModelSpec big = load_model("qwen3.5-397b-a17b");
  const ParameterCount q = parameter_count(big);
  CHECK(q.total / 1e9 == doctest::Approx(397.0).epsilon(0.01));
  CHECK(q.active / 1e9 == doctest::Approx(17.0).epsilon(0.03));
  // a wrapper without its text_config is refused, naming it
  CHECK_THROWS_WITH_AS(model_spec_from_hf_config(Json::parse(R"({"model_type": "qwen3_5_moe"})"), "m", "m.json"),
                       doctest::Contains("text_config"), InputError);
}

TEST_CASE("Llama 4 Scout and Maverick: chunked attention, experts with a shared one; 17B active (card)") {
  // Per layer, attention: q and o 5120 x 5120 = 26,214,400 each, k and v 5120 x 1024 = 5,242,880
  // each -> 62,914,560, two norms 10,240. An MoE layer: router 5120 x E; E experts and the shared one
  // of 3 x 5120 x 8192 = 125,829,120 each. Embeddings 2 x 202048 x 5120 = 2,068,971,520, output norm
  // 5120. Scout (16 experts every layer): 48 x 2,202,101,760 + 2,068,976,640 = 107,769,861,120 (card:
  // 109B with the vision encoder); active, one expert: 48 x 314,664,960 + 2,068,976,640 =
  // 17,172,894,720 (card: 17B). Maverick (128 experts in every other layer, a dense FFN of 3 x 5120 x
  // 16384 = 251,658,240 in the rest): 48 x 62,924,800 + 24 x 251,658,240 + 24 x (128 + 1) x
  // 125,829,120 + 24 x 655,360 + 2,068,976,640 = 400,711,848,960 (card: 400B); active 17,184,691,200.
  const ModelSpec scout = load_model("llama-4-scout");
  CHECK(scout.gguf_arch == "llama4");
  CHECK(scout.chunked_windows);
  CHECK(scout.sliding_window == 8192);
  CHECK(scout.window_layer_count() == 36);
  CHECK(scout.layer_window(3) == 0);  // the fourth layer, without RoPE, attends to everything
  CHECK(scout.moe_layer_count() == 48);
  CHECK(scout.rope_scaling.type == "llama3");  // high_freq_factor = low_freq_factor = 1: no band between
  CHECK(parameter_count(scout).total == 107'769'861'120ull);
  CHECK(parameter_count(scout).active == 17'172'894'720ull);
  const ModelSpec maverick = load_model("llama-4-maverick");
  CHECK(maverick.moe_layer_count() == 24);
  CHECK(!maverick.layer_is_moe(0));
  CHECK(maverick.layer_is_moe(1));
  CHECK(parameter_count(maverick).total == 400'711'848'960ull);
  CHECK(parameter_count(maverick).active == 17'184'691'200ull);
  // KV at 128K: 12 full layers hold every token, 36 a chunk: 2 x 8 x 128 x 2 B = 4096 B per layer-token
  // -> 4096 x (12 x 131072 + 36 x 8192) per request.
  const KvTypes bf16{GgmlType::BF16, GgmlType::BF16};
  CHECK(kv_bytes_for_context(scout, bf16, 131'072) == 4096ull * (12 * 131'072 + 36 * 8192));
  // the chunk key under an architecture without chunks is refused, naming it
  Json c = Json::parse(R"({"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2,
    "num_attention_heads": 2, "intermediate_size": 64, "vocab_size": 1000, "attention_chunk_size": 8192})");
  CHECK_THROWS_WITH_AS(model_spec_from_hf_config(c, "m", "m.json"), doctest::Contains("llama4_text"), InputError);
}

TEST_CASE("DeepSeek-V2-Lite: 15.7 B parameters, 2.4 B activated (model card), no q_lora") {
  // Per layer, attention: q 2048 x 16 x 192 = 6,291,456; kv_a_mqa 2048 x 576 = 1,179,648;
  // kv_a_norm 512; k_b and v_b 2,097,152; o 2048 x 2048 = 4,194,304 -> 13,763,072, + norms 4,096.
  // One dense FFN 3 x 2048 x 10944 = 67,239,936; 26 MoE layers: router 131,072 + 64 experts x
  // 3 x 2048 x 1408 = 553,648,128 + two shared (2816 wide) 17,301,504. Embeddings 2 x 102400 x
  // 2048, output norm 2,048: total 15,706,484,224. Active: 6 experts: 2,661,150,208; without the
  // input embedding 2,451,435,008 (card: 2.4 B).
  const ModelSpec s = load_model("deepseek-v2-lite");
  CHECK(s.q_lora_rank == 0);
  const ParameterCount p = parameter_count(s);
  CHECK(p.total == 15'706'484'224ull);
  CHECK(p.active == 2'661'150'208ull);
  CHECK((p.active - 102400ull * 2048) / 1e9 == doctest::Approx(2.4).epsilon(0.025));
  CHECK(kv_bytes_per_token(s, {GgmlType::BF16, GgmlType::BF16}) == 27ull * 576 * 2);
}

TEST_CASE("the models people deploy: totals and actives against their publishers' figures") {
  struct Expect {
    const char* name;
    double total, total_tol;  // billions; relative tolerance
    const char* source;
  };
  const Expect expected[] = {
      {"gpt-oss-20b", 20.91, 0.005, "OpenAI model card (arXiv 2508.10925) Table 1: 20.91B total"},
      {"gpt-oss-120b", 116.83, 0.005, "ibid.: 116.83B total"},
      {"gemma-3-27b", 27.016, 0.005, "Gemma 3 report Table 1: 1,416M embedding + 25,600M non-embedding (vision apart)"},
      {"gemma-2-9b", 9.242164736, 0.005, "Gemma 2 report Table 2: 917,962,752 + 8,324,201,984"},
      {"phi-4", 14.7, 0.005, "Hugging Face microsoft/phi-4: 14.7B params (safetensors)"},
      {"llama-3.3-70b", 70.553706496, 1e-9, "the Llama 3.1 70B safetensors total; 3.3 keeps the shape"},
      {"qwen3-30b-a3b", 30.5, 0.005, "Qwen3-30B-A3B card: 30.5B in total"},
      {"qwen2.5-72b", 72.7, 0.005, "Qwen2.5-72B-Instruct card: 72.7B"},
      {"mixtral-8x7b", 46.702792704, 1e-9, "Mixtral safetensors total"},
      {"deepseek-v3", 671.0, 0.005, "DeepSeek-V3 card: 671B total"},
  };
  for (const auto& e : expected) {
    CAPTURE(e.source);
    CHECK(parameter_count(load_model(e.name)).total / 1e9 == doctest::Approx(e.total).epsilon(e.total_tol));
  }
  // Active per token. OpenAI counts the unembedding but not the embedding as active ("Unembedding
  // parameters are counted towards active, but not embeddings"): active less token_embd.
  auto active_without_input_embedding = [](const char* name) {
    const ModelSpec s = load_model(name);
    return static_cast<double>(parameter_count(s).active - s.hidden * s.vocab) / 1e9;
  };
  CHECK(active_without_input_embedding("gpt-oss-20b") == doctest::Approx(3.61).epsilon(0.005));
  CHECK(active_without_input_embedding("gpt-oss-120b") == doctest::Approx(5.13).epsilon(0.005));
  // Gemma's non-embedding figures are exact.
  CHECK(parameter_count(load_model("gemma-2-9b")).non_embedding() == 8'324'201'984);
  CHECK(parameter_count(load_model("gemma-3-27b")).non_embedding() / 1e6 == doctest::Approx(25'600).epsilon(0.0001));
  // The smaller Gemma 3 models, the same table: 698 M, 3,209 M and 10,759 M non-embedding; their
  // windows 512 (1B) and 1024 tokens, 5 layers of every 6.
  const struct {
    const char* name;
    double non_embedding_m;
    uint64_t window;
  } gemma3[] = {{"gemma-3-1b", 698, 512}, {"gemma-3-4b", 3'209, 1024}, {"gemma-3-12b", 10'759, 1024}};
  for (const auto& g : gemma3) {
    CAPTURE(g.name);
    const ModelSpec s = load_model(g.name);
    CHECK(parameter_count(s).non_embedding() / 1e6 == doctest::Approx(g.non_embedding_m).epsilon(0.001));
    CHECK(s.sliding_window == g.window);
    CHECK(s.window_layer_count() == s.layers - s.layers / 6);
  }
  // Qwen truncates to one decimal: 30.53 B total reads 30.5B, 29.91 B non-embedding 29.9B, and
  // 3.35 B activated 3.3B.
  const ParameterCount q = parameter_count(load_model("qwen3-30b-a3b"));
  CHECK(std::floor(q.non_embedding() / 1e8) == 299);
  CHECK(std::floor(q.active / 1e8) == 33);
}

TEST_CASE("GPT-OSS-120B by hand: biases, sinks and 128 experts of 2880 (card: MLP 114.71B, attention 0.96B)") {
  const ModelSpec s = load_model("gpt-oss-120b");
  CHECK(s.gguf_arch == "gpt-oss");
  CHECK(s.attn_sinks);
  CHECK(s.experts == 128);
  CHECK(s.experts_active == 4);
  CHECK(s.moe_intermediate == 2880);
  // Attention per layer: q 2880 x 4096 + 4096, k and v 2880 x 512 + 512 each, o 4096 x 2880 +
  // 2880, 64 sinks, two norms of 2880 = 26,555,904.
  const uint64_t attention = 2880 * 4096 + 4096 + 2 * (2880 * 512 + 512) + 4096 * 2880 + 2880 + 64 + 2 * 2880;
  CHECK(attention == 26'555'904);
  // MLP per layer: router 2880 x 128 + 128; experts gate, up, down 3 x 2880 x 2880 x 128 and
  // their biases (2 x 2880 + 2880) x 128.
  const uint64_t router = 2880 * 128 + 128, experts = 3ull * 2880 * 2880 * 128 + 3 * 2880 * 128;
  const uint64_t embedding = 2ull * 2880 * 201088;  // token_embd and output, untied
  const ParameterCount p = parameter_count(s);
  CHECK(p.total == 36 * (attention + router + experts) + 2880 + embedding);
  CHECK(p.active == 36 * (attention + router + experts / 128 * 4) + 2880 + embedding);
  CHECK(36.0 * static_cast<double>(router + experts) / 1e9 == doctest::Approx(114.71).epsilon(0.0005));
  CHECK(36.0 * static_cast<double>(attention) / 1e9 == doctest::Approx(0.96).epsilon(0.005));
  // Even layers slide over 128 tokens, odd ones see everything.
  CHECK(s.window_layer_count() == 18);
  CHECK(s.layer_window(0) == 128);
  CHECK(s.layer_window(1) == 0);
}

TEST_CASE("sliding windows: where each architecture puts them") {
  const ModelSpec g2 = load_model("gemma-2-9b");  // every other layer, from layer 0
  CHECK(g2.window_layer_count() == 21);
  CHECK(g2.layer_window(0) == 4096);
  CHECK(g2.layer_window(1) == 0);
  CHECK(g2.attn_softcap == 50.0);
  CHECK(g2.final_softcap == 30.0);
  CHECK(g2.tied_embeddings);  // Gemma's default
  const ModelSpec g3 = load_model("gemma-3-27b");  // five of six: layers 5, 11, ... 59 full
  CHECK(g3.window_layer_count() == 52);
  CHECK(g3.layer_window(4) == 1024);
  CHECK(g3.layer_window(5) == 0);
  CHECK(g3.layer_window(59) == 0);
  CHECK(g3.layer_window(61) == 1024);
  CHECK(g3.max_context == 131072);  // Gemma 3's max_position_embeddings is already scaled (linear x 8)
  CHECK(load_model("mistral-7b-v0.1").window_layer_count() == 32);  // every layer
  CHECK(load_model("phi-4").window_layer_count() == 0);             // sliding_window null
  CHECK(load_model("qwen2.5-72b").window_layer_count() == 0);       // use_sliding_window false
  // Qwen2 with use_sliding_window: the layers from max_window_layers on.
  Json c = read_json_file("scenarios/models/qwen2.5-72b.json");
  c["use_sliding_window"] = true;
  c["sliding_window"] = 4096;
  const ModelSpec q = model_spec_from_hf_config(c, "q", "c.json");
  CHECK(q.window_layer_count() == 10);
  CHECK(q.layer_window(69) == 0);
  CHECK(q.layer_window(70) == 4096);
  // transformers' layer_types wins; an unknown layer type is refused by name.
  c["layer_types"] = Json::array();
  for (int l = 0; l < 80; ++l) c["layer_types"].push_back(l < 3 ? "sliding_attention" : "full_attention");
  CHECK(model_spec_from_hf_config(c, "q", "c.json").window_layer_count() == 3);
  c["layer_types"][5] = "chunked_attention";
  CHECK_THROWS_WITH_AS(model_spec_from_hf_config(c, "q", "c.json"),
                       doctest::Contains("'layer_types' holds \"chunked_attention\""), InputError);
  c["layer_types"].erase(5);
  CHECK_THROWS_WITH_AS(model_spec_from_hf_config(c, "q", "c.json"), doctest::Contains("one type per layer (80 layers)"),
                       InputError);
  // A Gemma 3 pattern key under a model_type that does not read it is refused.
  Json m = read_json_file("scenarios/models/mistral-7b-v0.1.json");
  m["sliding_window_pattern"] = 6;
  CHECK_THROWS_WITH_AS(model_spec_from_hf_config(m, "m", "c.json"),
                       doctest::Contains("'sliding_window_pattern' (alternating sliding-window layers (Gemma 3))"),
                       InputError);
}

TEST_CASE("Gemma 3's multimodal config: the language model is its text_config") {
  Json text = read_json_file("scenarios/models/gemma-3-27b.json");
  Json wrapper = {{"model_type", "gemma3"}, {"text_config", text}};
  const ModelSpec s = model_spec_from_hf_config(wrapper, "g", "w.json");
  CHECK(s.gguf_arch == "gemma3");
  CHECK(parameter_count(s).total == parameter_count(load_model("gemma-3-27b")).total);
  CHECK_THROWS_WITH_AS(model_spec_from_hf_config(Json{{"model_type", "gemma3"}}, "g", "w.json"),
                       doctest::Contains("text_config"), InputError);
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

TEST_CASE("shape fields beyond their bounds are refused, naming the field (no division by zero, no wrap)") {
  const Json c = {{"model_type", "qwen3"}, {"hidden_size", 1024}, {"num_hidden_layers", 2},
                  {"num_attention_heads", 16}, {"num_key_value_heads", 8}, {"intermediate_size", 3072},
                  {"vocab_size", 1000}};
  auto error_with = [&](const char* key, const Json& value) {
    Json bad = c;
    bad[key] = value;
    try {
      model_spec_from_hf_config(bad, "t", "c.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // Each value crashed, hung or wrapped before: head_dim 0 divided by zero; 2^40 wrapped the KV
  // bytes into a fit; vocab 2^62 gave 0 embedding parameters; 1e9 layers built 1e10 tensors.
  CHECK(error_with("head_dim", 0) == "c.json: field 'head_dim' is 0; expected 2 to 4096");
  CHECK(error_with("head_dim", uint64_t{1} << 40) == "c.json: field 'head_dim' is 1099511627776; expected 2 to 4096");
  CHECK(error_with("head_dim", 63) == "c.json: field 'head_dim' is 63; expected an even number (RoPE rotates pairs)");
  CHECK(error_with("hidden_size", uint64_t{1} << 63) ==
        "c.json: field 'hidden_size' is 9223372036854775808; expected 1 to 131072");
  CHECK(error_with("vocab_size", uint64_t{1} << 62) ==
        "c.json: field 'vocab_size' is 4611686018427387904; expected 1 to 16777216");
  CHECK(error_with("num_hidden_layers", 1000000000) ==
        "c.json: field 'num_hidden_layers' is 1000000000; expected 1 to 4096");
  CHECK(error_with("max_position_embeddings", uint64_t{1} << 30) ==
        "c.json: field 'max_position_embeddings' is 1073741824; expected 0 to 16777216");
  CHECK(error_with("rope_theta", 0) == "c.json: field 'rope_theta' is 0; expected a number above 0 and at most 1000000000000");
  // without head_dim the derived value is named with where it came from (1024 / 1024 = 1)
  CHECK(error_with("num_attention_heads", 1024).find("head_dim (hidden_size / num_attention_heads") != std::string::npos);
  // every field in range, the product not: 131072 wide x 4096 layers of 2^20 FFN is 3.4e15 parameters
  Json big = c;
  big["hidden_size"] = 131072;
  big["num_hidden_layers"] = 4096;
  big["intermediate_size"] = 1 << 20;
  big["num_attention_heads"] = 1024;
  big["num_key_value_heads"] = 1024;
  CHECK_THROWS_WITH_AS(model_spec_from_hf_config(big, "t", "c.json"),
                       doctest::Contains("parameters; at most 1.76e+13 (2^44)"), InputError);
  // the largest built-in passes (235 B parameters, 94 layers, 128 experts)
  CHECK(parameter_count(load_model("qwen3-235b-a22b")).total > 235'000'000'000ULL);
}

TEST_CASE("active parameters as the cards count them: GPT-OSS without the input embedding's lookup") {
  // OpenAI's model card: gpt-oss-120b 5.1B active of 117B, gpt-oss-20b 3.6B of 21B, not counting
  // the embedding (a row looked up per token); Qwen's cards count it (Qwen3-30B-A3B: 3.3B activated).
  const ParameterCount big = parameter_count(load_model("gpt-oss-120b"));
  CHECK(big.active_without_lookup(false) / 1e9 == doctest::Approx(5.1).epsilon(0.02));
  CHECK(big.active - big.active_without_lookup(false) == 201088ull * 2880);  // vocab x hidden
  CHECK(parameter_count(load_model("gpt-oss-20b")).active_without_lookup(false) / 1e9 == doctest::Approx(3.6).epsilon(0.02));
  CHECK(parameter_count(load_model("qwen3-30b-a3b")).active / 1e9 == doctest::Approx(3.3).epsilon(0.02));
  // tied embeddings: the input embedding is also the output head, a product: nothing to leave out
  const ParameterCount tied = parameter_count(load_model("qwen3-0.6b"));
  CHECK(tied.active_without_lookup(true) == tied.active);
}

TEST_CASE("the models of late 2026: parameters as their cards give them") {
  struct Card {
    const char* model;
    double total_b, non_embedding_b;  // the card's figures in billions (0: the card gives none)
    double within;                    // the card's rounding
  };
  // Qwen's cards (huggingface.co/Qwen/...): 32.8B / 31.2B non-embedding, 14.8B / 13.2B, 1.7B / 1.4B;
  // Meta's Llama 3.2 cards: 1.23B and 3.21B; Qwen3-Coder-30B-A3B: 30.5B; Mistral Small 3.1: 24B
  // (the text model here, without its vision encoder).
  for (const Card& c : {Card{"qwen3-32b", 32.8, 31.2, 0.005}, Card{"qwen3-14b", 14.8, 13.2, 0.005},
                        Card{"qwen3-1.7b", 1.7, 1.4, 0.02}, Card{"llama-3.2-1b", 1.23, 0, 0.005},
                        Card{"llama-3.2-3b", 3.21, 0, 0.005}, Card{"qwen3-coder-30b-a3b", 30.5, 0, 0.005},
                        Card{"mistral-small-3.1-24b", 24, 0, 0.02}}) {
    CAPTURE(c.model);
    const ParameterCount p = parameter_count(load_model(c.model));
    CHECK(p.total / 1e9 == doctest::Approx(c.total_b).epsilon(c.within).scale(0));
    if (c.non_embedding_b > 0)
      CHECK(p.non_embedding() / 1e9 == doctest::Approx(c.non_embedding_b).epsilon(c.within).scale(0));
  }
  // Qwen3-Coder-30B-A3B: 3.3B activated (Qwen counts the input embedding)
  CHECK(parameter_count(load_model("qwen3-coder-30b-a3b")).active / 1e9 == doctest::Approx(3.3).epsilon(0.02));
}
