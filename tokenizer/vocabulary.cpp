#include "tokenizer/vocabulary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>

#include "planner/core/input_error.hpp"
#include "tokenizer/tokenizer.hpp"

namespace infer_plan::tokenizer {
namespace {

constexpr const char* kPrefix = "tokenizer.ggml.";

std::string utf8_of(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

struct ByteMap {
  std::array<std::string, 256> to_unicode;
  std::unordered_map<std::string, uint8_t> to_byte;
  ByteMap() {
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      to_unicode[b] = utf8_of(printable ? b : next++);
      to_byte[to_unicode[b]] = static_cast<uint8_t>(b);
    }
  }
};

const ByteMap& byte_map() {
  static const ByteMap map;
  return map;
}

const GgufValue* array_of(const GgufModel& m, const std::string& key, GgufType element, bool required) {
  const GgufValue* v = m.find(key);
  if (!v) {
    if (required)
      throw InputError(fmt::format("{}: metadata key '{}' is missing (the model's vocabulary)", m.paths.front(), key));
    return nullptr;
  }
  if (v->type != GgufType::array || v->element_type != element)
    throw InputError(fmt::format("{}: metadata key '{}' is a {}, expected an array of {}", m.paths.front(), key,
                                 gguf_type_name(v->type == GgufType::array ? v->element_type : v->type),
                                 gguf_type_name(element)));
  return v;
}

std::optional<uint32_t> token_id(const GgufModel& m, const std::string& key, uint32_t size) {
  const GgufValue* v = m.find(key);
  if (!v) return std::nullopt;
  int64_t id = -1;
  if (v->type == GgufType::u32 || v->type == GgufType::u64 || v->type == GgufType::u16 || v->type == GgufType::u8)
    id = static_cast<int64_t>(std::min<uint64_t>(v->u64, UINT32_MAX));
  else if (v->type == GgufType::i32 || v->type == GgufType::i64 || v->type == GgufType::i16 || v->type == GgufType::i8)
    id = v->i64;
  else
    throw InputError(fmt::format("{}: metadata key '{}' is a {}, expected a token id", m.paths.front(), key,
                                 gguf_type_name(v->type)));
  if (id < 0) return std::nullopt;  // -1: none, as llama.cpp writes it
  if (id >= size)
    throw InputError(fmt::format("{}: metadata key '{}' is {}, beyond the vocabulary's {} tokens", m.paths.front(), key,
                                 id, size));
  return static_cast<uint32_t>(id);
}

bool flag(const GgufModel& m, const std::string& key, bool fallback) {
  const GgufValue* v = m.find(key);
  if (!v) return fallback;
  if (v->type != GgufType::boolean)
    throw InputError(fmt::format("{}: metadata key '{}' is a {}, expected a bool", m.paths.front(), key,
                                 gguf_type_name(v->type)));
  return v->u64 != 0;
}

}  // namespace

const std::string& byte_to_unicode(uint8_t byte) { return byte_map().to_unicode[byte]; }

std::optional<uint8_t> unicode_to_byte(std::string_view utf8_char) {
  const auto& m = byte_map().to_byte;
  const auto it = m.find(std::string(utf8_char));
  if (it == m.end()) return std::nullopt;
  return it->second;
}

Vocabulary vocabulary_from_gguf(const GgufModel& m) {
  const std::string p = kPrefix;
  const std::string& path = m.paths.front();
  Vocabulary v;
  v.source = path;
  const GgufValue* model = m.find(p + "model");
  if (!model)
    throw InputError(fmt::format("{}: metadata key '{}model' is missing: the file has no vocabulary to tokenize with",
                                 path, p));
  if (model->type != GgufType::string)
    throw InputError(fmt::format("{}: metadata key '{}model' is a {}, expected a string", path, p,
                                 gguf_type_name(model->type)));
  v.model = model->str;
  if (const GgufValue* pre = m.find(p + "pre")) {
    if (pre->type != GgufType::string)
      throw InputError(fmt::format("{}: metadata key '{}pre' is a {}, expected a string", path, p, gguf_type_name(pre->type)));
    v.pre = pre->str;
  }
  v.tokens = array_of(m, p + "tokens", GgufType::string, true)->strings;
  const auto n = v.tokens.size();
  if (n == 0 || n > UINT32_MAX)
    throw InputError(fmt::format("{}: metadata key '{}tokens' holds {} tokens", path, p, n));
  v.types.assign(n, TokenType::normal);
  if (const GgufValue* t = array_of(m, p + "token_type", GgufType::i32, false)) {
    if (t->count != n)
      throw InputError(fmt::format("{}: metadata key '{}token_type' has {} entries for {} tokens", path, p, t->count, n));
    for (size_t i = 0; i < n; ++i) {
      int32_t type = 0;
      std::memcpy(&type, t->raw.data() + 4 * i, 4);
      v.types[i] = static_cast<TokenType>(type);
    }
  }
  if (const GgufValue* s = array_of(m, p + "scores", GgufType::f32, false)) {
    if (s->count != n)
      throw InputError(fmt::format("{}: metadata key '{}scores' has {} entries for {} tokens", path, p, s->count, n));
    v.scores.resize(n);
    std::memcpy(v.scores.data(), s->raw.data(), 4 * n);
  }
  if (const GgufValue* merges = array_of(m, p + "merges", GgufType::string, v.model == "gpt2")) v.merges = merges->strings;
  const auto size = static_cast<uint32_t>(n);
  v.bos = token_id(m, p + "bos_token_id", size);
  v.eos = token_id(m, p + "eos_token_id", size);
  v.unk = token_id(m, p + "unknown_token_id", size);
  v.pad = token_id(m, p + "padding_token_id", size);
  // llama.cpp's defaults: SentencePiece adds BOS, BPE as its pre-tokenizer says (llama-bpe does).
  const bool bos_default = v.model == "llama" || v.pre == "llama-bpe" || v.pre == "llama3" || v.pre == "llama-v3";
  v.add_bos = flag(m, p + "add_bos_token", bos_default);
  v.add_eos = flag(m, p + "add_eos_token", false);
  v.add_space_prefix = flag(m, p + "add_space_prefix", v.model == "llama");
  return v;
}

std::vector<GgufKeyValue> vocabulary_metadata(const Vocabulary& v) {
  const std::string p = kPrefix;
  std::vector<GgufKeyValue> kv{{p + "model", GgufValue::of_string(v.model)}};
  if (!v.pre.empty()) kv.push_back({p + "pre", GgufValue::of_string(v.pre)});
  kv.push_back({p + "tokens", GgufValue::of_strings(v.tokens)});
  std::vector<int32_t> types(v.types.size());
  std::transform(v.types.begin(), v.types.end(), types.begin(), [](TokenType t) { return static_cast<int32_t>(t); });
  kv.push_back({p + "token_type", GgufValue::of_i32s(types)});
  if (!v.scores.empty()) kv.push_back({p + "scores", GgufValue::of_f32s(v.scores)});
  if (v.model == "gpt2") kv.push_back({p + "merges", GgufValue::of_strings(v.merges)});
  const auto id = [&](const char* key, std::optional<uint32_t> t) {
    if (t) kv.push_back({p + key, GgufValue::of_u32(*t)});
  };
  id("bos_token_id", v.bos);
  id("eos_token_id", v.eos);
  id("unknown_token_id", v.unk);
  id("padding_token_id", v.pad);
  kv.push_back({p + "add_bos_token", GgufValue::of_bool(v.add_bos)});
  kv.push_back({p + "add_eos_token", GgufValue::of_bool(v.add_eos)});
  if (v.model == "llama") kv.push_back({p + "add_space_prefix", GgufValue::of_bool(v.add_space_prefix)});
  return kv;
}

Vocabulary vocabulary_for(const ModelSpec& spec) {
  if (is_gguf_path(spec.source)) {
    Vocabulary v = vocabulary_from_gguf(read_gguf_model(spec.source));
    if (v.size() == spec.vocab) return v;  // a --scale'd shape has fewer ids than the file's vocabulary
  }
  return synthetic_vocabulary(spec);
}

namespace {

std::vector<std::string> code_points(const std::string& text) {
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size();) {
    const auto lead = static_cast<uint8_t>(text[i]);
    const size_t len = std::min<size_t>(lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4, text.size() - i);
    out.push_back(text.substr(i, len));
    i += len;
  }
  return out;
}

// BPE training: words (code point sequences, counted) merged pair by pair, the most frequent
// adjacent pair first (ties by text), until no pair occurs twice or `new_tokens` distinct merged
// texts exist. Returns the merges in order.
std::vector<std::pair<std::string, std::string>> learn_merges(const std::map<std::string, uint64_t>& counts,
                                                              uint64_t new_tokens) {
  struct Word {
    std::vector<std::string> symbols;
    uint64_t count;
  };
  std::vector<Word> words;
  for (const auto& [text, count] : counts) words.push_back({code_points(text), count});
  std::vector<std::pair<std::string, std::string>> merges;
  std::set<std::string> made;
  while (made.size() < new_tokens) {
    std::map<std::pair<std::string, std::string>, uint64_t> pairs;
    for (const Word& w : words)
      for (size_t i = 0; i + 1 < w.symbols.size(); ++i) pairs[{w.symbols[i], w.symbols[i + 1]}] += w.count;
    auto best = pairs.end();
    for (auto it = pairs.begin(); it != pairs.end(); ++it)
      if (best == pairs.end() || it->second > best->second) best = it;
    if (best == pairs.end() || best->second < 2) break;
    const auto [left, right] = best->first;
    merges.emplace_back(left, right);
    made.insert(left + right);
    for (Word& w : words)
      for (size_t i = 0; i + 1 < w.symbols.size(); ++i)
        if (w.symbols[i] == left && w.symbols[i + 1] == right) {
          w.symbols[i] += right;
          w.symbols.erase(w.symbols.begin() + static_cast<std::ptrdiff_t>(i) + 1);
        }
  }
  return merges;
}

void add_token(Vocabulary& v, std::string text, TokenType type, float score = 0.0f) {
  v.tokens.push_back(std::move(text));
  v.types.push_back(type);
  if (v.model == "llama") v.scores.push_back(score);
}

// Llama 2's shape: <unk>, <s>, </s>, the 256 byte tokens, the corpus's characters, then pieces
// learned as BPE merges over words that begin at a space (U+2581), scored so that earlier merges
// win (SentencePiece merges by score); unused filler tokens to the size.
Vocabulary synthetic_sentencepiece(const ModelSpec& spec) {
  Vocabulary v;
  v.model = "llama";
  v.source = "synthetic";
  if (spec.vocab < 259 + 64 || spec.vocab > UINT32_MAX)
    throw InputError(fmt::format("{}: vocab_size {} cannot hold a SentencePiece vocabulary (3 special tokens, 256 "
                                 "bytes and the characters)", spec.name, spec.vocab));
  add_token(v, "<unk>", TokenType::unknown);
  add_token(v, "<s>", TokenType::control);
  add_token(v, "</s>", TokenType::control);
  for (int b = 0; b < 256; ++b) add_token(v, fmt::format("<0x{:02X}>", b), TokenType::byte);
  v.unk = 0;
  v.bos = 1;
  v.eos = 2;
  v.add_bos = true;
  const std::string space = "\xE2\x96\x81";
  std::map<std::string, uint64_t> counts;
  std::map<std::string, uint64_t> chars;
  std::string word;
  const auto flush = [&] {
    if (!word.empty()) ++counts[word];
    word.clear();
  };
  for (const std::string& c : code_points(" " + std::string(synthetic_corpus()))) {
    if (c == " ") {
      flush();
      word = space;
    } else if (static_cast<uint8_t>(c[0]) < 0x20) {  // control characters: byte fallback
      flush();
    } else {
      word += c;
      ++chars[c];
    }
  }
  flush();
  ++chars[space];
  std::vector<std::pair<std::string, uint64_t>> by_count(chars.begin(), chars.end());
  std::stable_sort(by_count.begin(), by_count.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  const uint64_t room = spec.vocab - v.size();
  for (size_t i = 0; i < by_count.size() && i < room; ++i)
    add_token(v, by_count[i].first, TokenType::normal, -1e6f - static_cast<float>(i));
  std::set<std::string> known(v.tokens.begin(), v.tokens.end());
  const auto merges = learn_merges(counts, spec.vocab - v.size());
  for (size_t r = 0; r < merges.size() && v.size() < spec.vocab; ++r) {
    const std::string text = merges[r].first + merges[r].second;
    if (known.insert(text).second) add_token(v, text, TokenType::normal, -static_cast<float>(r));
  }
  for (uint64_t i = 0; v.size() < spec.vocab; ++i) add_token(v, fmt::format("<unused{}>", i), TokenType::unused, -1e9f);
  return v;
}

}  // namespace

Vocabulary synthetic_vocabulary(const ModelSpec& spec, VocabularyKind kind) {
  if (kind == VocabularyKind::sentencepiece) return synthetic_sentencepiece(spec);
  Vocabulary v;
  v.model = "gpt2";
  v.source = "synthetic";
  const bool llama = spec.gguf_arch == "llama";
  v.pre = llama ? "llama-bpe" : "qwen2";
  const std::vector<std::string> specials =
      llama ? std::vector<std::string>{"<|begin_of_text|>", "<|end_of_text|>"}
            : std::vector<std::string>{"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  if (spec.vocab < 256 + specials.size() || spec.vocab > UINT32_MAX)
    throw InputError(fmt::format("{}: vocab_size {} cannot hold a byte-level vocabulary (256 byte tokens and {} "
                                 "special ones)", spec.name, spec.vocab, specials.size()));
  for (uint32_t b = 0; b < 256; ++b) add_token(v, byte_to_unicode(static_cast<uint8_t>(b)), TokenType::normal);
  // Words of the corpus as the pre-tokenizer splits them, bytes mapped to GPT-2's code points.
  std::map<std::string, uint64_t> counts;
  for (const std::string& piece : pre_tokenize(v.pre, synthetic_corpus())) {
    std::string mapped;
    for (const char c : piece) mapped += byte_to_unicode(static_cast<uint8_t>(c));
    ++counts[mapped];
  }
  std::set<std::string> known(v.tokens.begin(), v.tokens.end());
  for (const auto& [left, right] : learn_merges(counts, spec.vocab - 256 - specials.size())) {
    v.merges.push_back(left + " " + right);
    if (known.insert(left + right).second) add_token(v, left + right, TokenType::normal);
  }
  for (uint64_t i = 0; v.size() < spec.vocab - specials.size(); ++i)
    add_token(v, fmt::format("<|unused_{}|>", i), TokenType::unused);
  for (const std::string& s : specials) add_token(v, s, TokenType::control);
  const auto first_special = static_cast<uint32_t>(spec.vocab - specials.size());
  if (llama) {
    v.bos = first_special;
    v.eos = first_special + 1;
    v.add_bos = true;
  } else {
    v.eos = first_special + 2;  // <|im_end|>, as Qwen3's chat models end a turn
    v.pad = first_special;      // <|endoftext|>
  }
  return v;
}

}  // namespace infer_plan::tokenizer
