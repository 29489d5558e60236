#include "tokenizer/tokenizer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <queue>

#include "planner/core/input_error.hpp"

#if INFER_PLAN_HAVE_PCRE2
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#endif

namespace infer_plan::tokenizer {
namespace {

// llama.cpp's patterns (the lookahead-free spelling of transformers' case-insensitive
// contractions), by tokenizer.ggml.pre.
const char* pattern_of(std::string_view pre) {
  if (pre == "qwen2" || pre == "deepseek-r1-qwen")
    return R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3")
    return R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  if (pre == "gpt-2") return R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
  return nullptr;
}

size_t utf8_length(uint8_t lead) { return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }

// A merge candidate: two adjacent symbols and what ranks them (BPE: merge rank, lower first;
// SentencePiece: the merged token's score, higher first); ties go to the leftmost.
struct Candidate {
  double priority;  // lower pops first
  int left, right;
  size_t bytes;     // the merged length, to tell a stale candidate
  bool operator>(const Candidate& o) const { return priority != o.priority ? priority > o.priority : left > o.left; }
};

struct Symbol {
  int prev, next;
  size_t start, bytes;
};

// Merges the code points of `text` pairwise by `rank` (nullopt: not mergeable) until none
// applies; returns the surviving symbols' texts in order.
template <typename Rank>
std::vector<std::string_view> merge_symbols(std::string_view text, Rank rank) {
  std::vector<Symbol> syms;
  for (size_t i = 0; i < text.size();) {
    const size_t n = std::min(utf8_length(static_cast<uint8_t>(text[i])), text.size() - i);
    const int index = static_cast<int>(syms.size());
    syms.push_back({index - 1, -1, i, n});
    if (index > 0) syms[index - 1].next = index;
    i += n;
  }
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  const auto consider = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol &a = syms[left], &b = syms[right];
    if (const std::optional<double> r = rank(text.substr(a.start, a.bytes), text.substr(b.start, b.bytes)))
      queue.push({*r, left, right, a.bytes + b.bytes});
  };
  for (size_t i = 1; i < syms.size(); ++i) consider(static_cast<int>(i) - 1, static_cast<int>(i));
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol &a = syms[c.left], &b = syms[c.right];
    if (a.bytes == 0 || b.bytes == 0 || a.next != c.right || a.bytes + b.bytes != c.bytes) continue;  // stale
    a.bytes += b.bytes;
    b.bytes = 0;
    a.next = b.next;
    if (b.next >= 0) syms[b.next].prev = c.left;
    consider(a.prev, c.left);
    consider(c.left, a.next);
  }
  std::vector<std::string_view> out;
  for (int i = syms.empty() ? -1 : 0; i >= 0; i = syms[i].next) out.push_back(text.substr(syms[i].start, syms[i].bytes));
  return out;
}

}  // namespace

#if INFER_PLAN_HAVE_PCRE2
struct Tokenizer::Pattern {
  pcre2_code* code = nullptr;
  Pattern() = default;
  Pattern(const Pattern&) = delete;
  Pattern& operator=(const Pattern&) = delete;
  ~Pattern() { pcre2_code_free(code); }
};

namespace {
pcre2_code* compile(const char* pattern) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern), PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (!code) throw std::logic_error(fmt::format("tokenizer: pattern does not compile at {}", offset));
  return code;
}

std::vector<std::string> split(pcre2_code* code, std::string_view text) {
  std::vector<std::string> pieces;
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
  size_t offset = 0, done = 0;
  while (offset < text.size()) {
    const int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), offset, PCRE2_NO_UTF_CHECK,
                               md, nullptr);
    if (rc < 0) break;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    if (ov[0] > done) pieces.emplace_back(text.substr(done, ov[0] - done));  // text no alternative matched
    if (ov[1] == ov[0]) {  // an empty match: step over one code point
      offset = ov[1] + utf8_length(static_cast<uint8_t>(text[ov[1]]));
      continue;
    }
    pieces.emplace_back(text.substr(ov[0], ov[1] - ov[0]));
    offset = done = ov[1];
  }
  if (done < text.size()) pieces.emplace_back(text.substr(done));
  pcre2_match_data_free(md);
  return pieces;
}
}  // namespace

std::vector<std::string> pre_tokenize(std::string_view pre, std::string_view text) {
  const char* pattern = pattern_of(pre);
  if (!pattern)
    throw InputError(fmt::format("tokenizer: pre-tokenizer '{}' is not implemented (qwen2, llama-bpe, gpt-2 are)", pre));
  check_utf8(text, "text");
  const std::unique_ptr<pcre2_code, void (*)(pcre2_code*)> code(compile(pattern), pcre2_code_free);
  return split(code.get(), text);
}
#else
struct Tokenizer::Pattern {};

std::vector<std::string> pre_tokenize(std::string_view, std::string_view) {
  throw InputError("tokenizer: this build has no PCRE2 (Debian's libpcre2-dev), which BPE's pre-tokenizer needs");
}
#endif

