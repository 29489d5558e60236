// Weight offload: one layer in every k keeps a part (FFN, attention, or the whole layer)
// in host memory; a prefetcher copies each group into one of `buffers` device slots before it is
// needed. It frees device memory for KV, and costs a transfer of every offloaded group per decode
// round, which is hidden only while it is shorter than the decode iteration.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/cost/kv_cache.hpp"
#include "planner/model/model_spec.hpp"
#include "planner/cost/roofline.hpp"
#include "planner/weights/weights_size.hpp"

namespace infer_plan {

enum class OffloadPart { ffn, attn, layer };
OffloadPart parse_offload_part(std::string_view text, std::string_view what);
std::string_view offload_part_name(OffloadPart part);

struct OffloadInput {
  OffloadPart part = OffloadPart::ffn;
  uint64_t every = 4;      // offload layers k-1, 2k-1, ... (one in every k)
  uint64_t buffers = 2;    // device-side prefetch slots, one group each
  std::string link_name;
  double link_bytes_per_s = 0;
  uint64_t prompt_tokens = 8192;
  uint64_t output_tokens = 256;
  uint64_t requests = 4;   // concurrent requests in the decode batch
  double iteration_s = 0;  // decode iteration without offload (given, or from the roofline)
  std::string iteration_source;
  std::optional<double> deadline_s;
};

struct OffloadResult {
  uint64_t layers_offloaded = 0;
  uint64_t group_bytes = 0;           // the part of one layer (the largest, if they differ)
  uint64_t freed_bytes = 0;           // all offloaded groups
  uint64_t buffer_bytes = 0;          // buffers x group_bytes, on the device
  int64_t net_saving_bytes = 0;       // freed - buffers
  uint64_t kv_bytes_per_request = 0;           // at the prompt
  uint64_t kv_bytes_per_request_reserved = 0;  // reserved to completion: prompt + output
  uint64_t extra_requests = 0;
  uint64_t extra_requests_reserved = 0;
  uint64_t bytes_per_round = 0;       // every offloaded group crosses the link each round
  double round_ms = 0;                // bytes_per_round / link bandwidth
  double iteration_ms = 0;
  bool transfer_exceeds_iteration = false;
  bool overlapped = false;            // two or more buffers: a copy overlaps the part's own compute
  double window_ms = 0;               // compute time a group's copy can hide under
  double stall_per_group_ms = 0;      // copy time beyond the window
  double effective_round_ms = 0;      // iteration + stalls (= max(round, iteration) when spaced evenly)
  double throughput_ceiling_tok_s = 0;
  uint64_t rounds = 0;                // output - 1 decode rounds after the prefill's first token
  double transfer_total_s = 0;        // rounds x round_ms
  double generation_s = 0;            // rounds x effective_round_ms
  std::optional<bool> meets_deadline;
  uint64_t max_hidden_layers = 0;     // most layers whose transfer still fits under the iteration
  std::optional<uint64_t> hiding_batch;  // smallest batch whose iteration covers the round
  uint64_t hiding_batch_searched_to = 0;
  std::vector<std::string> derivation;
};

// Whether tensors of `role` belong to `part` (the runtime moves exactly these to its host pool).
bool offload_part_contains(OffloadPart part, TensorRole role);
// Whether layer `layer` is offloaded when one layer in every `every` is: layers k-1, 2k-1, ...
bool offload_layer_selected(uint64_t layer, uint64_t every);

// Bytes of `part` in layer `layer` of `layout`.
uint64_t offload_group_bytes(const WeightsLayout& layout, OffloadPart part, uint64_t layer);

// The memory side of an offload, which needs no link: what leaves the device for the host pool
// and what its prefetch slots take back. `fit` counts these; plan_offload starts from them.
struct OffloadMemory {
  OffloadPart part = OffloadPart::ffn;
  uint64_t every = 4;
  uint64_t buffers = 2;
  uint64_t layers = 0;              // of the model
  uint64_t layers_offloaded = 0;
  uint64_t group_bytes = 0;         // the part of one layer (the largest, if they differ)
  uint64_t freed_bytes = 0;         // all offloaded groups, now in host memory
  uint64_t buffer_bytes = 0;        // buffers x group_bytes, on the device
  int64_t net_saving_bytes() const { return static_cast<int64_t>(freed_bytes) - static_cast<int64_t>(buffer_bytes); }
  std::string label() const;        // "ffn of 9 of 36 layers, 2 slots of 288 MiB"
};
// InputError for `every` or `buffers` outside 1..layers (named as the plan field and the flag).
OffloadMemory offload_memory(const ModelSpec& spec, const WeightsLayout& layout, double weights_scale,
                             OffloadPart part, uint64_t every, uint64_t buffers);

// `weights_scale` rescales layout bytes to a given file size; `roofline` (optional) answers the
// batch from which the transfer hides, searched up to `max_batch`.
OffloadResult plan_offload(const ModelSpec& spec, const WeightsLayout& layout, double weights_scale,
                           KvTypes kv, const OffloadInput& in, const Roofline* roofline,
                           uint64_t max_batch);

}  // namespace infer_plan
