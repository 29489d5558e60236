// The CUDA side of kernels/cuda/attention.hpp: attention.cpp validates the arguments with the
// planner's type table (C++20), then attention.cu and kv_store.cu launch. Kept free of planner
// types because nvcc compiles C++17 here. Not for other callers: use attention.hpp.
#pragma once
#include <cstdint>

namespace infer_plan::kernels::cuda {

// The cache row types the kernels read and write.
enum class KvRowType { bf16, f16, q8_0, q4_0 };

// PagedKvLayer with its types mapped; validated: every offset and row size is even (the kernels
// read 16-bit halves and scales), rows match the types and fit their page.
struct KvPages {
  uint8_t* base = nullptr;
  uint64_t page_bytes = 0;
  uint64_t layer_offset = 0;
  uint64_t v_offset = 0;
  uint32_t page_tokens = 0;
  KvRowType k_type = KvRowType::bf16, v_type = KvRowType::bf16;
  uint64_t k_row_bytes = 0, v_row_bytes = 0;
};

// Positions per split block (attention.hpp's kAttentionSplitTokens; attention.cpp asserts they agree).
constexpr uint32_t kSplitTokens = 256;

// One split's partial in the scratch: its max and its sum of weights, then head_dim floats of
// weighted V (head_dim + kPartialHeaderFloats floats).
constexpr uint32_t kPartialHeaderFloats = 2;

// The families' parts of a score (attention.hpp's AttentionShape): scale > 0 (attention() puts
// 1 / sqrt(head_dim) where the shape has 0), softcap >= 0 (0: none), sinks: n_head device floats or
// nullptr, window: the last `window` positions of each context (0: all).
struct ScoreParts {
  float scale = 0.0f;
  float softcap = 0.0f;
  const float* sinks = nullptr;
  uint32_t window = 0;
};

// Arguments validated by attention(): head_dim a multiple of 32 in 32..256, n_head a multiple of
// n_kv_head, tokens in 1..65535, max_ctx >= 1, splits = ceil(max_ctx / kSplitTokens).
void attention_launch(const KvPages& kv, uint32_t n_head, uint32_t n_kv_head, uint32_t head_dim,
                      const ScoreParts& parts, const uint32_t* ctx, const uint32_t* pages, const uint32_t* page_table, const float* q,
                      uint32_t tokens, uint32_t max_ctx, float* out, float* scratch, void* stream);

// Arguments validated by kv_store(): kv_width a multiple of 32, tokens in 1..65535.
void kv_store_launch(const KvPages& kv, uint32_t kv_width, const float* k, const float* v, uint32_t tokens,
                     const uint32_t* pos, const uint32_t* pages, const uint32_t* page_table, void* stream);

}  // namespace infer_plan::kernels::cuda
