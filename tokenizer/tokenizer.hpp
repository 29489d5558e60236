// Text to token ids and back, from a model's vocabulary, as llama.cpp tokenizes:
// - byte-level BPE (tokenizer.ggml.model "gpt2": Llama 3, Qwen2/3): the text split by the
//   vocabulary's pre-tokenizer pattern (qwen2, llama-bpe, gpt-2; PCRE2 with Unicode properties),
//   each piece's bytes mapped to GPT-2's printable code points, then merged pair by pair, the
//   lowest-ranked merge first (leftmost on ties); llama-bpe takes a piece that is itself a token
//   whole (ignore_merges);
// - SentencePiece ("llama": Llama 2, Mistral): spaces as U+2581, a space before the text, then
//   adjacent symbols merged by the merged token's score, highest first; a symbol that is no token
//   falls back to its bytes' <0xXX> tokens.
// Control and user-defined token texts in the text become those tokens (llama.cpp's
// parse_special, longest first); BOS/EOS are added as the vocabulary says.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/vocabulary.hpp"

namespace infer_plan::tokenizer {

class Tokenizer {
 public:
  // InputError for a tokenizer model or pre-tokenizer it does not implement (naming the key).
  explicit Tokenizer(Vocabulary vocabulary);
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  // InputError for text that is not valid UTF-8 (naming the byte offset).
  std::vector<uint32_t> encode(std::string_view text, bool add_special = true, bool parse_special = true) const;
  // The bytes the tokens stand for (may end inside a UTF-8 character); control tokens only with
  // render_special. InputError for an id outside the vocabulary.
  std::string decode(std::span<const uint32_t> ids, bool render_special = false) const;
  std::string piece(uint32_t id, bool render_special = false) const;

  const Vocabulary& vocabulary() const { return vocab_; }

 private:
  struct Pattern;
  void encode_bpe(std::string_view text, std::vector<uint32_t>& out) const;
  void encode_spm(std::string_view text, std::vector<uint32_t>& out) const;
  std::optional<uint32_t> find(std::string_view text) const;

  Vocabulary vocab_;
  std::unordered_map<std::string, uint32_t> ids_;          // token text -> first id with it
  std::unordered_map<std::string, uint32_t> merge_rank_;   // "left right" -> rank (BPE)
  std::vector<uint32_t> specials_;                         // parsed in text, longest first
  std::unique_ptr<Pattern> pattern_;                       // BPE's pre-tokenizer
  bool ignore_merges_ = false;
  uint32_t byte_tokens_[256] = {};                         // SPM: <0xXX>; BPE: the byte's code point
};

// Refuses text that is not valid UTF-8, naming `what` and the first bad byte's offset.
void check_utf8(std::string_view text, std::string_view what);

// The pieces BPE's pre-tokenizer `pre` (qwen2, llama-bpe, gpt-2) splits `text` into, in order,
// covering it exactly (text between matches is a piece too). InputError for another name.
std::vector<std::string> pre_tokenize(std::string_view pre, std::string_view text);

}  // namespace infer_plan::tokenizer
