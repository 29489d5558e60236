// A model's vocabulary as a GGUF stores it (tokenizer.ggml.*): the tokenizer type, the token
// texts, types and scores, BPE's merges, and the special tokens. Read from a GGUF, written back as
// its keys, or made for a synthetic model: a byte-level BPE vocabulary whose merges are learned
// from a small built-in text, so that files the project writes load in llama.cpp and tokenize as
// a real model's would.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "planner/model/model_spec.hpp"
#include "planner/weights/gguf_reader.hpp"

namespace infer_plan::tokenizer {

// llama.cpp's token types (tokenizer.ggml.token_type).
enum class TokenType : int32_t { normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6 };

struct Vocabulary {
  std::string model;  // tokenizer.ggml.model: "gpt2" (byte-level BPE) or "llama" (SentencePiece)
  std::string pre;    // tokenizer.ggml.pre (BPE's pre-tokenizer): "qwen2", "llama-bpe", "gpt-2"
  std::vector<std::string> tokens;
  std::vector<TokenType> types;     // one per token
  std::vector<float> scores;        // SentencePiece: merge priorities, one per token; BPE: empty
  std::vector<std::string> merges;  // BPE: "left right", earlier merges first
  std::optional<uint32_t> bos, eos, unk, pad;
  bool add_bos = false, add_eos = false;
  bool add_space_prefix = true;     // SentencePiece: a space before the text
  std::string source;               // for messages: the file it came from, or "synthetic"

  uint32_t size() const { return static_cast<uint32_t>(tokens.size()); }
};

// Reads tokenizer.ggml.* from a GGUF's metadata. InputError, naming the key, when the model has
// no vocabulary or a key has the wrong type or length.
Vocabulary vocabulary_from_gguf(const GgufModel& m);

// The tokenizer.ggml.* keys for `v`, as llama.cpp reads them.
std::vector<GgufKeyValue> vocabulary_metadata(const Vocabulary& v);

// A byte-level BPE vocabulary of exactly spec.vocab tokens for a synthetic model: the 256 byte
// tokens, merges learned from a built-in text (the most frequent pair first, ties by text), the
// model family's special tokens last (Qwen's <|endoftext|>, <|im_start|>, <|im_end|>; Llama 3's
// <|begin_of_text|>, <|end_of_text|>), unused filler tokens between when the text runs out of
// pairs. Its pre-tokenizer is the family's (qwen2 or llama-bpe). InputError when spec.vocab is
// too small to hold the bytes and the special tokens. `sentencepiece`: Llama 2's kind instead
// (<unk>, <s>, </s>, byte tokens, the text's characters, pieces scored by merge order).
enum class VocabularyKind { bpe, sentencepiece };
Vocabulary synthetic_vocabulary(const ModelSpec& spec, VocabularyKind kind = VocabularyKind::bpe);

// The vocabulary a model tokenizes with: a .gguf's own, else the synthetic one (config.json and
// built-in models carry no vocabulary, and the runtime's weights for them are synthetic too; a
// .gguf shape shrunk by --scale has fewer ids than its file's vocabulary, so it gets one too).
Vocabulary vocabulary_for(const ModelSpec& spec);

// GPT-2's byte-level encoding: each byte as one printable code point (bytes 33..126, 161..172
// and 174..255 as themselves, the others from U+0100 on), in UTF-8; and back.
const std::string& byte_to_unicode(uint8_t byte);
std::optional<uint8_t> unicode_to_byte(std::string_view utf8_char);

// The text the model was trained on when the vocabulary is synthetic (for its merges), kept
// beside the tokenizer tests' strings.
std::string_view synthetic_corpus();

}  // namespace infer_plan::tokenizer