void check_utf8(std::string_view text, std::string_view what) {
  for (size_t i = 0; i < text.size();) {
    const auto lead = static_cast<uint8_t>(text[i]);
    size_t n = 0;
    uint32_t cp = 0;
    if (lead < 0x80) n = 1, cp = lead;
    else if (lead >= 0xC2 && lead < 0xE0) n = 2, cp = lead & 0x1F;
    else if (lead >= 0xE0 && lead < 0xF0) n = 3, cp = lead & 0x0F;
    else if (lead >= 0xF0 && lead < 0xF5) n = 4, cp = lead & 0x07;
    bool ok = n > 0 && i + n <= text.size();
    for (size_t k = 1; ok && k < n; ++k) {
      const auto c = static_cast<uint8_t>(text[i + k]);
      ok = (c & 0xC0) == 0x80;
      cp = (cp << 6) | (c & 0x3F);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8 either.
    ok = ok && !(n == 3 && cp < 0x800) && !(n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) && !(cp >= 0xD800 && cp <= 0xDFFF);
    if (!ok) throw InputError(fmt::format("{} is not valid UTF-8 at byte {} (0x{:02x})", what, i, lead));
    i += n;
  }
}

Tokenizer::Tokenizer(Vocabulary vocabulary) : vocab_(std::move(vocabulary)) {
  const std::string& where = vocab_.source;
  if (vocab_.model != "gpt2" && vocab_.model != "llama")
    throw InputError(fmt::format("{}: tokenizer.ggml.model '{}' is not implemented (gpt2: byte-level BPE, llama: "
                                 "SentencePiece)", where, vocab_.model));
  if (vocab_.types.size() != vocab_.tokens.size())
    throw InputError(fmt::format("{}: {} token types for {} tokens", where, vocab_.types.size(), vocab_.tokens.size()));
  for (uint32_t id = 0; id < vocab_.size(); ++id) ids_.try_emplace(vocab_.tokens[id], id);
  if (vocab_.model == "gpt2") {
    const char* pattern = pattern_of(vocab_.pre);
    if (!pattern)
      throw InputError(fmt::format("{}: tokenizer.ggml.pre '{}' is not implemented (qwen2, llama-bpe, gpt-2 are)",
                                   where, vocab_.pre));
#if INFER_PLAN_HAVE_PCRE2
    pattern_ = std::make_unique<Pattern>();
    pattern_->code = compile(pattern);
#else
    pre_tokenize(vocab_.pre, "");  // says why
#endif
    ignore_merges_ = vocab_.pre == "llama-bpe" || vocab_.pre == "llama3" || vocab_.pre == "llama-v3";
    for (size_t i = 0; i < vocab_.merges.size(); ++i) merge_rank_.try_emplace(vocab_.merges[i], static_cast<uint32_t>(i));
    for (int b = 0; b < 256; ++b) {
      const auto id = find(byte_to_unicode(static_cast<uint8_t>(b)));
      if (!id) throw InputError(fmt::format("{}: byte-level vocabulary has no token for byte 0x{:02x}", where, b));
      byte_tokens_[b] = *id;
    }
  } else {
    if (vocab_.scores.size() != vocab_.tokens.size())
      throw InputError(fmt::format("{}: SentencePiece needs tokenizer.ggml.scores, one per token", where));
    for (int b = 0; b < 256; ++b) {
      const auto id = find(fmt::format("<0x{:02X}>", b));
      byte_tokens_[b] = id ? *id : vocab_.unk.value_or(0);
    }
  }
  for (uint32_t id = 0; id < vocab_.size(); ++id)
    if ((vocab_.types[id] == TokenType::control || vocab_.types[id] == TokenType::user_defined ||
         vocab_.types[id] == TokenType::unknown) && !vocab_.tokens[id].empty())
      specials_.push_back(id);
  std::stable_sort(specials_.begin(), specials_.end(),
                   [&](uint32_t a, uint32_t b) { return vocab_.tokens[a].size() > vocab_.tokens[b].size(); });
}

Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

std::optional<uint32_t> Tokenizer::find(std::string_view text) const {
  const auto it = ids_.find(std::string(text));
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

std::vector<uint32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  check_utf8(text, "text");
  // Fragments: raw text, or a special token found in it (the longest special first).
  struct Fragment {
    std::string_view text;
    std::optional<uint32_t> token;
  };
  std::vector<Fragment> fragments{{text, std::nullopt}};
  for (const uint32_t id : specials_) {
    const TokenType type = vocab_.types[id];
    if (!parse_special && type != TokenType::user_defined) continue;
    const std::string& special = vocab_.tokens[id];
    std::vector<Fragment> next;
    for (const Fragment& f : fragments) {
      if (f.token) {
        next.push_back(f);
        continue;
      }
      size_t at = 0;
      for (size_t hit; (hit = f.text.find(special, at)) != std::string_view::npos; at = hit + special.size()) {
        if (hit > at) next.push_back({f.text.substr(at, hit - at), std::nullopt});
        next.push_back({{}, id});
      }
      if (at < f.text.size()) next.push_back({f.text.substr(at), std::nullopt});
    }
    fragments = std::move(next);
  }
  std::vector<uint32_t> out;
  if (add_special && vocab_.add_bos && vocab_.bos) out.push_back(*vocab_.bos);
  bool previous_special = true;
  for (const Fragment& f : fragments) {
    if (f.token) {
      out.push_back(*f.token);
      previous_special = true;
      continue;
    }
    if (vocab_.model == "gpt2") {
      encode_bpe(f.text, out);
    } else {
      std::string spm = vocab_.add_space_prefix && previous_special ? " " : "";
      spm += f.text;
      encode_spm(spm, out);
    }
    previous_special = false;
  }
  if (add_special && vocab_.add_eos && vocab_.eos) out.push_back(*vocab_.eos);
  return out;
}

void Tokenizer::encode_bpe(std::string_view text, std::vector<uint32_t>& out) const {
#if INFER_PLAN_HAVE_PCRE2
  for (const std::string& piece : split(pattern_->code, text)) {
    std::string word;
    for (const char c : piece) word += byte_to_unicode(static_cast<uint8_t>(c));
    if (ignore_merges_)
      if (const auto id = find(word)) {
        out.push_back(*id);
        continue;
      }
    std::string key;
    const auto rank = [&](std::string_view a, std::string_view b) -> std::optional<double> {
      key.assign(a);
      key += ' ';
      key += b;
      const auto it = merge_rank_.find(key);
      if (it == merge_rank_.end()) return std::nullopt;
      return static_cast<double>(it->second);
    };
    for (const std::string_view symbol : merge_symbols(word, rank)) {
      if (const auto id = find(symbol)) {
        out.push_back(*id);
        continue;
      }
      for (size_t i = 0; i < symbol.size();) {  // a symbol no token names: its bytes
        const size_t n = utf8_length(static_cast<uint8_t>(symbol[i]));
        const auto byte = unicode_to_byte(symbol.substr(i, n));
        out.push_back(byte ? byte_tokens_[*byte] : vocab_.unk.value_or(0));
        i += n;
      }
    }
  }
#else
  (void)text;
  (void)out;
#endif
}

void Tokenizer::encode_spm(std::string_view text, std::vector<uint32_t>& out) const {
  std::string escaped;
  for (const char c : text) escaped += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
  // Merge by the merged token's score (higher first: priority is its negative).
  const auto score = [&](std::string_view a, std::string_view b) -> std::optional<double> {
    std::string joined(a);
    joined += b;
    const auto id = find(joined);
    if (!id) return std::nullopt;
    return -static_cast<double>(vocab_.scores[*id]);
  };
  for (const std::string_view symbol : merge_symbols(escaped, score)) {
    if (const auto id = find(symbol)) {
      out.push_back(*id);
      continue;
    }
    for (const char c : symbol) out.push_back(byte_tokens_[static_cast<uint8_t>(c)]);  // byte fallback
  }
}

std::string Tokenizer::piece(uint32_t id, bool render_special) const {
  if (id >= vocab_.size())
    throw InputError(fmt::format("token {} is not in the vocabulary (ids 0..{})", id, vocab_.size() - 1));
  const std::string& text = vocab_.tokens[id];
  switch (vocab_.types[id]) {
    case TokenType::control: return render_special ? text : std::string();
    case TokenType::user_defined: return text;
    case TokenType::unused: return render_special ? text : std::string();
    case TokenType::unknown: return vocab_.model == "llama" ? std::string("\xE2\x96\x85") : text;
    case TokenType::byte: {  // <0xXX>
      unsigned value = 0;
      const auto [end, ec] = std::from_chars(text.data() + std::min<size_t>(3, text.size()), text.data() + text.size(), value, 16);
      if (text.size() == 6 && text.starts_with("<0x") && ec == std::errc() && end == text.data() + 5 && text[5] == '>')
        return std::string(1, static_cast<char>(value));
      return text;
    }
    default: break;
  }
  std::string bytes;
  if (vocab_.model == "gpt2") {
    for (size_t i = 0; i < text.size();) {
      const size_t n = std::min(utf8_length(static_cast<uint8_t>(text[i])), text.size() - i);
      const auto byte = unicode_to_byte(std::string_view(text).substr(i, n));
      if (byte) bytes += static_cast<char>(*byte);
      else bytes += text.substr(i, n);
      i += n;
    }
    return bytes;
  }
  for (size_t i = 0; i < text.size(); ++i) {  // SentencePiece: U+2581 is a space
    if (text.compare(i, 3, "\xE2\x96\x81") == 0) {
      bytes += ' ';
      i += 2;
    } else {
      bytes += text[i];
    }
  }
  return bytes;
}

std::string Tokenizer::decode(std::span<const uint32_t> ids, bool render_special) const {
  std::string text;
  for (const uint32_t id : ids) text += piece(id, render_special);
  // SentencePiece's space before the text is not part of it (one space, as llama.cpp removes it).
  if (vocab_.model == "llama" && vocab_.add_space_prefix && text.starts_with(' ')) text.erase(0, 1);
  return text;
}

}  // namespace infer_plan::tokenizer
