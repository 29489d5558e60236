// llama.cpp's per-tensor recipes: the seed's Qwen3-235B-A22B Q2_K figures (SPEC 1) to the byte
// from a pencil sum, and each rule (output head, attn_v by GQA and layer, ffn_down by layer,
// attn_output, 8 experts, 70B, shape fallbacks) on a model where it fires.
#include <doctest/doctest.h>

#include <map>

#include "planner/catalog/catalog.hpp"
#include "planner/weights/gguf_recipe.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/units.hpp"
#include "planner/weights/weights_size.hpp"

using namespace infer_plan;

namespace {

GgmlType type_of(const WeightsLayout& w, const std::string& name) {
  for (const auto& p : w.tensors)
    if (p.tensor.name == name) return p.type;
  FAIL("no tensor " << name);
  return GgmlType::F32;
}

std::map<GgmlType, int> histogram(const WeightsLayout& w, TensorRole role) {
  std::map<GgmlType, int> h;
  for (const auto& p : w.tensors)
    if (p.tensor.role == role) ++h[p.type];
  return h;
}

WeightsLayout recipe(const ModelSpec& s, std::string_view ftype) {
  return recipe_weights_layout(s, find_llama_file_type(ftype).value().ftype);
}

// A small dense model whose widths a test can choose (row lengths decide the fallbacks).
ModelSpec toy(uint64_t hidden, uint64_t layers = 8) {
  ModelSpec s;
  s.name = "toy";
  s.gguf_arch = "llama";
  s.hidden = hidden;
  s.layers = layers;
  s.heads = 8;
  s.kv_heads = 2;
  s.head_dim = hidden / 8;
  s.intermediate = 4 * hidden;
  s.vocab = 1000;
  return s;
}

}  // namespace

