// GGUF reader and writer: round trips for every tensor type and every metadata value type, a
// model spec written and read back, and the bad-file suite (each corruption at a byte offset
// worked out by hand below must give an InputError naming the field; never a crash).
#include <doctest/doctest.h>
#include "planner/cost/kv_cache.hpp"
#include "planner/catalog/catalog.hpp"
#include "planner/model/model_scale.hpp"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <fmt/format.h>
#include <random>

#include "planner/weights/gguf_reader.hpp"
#include "planner/weights/gguf_recipe.hpp"
#include "planner/weights/gguf_writer.hpp"
#include "planner/core/input_error.hpp"
#include "planner/model/tensor_inventory.hpp"
#include "tests/support/toy_gguf.hpp"

using namespace infer_plan;

namespace {

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / "infer_plan_test_gguf";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

std::vector<uint8_t> seeded_bytes(uint64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

template <class T>
void patch(std::vector<uint8_t>& b, size_t at, T v) { std::memcpy(b.data() + at, &v, sizeof v); }

// The hand-laid small file: KV "a" = u32 7; tensors t0, t1: F32 {8, 2} (64 B each).
// Offsets: 0 magic, 4 version, 8 tensor count, 16 KV count, 24 key length, 32 'a', 33 value
// type, 37 value; t0: 41 name length, 49 name, 51 n_dims, 55 dims, 71 type, 75 offset;
// t1: 83 name length, 91 name, 93 n_dims, 97 dims, 113 type, 117 offset; header ends at 125,
// data at 128 (t0 at +0, t1 at +64); file 256 B.
std::vector<uint8_t> small_file() {
  const std::string path = temp_path("small.gguf");
  write_gguf(path, {{"a", GgufValue::of_u32(7)}},
             {{"t0", {8, 2}, GgmlType::F32, seeded_bytes(64, 1)}, {"t1", {8, 2}, GgmlType::F32, seeded_bytes(64, 2)}});
  return file_bytes(path);
}

std::string read_error(const std::vector<uint8_t>& b) {
  const std::string path = temp_path("bad.gguf");
  write_bytes(path, b);
  try {
    read_gguf_file(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// A GGUF of `spec` with the layout's tensors filled with seeded bytes, at temp_path(file).
std::string write_spec_gguf(const ModelSpec& spec, const WeightsLayout& layout, const std::string& file,
                            uint32_t seed) {
  std::vector<GgufTensorData> tensors;
  for (const TensorPlacement& p : layout.tensors)
    tensors.push_back({p.tensor.name, p.tensor.shape, p.type, seeded_bytes(p.bytes, ++seed)});
  const std::string path = temp_path(file);
  write_gguf(path, gguf_metadata_for(spec), tensors);
  return path;
}

}  // namespace

TEST_CASE("the hand-laid small file reads back at the offsets worked out above") {
  const std::vector<uint8_t> b = small_file();
  REQUIRE(b.size() == 256);
  const std::string path = temp_path("small_ok.gguf");
  write_bytes(path, b);
  const GgufModel m = read_gguf_file(path);
  CHECK(m.version == 3);
  CHECK(m.header_bytes[0] == 125);
  CHECK(m.data_offset[0] == 128);
  CHECK(m.tensors[1].offset == 64);
  CHECK(read_gguf_tensor_data(m, 1) == seeded_bytes(64, 2));
}

TEST_CASE("round trip: every tensor type, every metadata value type") {
  std::vector<GgufTensorData> tensors;
  uint32_t seed = 10;
  for (const GgmlTypeInfo& t : ggml_types()) {
    if (t.type == GgmlType::Q8_K || !t.gguf) continue;  // activations only, or a checkpoint format: not in files
    const std::vector<uint64_t> shape{256, 3};
    tensors.push_back({fmt::format("w.{}", t.name), shape, t.type, seeded_bytes(3 * 256 / t.block_values * t.block_bytes, ++seed)});
  }
  GgufValue nested = GgufValue::of_strings({});
  nested.element_type = GgufType::array;
  nested.count = 2;
  nested.strings.clear();
  nested.nested = {GgufValue::of_i32s({1, 2}), GgufValue::of_strings({"x", ""})};
  GgufValue u8; u8.type = GgufType::u8; u8.u64 = 255;
  GgufValue i16; i16.type = GgufType::i16; i16.i64 = -300;
  GgufValue f64; f64.type = GgufType::f64; f64.f64 = 0.1;
  GgufValue i64; i64.type = GgufType::i64; i64.i64 = -(int64_t{1} << 40);
  const std::vector<GgufKeyValue> kv{
      {"general.alignment", GgufValue::of_u32(64)}, {"k.u8", u8}, {"k.i16", i16},
      {"k.u64", GgufValue::of_u64(uint64_t{1} << 40)}, {"k.i64", i64}, {"k.f32", GgufValue::of_f32(1.5f)},
      {"k.f64", f64}, {"k.bool", GgufValue::of_bool(true)}, {"k.str", GgufValue::of_string("héllo")},
      {"k.tokens", GgufValue::of_strings({"a", "bc", ""})}, {"k.ids", GgufValue::of_i32s({-1, 0, 7})},
      {"k.nested", nested}};
  for (uint32_t version : {2u, 3u}) {
    CAPTURE(version);
    const std::string path = temp_path(fmt::format("roundtrip_v{}.gguf", version));
    write_gguf(path, kv, tensors, version);
    const GgufModel m = read_gguf_file(path);
    CHECK(m.version == version);
    CHECK(m.alignment == 64);
    REQUIRE(m.tensors.size() == tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      CAPTURE(tensors[i].name);
      CHECK(m.tensors[i].name == tensors[i].name);
      CHECK(m.tensors[i].type == tensors[i].type);
      CHECK(m.tensors[i].shape == tensors[i].shape);
      CHECK(m.tensors[i].offset % 64 == 0);
      CHECK(read_gguf_tensor_data(m, i) == tensors[i].data);  // every byte back
    }
    REQUIRE(m.metadata.size() == kv.size());
    CHECK(m.find("k.u8")->u64 == 255);
    CHECK(m.find("k.i16")->i64 == -300);
    CHECK(m.find("k.u64")->u64 == uint64_t{1} << 40);
    CHECK(m.find("k.i64")->i64 == -(int64_t{1} << 40));
    CHECK(m.find("k.f32")->f64 == 1.5);
    CHECK(m.find("k.f64")->f64 == 0.1);
    CHECK(m.find("k.bool")->u64 == 1);
    CHECK(m.find("k.str")->str == "héllo");
    CHECK(m.find("k.tokens")->strings == std::vector<std::string>{"a", "bc", ""});
    CHECK(m.find("k.ids")->raw == GgufValue::of_i32s({-1, 0, 7}).raw);
    CHECK(m.find("k.nested")->nested.at(1).strings == std::vector<std::string>{"x", ""});
    // the measured sizes add up to the file
    const GgufFileSize g = gguf_file_size_of(m);
    CHECK(g.file_bytes == std::filesystem::file_size(path));
    CHECK(g.file_bytes == g.header_bytes + g.padding_bytes + g.tensor_data_bytes);
  }
}

TEST_CASE("a model written from a spec and a recipe reads back as the same spec and layout") {
  ModelSpec s;
  s.name = "toy";
  s.model_type = "qwen3_moe";
  s.gguf_arch = "qwen3moe";
  s.hidden = 256; s.layers = 3; s.heads = 4; s.kv_heads = 2; s.head_dim = 64; s.intermediate = 512;
  s.vocab = 64; s.qk_norm = true; s.experts = 4; s.experts_active = 2; s.moe_intermediate = 256;
  s.max_context = 4096; s.rope_theta = 1e6;
  const WeightsLayout recipe = recipe_weights_layout(s, LlamaFileType::Q4_K_M);
  const std::string path = write_spec_gguf(s, recipe, "toy-moe.gguf", 100);

  const GgufModel m = read_gguf_model(path);
  const ModelSpec r = model_spec_from_gguf(m);
  CHECK(r.gguf_arch == "qwen3moe");
  CHECK(r.model_type == "qwen3_moe");
  CHECK(r.hidden == 256); CHECK(r.layers == 3); CHECK(r.heads == 4); CHECK(r.kv_heads == 2);
  CHECK(r.head_dim == 64); CHECK(r.vocab == 64); CHECK(r.qk_norm); CHECK(!r.tied_embeddings);
  CHECK(r.experts == 4); CHECK(r.experts_active == 2); CHECK(r.moe_intermediate == 256);
  CHECK(r.mlp_only_layers.empty());
  CHECK(r.rope_theta == 1e6);
  const WeightsLayout back = gguf_weights_layout(m);
  REQUIRE(back.tensors.size() == recipe.tensors.size());
  for (size_t i = 0; i < back.tensors.size(); ++i) {
    CHECK(back.tensors[i].type == recipe.tensors[i].type);
    CHECK(back.tensors[i].tensor.role == recipe.tensors[i].tensor.role);
    CHECK(back.tensors[i].bytes == recipe.tensors[i].bytes);
  }
  CHECK(weights_size(back).bytes == weights_size(recipe).bytes);
  // the recipe applied to the spec read back gives the file's types again
  CHECK(weights_size(recipe_weights_layout(r, LlamaFileType::Q4_K_M)).bytes == weights_size(back).bytes);
}

TEST_CASE("Gemma 2/3, GPT-OSS, Phi-4, DeepSeek, GLM-4.5, Qwen3-Next, Qwen3.5 and Llama 4 files read back as their specs: "
          "windows, sinks, biases, fused tensors, MLA, shared experts beside grouped-query attention, linear attention, "
          "chunks") {
  for (const char* name :
       {"gemma-2-9b", "gemma-3-27b", "gpt-oss-20b", "phi-4", "deepseek-v3", "deepseek-v2-lite", "glm-4.5-air",
        "minimax-m2", "qwen3-next-80b-a3b", "qwen3.5-35b-a3b", "qwen3.5-9b", "llama-4-scout", "llama-4-maverick"}) {
    CAPTURE(name);
    // The shape at a small scale (layers and widths shrink; the window pattern and flags stay).
    const ModelSpec s = scale_model_spec(load_model(name), 0.1, "scale");
    const WeightsLayout layout = recipe_weights_layout(s, s.gguf_arch == "gpt-oss" ? LlamaFileType::MXFP4_MOE
                                                                                    : LlamaFileType::Q8_0);
    const GgufModel m = read_gguf_model(write_spec_gguf(s, layout, "family.gguf", 300));
    const ModelSpec r = model_spec_from_gguf(m);
    CHECK(r.gguf_arch == s.gguf_arch);
    CHECK(r.layers == s.layers);
    CHECK(r.sliding_window == s.sliding_window);
    CHECK(r.window_layers == s.window_layers);
    CHECK(r.attn_sinks == s.attn_sinks);
    CHECK(r.expert_bias == s.expert_bias);
    CHECK(r.attn_output_bias == s.attn_output_bias);
    CHECK(r.post_norms == s.post_norms);
    CHECK(r.fused_qkv == s.fused_qkv);
    CHECK(r.tied_embeddings == s.tied_embeddings);
    CHECK(r.attn_softcap == doctest::Approx(s.attn_softcap));
    CHECK(r.final_softcap == doctest::Approx(s.final_softcap));
    CHECK(r.model_type == s.model_type);
    CHECK(r.kv_lora_rank == s.kv_lora_rank);
    CHECK(r.q_lora_rank == s.q_lora_rank);
    CHECK(r.head_dim == s.head_dim);
    CHECK(r.v_head_dim == s.v_head_dim);
    CHECK(r.first_dense_layers == s.first_dense_layers);
    CHECK(r.shared_experts == s.shared_experts);
    CHECK(r.expert_score_bias == s.expert_score_bias);
    CHECK(r.sigmoid_routing == s.sigmoid_routing);
    CHECK(r.expert_weights_scale == doctest::Approx(s.expert_weights_scale));
    CHECK(r.rope_dims == s.rope_dims);
    CHECK(r.qkv_bias == s.qkv_bias);
    CHECK(r.qk_norm == s.qk_norm);
    CHECK(r.qk_norm_whole == s.qk_norm_whole);
    CHECK(r.linear_layers == s.linear_layers);
    CHECK(r.linear.key_heads == s.linear.key_heads);
    CHECK(r.linear.value_heads == s.linear.value_heads);
    CHECK(r.linear.key_head_dim == s.linear.key_head_dim);
    CHECK(r.linear.conv_kernel == s.linear.conv_kernel);
    CHECK(r.attn_output_gate == s.attn_output_gate);
    CHECK(r.linear.fused_beta_alpha == s.linear.fused_beta_alpha);
    CHECK(r.rope_sections == s.rope_sections);
    CHECK(r.chunked_windows == s.chunked_windows);
    CHECK(r.moe_layer_count() == s.moe_layer_count());
    CHECK(r.shared_expert_gate == s.shared_expert_gate);
    CHECK(r.shared_expert_width() == s.shared_expert_width());
    CHECK(recurrent_state_bytes(r, {}) == recurrent_state_bytes(s, {}));
    CHECK(kv_bytes_per_token(r, {GgmlType::BF16, GgmlType::BF16}) == kv_bytes_per_token(s, {GgmlType::BF16, GgmlType::BF16}));
    CHECK(parameter_count(r).total == parameter_count(s).total);
    CHECK(weights_size(gguf_weights_layout(m)).bytes == weights_size(layout).bytes);
  }
}

TEST_CASE("a multi-token-prediction block after the trunk (nextn_predict_layers) is on disk but not in the model") {
  // GLM-4.5's files (and newer DeepSeek conversions) keep it as block L (L = the trunk's layers): a
  // full MoE layer plus nextn.* tensors, which llama.cpp loads only when asked to predict with them.
  const ModelSpec s = scale_model_spec(load_model("glm-4.5-air"), 0.1, "scale");
  const WeightsLayout layout = recipe_weights_layout(s, LlamaFileType::Q8_0);
  ModelSpec with_mtp = s;
  with_mtp.layers = s.layers + 1;
  std::vector<GgufTensorData> tensors;
  uint32_t seed = 500;
  for (const TensorPlacement& p : recipe_weights_layout(with_mtp, LlamaFileType::Q8_0).tensors)
    tensors.push_back({p.tensor.name, p.tensor.shape, p.type, seeded_bytes(p.bytes, ++seed)});
  const std::string block = fmt::format("blk.{}.", s.layers);
  for (const auto& [name, shape] : std::vector<std::pair<std::string, std::vector<uint64_t>>>{
           {"nextn.eh_proj.weight", {2 * s.hidden, s.hidden}}, {"nextn.enorm.weight", {s.hidden}},
           {"nextn.hnorm.weight", {s.hidden}}, {"nextn.shared_head_norm.weight", {s.hidden}}}) {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    tensors.push_back({block + name, shape, GgmlType::F32, seeded_bytes(4 * n, ++seed)});
  }
  std::vector<GgufKeyValue> metadata = gguf_metadata_for(s);
  for (GgufKeyValue& kv : metadata)
    if (kv.key == "glm4moe.block_count") kv.value = GgufValue::of_u32(static_cast<uint32_t>(s.layers + 1));
  metadata.push_back({"glm4moe.nextn_predict_layers", GgufValue::of_u32(1)});
  const std::string path = temp_path("mtp.gguf");
  write_gguf(path, metadata, tensors);
  const GgufModel m = read_gguf_model(path);
  const ModelSpec r = model_spec_from_gguf(m);
  CHECK(r.layers == s.layers);
  CHECK(parameter_count(r).total == parameter_count(s).total);
  CHECK(weights_size(gguf_weights_layout(m)).bytes == weights_size(layout).bytes);  // the trunk's, loaded
  CHECK(gguf_file_size_of(m).file_bytes == file_bytes(path).size());                // the whole file's
  CHECK(gguf_file_size_of(m).tensor_data_bytes > weights_size(layout).bytes);
  // A count that leaves no trunk is refused, naming the key.
  for (GgufKeyValue& kv : metadata)
    if (kv.key == "glm4moe.nextn_predict_layers") kv.value = GgufValue::of_u32(static_cast<uint32_t>(s.layers + 1));
  write_gguf(path, metadata, tensors);
  CHECK_THROWS_WITH_AS(model_spec_from_gguf(read_gguf_model(path)), doctest::Contains("nextn_predict_layers"), InputError);
}

// The toy with one metadata key replaced by a hostile value: what reading its spec says.
std::string spec_error_with(const std::string& key, GgufValue value) {
  const std::string path = temp_path("hostile-shape.gguf");
  test_support::write_toy_gguf_with(path, key, value);
  try {
    model_spec_from_gguf(read_gguf_model(path));
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST_CASE("shape keys beyond their bounds are refused, naming the key (a zero key_length divided by zero)") {
  CHECK(spec_error_with("qwen3.context_length", GgufValue::of_u32(512)) == "no error");  // the writer's shape reads back
  CHECK_MESSAGE(spec_error_with("qwen3.attention.key_length", GgufValue::of_u32(0)).find(
                    "metadata key 'qwen3.attention.key_length' is 0; expected 2 to 4096") != std::string::npos,
                spec_error_with("qwen3.attention.key_length", GgufValue::of_u32(0)));
  // 2^62 layers used to loop for ever adding dense layers (the tensors stop at blk.1)
  CHECK(spec_error_with("qwen3.block_count", GgufValue::of_u64(uint64_t{1} << 62))
            .find("metadata key 'qwen3.block_count' is 4611686018427387904; expected 1 to 4096") != std::string::npos);
  CHECK(spec_error_with("qwen3.embedding_length", GgufValue::of_u64(uint64_t{1} << 63))
            .find("'qwen3.embedding_length' is 9223372036854775808") != std::string::npos);
  CHECK(spec_error_with("qwen3.attention.head_count_kv", GgufValue::of_u32(0))
            .find("'qwen3.attention.head_count_kv' is 0; expected 1 to 2") != std::string::npos);
  CHECK(spec_error_with("qwen3.rope.freq_base", GgufValue::of_f32(-1.0f))
            .find("'qwen3.rope.freq_base' is -1; expected a number above 0") != std::string::npos);
  CHECK(spec_error_with("qwen3.context_length", GgufValue::of_u64(uint64_t{1} << 40))
            .find("'qwen3.context_length' is 1099511627776; expected 0 to 16777216") != std::string::npos);
}

TEST_CASE("split files read as one model") {
  const std::string stem = temp_path("split");
  write_gguf(stem + "-00001-of-00002.gguf", {{"general.architecture", GgufValue::of_string("x")}, {"split.count", GgufValue::of_u32(2)}},
             {{"a", {32}, GgmlType::F32, seeded_bytes(128, 1)}});
  write_gguf(stem + "-00002-of-00002.gguf", {{"split.count", GgufValue::of_u32(2)}},
             {{"b", {64}, GgmlType::Q8_0, seeded_bytes(68, 2)}});
  const GgufModel m = read_gguf_model(stem + "-00002-of-00002.gguf");
  CHECK(m.paths.size() == 2);
  REQUIRE(m.tensors.size() == 2);
  CHECK(m.tensors[1].file == 1);
  CHECK(read_gguf_tensor_data(m, 1) == seeded_bytes(68, 2));
  CHECK(m.find("general.architecture")->str == "x");  // the first part's keys
  CHECK_THROWS_WITH_AS(read_gguf_model(stem + "-00001-of-00003.gguf"), doctest::Contains("cannot open"), InputError);
}

TEST_CASE("bad files: a clear error naming the field and offset") {
  const std::vector<uint8_t> good = small_file();
  auto with = [&](auto mutate) { std::vector<uint8_t> b = good; mutate(b); return read_error(b); };

  CHECK(with([](auto& b) { b[0] = 'X'; }).find("not a GGUF file: magic") != std::string::npos);
  CHECK(with([](auto& b) { patch<uint32_t>(b, 4, 1); }).find("version 1") != std::string::npos);
  CHECK(with([](auto& b) { patch<uint32_t>(b, 4, 99); }).find("unknown GGUF version 99; versions 2 and 3 are read (at byte offset 4)") != std::string::npos);
  CHECK(with([](auto& b) { patch<uint64_t>(b, 8, uint64_t{1} << 63); }).find("tensor count 9223372036854775808 cannot fit") != std::string::npos);
  CHECK(with([](auto& b) { patch<uint64_t>(b, 16, uint64_t{1} << 63); }).find("metadata KV count") != std::string::npos);
  CHECK(with([](auto& b) { patch<uint64_t>(b, 24, uint64_t{1} << 63); }).find("metadata key 0 length 9223372036854775808 exceeds") != std::string::npos);
  CHECK(with([](auto& b) { patch<uint32_t>(b, 33, 13); }).find("'a': unknown value type 13 (at byte offset 33)") != std::string::npos);
  CHECK(with([](auto& b) { patch<uint32_t>(b, 51, 5); }).find("'t0': 5 dimensions") != std::string::npos);
  CHECK(with([](auto& b) { patch<uint64_t>(b, 55, 0); }).find("'t0': dimension 0 is 0") != std::string::npos);
  CHECK(with([](auto& b) { patch<uint64_t>(b, 63, uint64_t{1} << 62); }).find("overflows") != std::string::npos);
  // 31 was Q4_0_4_4, removed from ggml; 1000 is our FP8, which no GGUF holds
  CHECK(with([](auto& b) { patch<uint32_t>(b, 71, 31); }).find("'t0': tensor type id 31 is unknown or unsupported; supported: F32") != std::string::npos);
  CHECK(with([](auto& b) { patch<uint32_t>(b, 71, 1000); }).find("'t0': tensor type id 1000 is unknown") != std::string::npos);
  CHECK(with([](auto& b) { patch<uint32_t>(b, 71, 2); }).find("row length 8 is not a whole number of Q4_0 blocks") != std::string::npos);
  CHECK(with([](auto& b) { patch<uint64_t>(b, 75, 4); }).find("'t0': data offset 4 is not a multiple of the alignment 32 (at byte offset 75)") != std::string::npos);
  CHECK(with([](auto& b) { patch<uint64_t>(b, 117, 4096); }).find("'t1': data [4096, 4160) lies outside the 128-byte data section") != std::string::npos);
  CHECK(with([](auto& b) { patch<uint64_t>(b, 117, 32); }).find("'t1' overlaps 't0'") != std::string::npos);
  CHECK(with([](auto& b) { patch<uint64_t>(b, 83, 2); b[91] = 't'; b[92] = '0'; }).find("tensor 't0' appears twice") != std::string::npos);
  CHECK(with([](auto& b) { patch<uint64_t>(b, 83, 100); }).find("tensor 1 name length 100 exceeds the limit of 64") != std::string::npos);
  CHECK(with([](auto& b) { b.resize(200); }).find("'t1': data [64, 128) lies outside the 72-byte data section") != std::string::npos);

  // Truncated anywhere in the header: always an InputError that says "truncated" or names a count.
  for (size_t cut = 0; cut < 125; ++cut) {
    CAPTURE(cut);
    const std::string e = with([cut](auto& b) { b.resize(cut); });
    CHECK((e.find("truncated") != std::string::npos || e.find("cannot fit") != std::string::npos));
  }
}

TEST_CASE("bad files: array and string fields") {
  // KV "a" as an array of u32 with 3 elements: 24 key length, 32 'a', 33 type 9, 37 element
  // type, 41 count, 49 elements.
  const std::string path = temp_path("array.gguf");
  GgufValue arr; arr.type = GgufType::array; arr.element_type = GgufType::u32; arr.count = 3; arr.raw.resize(12);
  write_gguf(path, {{"a", arr}}, {});
  const std::vector<uint8_t> good = file_bytes(path);
  auto with = [&](auto mutate) { std::vector<uint8_t> b = good; mutate(b); return read_error(b); };
  CHECK(with([](auto& b) { patch<uint64_t>(b, 41, uint64_t{1} << 63); }).find("a: array count 9223372036854775808 cannot fit") != std::string::npos);
  CHECK(with([](auto& b) { patch<uint32_t>(b, 37, 77); }).find("a: unknown element type 77 (at byte offset 37)") != std::string::npos);
  CHECK(with([](auto& b) { patch<uint32_t>(b, 37, 8); patch<uint64_t>(b, 41, 1); patch<uint64_t>(b, 49, 1000); }).find("truncated: a[0] needs 1000 bytes") != std::string::npos);

  GgufValue flag = GgufValue::of_bool(true);
  write_gguf(path, {{"general.alignment", GgufValue::of_u32(32)}, {"b", flag}}, {});
  std::vector<uint8_t> b = file_bytes(path);
  // "general.alignment" (17): 24 length, 32 key, 49 type, 53 value; "b": 57 length, 65 key, 66 type, 70 value
  patch<uint32_t>(b, 53, 48);
  CHECK(read_error(b).find("general.alignment 48 is not a power of two") != std::string::npos);
  patch<uint32_t>(b, 53, 32);
  b[70] = 2;
  CHECK(read_error(b).find("b: bool is 2, not 0 or 1 (at byte offset 70)") != std::string::npos);
}

TEST_CASE("bad files: random corruption never crashes") {
  const std::vector<uint8_t> good = small_file();
  std::mt19937 rng(42);
  int errors = 0;
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint8_t> b = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) b[rng() % 125] = static_cast<uint8_t>(rng());
    const std::string path = temp_path("fuzz.gguf");
    write_bytes(path, b);
    try {
      read_gguf_file(path);
    } catch (const InputError&) {
      ++errors;  // expected for most; anything else (bad_alloc, out_of_range) fails the test
    }
  }
  CHECK(errors > 1000);
}

TEST_CASE("writer refuses inconsistent input") {
  const std::string path = temp_path("w.gguf");
  CHECK_THROWS_WITH_AS(write_gguf(path, {}, {{"t", {32}, GgmlType::Q8_0, std::vector<uint8_t>(33)}}),
                       doctest::Contains("'t' has 33 bytes, its shape and type need 34"), InputError);
  CHECK_THROWS_WITH_AS(write_gguf(path, {}, {{"t", {4}, GgmlType::F32, std::vector<uint8_t>(16)},
                                             {"t", {4}, GgmlType::F32, std::vector<uint8_t>(16)}}),
                       doctest::Contains("twice"), InputError);
  CHECK_THROWS_AS(write_gguf(path, {}, {{"t", {100}, GgmlType::Q4_0, {}}}), InputError);
}

TEST_CASE("RoPE scaling and partial RoPE are read") {
  const std::string path = temp_path("rope.gguf");
  test_support::write_toy_gguf_with(path, "qwen3.rope.scaling.type", GgufValue::of_string("yarn"));
  const ModelSpec yarn = model_spec_from_gguf(read_gguf_model(path));
  CHECK(yarn.rope_scaling.type == "yarn");
  CHECK(yarn.rope_scaling.key.find("qwen3.rope.scaling.type") != std::string::npos);
  test_support::write_toy_gguf_with(path, "qwen3.rope.dimension_count", GgufValue::of_u32(16));
  CHECK(model_spec_from_gguf(read_gguf_model(path)).rope_dims == 16);  // of head_dim 32
  test_support::write_toy_gguf_with(path, "qwen3.rope.dimension_count", GgufValue::of_u32(32));
  CHECK(model_spec_from_gguf(read_gguf_model(path)).rope_dims == 0);  // all of it
  CHECK(spec_error_with("qwen3.rope.scaling.type", GgufValue::of_u32(2)).find(
            "'qwen3.rope.scaling.type' is a u32, expected a string") != std::string::npos);

  // YaRN x4 over an original 64 tokens (the toy's context_length is 256): magnitude 0.1 ln 4 + 1
  // = 1.13863 when the file gives none; serves 64 x 4 = 256 tokens.
  test_support::write_toy_gguf_with(path, {{"qwen3.rope.scaling.type", GgufValue::of_string("yarn")},
                                           {"qwen3.rope.scaling.factor", GgufValue::of_f32(4.0f)},
                                           {"qwen3.rope.scaling.original_context_length", GgufValue::of_u32(64)}});
  const ModelSpec yarn4 = model_spec_from_gguf(read_gguf_model(path));
  CHECK(yarn4.rope_scaling.factor == 4.0);
  CHECK(yarn4.rope_scaling.original_context == 64);
  CHECK(yarn4.rope_scaling.attention_factor == doctest::Approx(1.138629436).epsilon(1e-7));
  CHECK(yarn4.rope_scaling.beta_fast == 32.0);
  CHECK(yarn4.rope_scaling.beta_slow == 1.0);
  CHECK(yarn4.max_context == 256);
  // The writer's keys read back as they were written.
  ModelSpec round = yarn4;
  round.rope_scaling.beta_fast = 16.0;
  round.rope_scaling.attention_factor = 1.5;
  const auto meta = gguf_metadata_for(round);
  test_support::write_toy_gguf_with(path, meta);
  const ModelSpec back = model_spec_from_gguf(read_gguf_model(path));
  CHECK(back.rope_scaling.type == "yarn");
  CHECK(back.rope_scaling.factor == 4.0);
  CHECK(back.rope_scaling.original_context == 64);
  CHECK(back.rope_scaling.beta_fast == 16.0);
  CHECK(back.rope_scaling.attention_factor == 1.5);
  // A factor without a type is linear scaling, as llama.cpp reads it.
  test_support::write_toy_gguf_with(path, "qwen3.rope.scaling.factor", GgufValue::of_f32(2.0f));
  const ModelSpec linear = model_spec_from_gguf(read_gguf_model(path));
  CHECK(linear.rope_scaling.type == "linear");
  CHECK(linear.rope_scaling.factor == 2.0);
  CHECK(linear.rope_scaling.key.find("qwen3.rope.scaling.factor") != std::string::npos);
  // DeepSeek's log multiplier is refused by name, not ignored.
  test_support::write_toy_gguf_with(path, {{"qwen3.rope.scaling.type", GgufValue::of_string("yarn")},
                                           {"qwen3.rope.scaling.factor", GgufValue::of_f32(4.0f)},
                                           {"qwen3.rope.scaling.yarn_log_multiplier", GgufValue::of_f32(0.1f)}});
  CHECK_THROWS_WITH_AS(model_spec_from_gguf(read_gguf_model(path)), doctest::Contains("yarn_log_multiplier"), InputError);
}
