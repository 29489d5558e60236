// The tokenizer against hand-checked splits and GPT-2's byte map, a hand-built SentencePiece
// vocabulary, round trips over varied text with the synthetic vocabulary, special tokens, bad
// input, and the vocabulary's GGUF keys read back. llama.cpp's own tokenizer is compared on a few
// hundred strings by the conformance test (tests/conformance).
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <vector>

#include "planner/catalog/catalog.hpp"
#include "planner/core/input_error.hpp"
#include "tests/support/toy_gguf.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/vocabulary.hpp"

using namespace infer_plan;
using namespace infer_plan::tokenizer;

namespace {
const std::vector<std::string> kVaried = {
    "Hello, world!", "  leading and trailing  ", "tabs\tand\nnewlines\r\n\n", "I'm sure they'll say we've won",
    "1234567890 and 3.14159", "大型语言模型的推理", "emoji 🚀✨👍 mixed", "Привет, мир", "naïve café résumé",
    "code: for (int i = 0; i < n; ++i) { x[i] = 0; }", "", " ", "\n\n\n", "a", "    four spaces"};
}  // namespace

TEST_CASE("GPT-2's byte map: printable bytes as themselves, the rest from U+0100") {
  CHECK(byte_to_unicode('A') == "A");
  CHECK(byte_to_unicode(' ') == "\xC4\xA0");   // U+0120 'Ġ': byte 32 is the 33rd non-printable
  CHECK(byte_to_unicode('\n') == "\xC4\x8A");  // U+010A 'Ċ': byte 10 the 11th
  CHECK(byte_to_unicode(0) == "\xC4\x80");     // U+0100
  for (int b = 0; b < 256; ++b) CHECK(unicode_to_byte(byte_to_unicode(static_cast<uint8_t>(b))) == b);
}

TEST_CASE("pre-tokenizers split as their patterns say") {
  // qwen2: digits one by one; a space that precedes a non-letter stays alone; contractions split.
  CHECK(pre_tokenize("qwen2", "Hello world") == std::vector<std::string>{"Hello", " world"});
  CHECK(pre_tokenize("qwen2", "I'm 123 abc") == std::vector<std::string>{"I", "'m", " ", "1", "2", "3", " abc"});
  // llama-bpe: digits in runs of up to three.
  CHECK(pre_tokenize("llama-bpe", "I'm 12345") == std::vector<std::string>{"I", "'m", " ", "123", "45"});
  // Whitespace before a word leaves its last space to the word; newlines go with what precedes.
  CHECK(pre_tokenize("qwen2", "a   b\n\nc") == std::vector<std::string>{"a", "  ", " b", "\n\n", "c"});
  CHECK(pre_tokenize("gpt-2", "Hello world!!") == std::vector<std::string>{"Hello", " world", "!!"});
  CHECK_THROWS_WITH_AS(pre_tokenize("falcon", "x"), doctest::Contains("'falcon' is not implemented"), InputError);
  for (const std::string& s : kVaried) {  // the pieces cover the text exactly
    std::string joined;
    for (const std::string& p : pre_tokenize("qwen2", s)) joined += p;
    CHECK(joined == s);
  }
}

TEST_CASE("synthetic vocabulary: its size, learned merges, specials; text round trips") {
  const ModelSpec spec = load_model("tests/data/tiny_config.json");  // vocab 1024, qwen3
  const Vocabulary v = synthetic_vocabulary(spec);
  REQUIRE(v.size() == spec.vocab);
  CHECK(v.pre == "qwen2");
  CHECK(v.merges.size() > 300);
  CHECK(v.tokens[v.size() - 1] == "<|im_end|>");
  CHECK(v.eos == v.size() - 1);
  const Tokenizer t(v);
  for (const std::string& s : kVaried) {
    CAPTURE(s);
    const std::vector<uint32_t> ids = t.encode(s);
    CHECK(t.decode(ids) == s);
    CHECK(ids.size() <= s.size());  // at most one token per byte
  }
  // Common words of the corpus are single tokens ("Ġthe": space + "the").
  CHECK(t.encode(" the").size() == 1);
  CHECK(t.encode("The model").size() < 9);
  // Special tokens in the text, or their bytes when not parsed.
  const std::vector<uint32_t> chat = t.encode("<|im_start|>user");
  REQUIRE(!chat.empty());
  CHECK(chat[0] == v.size() - 2);
  CHECK(t.encode("<|im_start|>", true, false).size() > 1);
  CHECK(t.decode(chat) == "user");  // control tokens are not rendered ...
  CHECK(t.decode(chat, true) == "<|im_start|>user");  // ... unless asked

  // Llama 3's family: BOS first, digits in threes.
  ModelSpec llama = spec;
  llama.gguf_arch = "llama";
  const Tokenizer l(synthetic_vocabulary(llama));
  const std::vector<uint32_t> ids = l.encode("12345");
  REQUIRE(ids.size() >= 2);
  CHECK(ids[0] == *l.vocabulary().bos);
  CHECK(l.decode(ids) == "12345");
  ModelSpec tiny = spec;
  tiny.vocab = 200;
  CHECK_THROWS_WITH_AS(synthetic_vocabulary(tiny), doctest::Contains("vocab_size 200 cannot hold"), InputError);
}

