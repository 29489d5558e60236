// Argument checks for kernels/cuda/attention.hpp, in host C++20 (the planner's type table), before
// attention.cu and kv_store.cu launch. Bad arguments are a caller's bug, so they throw
// std::invalid_argument with the value and the expectation rather than reach a kernel that would
// read or write out of bounds. What lives in device memory (ctx, positions, page lists) cannot be
// checked here; the kernels clamp ctx to max_ctx so a bad ctx cannot write past the scratch.
#include "kernels/cuda/attention.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "kernels/cuda/attention_launch.hpp"

namespace infer_plan::kernels::cuda {
namespace {

static_assert(kSplitTokens == kAttentionSplitTokens, "attention_launch.hpp and attention.hpp disagree");

constexpr uint32_t kHeadDimStep = 32;   // one warp's lanes over a head's values
constexpr uint32_t kHeadDimMax = 256;   // the kernels' shared-memory rows
constexpr uint32_t kGridYZMax = 65535;  // CUDA's limit on gridDim.y and gridDim.z (tokens, heads)

KvRowType row_type(GgmlType type, std::string_view who, std::string_view which) {
  switch (type) {
    case GgmlType::BF16: return KvRowType::bf16;
    case GgmlType::F16: return KvRowType::f16;
    case GgmlType::Q8_0: return KvRowType::q8_0;
    case GgmlType::Q4_0: return KvRowType::q4_0;
    default: break;
  }
  throw std::invalid_argument(fmt::format("{}: no kernel for a {} cache of {}; known: BF16, F16, Q8_0, Q4_0", who,
                                          which, ggml_type_info(type).name));
}

// The layer's rows as the kernels address them, checked against rows of kv_width values.
KvPages check_layer(const PagedKvLayer& kv, uint64_t kv_width, std::string_view who) {
  KvPages out;
  out.k_type = row_type(kv.k_type, who, "K");
  out.v_type = row_type(kv.v_type, who, "V");
  if (kv.base == nullptr) throw std::invalid_argument(fmt::format("{}: the cache base must be a device pointer", who));
  if (kv.page_tokens < 1) throw std::invalid_argument(fmt::format("{}: page_tokens = 0", who));
  const uint64_t k_row = ggml_row_bytes(kv.k_type, kv_width, "K cache row");
  const uint64_t v_row = ggml_row_bytes(kv.v_type, kv_width, "V cache row");
  if (kv.k_row_bytes != k_row || kv.v_row_bytes != v_row)
    throw std::invalid_argument(fmt::format("{}: row bytes K {} and V {}, expected {} and {} for {} values of {} / {}",
                                            who, kv.k_row_bytes, kv.v_row_bytes, k_row, v_row, kv_width,
                                            ggml_type_info(kv.k_type).name, ggml_type_info(kv.v_type).name));
  // K rows [layer_offset, + page_tokens * k_row), V rows after v_offset, all inside the page.
  const uint64_t k_end = static_cast<uint64_t>(kv.page_tokens) * k_row;
  const uint64_t v_end = kv.v_offset + static_cast<uint64_t>(kv.page_tokens) * v_row;
  if (kv.v_offset < k_end || kv.layer_offset + v_end > kv.page_bytes)
    throw std::invalid_argument(fmt::format(
        "{}: layer rows at {} + [0, {}) K and [{}, {}) V do not fit a {}-byte page without overlapping", who,
        kv.layer_offset, k_end, kv.v_offset, v_end, kv.page_bytes));
  // Halves and fp16 scales are read as 16-bit words: every row must start 2-byte aligned.
  const uint64_t offsets = reinterpret_cast<uintptr_t>(kv.base) | kv.page_bytes | kv.layer_offset | kv.v_offset;
  if (offsets % 2 != 0)
    throw std::invalid_argument(fmt::format("{}: base, page_bytes {}, layer_offset {} and v_offset {} must be even",
                                            who, kv.page_bytes, kv.layer_offset, kv.v_offset));
  out.base = kv.base;
  out.page_bytes = kv.page_bytes;
  out.layer_offset = kv.layer_offset;
  out.v_offset = kv.v_offset;
  out.page_tokens = kv.page_tokens;
  out.k_row_bytes = k_row;
  out.v_row_bytes = v_row;
  return out;
}

void check_tokens(uint32_t tokens, std::string_view who) {
  if (tokens < 1 || tokens > kGridYZMax)
    throw std::invalid_argument(fmt::format("{}: tokens = {}, expected 1..{}", who, tokens, kGridYZMax));
}

}  // namespace

uint64_t attention_scratch_floats(const AttentionShape& shape, uint32_t tokens, uint32_t max_ctx) {
  const uint64_t splits = (static_cast<uint64_t>(max_ctx) + kAttentionSplitTokens - 1) / kAttentionSplitTokens;
  return static_cast<uint64_t>(tokens) * shape.n_head * splits * (static_cast<uint64_t>(shape.head_dim) + kPartialHeaderFloats);
}

void attention(const AttentionShape& shape, const PagedKvLayer& kv, const AttentionTokens& at, const float* q,
               uint32_t tokens, uint32_t max_ctx, float* out, float* scratch, void* stream) {
  constexpr std::string_view who = "attention";
  if (shape.head_dim % kHeadDimStep != 0 || shape.head_dim < kHeadDimStep || shape.head_dim > kHeadDimMax)
    throw std::invalid_argument(fmt::format("attention: head_dim = {}, expected a multiple of {} in {}..{}",
                                            shape.head_dim, kHeadDimStep, kHeadDimStep, kHeadDimMax));
  if (shape.n_kv_head < 1 || shape.n_head < 1 || shape.n_head % shape.n_kv_head != 0 || shape.n_head > kGridYZMax)
    throw std::invalid_argument(fmt::format(
        "attention: n_head = {}, n_kv_head = {}: expected n_head a multiple of n_kv_head, both in 1..{}", shape.n_head,
        shape.n_kv_head, kGridYZMax));
  const KvPages pages = check_layer(kv, static_cast<uint64_t>(shape.n_kv_head) * shape.head_dim, who);
  check_tokens(tokens, who);
  if (max_ctx < 1) throw std::invalid_argument("attention: max_ctx = 0, expected >= 1");
  if (at.ctx == nullptr || at.pages == nullptr || at.page_table == nullptr)
    throw std::invalid_argument("attention: ctx, pages and page_table must be device pointers, not null");
  if (q == nullptr || out == nullptr || scratch == nullptr)
    throw std::invalid_argument("attention: q, out and scratch must be device pointers, not null");
  const bool finite = std::isfinite(shape.scale) && std::isfinite(shape.softcap);
  if (!finite || !(shape.scale >= 0.0f) || !(shape.softcap >= 0.0f))
    throw std::invalid_argument(fmt::format("attention: scale = {}, softcap = {}: expected finite values >= 0 (0: the "
                                            "default scale, no cap)", shape.scale, shape.softcap));
  ScoreParts parts;
  parts.scale = shape.scale > 0.0f ? shape.scale : 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  parts.softcap = shape.softcap;
  parts.sinks = shape.sinks;
  parts.window = shape.window;
  attention_launch(pages, shape.n_head, shape.n_kv_head, shape.head_dim, parts, at.ctx, at.pages, at.page_table, q,
                   tokens, max_ctx, out, scratch, stream);
}

void kv_store(const PagedKvLayer& kv, uint32_t kv_width, const float* k, const float* v, uint32_t tokens,
              const uint32_t* pos, const uint32_t* pages, const uint32_t* page_table, void* stream) {
  constexpr std::string_view who = "kv_store";
  // One warp per 32 values (a Q8_0 / Q4_0 block); rows are whole heads, so this costs nothing.
  if (kv_width < kHeadDimStep || kv_width % kHeadDimStep != 0)
    throw std::invalid_argument(
        fmt::format("kv_store: kv_width = {}, expected a positive multiple of {}", kv_width, kHeadDimStep));
  const KvPages layer = check_layer(kv, kv_width, who);
  check_tokens(tokens, who);
  if (k == nullptr || v == nullptr || pos == nullptr || pages == nullptr || page_table == nullptr)
    throw std::invalid_argument("kv_store: k, v, pos, pages and page_table must be device pointers, not null");
  kv_store_launch(layer, kv_width, k, v, tokens, pos, pages, page_table, stream);
}

}  // namespace infer_plan::kernels::cuda
