#include "runtime/paged_kv_cache.hpp"

#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <span>

#include "kernels/cpu/quantize.hpp"
#include "planner/core/input_error.hpp"

namespace infer_plan::runtime {

PagedKvCache::PagedKvCache(Backend& backend, const ModelSpec& spec, KvTypes types, uint64_t pages,
                           std::optional<uint64_t> window_pages)
    : backend_(backend), types_(types), k_values_(spec.kv_k_values()), v_values_(spec.kv_v_values()),
      pages_total_(pages) {
  for (GgmlType t : {types.k, types.v})
    if (t != GgmlType::F32 && t != GgmlType::F16 && t != GgmlType::BF16 && t != GgmlType::Q8_0 && t != GgmlType::Q4_0)
      throw InputError(fmt::format("kv: the CPU runtime stores K and V as F32, F16, BF16, Q8_0 or Q4_0, not {}",
                                   ggml_type_info(t).name));
  k_row_bytes_ = ggml_row_bytes(types.k, k_values_, "K cache row");
  v_row_bytes_ = v_values_ ? ggml_row_bytes(types.v, v_values_, "V cache row") : 0;  // MLA: no V rows
  layer_stride_ = kKvPageTokens * (k_row_bytes_ + v_row_bytes_);
  uint64_t full_layers = 0;
  for (uint64_t l = 0; l < spec.layers; ++l) {
    const bool window = spec.layer_window(l) > 0;
    layer_in_window_.push_back(window);
    layer_slot_.push_back(window ? window_layers_++ : full_layers++);
  }
  window_tokens_ = window_layers_ ? spec.sliding_window : 0;
  page_bytes_ = full_layers * layer_stride_;
  window_page_bytes_ = window_layers_ * layer_stride_;
  const uint64_t ring_pages = window_layers_ ? window_pages.value_or(pages) : 0;
  // The same bytes the planner counts: a page is kKvPageTokens tokens of kv_bytes_per_token.
  assert(page_bytes_ + window_page_bytes_ == kKvPageTokens * kv_bytes_per_token(spec, types));
  window_pool_offset_ = pages * page_bytes_;
  buffer_ = backend.allocate(window_pool_offset_ + ring_pages * window_page_bytes_, MemoryCategory::kv_cache);
  free_.reserve(pages);
  for (uint64_t p = pages; p-- > 0;) free_.push_back(p);  // hand out page 0 first
  for (uint64_t p = ring_pages; p-- > 0;) window_free_.push_back(p);
}

uint64_t PagedKvCache::window_pages_for(const ModelSpec& spec, uint64_t tokens) {
  if (spec.window_layer_count() == 0) return 0;
  return std::min(pages_for(tokens), pages_for(spec.sliding_window));
}

uint64_t PagedKvCache::ring_tokens(SequenceId seq) const {
  const auto it = window_owned_.find(seq);
  return it == window_owned_.end() ? 0 : it->second.size() * kKvPageTokens;
}

PagedKvCache::~PagedKvCache() { backend_.free(buffer_); }

bool PagedKvCache::reserve(SequenceId seq, uint64_t tokens) {
  const auto mine_it = owned_.find(seq);
  const uint64_t held = mine_it == owned_.end() ? 0 : mine_it->second.size();
  const auto ring_it = window_owned_.find(seq);
  const uint64_t ring_held = ring_it == window_owned_.end() ? 0 : ring_it->second.size();
  const uint64_t need = std::max(pages_for(tokens), held);
  const uint64_t ring = window_layers_ ? std::max(std::min(need, pages_for(window_tokens_)), ring_held) : 0;
  if (need - held > free_.size() || ring - ring_held > window_free_.size()) return false;
  std::vector<uint64_t>& mine = owned_[seq];
  while (mine.size() < need) {
    mine.push_back(free_.back());
    free_.pop_back();
  }
  if (window_layers_) {
    std::vector<uint64_t>& ring_pages = window_owned_[seq];
    while (ring_pages.size() < ring) {
      ring_pages.push_back(window_free_.back());
      window_free_.pop_back();
    }
  }
  peak_in_use_ = std::max(peak_in_use_, pages_total_ - free_.size());
  return true;
}

void PagedKvCache::pin_prefix(SequenceId seq, uint64_t pages) {
  assert(window_layers_ == 0 && prefix_pages_.empty());
  const std::vector<uint64_t>& mine = owned_.at(seq);
  assert(pages <= mine.size());
  prefix_pages_.assign(mine.begin(), mine.begin() + static_cast<std::ptrdiff_t>(pages));
  borrowed_[seq] = pages;
}

void PagedKvCache::attach_prefix(SequenceId seq, uint64_t pages) {
  assert(!owned_.count(seq) && pages <= prefix_pages_.size());
  owned_[seq].assign(prefix_pages_.begin(), prefix_pages_.begin() + static_cast<std::ptrdiff_t>(pages));
  borrowed_[seq] = pages;
}

void PagedKvCache::release(SequenceId seq) {
  auto it = owned_.find(seq);
  if (it == owned_.end()) return;
  const auto borrowed = borrowed_.find(seq);
  const auto kept = static_cast<std::ptrdiff_t>(borrowed == borrowed_.end() ? 0 : borrowed->second);
  free_.insert(free_.end(), it->second.rbegin(), it->second.rend() - kept);
  if (borrowed != borrowed_.end()) borrowed_.erase(borrowed);
  owned_.erase(it);
  if (auto w = window_owned_.find(seq); w != window_owned_.end()) {
    window_free_.insert(window_free_.end(), w->second.rbegin(), w->second.rend());
    window_owned_.erase(w);
  }
}

void PagedKvCache::export_pages(SequenceId seq, uint64_t tokens, std::vector<uint8_t>& out) const {
  if (window_layers_) throw std::logic_error("PagedKvCache: a cache with window layers exports no pages");
  const std::vector<uint64_t>& pages = owned_.at(seq);
  const uint64_t n = pages_for(tokens);
  if (n > pages.size()) throw std::logic_error("PagedKvCache: export of tokens the sequence holds no pages for");
  if (!backend_.host_addressable(MemoryCategory::kv_cache))
    throw std::logic_error("PagedKvCache: pages are exported from a host-addressable cache only");
  const size_t at = out.size();
  out.resize(at + n * page_bytes_);
  backend_.synchronize();  // the passes that wrote them have ended
  for (uint64_t i = 0; i < n; ++i) std::memcpy(out.data() + at + i * page_bytes_, base() + pages[i] * page_bytes_, page_bytes_);
}

void PagedKvCache::export_layer(SequenceId seq, uint64_t layer, uint64_t first, uint64_t pages,
                                std::vector<uint8_t>& out) const {
  if (window_layers_) throw std::logic_error("PagedKvCache: a cache with window layers exports no pages");
  if (!backend_.host_addressable(MemoryCategory::kv_cache))
    throw std::logic_error("PagedKvCache: pages are exported from a host-addressable cache only");
  const std::vector<uint64_t>& held = owned_.at(seq);
  if (first + pages > held.size()) throw std::logic_error("PagedKvCache: export of pages the sequence does not hold");
  const size_t at = out.size();
  out.resize(at + pages * layer_stride_);
  for (uint64_t i = 0; i < pages; ++i)
    std::memcpy(out.data() + at + i * layer_stride_, base() + held[first + i] * page_bytes_ + layer_offset(layer),
                layer_stride_);
}

void PagedKvCache::import_pages(SequenceId seq, std::span<const uint8_t> bytes) {
  if (window_layers_) throw std::logic_error("PagedKvCache: a cache with window layers imports no pages");
  if (bytes.size() % page_bytes_) throw std::logic_error("PagedKvCache: import of a part of a page");
  const std::vector<uint64_t>& pages = owned_.at(seq);
  const uint64_t n = bytes.size() / page_bytes_;
  if (n > pages.size()) throw std::logic_error("PagedKvCache: import of more pages than the sequence holds");
  if (!backend_.host_addressable(MemoryCategory::kv_cache))
    throw std::logic_error("PagedKvCache: pages are imported into a host-addressable cache only");
  for (uint64_t i = 0; i < n; ++i) std::memcpy(base() + pages[i] * page_bytes_, bytes.data() + i * page_bytes_, page_bytes_);
}

uint64_t PagedKvCache::tokens_reserved(SequenceId seq) const {
  auto it = owned_.find(seq);
  return it == owned_.end() ? 0 : it->second.size() * kKvPageTokens;
}

// Layer `layer`'s K rows in the sequence's page_index-th page (a window layer: of its ring).
const uint8_t* PagedKvCache::layer_base(SequenceId seq, uint64_t layer, uint64_t page_index) const {
  const auto* base = static_cast<const uint8_t*>(buffer_.data);
  if (layer_in_window_[layer]) {
    const std::vector<uint64_t>& ring = window_owned_.at(seq);
    return base + window_pool_offset_ + ring[page_index % ring.size()] * window_page_bytes_ +
           layer_slot_[layer] * layer_stride_;
  }
  const std::vector<uint64_t>& pages = owned_.at(seq);
  assert(page_index < pages.size());  // reserved before the pass writes
  return base + pages[page_index] * page_bytes_ + layer_slot_[layer] * layer_stride_;
}

uint8_t* PagedKvCache::row(SequenceId seq, uint64_t layer, uint64_t token, bool value) const {
  auto* base = const_cast<uint8_t*>(layer_base(seq, layer, token / kKvPageTokens));
  const uint64_t slot = token % kKvPageTokens;
  return value ? base + kKvPageTokens * k_row_bytes_ + slot * v_row_bytes_ : base + slot * k_row_bytes_;
}

void PagedKvCache::store(SequenceId seq, uint64_t layer, uint64_t token, const float* k, const float* v) {
  kernels::quantize_row(types_.k, std::span(k, k_values_), std::span(row(seq, layer, token, false), k_row_bytes_), "K cache row");
  if (v_values_)
    kernels::quantize_row(types_.v, std::span(v, v_values_), std::span(row(seq, layer, token, true), v_row_bytes_), "V cache row");
}

kernels::KvRowsView PagedKvCache::k_view(SequenceId seq, uint64_t layer, std::vector<const uint8_t*>& pages) const {
  const bool window = layer_in_window_[layer];
  const uint64_t n = window ? window_owned_.at(seq).size() : owned_.at(seq).size();
  pages.resize(n);
  for (uint64_t i = 0; i < n; ++i) pages[i] = layer_base(seq, layer, i);
  return {types_.k, k_row_bytes_, kKvPageTokens, pages.data(), 0, window ? n : 0};
}

kernels::KvRowsView PagedKvCache::v_view(SequenceId seq, uint64_t layer, std::vector<const uint8_t*>& pages) const {
  const bool window = layer_in_window_[layer];
  const uint64_t n = window ? window_owned_.at(seq).size() : owned_.at(seq).size();
  pages.resize(n);
  for (uint64_t i = 0; i < n; ++i) pages[i] = layer_base(seq, layer, i) + kKvPageTokens * k_row_bytes_;
  return {types_.v, v_row_bytes_, kKvPageTokens, pages.data(), 0, window ? n : 0};
}

}  // namespace infer_plan::runtime
