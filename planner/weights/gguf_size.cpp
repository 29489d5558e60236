// GGUF layout arithmetic (ggml docs/gguf.md, v3): every string is a u64 length + bytes, every
// tensor's data offset is a multiple of general.alignment, and the data section starts aligned.
// The tokenizer's share of the header is estimated from per-family averages (below).
#include "planner/weights/gguf_size.hpp"

#include <fmt/format.h>
#include <map>

#include "planner/weights/gguf_recipe.hpp"
#include "planner/core/units.hpp"

namespace infer_plan {
namespace {

constexpr uint64_t kFixedHeaderBytes = 4 + 4 + 8 + 8;  // magic, version, tensor count, KV count
constexpr uint64_t kStringLengthBytes = 8;             // u64 before every string

// Per-family averages, in bytes (or hundredths where a fraction matters), from the tokenizer
// files the converter reads. Byte-level BPE stores each token as its GPT-2 byte-to-unicode text,
// so a merged token's length is that of its merge "a b" minus the space.
// - Qwen2/Qwen3: merges.txt is about 1.67 MB for 151,387 lines "a b\n" -> 11.0 B a line ->
//   merge string 10.0 B, token 9.0 B; tokenizer.json (7.03 MB) gives the same within 1%.
//   The GGUF holds vocab_size tokens (151,936: padding tokens included) and 151,387 merges.
// - Llama 3: tokenizer.json about 9.09 MB for 128,000 tokens + 280,147 merges (indented JSON)
//   -> token about 8.9 B, merge about 10.3 B; 280,147 merges = 2.184 per token.
// - SentencePiece (Llama 2, Mistral): tokenizer.model about 500 KB for 32,000 pieces -> about
//   5.1 B a piece; no merges, but an f32 score per token besides the i32 type.
struct TokenizerFamily {
  std::string_view name;
  uint32_t token_centibytes;   // average token string, hundredths of a byte
  uint32_t merge_centibytes;   // average merge string "a b"
  uint32_t merges_per_100k_tokens;
  uint32_t per_token_fixed;    // i32 token type (+ f32 score for SentencePiece)
};
constexpr TokenizerFamily kQwenBpe{"gpt2 BPE (Qwen2/Qwen3 vocabulary)", 900, 1000, 99639, 4};
constexpr TokenizerFamily kLlama3Bpe{"gpt2 BPE (Llama 3 vocabulary)", 890, 1030, 218428, 4};
constexpr TokenizerFamily kSentencePiece{"SentencePiece (Llama 2 / Mistral vocabulary)", 510, 0, 0, 8};

// The rest of the metadata: general.* (name, license, tags, base model), the architecture's
// hyperparameters (~20 keys), token ids, and the chat template (4-6 KiB for Qwen3 / Llama 3.1).
constexpr uint64_t kOtherMetadataBytes = 8 * KiB;

const TokenizerFamily& tokenizer_family(const ModelSpec& s) {
  if (s.gguf_arch == "llama") return s.vocab >= 100'000 ? kLlama3Bpe : kSentencePiece;
  return kQwenBpe;  // qwen2, qwen3, qwen3moe; also the default for other byte-level BPE vocabularies
}

}  // namespace

uint64_t gguf_align(uint64_t offset, uint64_t alignment) {
  return (offset + alignment - 1) / alignment * alignment;
}

uint64_t gguf_tensor_info_bytes(const TensorInfo& t) {
  return kStringLengthBytes + t.name.size() + 4 + 8 * t.shape.size() + 4 + 8;
}

TokenizerEstimate estimate_tokenizer(const ModelSpec& s) {
  const TokenizerFamily& f = tokenizer_family(s);
  TokenizerEstimate e;
  e.family = std::string(f.name);
  e.tokens = s.vocab;
  e.merges = s.vocab * f.merges_per_100k_tokens / 100'000;
  e.token_bytes = e.tokens * kStringLengthBytes + e.tokens * f.token_centibytes / 100;
  e.token_type_bytes = e.tokens * f.per_token_fixed;
  e.merge_bytes = e.merges * kStringLengthBytes + e.merges * f.merge_centibytes / 100;
  return e;
}

std::string_view gguf_tensor_class(TensorRole role) {
  switch (role) {
    case TensorRole::token_embd: return "token embedding";
    case TensorRole::output: return "output head";
    case TensorRole::attn_q: case TensorRole::attn_k: case TensorRole::attn_v:
    case TensorRole::attn_output: case TensorRole::attn_q_a: case TensorRole::attn_q_b:
    case TensorRole::attn_kv_a_mqa: case TensorRole::attn_k_b: case TensorRole::attn_v_b:
    case TensorRole::attn_qkv: case TensorRole::attn_kv_b: return "attention";
    case TensorRole::ffn_gate: case TensorRole::ffn_up: case TensorRole::ffn_down: return "ffn (dense)";
    case TensorRole::ffn_gate_exps: case TensorRole::ffn_up_exps:
    case TensorRole::ffn_down_exps: return "ffn experts";
    case TensorRole::ffn_gate_shexp: case TensorRole::ffn_up_shexp:
    case TensorRole::ffn_down_shexp: return "ffn shared experts";
    case TensorRole::ffn_gate_inp: return "moe router";
    default: return "norms, biases";
  }
}

GgufFileSize gguf_file_size_from(const WeightsLayout& layout, uint64_t header_bytes,
                                 uint64_t metadata_kv_bytes, uint64_t tensor_info_bytes,
                                 uint64_t alignment, const std::vector<bool>& other_class) {
  GgufFileSize g;
  g.file_type = layout.file_type;
  g.layout = layout;
  g.alignment = alignment;
  g.header_fixed_bytes = kFixedHeaderBytes;
  g.metadata_kv_bytes = metadata_kv_bytes;
  g.tensor_info_bytes = tensor_info_bytes;
  g.header_bytes = header_bytes;
  g.fallback_tensors = layout.fallback_tensors;
  g.padding_bytes = gguf_align(header_bytes, alignment) - header_bytes;

  std::map<std::string_view, TensorClassSize> classes;
  std::map<std::string_view, std::map<std::string_view, uint64_t>> class_types;
  std::vector<std::string_view> order;
  for (size_t i = 0; i < layout.tensors.size(); ++i) {
    const TensorPlacement& p = layout.tensors[i];
    const GgmlTypeInfo& info = ggml_type_info(p.type);
    const uint64_t blocks = p.tensor.elements() / info.block_values;
    const uint64_t meta = blocks * info.meta_bytes;
    g.tensor_data_bytes += p.bytes;
    g.meta_bytes += meta;
    g.padding_bytes += gguf_align(p.bytes, alignment) - p.bytes;
    const bool other = i < other_class.size() && other_class[i];
    const std::string_view cls = other ? "other" : gguf_tensor_class(p.tensor.role);
    if (!classes.contains(cls)) order.push_back(cls);
    TensorClassSize& c = classes[cls];
    c.name = std::string(cls);
    ++c.tensors;
    c.bytes += p.bytes;
    c.meta_bytes += meta;
    c.code_and_float_bytes += p.bytes - meta;
    ++class_types[cls][info.name];
  }
  g.code_and_float_bytes = g.tensor_data_bytes - g.meta_bytes;
  g.file_bytes = g.header_bytes + g.padding_bytes + g.tensor_data_bytes;
  for (std::string_view cls : order) {
    TensorClassSize c = classes[cls];
    for (const auto& [type, n] : class_types[cls])
      c.types += fmt::format("{}{} x {}", c.types.empty() ? "" : ", ", type, n);
    g.classes.push_back(std::move(c));
  }

  auto& d = g.derivation;
  d.push_back(fmt::format("tensor data = codes + floats {} B + quantization metadata {} B = {} B ({})",
                          g.code_and_float_bytes, g.meta_bytes, g.tensor_data_bytes, gib(g.tensor_data_bytes)));
  d.push_back(fmt::format("header = fixed {} B + metadata KV {} B + tensor infos {} B ({} tensors) = {} B",
                          g.header_fixed_bytes, g.metadata_kv_bytes, g.tensor_info_bytes,
                          layout.tensors.size(), g.header_bytes));
  d.push_back(fmt::format("padding = header to a multiple of {} + each tensor to a multiple of {} = {} B",
                          alignment, alignment, g.padding_bytes));
  d.push_back(fmt::format("file = {} + {} + {} = {} B ({})", g.header_bytes, g.padding_bytes,
                          g.tensor_data_bytes, g.file_bytes, gib(g.file_bytes)));
  return g;
}

GgufFileSize gguf_file_size(const ModelSpec& spec, const std::string& type_name) {
  const PlanWeights w = plan_weights(spec, type_name, std::nullopt);
  const TokenizerEstimate tok = estimate_tokenizer(spec);
  uint64_t tensor_infos = 0;
  for (const TensorPlacement& p : w.layout.tensors) tensor_infos += gguf_tensor_info_bytes(p.tensor);
  const uint64_t kv = tok.bytes() + kOtherMetadataBytes;
  GgufFileSize g = gguf_file_size_from(w.layout, kFixedHeaderBytes + kv + tensor_infos, kv,
                                       tensor_infos, kGgufDefaultAlignment);
  g.header_source = HeaderSource::estimated;
  g.tokenizer = tok;
  g.tokenizer_bytes = tok.bytes();
  g.derivation.insert(
      g.derivation.begin() + 1,
      fmt::format("metadata KV (estimate) = tokenizer {} B [{}: {} tokens x (8 + avg string) = {} B, "
                  "types/scores {} B, {} merges = {} B] + other keys ~{} B",
                  tok.bytes(), tok.family, tok.tokens, tok.token_bytes, tok.token_type_bytes,
                  tok.merges, tok.merge_bytes, kOtherMetadataBytes));
  return g;
}

}  // namespace infer_plan
