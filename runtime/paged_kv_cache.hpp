// The KV cache as a pool of pages (kKvPageTokens tokens each, planner/cost/kv_cache.hpp): one
// backend buffer of exactly the bytes fit predicts (pages x page bytes), pages handed to a
// request when it is admitted (or as its tokens are written) and returned when it leaves. A page holds, for every layer, the
// K rows then the V rows of its tokens, each row in its cache type (quantized rows carry their
// own per-block scales).
// With sliding-window layers (ModelSpec::layer_window) a second pool holds those layers: each
// sequence gets at most the window's pages there, used as a ring that later tokens overwrite,
// so the cache is kv_bytes_for_context per request as fit counts it. Pages of the first pool
// then hold the full layers only.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "kernels/cpu/attention.hpp"
#include "planner/cost/kv_cache.hpp"
#include "planner/model/model_spec.hpp"
#include "runtime/backend.hpp"

namespace infer_plan::runtime {

using SequenceId = uint64_t;

class PagedKvCache {
 public:
  // `pages` full-layer pages; `window_pages` pages for the window layers (default: as many, enough
  // for any sequences the first pool holds; window_pages_for says what each needs).
  PagedKvCache(Backend& backend, const ModelSpec& spec, KvTypes types, uint64_t pages,
               std::optional<uint64_t> window_pages = std::nullopt);
  ~PagedKvCache();
  PagedKvCache(const PagedKvCache&) = delete;
  PagedKvCache& operator=(const PagedKvCache&) = delete;

  uint64_t pages_total() const { return pages_total_; }
  uint64_t pages_free() const { return free_.size(); }
  uint64_t peak_pages_in_use() const { return peak_in_use_; }  // the most reserved at once
  uint64_t page_bytes() const { return page_bytes_; }  // a full-layer page
  uint64_t bytes() const { return buffer_.bytes; }
  static uint64_t pages_for(uint64_t tokens) { return kv_cache_tokens(tokens) / kKvPageTokens; }
  // Window-layer pages a sequence of `tokens` tokens takes: its pages, at most the window's.
  static uint64_t window_pages_for(const ModelSpec& spec, uint64_t tokens);
  bool has_window_layers() const { return window_layers_ > 0; }
  // Tokens a sequence's window ring holds before it wraps (all it reserved when it never does).
  uint64_t ring_tokens(SequenceId seq) const;

  // Gives `seq` pages for `tokens` tokens in all (its whole life, or what the next pass writes:
  // more pages when it holds some), or returns false and changes nothing when too few are free.
  bool reserve(SequenceId seq, uint64_t tokens);
  void release(SequenceId seq);  // its pages return to the pool (not the prefix cache's)
  // Prefix caching (full-layer pages only): `seq`'s first `pages` pages become the cache's, kept
  // when it is released; a sequence holding nothing yet begins with the cache's first `pages`.
  void pin_prefix(SequenceId seq, uint64_t pages);
  void attach_prefix(SequenceId seq, uint64_t pages);
  uint64_t tokens_reserved(SequenceId seq) const;

  // Disaggregation: `seq`'s pages that hold its first `tokens` tokens, every layer, appended to
  // `out` in order (whole pages: what a prefill worker hands a decode worker); and such bytes,
  // from a cache of the same model and types, written into `seq`'s first pages (it holds at least
  // as many). Models with window layers (a ring per sequence) are not exported.
  void export_pages(SequenceId seq, uint64_t tokens, std::vector<uint8_t>& out) const;
  void import_pages(SequenceId seq, std::span<const uint8_t> bytes);
  // Layer by layer (a streamed hand-over): layer `layer`'s part of `seq`'s pages [first, first +
  // pages), appended to `out` page after page, layer_stride() bytes each; within exported pages,
  // that part of a page begins layer_offset(layer) bytes in.
  void export_layer(SequenceId seq, uint64_t layer, uint64_t first, uint64_t pages, std::vector<uint8_t>& out) const;
  uint64_t layer_offset(uint64_t layer) const { return layer_slot_.at(layer) * layer_stride_; }

  // The layout a device decoder needs (runtime/cuda_decoder): page p's layer l holds its K rows
  // at base + p * page_bytes + l * layer_stride, then its V rows k_rows_bytes() later.
  uint8_t* base() const { return static_cast<uint8_t*>(buffer_.data); }
  uint64_t layer_stride() const { return layer_stride_; }
  uint64_t k_row_bytes() const { return k_row_bytes_; }
  uint64_t v_row_bytes() const { return v_row_bytes_; }
  uint64_t v_offset() const { return kKvPageTokens * k_row_bytes_; }
  const KvTypes& types() const { return types_; }
  const std::vector<uint64_t>& pages_of(SequenceId seq) const { return owned_.at(seq); }

  // Writes token `token`'s K and V rows of `layer` from floats (ModelSpec::kv_k_values and
  // kv_v_values each: MLA's latent row has no V, and `v` is not read), converting to the cache types.
  void store(SequenceId seq, uint64_t layer, uint64_t token, const float* k, const float* v);
  // The views attention reads for `layer` of `seq`; `pages` is the caller's scratch for the page
  // pointers (kept alive while the views are used).
  kernels::KvRowsView k_view(SequenceId seq, uint64_t layer, std::vector<const uint8_t*>& pages) const;
  kernels::KvRowsView v_view(SequenceId seq, uint64_t layer, std::vector<const uint8_t*>& pages) const;

 private:
  uint8_t* row(SequenceId seq, uint64_t layer, uint64_t token, bool value) const;

  Backend& backend_;
  KvTypes types_;
  uint64_t k_values_ = 0, v_values_ = 0;  // per K and V row
  uint64_t k_row_bytes_ = 0, v_row_bytes_ = 0;
  uint64_t layer_stride_ = 0;  // bytes of one layer's K and V rows in a page
  uint64_t page_bytes_ = 0;
  uint64_t pages_total_ = 0;
  DeviceBuffer buffer_;
  std::vector<uint64_t> free_;  // page indices, used from the back
  uint64_t peak_in_use_ = 0;
  std::map<SequenceId, std::vector<uint64_t>> owned_;
  std::vector<uint64_t> prefix_pages_;          // the prefix cache's pages, in order
  std::map<SequenceId, uint64_t> borrowed_;     // a sequence's first pages that are the cache's
  // Sliding-window layers: their own pool after the first, each layer's index within its pool.
  uint64_t window_tokens_ = 0, window_layers_ = 0, window_page_bytes_ = 0, window_pool_offset_ = 0;
  std::vector<bool> layer_in_window_;
  std::vector<uint64_t> layer_slot_;
  std::vector<uint64_t> window_free_;
  std::map<SequenceId, std::vector<uint64_t>> window_owned_;
  const uint8_t* layer_base(SequenceId seq, uint64_t layer, uint64_t page_index) const;
};

}  // namespace infer_plan::runtime
