// Decode attention on the GPU over the paged KV cache (runtime/paged_kv_cache's layout), for a
// batch of query tokens from several sequences, as kernels/cpu/attention does one token at a
// time: each query token attends to its own sequence's positions [0, ctx), its heads grouped over
// the K/V heads (GQA), scores scaled by 1/sqrt(head_dim) and soft-maxed in float. Long contexts
// are split along the sequence (split-K): each block of positions yields a partial (max, sum,
// weighted V) and a second kernel combines them. K and V rows are BF16, F16, Q8_0 or Q4_0.
// Also the cache's writer: K and V rows from floats into their pages, converted to the cache types
// as kernels/cpu/quantize's quantize_row converts them. Plain C++ (device pointers, streams as
// void*); attention.cu, built only with CUDA.
#pragma once
#include <cstdint>

#include "planner/core/ggml_type.hpp"

namespace infer_plan::kernels::cuda {

// Where one layer's K and V rows live: page p's K row for slot s (s < page_tokens) is at
// base + p * page_bytes + layer_offset + s * k_row_bytes, its V row at
// base + p * page_bytes + layer_offset + v_offset + s * v_row_bytes.
struct PagedKvLayer {
  uint8_t* base = nullptr;  // the cache buffer (device)
  uint64_t page_bytes = 0;
  uint64_t layer_offset = 0;
  uint64_t v_offset = 0;
  uint32_t page_tokens = 0;
  GgmlType k_type = GgmlType::BF16, v_type = GgmlType::BF16;
  uint64_t k_row_bytes = 0, v_row_bytes = 0;  // ggml_row_bytes(type, n_kv_head * head_dim)
};

struct AttentionShape {
  uint32_t n_head = 0, n_kv_head = 0, head_dim = 0;  // head_dim: a multiple of 32, at most 256
  // As kernels/cpu's AttentionShape and decoder: the scores' scale (0: 1 / sqrt(head_dim); Gemma's
  // query_pre_attn_scalar), Gemma 2's soft-cap (each scaled score s becomes softcap tanh(s /
  // softcap); 0: none), GPT-OSS's sinks (n_head device floats, each joining its head's softmax
  // denominator as exp(sink - max) with no value; nullptr: none), and a sliding window (each token
  // attends to the last `window` positions of its context; 0: all of it).
  float scale = 0.0f;
  float softcap = 0.0f;
  const float* sinks = nullptr;
  uint32_t window = 0;
};

// Per query token, device arrays of `tokens` entries: `ctx[t]` positions to attend ([0, ctx[t]),
// its own position included, ctx[t] >= 1), and `pages[t]` the index in `page_table` where its
// sequence's page list starts (page i of the sequence holds positions i * page_tokens ...).
struct AttentionTokens {
  const uint32_t* ctx = nullptr;
  const uint32_t* pages = nullptr;
  const uint32_t* page_table = nullptr;
};

// Positions per split-K block; a context of n positions uses ceil(n / kAttentionSplitTokens) blocks.
constexpr uint32_t kAttentionSplitTokens = 256;

// Floats of scratch attention() needs for `tokens` query tokens whose contexts are at most
// `max_ctx` (its grid is sized by max_ctx, so one captured graph serves every context up to it).
uint64_t attention_scratch_floats(const AttentionShape& shape, uint32_t tokens, uint32_t max_ctx);

// q: tokens x n_head x head_dim floats (RoPE applied); out: the same shape. Every ctx[t] must be at
// most max_ctx and the sequence must own pages for them. Launches on `stream` without
// synchronizing. Throws std::invalid_argument on bad arguments (shape, types, sizes),
// std::runtime_error ("file:line: call: error") when a launch fails.
void attention(const AttentionShape& shape, const PagedKvLayer& kv, const AttentionTokens& at, const float* q,
               uint32_t tokens, uint32_t max_ctx, float* out, float* scratch, void* stream);

// Writes token t's K and V rows (k, v: tokens x kv_width floats, kv_width = n_kv_head * head_dim)
// at position pos[t] of its sequence (pages[t] into page_table, as above), each row converted to
// the cache type (BF16 round-to-nearest-even; Q8_0 and Q4_0 as ggml's reference quantizers).
void kv_store(const PagedKvLayer& kv, uint32_t kv_width, const float* k, const float* v, uint32_t tokens,
              const uint32_t* pos, const uint32_t* pages, const uint32_t* page_table, void* stream);

}  // namespace infer_plan::kernels::cuda
