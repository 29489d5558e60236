// The seed's M2 Max case reads: 96 GB - 8 GiB = 81.41 GiB usable; 79.81 GiB of weights leave
// 1.60 GiB; one 8K request of Qwen3-235B-A22B needs 1.47 GiB of KV: fits with 0.13 GiB spare.
#include "planner/cost/memory_fit.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "planner/cost/engine_memory.hpp"
#include "planner/core/ggml_type.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/limits.hpp"
#include "planner/cost/kv_cache.hpp"
#include "planner/cost/speculative.hpp"
#include "planner/core/units.hpp"

namespace infer_plan {
namespace {

std::string row_text(const ModelSpec& s, GgmlType type) {
  const GgmlTypeInfo& t = ggml_type_info(type);
  const uint64_t row = ggml_row_bytes(type, s.head_dim, "KV row");
  if (!t.quantized()) return fmt::format("{} B per head row ({} x {} B, {})", row, s.head_dim, t.block_bytes, t.name);
  return fmt::format("{} B per head row ({} / {} blocks x {} B, {})", row, s.head_dim,
                     t.block_values, t.block_bytes, t.name);
}

}  // namespace

std::vector<std::string> kv_per_token_derivation(const ModelSpec& s, KvTypes types, uint64_t tp) {
  std::vector<std::string> out;
  if (s.is_mla()) {  // one latent row per layer: kv_lora_rank + the shared RoPE key
    const uint64_t row = ggml_row_bytes(types.k, s.kv_k_values(), "KV row"), total = kv_bytes_per_token(s, types, tp);
    out.push_back(fmt::format("KV/token = {} layers x one latent row ({} + {} values, {}: {} B){} = {} B = {}", s.layers,
                              s.kv_lora_rank, s.qk_rope_dim, ggml_type_info(types.k).name, row,
                              tp > 1 ? fmt::format(", on each of {} devices", tp) : "", total, format_bytes(total)));
    return out;
  }
  const uint64_t heads = kv_heads_per_device(s, tp);
  const std::string heads_text =
      tp == 1 ? fmt::format("{} KV heads", heads)
              : fmt::format("{} KV heads per device ({} over {} devices)", heads, s.kv_heads, tp);
  const uint64_t total = kv_bytes_per_token(s, types, tp);
  const std::string layers = s.is_hybrid() ? fmt::format("{} attention layers", s.attention_layers())
                                           : fmt::format("{} layers", s.layers);
  if (types.k == types.v) {
    out.push_back(fmt::format("KV/token = 2 (K, V) x {} x {} x {} = {} B = {}", layers,
                              heads_text, row_text(s, types.k), total, format_bytes(total)));
  } else {
    const uint64_t k = kv_k_bytes_per_token(s, types.k, tp), v = kv_v_bytes_per_token(s, types.v, tp);
    out.push_back(fmt::format("K/token  = {} x {} x {} = {} B", layers, heads_text, row_text(s, types.k), k));
    out.push_back(fmt::format("V/token  = {} x {} x {} = {} B", layers, heads_text, row_text(s, types.v), v));
    out.push_back(fmt::format("KV/token = {} + {} = {} B = {}", k, v, total, format_bytes(total)));
  }
  if (s.is_hybrid()) {
    const ModelSpec::LinearAttention& a = s.linear;
    const uint64_t state = recurrent_state_bytes(s, types, tp);
    out.push_back(fmt::format("state    = {} linear-attention layers x ({} conv taps x {} channels, {} + {} value heads x "
                              "{} x {}, {}){} = {} B = {} per sequence, whatever its context",
                              s.linear_layer_count(), a.conv_kernel - 1, a.conv_channels() / tp,
                              ggml_type_info(types.conv_state).name, a.value_heads / tp, a.key_head_dim, a.value_head_dim,
                              ggml_type_info(types.recurrent_state).name, tp > 1 ? " on each device" : "", state,
                              format_bytes(state)));
  }
  return out;
}

uint64_t FitResult::kv_tokens_in(uint64_t bytes) const {
  if (kv_bytes_per_request == 0 || context == 0) return kv_bytes_per_token ? bytes / kv_bytes_per_token : 0;
  __extension__ using Wide = unsigned __int128;  // bytes < 2^60 times tokens < 2^24
  return static_cast<uint64_t>(static_cast<Wide>(bytes) * kv_cache_tokens(context) / kv_bytes_per_request);
}

FitResult fit_memory(const ModelSpec& s, const HwProfile& hw, const FitRequest& request,
                     uint64_t weights_bytes_total, const std::string& weights_label, bool with_derivation,
                     const OffloadMemory* offload, const LayerSplit* split, const DeviceLayers* device) {
  // llama.cpp splits a model across its devices by whole layers (-sm layer), each layer's KV with it, and
  // KV rows whole per layer (no heads are split): `device`, the one dealt the most to hold, or without it
  // (the nearest-plan searches) one of ceil(L / N) layers and W / N of the weights.
  const bool layer_split = (request.engine == "llama.cpp" || device) && request.tp > 1;
  if (layer_split && request.tp > s.layers)
    throw InputError(fmt::format("field 'tp': llama.cpp splits {}'s {} layers across devices; {} devices leave some "
                                 "without a layer", s.name, s.layers, request.tp));
  if (!layer_split) check_tensor_parallel(s, request.tp, "--tp");
  const uint64_t kv_tp = layer_split ? 1 : request.tp;
  if (split) {
    // what put weights on the host: the layers (-ngl) or, with every layer on the device, the experts
    const bool all_layers = split->gpu_layers >= split_layer_count(s);
    const bool by_name = all_layers && split->override_host_tensors > 0;
    const bool experts_only = all_layers && !by_name && split->cpu_moe_layers > 0;
    const std::string what = by_name ? "override_tensor" : experts_only ? "--n-cpu-moe" : "--n-gpu-layers";
    const std::string held =
        by_name        ? fmt::format("{} tensors placed in host memory by name", split->override_host_tensors)
        : experts_only ? fmt::format("the routed experts of {} of {} layers in host memory", split->cpu_moe_layers, s.layers)
                       : fmt::format("{} of {} layers on the device leaves the rest in host memory", split->gpu_layers,
                                     split_layer_count(s));
    if (request.tp > 1)
      throw InputError(fmt::format("{}: keeping weights in host memory with tensor parallel (--tp) is not modelled; keep them "
                                   "on one device's host, or every weight on the devices", what));
    if (offload)
      throw InputError(fmt::format("{}: keeping weights in host memory beside an 'offload' section is not modelled; use one of "
                                   "the two", what));
    if (!hw.host)
      throw InputError(fmt::format("{}: {}, and profile {} has no 'host' section; give the host's --host-memory and "
                                   "--host-bandwidth",
                                   what, held, hw.name));
  }
  // Every term below 2^60 bytes (planner/core/limits): their sums and differences cannot wrap
  // the signed margins, so a verdict is never flipped by overflow.
  if (weights_bytes_total > kMaxBytes)
    throw InputError(fmt::format("weights: {} bytes ({}) is more than 1024 PiB; no device holds it", weights_bytes_total,
                                 weights_label));
  uint64_t kv_total = 0;
  if (__builtin_mul_overflow(kv_bytes_per_token(s, request.kv, kv_tp), kv_cache_tokens(request.context), &kv_total) ||
      __builtin_mul_overflow(kv_total, request.requests, &kv_total) || kv_total > kMaxBytes)
    throw InputError(fmt::format("KV cache: {} requests x {} tokens of {} is more than 1024 PiB; no device holds it",
                                 request.requests, request.context, s.name));
  FitResult r;
  r.tp = request.tp;
  r.layer_split = layer_split;
  r.context = request.context;
  r.requests = request.requests;
  r.capacity_bytes = hw.memory_capacity_bytes;
  r.system_reserved_bytes = hw.memory_reserved_bytes;
  r.usable_bytes = hw.usable_bytes();
  r.weights_label = weights_label;
  r.weights_bytes = (weights_bytes_total + request.tp - 1) / request.tp;
  r.device_weights_bytes = r.weights_bytes;
  if (offload) {
    OffloadMemory& o = r.offload.emplace(*offload);
    o.freed_bytes = (o.freed_bytes + request.tp - 1) / request.tp;
    o.group_bytes = (o.group_bytes + request.tp - 1) / request.tp;
    o.buffer_bytes = o.buffers * o.group_bytes;
    r.device_weights_bytes = r.weights_bytes - std::min(o.freed_bytes, r.weights_bytes) + o.buffer_bytes;
  }
  // With a split, the device's figures are those of its layers (its part of the spec).
  const ModelSpec layer_split_part =
      !layer_split ? ModelSpec{} : device ? device->part : first_layers_spec(s, (s.layers + request.tp - 1) / request.tp);
  const ModelSpec& device_spec = split ? split->device_part : layer_split ? layer_split_part : s;
  if (layer_split && device) {
    r.device_weights_bytes = r.weights_bytes = device->weights_bytes;
    r.device_note = fmt::format("{}, the device with the least to spare", device_layers_label(*device));
  }
  if (split) {
    r.split = *split;
    r.device_weights_bytes = split->device_weights_bytes;
  }
  // (A part with no layers, -ngl 0's device or every layer's host, caches nothing.)
  r.kv_bytes_per_token = device_spec.layers ? kv_bytes_per_token(device_spec, request.kv, kv_tp) : 0;
  r.kv_bytes_per_request =
      device_spec.layers ? kv_bytes_for_context(device_spec, request.kv, request.context, kv_tp) : 0;
  r.kv_bytes = r.kv_bytes_per_request * request.requests;
  r.reserves = hw.reserves;
  r.reserves.insert(r.reserves.end(), request.reserves.begin(), request.reserves.end());
  if (request.engine == "llama.cpp" && request.engine_settings.flash_attention == false &&
      ggml_type_info(request.kv.v).block_values > 1)
    throw InputError(fmt::format("llama.cpp refuses a quantized V cache ({}) without flash attention: set field "
                                 "'flash_attn' on (or auto), or keep V at f16", ggml_type_info(request.kv.v).name));
  const EngineMemory engine =
      engine_memory(request.engine, s, hw, request.context, request.requests, request.tp, request.engine_settings);
  r.engine_assumption = engine.assumption;
  r.kv_share = engine.kv_share;
  r.reserves.insert(r.reserves.end(), engine.reserves.begin(), engine.reserves.end());
  if (engine.usable_fraction < 1.0)  // vLLM hands KV only its gpu_memory_utilization of the capacity
    r.usable_bytes = std::min(r.usable_bytes, static_cast<uint64_t>(static_cast<double>(r.capacity_bytes - std::min(
                                                                        engine.unseen_bytes, r.capacity_bytes)) *
                                                                    engine.usable_fraction));
  for (const auto& n : r.reserves) {
    if (n.bytes > kMaxBytes - r.reserved_bytes)
      throw InputError(fmt::format("reserves: {} and those before it sum to more than 1024 PiB", n.name));
    r.reserved_bytes += n.bytes;
  }

  const int64_t usable = static_cast<int64_t>(r.usable_bytes);
  r.free_after_weights_bytes = usable - static_cast<int64_t>(r.device_weights_bytes);
  int64_t for_kv = r.free_after_weights_bytes - static_cast<int64_t>(r.reserved_bytes);
  if (engine.kv_share < 1.0 && for_kv > 0)  // TensorRT-LLM's pool takes its fraction of what is left
    for_kv = static_cast<int64_t>(static_cast<double>(for_kv) * engine.kv_share);
  r.headroom_bytes = for_kv - static_cast<int64_t>(r.kv_bytes);
  r.fits = r.headroom_bytes >= 0;
  r.kv_room_bytes = for_kv > 0 ? static_cast<uint64_t>(for_kv) : 0;
  if (engine.pool_block_tokens && r.kv_bytes_per_token)
    r.kv_pool_tokens = r.kv_room_bytes / r.kv_bytes_per_token / *engine.pool_block_tokens * *engine.pool_block_tokens;
  if (r.kv_room_bytes > 0) {
    // Whole pages only: a context that needs a page more than fits does not fit. A device that
    // keeps no layer (-ngl 0) holds no KV: the host bounds both.
    r.max_requests = r.kv_bytes_per_request ? r.kv_room_bytes / r.kv_bytes_per_request : kMaxConcurrentRequests;
    r.max_context = device_spec.layers ? kv_context_for_bytes(device_spec, request.kv, r.kv_room_bytes / request.requests,
                                                              kv_tp)
                                       : kMaxContextTokens;
    r.context_unbounded = s.window_layer_count() == s.layers && r.max_context == kMaxContextTokens;
  }
  if (split) {
    const HostProfile& h = *hw.host;
    HostFit& host = r.host.emplace();
    host.description = h.description;
    host.capacity_bytes = h.memory_capacity_bytes;
    host.reserved_bytes = h.memory_reserved_bytes;
    host.usable_bytes = h.usable_bytes();
    host.weights_bytes = split->host_weights_bytes;
    const uint64_t per_request =
        split->host_part.layers ? kv_bytes_for_context(split->host_part, request.kv, request.context) : 0;
    host.kv_bytes = per_request * request.requests;
    const int64_t host_room = static_cast<int64_t>(host.usable_bytes) - static_cast<int64_t>(host.weights_bytes);
    host.headroom_bytes = host_room - static_cast<int64_t>(host.kv_bytes);
    host.fits = host.headroom_bytes >= 0;
    r.fits = r.fits && host.fits;
    if (host_room <= 0) {
      r.max_requests = r.max_context = 0;
      r.context_unbounded = false;
    } else if (split->host_part.layers) {
      const auto room = static_cast<uint64_t>(host_room);
      r.max_requests = std::min(r.max_requests, per_request ? room / per_request : kMaxConcurrentRequests);
      r.max_context = std::min(r.max_context, kv_context_for_bytes(split->host_part, request.kv, room / request.requests));
    }
  }

  if (!with_derivation) return r;
  if (s.max_context && request.context > s.max_context)
    r.warnings.push_back(fmt::format("context {} exceeds {}'s max_position_embeddings {}", request.context,
                                     s.name, s.max_context));
  if (r.context_unbounded)  // every layer keeps only its window: past it, a request costs no more memory
    r.warnings.push_back(fmt::format("every layer of {} keeps only its last {} tokens, so memory does not bound "
                                     "the context{}", s.name, s.cached_window(),
                                     s.max_context ? fmt::format("; it was trained for {}", s.max_context) : ""));
  else if (s.max_context && r.max_context > s.max_context)
    r.warnings.push_back(fmt::format("memory allows {} tokens per request, but {} was trained for {}",
                                     r.max_context, s.name, s.max_context));
  if (request.engine == "llama.cpp")
    r.warnings.push_back("the most requests and the longest context keep llama.cpp's compute buffer at this plan's "
                         "n_ctx; its attention term grows with n_ctx, so near those limits it is larger");
  if (s.ignored_window)
    r.warnings.push_back(fmt::format("{} declares a {}-token sliding window; llama.cpp's {} "
                                     "architecture ignores it, so the KV is sized for the whole context",
                                     s.name, s.ignored_window, s.gguf_arch));

  auto& d = r.derivation;
  d.push_back(fmt::format("engine   = {}", r.engine_assumption));
  if (engine.usable_fraction < 1.0)
    d.push_back(fmt::format("usable   = min(capacity - reserved, {} x (capacity - {})) = {}", engine.usable_fraction,
                            gib(engine.unseen_bytes), gib(r.usable_bytes)));
  else
    d.push_back(fmt::format("usable   = capacity - reserved = {} B - {} B = {} - {} = {}",
                            r.capacity_bytes, r.system_reserved_bytes, gib(r.capacity_bytes),
                            gib(r.system_reserved_bytes), gib(r.usable_bytes)));
  if (request.tp == 1)
    d.push_back(fmt::format("weights  = {} = {} B = {}", weights_label, r.weights_bytes, gib(r.weights_bytes)));
  else if (layer_split && device)
    d.push_back(fmt::format("weights  = {}, the tensors of {} = {} B = {} (token_embd in host memory)", weights_label,
                            device_layers_label(*device), r.weights_bytes, gib(r.weights_bytes)));
  else
    d.push_back(fmt::format("weights  = {} / {} devices = {} B = {} per device", weights_label,
                            request.tp, r.weights_bytes, gib(r.weights_bytes)));
  if (r.split)
    d.push_back(fmt::format("split    = {}: device weights {}, host weights {}", layer_split_label(*r.split, s),
                            gib(r.split->device_weights_bytes), gib(r.split->host_weights_bytes)));
  if (r.offload)
    d.push_back(fmt::format("device   = weights - offloaded to host + prefetch slots = {} - {} ({} x {}) + {} ({} x {}) = {}",
                            gib(r.weights_bytes), gib(r.offload->freed_bytes), r.offload->layers_offloaded,
                            format_bytes(r.offload->group_bytes), gib(r.offload->buffer_bytes), r.offload->buffers,
                            format_bytes(r.offload->group_bytes), gib(r.device_weights_bytes)));
  if (layer_split)
    d.push_back(fmt::format("layers   = llama.cpp splits {} layers over {} devices; {}{}, with their KV", s.layers,
                            request.tp, device ? "figures of " : "the first hold ",
                            device ? device_layers_label(*device) : fmt::format("{} each", device_spec.layers)));
  for (auto& line : kv_per_token_derivation(device_spec, request.kv, kv_tp)) d.push_back(line);
  if (kv_cache_tokens(request.context) != request.context)
    d.push_back(fmt::format("pages    = {} tokens rounded up to whole {}-token pages = {} tokens", request.context,
                            kKvPageTokens, kv_cache_tokens(request.context)));
  if (s.is_hybrid() && s.window_layer_count() == 0) {
    d.push_back(fmt::format("KV       = ({} B/token x {} tokens + {} B state) x {} request{} = {} B = {}",
                            r.kv_bytes_per_token, kv_cache_tokens(request.context),
                            recurrent_state_bytes(device_spec, request.kv, kv_tp), request.requests,
                            request.requests == 1 ? "" : "s", r.kv_bytes, gib(r.kv_bytes)));
  } else if (s.window_layer_count() == 0) {
    d.push_back(fmt::format("KV       = {} B/token x {} tokens x {} request{} = {} B = {}", r.kv_bytes_per_token,
                            kv_cache_tokens(request.context), request.requests, request.requests == 1 ? "" : "s",
                            r.kv_bytes, gib(r.kv_bytes)));
  } else {  // window layers hold at most their window
    const uint64_t full = s.layers - s.window_layer_count(), tokens = kv_cache_tokens(request.context);
    d.push_back(fmt::format("KV       = {} B/token/layer x ({} full layer{} x {} tokens + {} window layer{} x min({}, {})) "
                            "x {} request{} = {} B = {}",
                            r.kv_bytes_per_token / s.layers, full, full == 1 ? "" : "s", tokens, s.window_layer_count(),
                            s.window_layer_count() == 1 ? "" : "s", tokens, kv_cache_tokens(s.cached_window()),
                            request.requests, request.requests == 1 ? "" : "s", r.kv_bytes, gib(r.kv_bytes)));
  }
  d.push_back(fmt::format("free     = usable - {} = {} - {} = {}", r.offload ? "device weights" : "weights",
                          gib(r.usable_bytes), gib(r.device_weights_bytes), gib(r.free_after_weights_bytes)));
  std::string reserve_terms;
  for (const auto& n : r.reserves) reserve_terms += fmt::format(" - {} ({})", gib(n.bytes), n.name);
  if (engine.kv_share < 1.0)
    d.push_back(fmt::format("headroom = {} x (free{}) - KV = {} x ({}{}) - {} = {} -> {}", engine.kv_share,
                            r.reserves.empty() ? "" : " - reserves", engine.kv_share, gib(r.free_after_weights_bytes),
                            reserve_terms, gib(r.kv_bytes), gib(r.headroom_bytes), r.fits ? "fits" : "does not fit"));
  else
    d.push_back(fmt::format("headroom = free{} - KV = {}{} - {} = {} -> {}", r.reserves.empty() ? "" : " - reserves",
                            gib(r.free_after_weights_bytes), reserve_terms, gib(r.kv_bytes),
                            gib(r.headroom_bytes), r.fits ? "fits" : "does not fit"));
  if (for_kv > 0) {
    d.push_back(fmt::format("max requests at {} tokens = floor({} B / {} B) = {}", request.context,
                            for_kv, r.kv_bytes_per_request, r.max_requests));
    if (s.window_layer_count() == 0 && !s.is_hybrid())
      d.push_back(fmt::format("max context at {} request{} = floor({} B / ({} B x {})), whole pages = {} tokens",
                              request.requests, request.requests == 1 ? "" : "s", for_kv, r.kv_bytes_per_token,
                              request.requests, r.max_context));
    else
      d.push_back(fmt::format("max context at {} request{} = the longest whose KV ({}) fits {} B / {}, "
                              "whole pages = {} tokens", request.requests, request.requests == 1 ? "" : "s",
                              s.is_hybrid() ? "and the linear layers' state" : "window layers capped", for_kv,
                              request.requests, r.max_context));
  } else {
    d.push_back("max requests = 0, max context = 0: nothing is left for the KV cache");
  }
  if (r.host)
    d.push_back(fmt::format("host     = usable {} ({} - {} reserved) - weights {} - KV {} ({} host layers) = {} -> {}",
                            gib(r.host->usable_bytes), gib(r.host->capacity_bytes), gib(r.host->reserved_bytes),
                            gib(r.host->weights_bytes), gib(r.host->kv_bytes), split->host_part.layers,
                            gib(r.host->headroom_bytes), r.host->fits ? "fits" : "does not fit"));
  return r;
}

uint64_t auto_gpu_layers(const ModelSpec& spec, const HwProfile& hw, const FitRequest& request,
                         const PlanWeights& weights, const HostTensors& host) {
  // The device's need only grows with N: the largest N that fits, from the top.
  for (uint64_t n = split_layer_count(spec);; --n) {
    const LayerSplit split = layer_split(spec, weights, n, host);
    FitResult device_only;
    if (n == split_layer_count(spec) && !host.any_host()) {
      device_only = fit_memory(spec, hw, request, weights.bytes, weights.label, false);
    } else {
      HwProfile with_host = hw;  // the device's side alone: any host holds the rest
      if (!with_host.host) with_host.host = HostProfile{"", 1, 0, 1, 1};
      with_host.host->memory_capacity_bytes = kMaxBytes;
      device_only = fit_memory(spec, with_host, request, weights.bytes, weights.label, false, nullptr, &split);
    }
    if (device_only.fits || n == 0) return device_only.fits ? n : 0;
  }
}

}  // namespace infer_plan