TEST_CASE("SPEC 1: Qwen3-235B-A22B Q2_K, tensor by tensor") {
  const WeightsLayout w = recipe(load_model("qwen3-235b-a22b"), "Q2_K");
  CHECK(w.file_type == "Q2_K");
  CHECK(type_of(w, "token_embd.weight") == GgmlType::Q2_K);      // untied: no rule
  CHECK(type_of(w, "output.weight") == GgmlType::Q6_K);          // output head
  CHECK(type_of(w, "blk.0.attn_q.weight") == GgmlType::Q2_K);
  CHECK(type_of(w, "blk.0.attn_k.weight") == GgmlType::Q2_K);
  CHECK(type_of(w, "blk.0.attn_v.weight") == GgmlType::Q4_K);    // GQA 64/4 = 16 >= 4
  CHECK(type_of(w, "blk.0.attn_output.weight") == GgmlType::Q3_K);
  CHECK(type_of(w, "blk.93.ffn_gate_exps.weight") == GgmlType::Q2_K);
  CHECK(type_of(w, "blk.93.ffn_up_exps.weight") == GgmlType::Q2_K);
  CHECK(type_of(w, "blk.93.ffn_down_exps.weight") == GgmlType::Q3_K);
  CHECK(type_of(w, "blk.93.ffn_gate_inp.weight") == GgmlType::F32);  // the router: never
  CHECK(type_of(w, "blk.93.attn_k_norm.weight") == GgmlType::F32);
  CHECK(w.fallback_tensors == 0);

  // Pencil, per layer: attn_q 4096x8192 Q2_K 11,010,048 B; attn_k 4096x512 Q2_K 688,128;
  // attn_v Q4_K 1,179,648; attn_output Q3_K 14,417,920; gate/up_exps 4096x1536x128 Q2_K
  // 264,241,152 each; down_exps Q3_K 346,030,080; router F32 2,097,152; norms 33,792
  // = 903,939,072 x 94 layers = 84,970,272,768; + token_embd Q2_K 204,201,984
  // + output Q6_K 510,504,960 + output_norm 16,384 = 85,684,996,096 B.
  const WeightsSize s = weights_size(w);
  CHECK(s.bytes == 85'684'996'096ull);
  // Metadata: Q2_K 606,918,656 blocks x 20 + Q3_K 308,019,200 x 14 + Q4_K 770,048 x 16
  // + Q6_K 2,430,976 x 18 = 16,506,720,256 B.
  CHECK(s.meta_bytes == 16'506'720'256ull);
  CHECK(s.code_bytes + s.meta_bytes == s.bytes);
  // The seed's figures from the real file, each within 0.5%.
  CHECK(to_gib(s.code_bytes) == doctest::Approx(64.43).epsilon(0.005));
  CHECK(to_gib(s.meta_bytes) == doctest::Approx(15.37).epsilon(0.005));
  CHECK(to_gib(s.code_bytes) == doctest::Approx(64.43).epsilon(0.0002));  // in fact 64.427
  CHECK(to_gib(s.meta_bytes) == doctest::Approx(15.37).epsilon(0.0002));  // in fact 15.373
}

TEST_CASE("Q4_K_M: attn_v and ffn_down get Q6_K in the layers use_more_bits picks") {
  const WeightsLayout w = recipe(load_model("qwen3-8b"), "Q4_K_M");
  // 36 layers: first eighth 0-3, last eighth from 7*36/8 = 31, and between them every layer
  // with (l - 4) % 3 == 2: 6, 9, ..., 30 (9 layers) -> 4 + 5 + 9 = 18 layers at Q6_K.
  CHECK(type_of(w, "blk.3.attn_v.weight") == GgmlType::Q6_K);
  CHECK(type_of(w, "blk.4.attn_v.weight") == GgmlType::Q4_K);
  CHECK(type_of(w, "blk.6.attn_v.weight") == GgmlType::Q6_K);
  CHECK(type_of(w, "blk.30.attn_v.weight") == GgmlType::Q6_K);
  CHECK(type_of(w, "blk.31.attn_v.weight") == GgmlType::Q6_K);
  CHECK(histogram(w, TensorRole::attn_v) == std::map<GgmlType, int>{{GgmlType::Q4_K, 18}, {GgmlType::Q6_K, 18}});
  CHECK(histogram(w, TensorRole::ffn_down) == std::map<GgmlType, int>{{GgmlType::Q4_K, 18}, {GgmlType::Q6_K, 18}});
  CHECK(type_of(w, "blk.0.attn_output.weight") == GgmlType::Q4_K);
  CHECK(type_of(w, "output.weight") == GgmlType::Q6_K);
  CHECK(type_of(w, "token_embd.weight") == GgmlType::Q4_K);
}

TEST_CASE("Q3_K_M, Q3_K_L, Q4_K_S, Q5_K_M layer rules") {
  const ModelSpec s = load_model("qwen3-8b");  // 36 layers: 36/16 = 2, 36/8 = 4
  const WeightsLayout m = recipe(s, "Q3_K_M");
  CHECK(histogram(m, TensorRole::attn_v) == std::map<GgmlType, int>{{GgmlType::Q4_K, 34}, {GgmlType::Q5_K, 2}});
  CHECK(histogram(m, TensorRole::ffn_down) == std::map<GgmlType, int>{{GgmlType::Q4_K, 34}, {GgmlType::Q5_K, 2}});
  CHECK(type_of(m, "blk.9.attn_output.weight") == GgmlType::Q4_K);
  CHECK(type_of(m, "blk.9.attn_q.weight") == GgmlType::Q3_K);
  const WeightsLayout l = recipe(s, "Q3_K_L");
  CHECK(histogram(l, TensorRole::attn_v) == std::map<GgmlType, int>{{GgmlType::Q5_K, 36}});
  CHECK(type_of(l, "blk.9.attn_output.weight") == GgmlType::Q5_K);
  const WeightsLayout ks = recipe(s, "Q4_K_S");
  CHECK(histogram(ks, TensorRole::attn_v) == std::map<GgmlType, int>{{GgmlType::Q4_K, 32}, {GgmlType::Q5_K, 4}});
  CHECK(histogram(ks, TensorRole::ffn_down) == std::map<GgmlType, int>{{GgmlType::Q4_K, 32}, {GgmlType::Q5_K, 4}});
  const WeightsLayout q3s = recipe(s, "Q3_K_S");  // no rule but the output head
  CHECK(histogram(q3s, TensorRole::attn_v) == std::map<GgmlType, int>{{GgmlType::Q3_K, 36}});
  CHECK(type_of(q3s, "output.weight") == GgmlType::Q6_K);
  const WeightsLayout k5 = recipe(s, "Q5_K_M");
  CHECK(histogram(k5, TensorRole::ffn_down) == std::map<GgmlType, int>{{GgmlType::Q5_K, 18}, {GgmlType::Q6_K, 18}});
}

TEST_CASE("output head: Q6_K, except in Q8_0 files; tied embeddings follow it") {
  const ModelSpec tied = load_model("qwen3-0.6b");
  CHECK(type_of(recipe(tied, "Q4_K_M"), "token_embd.weight") == GgmlType::Q6_K);
  CHECK(type_of(recipe(tied, "Q4_0"), "token_embd.weight") == GgmlType::Q6_K);
  CHECK(type_of(recipe(tied, "Q8_0"), "token_embd.weight") == GgmlType::Q8_0);
  CHECK(type_of(recipe(tied, "F16"), "token_embd.weight") == GgmlType::F16);  // not quantized: no rules
  const WeightsLayout q40 = recipe(load_model("qwen3-8b"), "Q4_0");
  CHECK(type_of(q40, "output.weight") == GgmlType::Q6_K);
  CHECK(type_of(q40, "token_embd.weight") == GgmlType::Q4_0);
  CHECK(type_of(q40, "blk.0.attn_v.weight") == GgmlType::Q4_0);
  // Q8_0 and Q6_K files: the same as one type throughout
  const ModelSpec s = load_model("qwen3-8b");
  CHECK(weights_size(recipe(s, "Q8_0")).bytes == uniform_weights_size(s, "Q8_0").bytes);
  CHECK(weights_size(recipe(s, "Q6_K")).bytes == uniform_weights_size(s, "Q6_K").bytes);
  CHECK(weights_size(recipe(s, "BF16")).bytes == uniform_weights_size(s, "BF16").bytes);
}

TEST_CASE("Q2_K attn_v by GQA ratio; the 70B class; 8 experts") {
  // Llama-2-7B is MHA (GQA ratio 1): attn_v gets Q3_K, not Q4_K.
  CHECK(type_of(recipe(load_model("llama-2-7b"), "Q2_K"), "blk.0.attn_v.weight") == GgmlType::Q3_K);
  // Llama-3.1-70B (80 layers, GQA): attn_v Q3_K/Q4_K is raised to Q5_K.
  const ModelSpec l70 = load_model("llama-3.1-70b");
  CHECK(histogram(recipe(l70, "Q3_K_S"), TensorRole::attn_v) == std::map<GgmlType, int>{{GgmlType::Q5_K, 80}});
  CHECK(histogram(recipe(l70, "Q4_K_M"), TensorRole::attn_v) ==
        std::map<GgmlType, int>{{GgmlType::Q5_K, 40}, {GgmlType::Q6_K, 40}});  // 10+10+20 use_more_bits
  CHECK(histogram(recipe(load_model("llama-3.1-8b"), "Q3_K_S"), TensorRole::attn_v) ==
        std::map<GgmlType, int>{{GgmlType::Q3_K, 32}});
  // Mixtral-like: 8 experts.
  ModelSpec moe = toy(1024);
  moe.experts = 8;
  moe.experts_active = 2;
  moe.moe_intermediate = 2048;
  const WeightsLayout w = recipe(moe, "Q4_K_M");
  CHECK(type_of(w, "blk.0.attn_v.weight") == GgmlType::Q8_0);
  CHECK(type_of(w, "blk.0.attn_k.weight") == GgmlType::Q8_0);
  CHECK(type_of(w, "blk.0.attn_output.weight") == GgmlType::Q5_K);
  CHECK(type_of(w, "blk.0.ffn_down_exps.weight") == GgmlType::Q6_K);  // layer 0 < 8/8
  CHECK(type_of(w, "blk.1.ffn_down_exps.weight") == GgmlType::Q4_K);  // (1 - 1) % 3 = 0
  CHECK(type_of(w, "blk.0.ffn_gate_inp.weight") == GgmlType::F32);
}

TEST_CASE("rows that are not whole blocks fall back as llama.cpp does") {
  // hidden 2880: 2880 % 256 = 64, 2880 % 32 = 0
  const ModelSpec s = toy(2880);
  const WeightsLayout km = recipe(s, "Q4_K_M");
  CHECK(type_of(km, "blk.1.attn_q.weight") == GgmlType::Q5_0);   // Q4_K -> Q5_0
  CHECK(type_of(km, "output.weight") == GgmlType::Q8_0);         // head: Q8_0 when not 256-divisible
  CHECK(type_of(km, "blk.0.ffn_down.weight") == GgmlType::Q6_K); // row 11520 = 45 x 256: fine
  CHECK(type_of(recipe(s, "Q2_K"), "blk.1.attn_q.weight") == GgmlType::Q4_0);
  CHECK(type_of(recipe(s, "Q5_K_S"), "blk.1.attn_q.weight") == GgmlType::Q5_1);
  CHECK(km.fallback_tensors > 0);
  // hidden 1000: not even 32-divisible -> F16 for a K-quant matrix; the output head is sent to
  // Q8_0, which has no fallback: llama-quantize refuses such a model, and so do we.
  ModelSpec odd_ffn = toy(2048);
  odd_ffn.intermediate = 1000;  // ffn_down's rows: 1000 % 32 = 8, so Q4_K -> Q5_0 -> F16
  CHECK(type_of(recipe(odd_ffn, "Q4_K_S"), "blk.5.ffn_down.weight") == GgmlType::F16);
  CHECK(type_of(recipe(odd_ffn, "IQ4_XS"), "blk.5.ffn_down.weight") == GgmlType::F16);  // IQ4_XS -> IQ4_NL -> F16
  const ModelSpec odd = toy(1000);
  CHECK_THROWS_WITH_AS(recipe(odd, "Q4_K_M"), doctest::Contains("output.weight: row length 1000"), InputError);
  CHECK_THROWS_WITH_AS(recipe(odd, "Q8_0"), doctest::Contains("no fallback"), InputError);
}

TEST_CASE("file type names") {
  CHECK(find_llama_file_type("q4_k_m").value().ftype == LlamaFileType::Q4_K_M);
  CHECK(static_cast<uint32_t>(find_llama_file_type("Q4_K_M")->ftype) == 15);  // general.file_type
  CHECK(find_llama_file_type("Q2_K")->default_type == GgmlType::Q2_K);
  CHECK(!find_llama_file_type("Q4_K").has_value());  // a GGML type, not a file type
  CHECK(llama_file_type_names().find("Q5_K_M") != std::string::npos);
}

TEST_CASE("plan_weights: file types use recipes, other GGML types stay uniform") {
  const ModelSpec s = load_model("qwen3-8b");
  CHECK(plan_weights(s, "Q4_K_M", std::nullopt).label == "Q4_K_M");
  CHECK(plan_weights(s, "Q4_K", std::nullopt).label == "Q4_K (uniform)");
  CHECK(plan_weights(s, "q4_0", std::nullopt).bytes > uniform_weights_size(s, "Q4_0").bytes);  // head at Q6_K
  CHECK_THROWS_WITH_AS(plan_weights(s, "Q7_X", std::nullopt), doctest::Contains("Q4_K_M"), InputError);
}
