// The text a synthetic vocabulary's merges are learned from (tokenizer/vocabulary): prose, code,
// numbers, whitespace runs and a little of other scripts, so that the merges a file carries look
// like a real tokenizer's (common words whole, spaces joined to the word after them).
#include "tokenizer/vocabulary.hpp"

namespace infer_plan::tokenizer {

std::string_view synthetic_corpus() {
  static constexpr std::string_view kText = R"corpus(
The planner answers in milliseconds, and then the runtime proves the answer: it executes the same
configuration on the same machine and prints what it measured beside what was predicted. A model
that does not fit is a model that does not run; a prediction that is wrong is worse than none.
When the weights are quantized to four bits, the memory they need falls by a factor of four, and
the time to read them falls with it, because decoding one token reads every weight once.
The key and value cache grows with the context and with the number of requests served at once.
At a context of eight thousand tokens, a model with thirty-six layers and eight key-value heads of
one hundred and twenty-eight dimensions keeps one hundred and forty-seven thousand bytes per token.
Speculative decoding lets a small draft model propose several tokens, and the target model checks
them all in one pass; the tokens it accepts come almost for free, and the rest are drawn again.
Continuous batching admits a new request as soon as there is room for it, and the scheduler
decides at every step whether to prefill the next prompt or to decode one more token for each
running request. The time to first token is the wait in the queue plus the prefill; the time per
output token is the decode step, which grows with the batch and with the context of every request.
Little's law says that the mean number of requests in the system equals the arrival rate times
the mean time each one spends there; the measured run checks it against its own timestamps.

def tokens_per_second(batch, step_ms):
    """Decoded tokens per second for a batch that takes step_ms per step."""
    if step_ms <= 0:
        raise ValueError("step_ms must be positive")
    return batch * 1000.0 / step_ms

for (int i = 0; i < n; ++i) {
  sum += weights[i] * activations[i];
}
const std::vector<uint32_t> ids = tokenizer.encode("Hello, world!");
if (x != nullptr && y == 0) return -1;

{"model": "qwen3-8b", "weights": "Q4_K_M", "context": 32768, "requests": 4, "output": 256}
Numbers: 0 1 2 3 4 5 6 7 8 9 10 12 16 32 64 128 256 512 1024 2048 4096 8192 16384 32768 65536
3.14159 2.71828 1.41421 0.5 0.25 0.125 1e-6 6.02e23 100% 42 2026-12-02 12:34:56 $19.99 #1 @user
It's the model's answer; they're sure it'll work, we've seen it, I'm told you'd agree, we'll see.
Don't stop. Can't stop. Won't stop. "Quoted text," she said. (Parentheses) [brackets] {braces}
    indented line with four spaces
		two tabs before this line
trailing spaces   
multiple   spaces   between   words
Line one
Line two

Paragraph after a blank line.
Der schnelle braune Fuchs springt über den faulen Hund. Ça coûte très cher, n'est-ce pas?
El niño comió una manzana. Привет, как дела? Γειά σου κόσμε. Olá, tudo bem?
大型语言模型的推理需要大量的内存带宽。模型越大，每个令牌需要读取的权重就越多。
日本語のテキストも少し含まれています。東京は大きな都市です。
한국어 문장도 조금 있습니다. 안녕하세요.
Emoji: 🚀 ✨ 👍 🙂 — and symbols: → ← ≤ ≥ ± × ÷ ∑ ∞ °C €100 £50 ¥1000
)corpus";
  return kText;
}

}  // namespace infer_plan::tokenizer
