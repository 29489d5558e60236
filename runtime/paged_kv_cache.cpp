#include "runtime/paged_kv_cache.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <span>

#include "kernels/cpu/quantize.hpp"
#include "planner/core/input_error.hpp"

namespace infer_plan::runtime {

PagedKvCache::PagedKvCache(Backend& backend, const ModelSpec& spec, KvTypes types, uint64_t pages)
    : backend_(backend), types_(types), kv_width_(spec.kv_width()), pages_total_(pages) {
  for (GgmlType t : {types.k, types.v})
    if (t != GgmlType::F32 && t != GgmlType::F16 && t != GgmlType::BF16 && t != GgmlType::Q8_0 && t != GgmlType::Q4_0)
      throw InputError(fmt::format("kv: the CPU runtime stores K and V as F32, F16, BF16, Q8_0 or Q4_0, not {}",
                                   ggml_type_info(t).name));
  k_row_bytes_ = ggml_row_bytes(types.k, kv_width_, "K cache row");
  v_row_bytes_ = ggml_row_bytes(types.v, kv_width_, "V cache row");
  layer_stride_ = kKvPageTokens * (k_row_bytes_ + v_row_bytes_);
  page_bytes_ = spec.layers * layer_stride_;
  // The same bytes the planner counts: a page is kKvPageTokens tokens of kv_bytes_per_token.
  assert(page_bytes_ == kKvPageTokens * kv_bytes_per_token(spec, types));
  buffer_ = backend.allocate(pages * page_bytes_, MemoryCategory::kv_cache);
  free_.reserve(pages);
  for (uint64_t p = pages; p-- > 0;) free_.push_back(p);  // hand out page 0 first
}

PagedKvCache::~PagedKvCache() { backend_.free(buffer_); }

bool PagedKvCache::reserve(SequenceId seq, uint64_t tokens) {
  assert(!owned_.count(seq));
  const uint64_t need = pages_for(tokens);
  if (need > free_.size()) return false;
  std::vector<uint64_t>& mine = owned_[seq];
  for (uint64_t i = 0; i < need; ++i) {
    mine.push_back(free_.back());
    free_.pop_back();
  }
  peak_in_use_ = std::max(peak_in_use_, pages_total_ - free_.size());
  return true;
}

void PagedKvCache::release(SequenceId seq) {
  auto it = owned_.find(seq);
  if (it == owned_.end()) return;
  free_.insert(free_.end(), it->second.rbegin(), it->second.rend());
  owned_.erase(it);
}

uint64_t PagedKvCache::tokens_reserved(SequenceId seq) const {
  auto it = owned_.find(seq);
  return it == owned_.end() ? 0 : it->second.size() * kKvPageTokens;
}

uint8_t* PagedKvCache::row(SequenceId seq, uint64_t layer, uint64_t token, bool value) const {
  const std::vector<uint64_t>& pages = owned_.at(seq);
  assert(token / kKvPageTokens < pages.size());  // reserved for its whole life
  uint8_t* page = static_cast<uint8_t*>(buffer_.data) + pages[token / kKvPageTokens] * page_bytes_;
  const uint64_t slot = token % kKvPageTokens;
  uint8_t* base = page + layer * layer_stride_;
  return value ? base + kKvPageTokens * k_row_bytes_ + slot * v_row_bytes_ : base + slot * k_row_bytes_;
}

void PagedKvCache::store(SequenceId seq, uint64_t layer, uint64_t token, const float* k, const float* v) {
  kernels::quantize_row(types_.k, std::span(k, kv_width_), std::span(row(seq, layer, token, false), k_row_bytes_), "K cache row");
  kernels::quantize_row(types_.v, std::span(v, kv_width_), std::span(row(seq, layer, token, true), v_row_bytes_), "V cache row");
}

kernels::KvRowsView PagedKvCache::k_view(SequenceId seq, uint64_t layer, std::vector<const uint8_t*>& pages) const {
  const std::vector<uint64_t>& mine = owned_.at(seq);
  pages.resize(mine.size());
  const auto* base = static_cast<const uint8_t*>(buffer_.data);
  for (size_t i = 0; i < mine.size(); ++i) pages[i] = base + mine[i] * page_bytes_ + layer * layer_stride_;
  return {types_.k, k_row_bytes_, kKvPageTokens, pages.data()};
}

kernels::KvRowsView PagedKvCache::v_view(SequenceId seq, uint64_t layer, std::vector<const uint8_t*>& pages) const {
  const std::vector<uint64_t>& mine = owned_.at(seq);
  pages.resize(mine.size());
  const auto* base = static_cast<const uint8_t*>(buffer_.data);
  for (size_t i = 0; i < mine.size(); ++i)
    pages[i] = base + mine[i] * page_bytes_ + layer * layer_stride_ + kKvPageTokens * k_row_bytes_;
  return {types_.v, v_row_bytes_, kKvPageTokens, pages.data()};
}

}  // namespace infer_plan::runtime
