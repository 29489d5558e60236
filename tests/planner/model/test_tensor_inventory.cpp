// Tensor names and shapes as llama.cpp's converter writes them (GGUF order, ne[0] first).
#include <doctest/doctest.h>

#include <algorithm>

#include "planner/catalog/catalog.hpp"
#include "planner/model/tensor_inventory.hpp"

using namespace infer_plan;

namespace {
const TensorInfo* find(const std::vector<TensorInfo>& v, std::string_view name) {
  auto it = std::find_if(v.begin(), v.end(), [&](const TensorInfo& t) { return t.name == name; });
  return it == v.end() ? nullptr : &*it;
}
}  // namespace

TEST_CASE("Qwen3-8B: 36 blocks of 11 tensors + 3 globals") {
  const auto inv = tensor_inventory(load_model("qwen3-8b"));
  CHECK(inv.size() == 36 * 11 + 3);
  const TensorInfo* q = find(inv, "blk.0.attn_q.weight");
  REQUIRE(q);
  CHECK(q->shape == std::vector<uint64_t>{4096, 4096});
  REQUIRE(find(inv, "blk.35.attn_k.weight"));
  CHECK(find(inv, "blk.35.attn_k.weight")->shape == std::vector<uint64_t>{4096, 1024});
  CHECK(find(inv, "blk.7.ffn_down.weight")->shape == std::vector<uint64_t>{12288, 4096});
  CHECK(find(inv, "blk.7.attn_k_norm.weight")->shape == std::vector<uint64_t>{128});
  CHECK(find(inv, "output.weight")->shape == std::vector<uint64_t>{4096, 151936});
  CHECK(find(inv, "token_embd.weight"));
  CHECK_FALSE(find(inv, "blk.36.attn_q.weight"));
}

TEST_CASE("Qwen3-235B-A22B: stacked experts and the router") {
  const auto inv = tensor_inventory(load_model("qwen3-235b-a22b"));
  const TensorInfo* gate = find(inv, "blk.0.ffn_gate_exps.weight");
  REQUIRE(gate);
  CHECK(gate->shape == std::vector<uint64_t>{4096, 1536, 128});
  CHECK(gate->is_expert());
  CHECK(find(inv, "blk.93.ffn_down_exps.weight")->shape == std::vector<uint64_t>{1536, 4096, 128});
  CHECK(find(inv, "blk.0.ffn_gate_inp.weight")->shape == std::vector<uint64_t>{4096, 128});
  CHECK(find(inv, "blk.0.attn_q.weight")->shape == std::vector<uint64_t>{4096, 8192});
  CHECK(find(inv, "blk.0.attn_output.weight")->shape == std::vector<uint64_t>{8192, 4096});
  CHECK_FALSE(find(inv, "blk.0.ffn_gate.weight"));
}

TEST_CASE("tied embeddings, biases, rope_freqs") {
  CHECK_FALSE(find(tensor_inventory(load_model("qwen3-0.6b")), "output.weight"));
  const auto qwen2 = tensor_inventory(load_model("qwen2.5-7b"));
  CHECK(find(qwen2, "blk.0.attn_k.bias")->shape == std::vector<uint64_t>{512});
  const auto llama = tensor_inventory(load_model("llama-3.1-8b"));
  CHECK(find(llama, "rope_freqs.weight")->shape == std::vector<uint64_t>{64});
  CHECK_FALSE(find(llama, "blk.0.attn_q_norm.weight"));
}

TEST_CASE("Gemma, GPT-OSS and Phi tensors as llama.cpp names them") {
  const auto g = tensor_inventory(load_model("gemma-3-27b"));
  for (const char* n : {"blk.0.post_attention_norm.weight", "blk.0.ffn_norm.weight", "blk.0.post_ffw_norm.weight",
                        "blk.0.attn_q_norm.weight"})
    CHECK(find(g, n));
  CHECK(!find(g, "output.weight"));  // tied to token_embd
  const auto o = tensor_inventory(load_model("gpt-oss-20b"));
  CHECK(find(o, "blk.3.attn_sinks.weight")->shape == std::vector<uint64_t>{64});
  CHECK(find(o, "blk.3.attn_output.bias")->shape == std::vector<uint64_t>{2880});
  CHECK(find(o, "blk.3.ffn_gate_inp.bias")->shape == std::vector<uint64_t>{32});
  CHECK(find(o, "blk.3.ffn_down_exps.bias")->shape == std::vector<uint64_t>{2880, 32});
  CHECK(find(o, "blk.3.ffn_down_exps.bias")->kept_f32());  // a bias, 2-D or not
  CHECK(find(o, "blk.3.ffn_down_exps.bias")->is_expert());
  CHECK(find(o, "blk.3.post_attention_norm.weight"));  // GPT-OSS's pre-FFN norm
  CHECK(!find(o, "blk.3.ffn_norm.weight"));
  const auto p = tensor_inventory(load_model("phi-4"));
  CHECK(find(p, "blk.0.attn_qkv.weight")->shape == std::vector<uint64_t>{5120, 5120 + 2 * 1280});
  CHECK(find(p, "blk.0.ffn_up.weight")->shape == std::vector<uint64_t>{5120, 2 * 17920});
  CHECK(!find(p, "blk.0.ffn_gate.weight"));
  CHECK(!find(p, "blk.0.attn_q.weight"));
}
