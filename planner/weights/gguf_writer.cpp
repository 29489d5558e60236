// The file is built in order: header, KV pairs, tensor infos with offsets laid out at the
// alignment, zero padding, then each tensor's bytes followed by padding to the alignment.
#include "planner/weights/gguf_writer.hpp"

#include <fmt/format.h>
#include <fstream>
#include <set>

#include "planner/weights/gguf_size.hpp"
#include "planner/core/input_error.hpp"

namespace infer_plan {
namespace {

class Out {
 public:
  explicit Out(const std::string& path) : path_(path), out_(path, std::ios::binary | std::ios::trunc) {
    if (!out_) throw InputError(fmt::format("{}: cannot create", path));
  }
  template <class T>
  void num(T v) { bytes(&v, sizeof v); }
  void bytes(const void* p, uint64_t n) {
    out_.write(static_cast<const char*>(p), static_cast<std::streamsize>(n));
    pos_ += n;
  }
  void string(const std::string& s) {
    num<uint64_t>(s.size());
    bytes(s.data(), s.size());
  }
  void pad_to(uint64_t alignment) {
    static const char zeros[256] = {};
    uint64_t n = gguf_align(pos_, alignment) - pos_;
    while (n > 0) {
      const uint64_t k = std::min<uint64_t>(n, sizeof zeros);
      bytes(zeros, k);
      n -= k;
    }
  }
  void close() {
    out_.close();
    if (!out_) throw InputError(fmt::format("{}: write failed", path_));
  }

 private:
  std::string path_;
  std::ofstream out_;
  uint64_t pos_ = 0;
};

void write_value(Out& o, const GgufValue& v) {
  switch (v.type) {
    case GgufType::u8: o.num<uint8_t>(static_cast<uint8_t>(v.u64)); break;
    case GgufType::u16: o.num<uint16_t>(static_cast<uint16_t>(v.u64)); break;
    case GgufType::u32: o.num<uint32_t>(static_cast<uint32_t>(v.u64)); break;
    case GgufType::u64: o.num<uint64_t>(v.u64); break;
    case GgufType::i8: o.num<int8_t>(static_cast<int8_t>(v.i64)); break;
    case GgufType::i16: o.num<int16_t>(static_cast<int16_t>(v.i64)); break;
    case GgufType::i32: o.num<int32_t>(static_cast<int32_t>(v.i64)); break;
    case GgufType::i64: o.num<int64_t>(v.i64); break;
    case GgufType::f32: o.num<float>(static_cast<float>(v.f64)); break;
    case GgufType::f64: o.num<double>(v.f64); break;
    case GgufType::boolean: o.num<uint8_t>(v.u64 ? 1 : 0); break;
    case GgufType::string: o.string(v.str); break;
    case GgufType::array:
      o.num<uint32_t>(static_cast<uint32_t>(v.element_type));
      o.num<uint64_t>(v.count);
      if (v.element_type == GgufType::string)
        for (const auto& s : v.strings) o.string(s);
      else if (v.element_type == GgufType::array)
        for (const auto& n : v.nested) write_value(o, n);
      else
        o.bytes(v.raw.data(), v.raw.size());
      break;
  }
}

void check_value(const std::string& key, const GgufValue& v) {
  if (v.type != GgufType::array) return;
  const uint64_t n = v.element_type == GgufType::string ? v.strings.size()
                     : v.element_type == GgufType::array ? v.nested.size()
                                                         : v.raw.size();
  const uint64_t expected = v.element_type == GgufType::string || v.element_type == GgufType::array
                                ? v.count
                                : v.count * (v.element_type == GgufType::u8 || v.element_type == GgufType::i8 ||
                                                     v.element_type == GgufType::boolean ? 1
                                             : v.element_type == GgufType::u16 || v.element_type == GgufType::i16 ? 2
                                             : v.element_type == GgufType::u64 || v.element_type == GgufType::i64 ||
                                                     v.element_type == GgufType::f64 ? 8 : 4);
  if (n != expected)
    throw InputError(fmt::format("gguf writer: '{}' says {} elements but holds {}", key, v.count, n));
  for (const auto& e : v.nested) check_value(key, e);
}

}  // namespace

void write_gguf(const std::string& path, const std::vector<GgufKeyValue>& metadata,
                const std::vector<GgufTensorData>& tensors, uint32_t version) {
  if (version != 2 && version != 3) throw InputError(fmt::format("gguf writer: version {} (2 or 3)", version));
  uint64_t alignment = kGgufDefaultAlignment;
  std::set<std::string> keys;
  for (const auto& kv : metadata) {
    if (!keys.insert(kv.key).second) throw InputError(fmt::format("gguf writer: key '{}' twice", kv.key));
    check_value(kv.key, kv.value);
    if (kv.key == "general.alignment") {
      if (kv.value.type != GgufType::u32 || kv.value.u64 == 0 || (kv.value.u64 & (kv.value.u64 - 1)) != 0)
        throw InputError("gguf writer: general.alignment must be a u32 power of two");
      alignment = kv.value.u64;
    }
  }
  std::set<std::string> names;
  std::vector<uint64_t> offsets;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    if (t.name.empty() || t.name.size() > 64) throw InputError(fmt::format("gguf writer: tensor name '{}' (1-64 bytes)", t.name));
    if (!names.insert(t.name).second) throw InputError(fmt::format("gguf writer: tensor '{}' twice", t.name));
    if (t.shape.empty() || t.shape.size() > 4) throw InputError(fmt::format("gguf writer: '{}' needs 1-4 dimensions", t.name));
    uint64_t elements = 1;
    for (uint64_t d : t.shape) elements *= d;
    const uint64_t expected = ggml_row_bytes(t.type, t.shape[0], t.name) * (elements / t.shape[0]);
    if (t.data.size() != expected)
      throw InputError(fmt::format("gguf writer: '{}' has {} bytes, its shape and type need {}", t.name, t.data.size(), expected));
    offsets.push_back(offset);
    offset = gguf_align(offset + expected, alignment);
  }

