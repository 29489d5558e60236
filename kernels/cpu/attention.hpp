// Decode attention over a (paged, possibly quantized) KV cache with grouped-query heads: one
// query token, all heads, attending to positions [0, n_tokens). K and V are stored per token as
// one GGML row of n_kv_head * head_dim values (heads back to back) of their own type (BF16, F16,
// Q8_0 or Q4_0, independently), in blocks of `block_tokens` tokens that need not be contiguous.
// Prefill runs it once per query token with that token's own causal length.
#pragma once
#include <cstdint>
#include <vector>

#include "planner/core/ggml_type.hpp"

namespace infer_plan::kernels {

// Where the rows of one cache (K or V of one layer) for one sequence live. Attention reads rows
// 0.. of the view, which are the sequence's tokens from `first` on (a sliding window starts
// late); a window layer's pages form a ring of `ring_blocks` pages that later tokens overwrite.
struct KvRowsView {
  GgmlType type = GgmlType::BF16;
  uint64_t row_bytes = 0;          // ggml_row_bytes(type, n_kv_head * head_dim)
  uint64_t block_tokens = 0;       // tokens per page
  const uint8_t* const* blocks = nullptr;  // page t / block_tokens holds token t
  uint64_t first = 0;              // the token row 0 is
  uint64_t ring_blocks = 0;        // 0: token t in page t / block_tokens; else that modulo ring_blocks
  const uint8_t* row(uint64_t index) const {
    const uint64_t token = first + index;
    const uint64_t block = token / block_tokens;
    return blocks[ring_blocks ? block % ring_blocks : block] + (token % block_tokens) * row_bytes;
  }
};

struct AttentionShape {
  uint64_t n_head = 0;     // query heads
  uint64_t n_kv_head = 0;  // K/V heads; query head h reads K/V head h / (n_head / n_kv_head)
  uint64_t head_dim = 0;   // a whole number of the K and V types' blocks
  float softcap = 0.0f;    // Gemma 2: each scaled score s becomes softcap tanh(s / softcap); 0: none
  // GPT-OSS: one learned logit per query head that joins each softmax's denominator (exp(sink -
  // max)) and brings no value; nullptr: none
  const float* sinks = nullptr;
  // The scores' scale; 0: 1 / sqrt(head_dim). MLA's absorbed heads (576 wide) keep the scale of the
  // 192-wide heads they stand for.
  float scale = 0.0f;
};

// q: n_head * head_dim floats (already RoPE'd); out: n_head * head_dim floats. Scores are scaled
// by shape.scale (1 / sqrt(head_dim) by default) and soft-maxed in float. `scratch` is resized as needed (reused across
// calls so a decode step does not allocate).
void attention_decode(const AttentionShape& shape, const float* q, const KvRowsView& k,
                      const KvRowsView& v, uint64_t n_tokens, float* out, std::vector<float>& scratch);

// The code paths attention_decode chooses between: it takes the fastest this CPU runs. Exposed so
// that the tests check every path that runs on the test machine against the reference.
enum class AttentionPath { portable, avx2 };
bool attention_path_available(AttentionPath path);
void attention_decode_on(AttentionPath path, const AttentionShape& shape, const float* q,
                         const KvRowsView& k, const KvRowsView& v, uint64_t n_tokens, float* out,
                         std::vector<float>& scratch);

// Plain loops: dequantize every K and V row to float, double accumulation.
void attention_decode_reference(const AttentionShape& shape, const float* q, const KvRowsView& k,
                                const KvRowsView& v, uint64_t n_tokens, float* out);

}  // namespace infer_plan::kernels