TEST_CASE("SentencePiece by hand: merges by score, byte fallback, the space before the text") {
  // "▁ab" (score -1) beats "▁a" (-2); "ab" (-3) is never reached for " ab"; 'c' is no token, so
  // its byte 0x63 falls back to <0x63>.
  Vocabulary v;
  v.model = "llama";
  v.source = "hand";
  const auto add = [&](const std::string& text, float score, TokenType type) {
    v.tokens.push_back(text);
    v.scores.push_back(score);
    v.types.push_back(type);
    return static_cast<uint32_t>(v.tokens.size() - 1);
  };
  const uint32_t unk = add("<unk>", 0, TokenType::unknown), bos = add("<s>", 0, TokenType::control);
  add("</s>", 0, TokenType::control);
  for (int b = 0; b < 256; ++b) add(fmt::format("<0x{:02X}>", b), 0, TokenType::byte);
  const uint32_t space = add("\xE2\x96\x81", -5, TokenType::normal), a = add("a", -6, TokenType::normal);
  add("b", -6, TokenType::normal);
  const uint32_t ab_word = add("\xE2\x96\x81" "ab", -1, TokenType::normal);
  add("\xE2\x96\x81" "a", -2, TokenType::normal);
  add("ab", -3, TokenType::normal);
  v.unk = unk;
  v.bos = bos;
  v.add_bos = true;
  const Tokenizer t(v);
  CHECK(t.encode("ab") == std::vector<uint32_t>{bos, ab_word});
  CHECK(t.encode("ab c") == std::vector<uint32_t>{bos, ab_word, space, 3 + 0x63});
  CHECK(t.encode("a", false) == std::vector<uint32_t>{v.size() - 2});  // "▁a"
  CHECK(t.decode(t.encode("ab c")) == "ab c");
  CHECK(a == 3 + 256 + 1);
}

TEST_CASE("synthetic SentencePiece vocabulary: Llama 2's layout, pieces by score, text round trips") {
  const ModelSpec spec = load_model("tests/conformance/models/llama.json");
  const Vocabulary v = synthetic_vocabulary(spec, VocabularyKind::sentencepiece);
  REQUIRE(v.size() == spec.vocab);
  CHECK(v.model == "llama");
  CHECK(v.tokens[0] == "<unk>");
  CHECK(v.tokens[1] == "<s>");
  CHECK(v.tokens[3] == "<0x00>");
  CHECK(v.types[3] == TokenType::byte);
  CHECK(v.scores.size() == v.size());
  const Tokenizer t(v);
  for (const std::string& s : kVaried) {
    CAPTURE(s);
    const std::vector<uint32_t> ids = t.encode(s);
    REQUIRE(!ids.empty());
    CHECK(ids[0] == 1);  // <s>
    CHECK(t.decode(ids) == s);
  }
  CHECK(t.encode(" the", false).size() <= 2);  // "▁the" was learned (or "▁▁" + "the")
  const std::vector<uint32_t> newline = t.encode("\n", false);
  CHECK(newline.back() == 3 + 0x0A);  // no piece for a newline: its byte token
}

TEST_CASE("bad input: invalid UTF-8, unknown ids, unsupported tokenizers") {
  const Tokenizer t(synthetic_vocabulary(load_model("tests/data/tiny_config.json")));
  CHECK_THROWS_WITH_AS(t.encode("ok\xC3("), doctest::Contains("not valid UTF-8 at byte 2"), InputError);
  CHECK_THROWS_WITH_AS(t.encode("\xED\xA0\x80"), doctest::Contains("not valid UTF-8 at byte 0"), InputError);  // a surrogate
  CHECK_THROWS_WITH_AS(t.decode(std::vector<uint32_t>{5000}), doctest::Contains("token 5000 is not in the vocabulary"),
                       InputError);
  Vocabulary v = t.vocabulary();
  v.model = "rwkv";
  CHECK_THROWS_WITH_AS(Tokenizer{v}, doctest::Contains("tokenizer.ggml.model 'rwkv' is not implemented"), InputError);
  v.model = "gpt2";
  v.pre = "chatglm-bpe";
  CHECK_THROWS_WITH_AS(Tokenizer{v}, doctest::Contains("tokenizer.ggml.pre 'chatglm-bpe'"), InputError);
}

TEST_CASE("the vocabulary's GGUF keys read back as written") {
  const Vocabulary v = synthetic_vocabulary(load_model("tests/data/tiny_config.json"));
  const std::string path = "/tmp/infer-plan-vocab.gguf";
  test_support::write_toy_gguf_with(path, vocabulary_metadata(v));
  const Vocabulary back = vocabulary_from_gguf(read_gguf_model(path));
  CHECK(back.model == v.model);
  CHECK(back.pre == v.pre);
  CHECK(back.tokens == v.tokens);
  CHECK(back.types == v.types);
  CHECK(back.merges == v.merges);
  CHECK(back.eos == v.eos);
  CHECK(back.pad == v.pad);
  CHECK(back.add_bos == v.add_bos);
  test_support::write_toy_gguf_with(path, "general.name", GgufValue::of_string("no vocabulary"));
  CHECK_THROWS_WITH_AS(vocabulary_from_gguf(read_gguf_model(path)), doctest::Contains("has no vocabulary"), InputError);
  std::remove(path.c_str());
}