  Out o(path);
  o.num<uint32_t>(0x46554747);  // "GGUF"
  o.num<uint32_t>(version);
  o.num<uint64_t>(tensors.size());
  o.num<uint64_t>(metadata.size());
  for (const auto& kv : metadata) {
    o.string(kv.key);
    o.num<uint32_t>(static_cast<uint32_t>(kv.value.type));
    write_value(o, kv.value);
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    o.string(t.name);
    o.num<uint32_t>(static_cast<uint32_t>(t.shape.size()));
    for (uint64_t d : t.shape) o.num<uint64_t>(d);
    o.num<uint32_t>(static_cast<uint32_t>(t.type));
    o.num<uint64_t>(offsets[i]);
  }
  o.pad_to(alignment);
  for (const auto& t : tensors) {
    o.bytes(t.data.data(), t.data.size());
    o.pad_to(alignment);
  }
  o.close();
}

std::vector<GgufKeyValue> gguf_metadata_for(const ModelSpec& s) {
  if (s.gguf_arch.empty()) throw InputError(fmt::format("gguf writer: model '{}' has no llama.cpp architecture", s.name));
  const std::string a = s.gguf_arch;
  auto u32 = [](uint64_t v) { return GgufValue::of_u32(static_cast<uint32_t>(v)); };
  std::vector<GgufKeyValue> kv{
      {"general.architecture", GgufValue::of_string(a)},
      {"general.name", GgufValue::of_string(s.name)},
      {a + ".block_count", u32(s.layers)},
      {a + ".context_length", u32(s.max_context)},
      {a + ".embedding_length", u32(s.hidden)},
      {a + ".feed_forward_length", u32(s.intermediate)},
      {a + ".attention.head_count", u32(s.heads)},
      {a + ".attention.head_count_kv", u32(s.kv_heads)},
      {a + ".attention.key_length", u32(s.head_dim)},
      {a + ".attention.value_length", u32(s.head_dim)},
      {a + ".rope.freq_base", GgufValue::of_f32(static_cast<float>(s.rope_theta))},
      {a + ".attention.layer_norm_rms_epsilon", GgufValue::of_f32(static_cast<float>(s.rms_norm_eps))},
  };
  kv.push_back({a + ".rope.dimension_count", u32(s.rope_dims != 0 ? s.rope_dims : s.head_dim)});
  // RoPE scaling under llama.cpp's keys (llama3's lives in the rope_freqs tensor instead); YaRN's
  // betas and magnitude only where they differ from the defaults both readers assume.
  const RopeScaling& rs = s.rope_scaling;
  const auto f32 = [](double v) { return GgufValue::of_f32(static_cast<float>(v)); };
  if (rs.type == "yarn" || rs.type == "linear") {
    kv.push_back({a + ".rope.scaling.type", GgufValue::of_string(rs.type)});
    kv.push_back({a + ".rope.scaling.factor", f32(rs.factor)});
  }
  if (rs.type == "yarn") {
    kv.push_back({a + ".rope.scaling.original_context_length", u32(rs.original_context)});
    if (rs.beta_fast != 32.0) kv.push_back({a + ".rope.scaling.yarn_beta_fast", f32(rs.beta_fast)});
    if (rs.beta_slow != 1.0) kv.push_back({a + ".rope.scaling.yarn_beta_slow", f32(rs.beta_slow)});
    if (rs.attention_factor != 0.0) kv.push_back({a + ".rope.scaling.yarn_attn_factor", f32(rs.attention_factor)});
    // DeepSeek's magnitude as llama.cpp's converter writes it (0.1 mscale_all_dim)
    if (s.is_mla() && rs.mscale_all_dim > 0.0) kv.push_back({a + ".rope.scaling.yarn_log_multiplier", f32(0.1 * rs.mscale_all_dim)});
  } else if (rs.type == "linear" && rs.attention_factor != 0.0) {
    kv.push_back({a + ".rope.scaling.attn_factor", f32(rs.attention_factor)});
  }
  // A window only where llama.cpp's architecture applies one (its llama, qwen2 and phi3 do not:
  // a Mistral file has none, as its converter writes it).
  if (s.window_layer_count() && llama_cpp_applies_windows(a))
    kv.push_back({a + ".attention.sliding_window", u32(s.sliding_window)});
  if (s.attn_softcap > 0) kv.push_back({a + ".attn_logit_softcapping", f32(s.attn_softcap)});
  if (s.final_softcap > 0) kv.push_back({a + ".final_logit_softcapping", f32(s.final_softcap)});
  if (s.is_mla()) {  // as llama.cpp's converter writes deepseek2: the cache's view, the heads' widths under *_mla
    for (auto& k : kv) {
      if (k.key == a + ".attention.head_count_kv") k.value = u32(1);
      if (k.key == a + ".attention.key_length") k.value = u32(s.kv_lora_rank + s.qk_rope_dim);
      if (k.key == a + ".attention.value_length") k.value = u32(s.kv_lora_rank);
      if (k.key == a + ".rope.dimension_count") k.value = u32(s.qk_rope_dim);
    }
    kv.push_back({a + ".attention.key_length_mla", u32(s.head_dim)});
    kv.push_back({a + ".attention.value_length_mla", u32(s.v_head_dim)});
    kv.push_back({a + ".attention.kv_lora_rank", u32(s.kv_lora_rank)});
    // 0 for a plain q projection: llama.cpp's converter omits the key, but llama.cpp's loader then
    // requires it of any model without the 26 or 27 layers of the Lite models it knows (a scaled one)
    kv.push_back({a + ".attention.q_lora_rank", u32(s.q_lora_rank)});
  }
  if (s.is_mla() || a == "glm4moe") {  // DeepSeek's experts and router (GLM-4.5's too)
    kv.push_back({a + ".leading_dense_block_count", u32(s.first_dense_layers)});
    kv.push_back({a + ".expert_shared_count", u32(s.shared_experts)});
    kv.push_back({a + ".expert_weights_norm", GgufValue::of_bool(s.moe_norm_top_k)});
    // V3's scale and expert groups
    kv.push_back({a + ".expert_weights_scale", f32(s.expert_weights_scale)});
    if (s.expert_groups > 1) {
      kv.push_back({a + ".expert_group_count", u32(s.expert_groups)});
      kv.push_back({a + ".expert_group_used_count", u32(s.expert_groups_used)});
    }
  }
  if (a == "llama4") kv.push_back({a + ".interleave_moe_layer_step", u32(s.decoder_sparse_step)});
  if (s.is_hybrid()) {  // llama.cpp's qwen3next: Gated DeltaNet under its ssm keys, one head width for k and v
    const ModelSpec::LinearAttention& l = s.linear;
    if (l.key_head_dim != l.value_head_dim)
      throw InputError(fmt::format("gguf writer: {}'s linear attention has key heads of {} and value heads of {}; llama.cpp's "
                                   "qwen3next takes one width for both (ssm.state_size)", s.name, l.key_head_dim,
                                   l.value_head_dim));
    uint64_t interval = 1;  // the first attention layer's position: the pattern llama.cpp rebuilds from it
    while (s.layer_is_linear(interval - 1)) ++interval;
    for (uint64_t i = 0; i < s.layers; ++i)
      if (s.layer_is_linear(i) != ((i + 1) % interval != 0))
        throw InputError(fmt::format("gguf writer: {}'s layer {} breaks the one-in-{} pattern of attention layers that "
                                     "llama.cpp's full_attention_interval describes", s.name, i, interval));
    kv.push_back({a + ".full_attention_interval", u32(interval)});
    if (!s.rope_sections.empty()) {  // Qwen3.5's multimodal RoPE (llama.cpp's qwen35 requires the key)
      std::vector<int32_t> sections(4, 0);
      for (size_t i = 0; i < s.rope_sections.size() && i < 4; ++i) sections[i] = static_cast<int32_t>(s.rope_sections[i]);
      kv.push_back({a + ".rope.dimension_sections", GgufValue::of_i32s(sections)});
    }
    kv.push_back({a + ".ssm.conv_kernel", u32(l.conv_kernel)});
    kv.push_back({a + ".ssm.state_size", u32(l.key_head_dim)});
    kv.push_back({a + ".ssm.group_count", u32(l.key_heads)});
    kv.push_back({a + ".ssm.time_step_rank", u32(l.value_heads)});
    kv.push_back({a + ".ssm.inner_size", u32(l.value_width())});
    if (s.shared_experts) kv.push_back({a + ".expert_shared_feed_forward_length", u32(s.shared_expert_width())});
  }
  if (s.is_moe()) {
    kv.push_back({a + ".expert_count", u32(s.experts)});
    kv.push_back({a + ".expert_used_count", u32(s.experts_active)});
    kv.push_back({a + ".expert_feed_forward_length", u32(s.moe_intermediate)});
    // llama.cpp's gating functions: 1 softmax (DeepSeek-V2), 2 sigmoid (V3, GLM-4.5, MiniMax-M2)
    if (s.sigmoid_routing || s.is_mla() || a == "glm4moe")
      kv.push_back({a + ".expert_gating_func", u32(s.sigmoid_routing ? 2 : 1)});
  }
  return kv;
}

}  // namespace infer_plan
