#include "planner/cost/layer_split.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <regex>

#include "planner/core/input_error.hpp"
#include "planner/core/units.hpp"

namespace infer_plan {
namespace {

// `spec` keeping layers [begin, end): what the KV functions read (the count and each layer's
// window).
ModelSpec layer_range(const ModelSpec& spec, uint64_t begin, uint64_t end) {
  ModelSpec part = spec;
  part.layers = end - begin;
  if (!spec.window_layers.empty())
    part.window_layers.assign(spec.window_layers.begin() + static_cast<std::ptrdiff_t>(begin),
                              spec.window_layers.begin() + static_cast<std::ptrdiff_t>(end));
  if (spec.is_hybrid())
    part.linear_layers.assign(spec.linear_layers.begin() + static_cast<std::ptrdiff_t>(begin),
                              spec.linear_layers.begin() + static_cast<std::ptrdiff_t>(end));
  return part;
}

}  // namespace

uint64_t split_layer_count(const ModelSpec& spec) { return spec.layers + 1; }

namespace {
bool routed_expert(TensorRole r) {
  return r == TensorRole::ffn_gate_exps || r == TensorRole::ffn_up_exps || r == TensorRole::ffn_down_exps ||
         r == TensorRole::ffn_gate_exps_bias || r == TensorRole::ffn_up_exps_bias || r == TensorRole::ffn_down_exps_bias;
}
}  // namespace

namespace {
// A buffer llama.cpp's backends name: true host memory, false a device's; nullopt unknown.
std::optional<bool> buffer_is_host(const std::string& buffer) {
  static const std::regex host("CPU|[A-Za-z]+_Host"), device("(CUDA|ROCm|Vulkan|SYCL|MTL|CANN|MUSA|OpenCL)[0-9]+|Metal");
  if (std::regex_match(buffer, host)) return true;
  if (std::regex_match(buffer, device)) return false;
  return std::nullopt;
}
}  // namespace

std::vector<TensorOverride> parse_tensor_overrides(std::string_view text, std::string_view what) {
  std::vector<TensorOverride> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t comma = std::min(text.find(',', begin), text.size());
    const std::string item(text.substr(begin, comma - begin));
    begin = comma + 1;
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw InputError(fmt::format("{}: '{}'; expected REGEX=BUFFER, e.g. ffn_.*_exps=CPU (several joined by commas)",
                                   what, item));
    TensorOverride o{item.substr(0, eq), item.substr(eq + 1)};
    try {
      std::regex check(o.pattern);
    } catch (const std::regex_error& e) {
      throw InputError(fmt::format("{}: '{}' is not a regular expression ({})", what, o.pattern, e.what()));
    }
    const std::optional<bool> host = buffer_is_host(o.buffer);
    if (!host)
      throw InputError(fmt::format("{}: buffer '{}' is none llama.cpp names; expected CPU (host memory) or a device's, "
                                   "e.g. CUDA0, ROCm0, Vulkan0, Metal", what, o.buffer));
    o.host = *host;
    out.push_back(std::move(o));
  }
  return out;
}

std::string tensor_overrides_text(const std::vector<TensorOverride>& overrides) {
  std::string text;
  for (const TensorOverride& o : overrides) text += (text.empty() ? "" : ",") + o.pattern + "=" + o.buffer;
  return text;
}

bool HostTensors::any_host() const {
  return cpu_moe_layers > 0 || std::find(forced.begin(), forced.end(), 1) != forced.end();
}

HostTensors host_tensors(const PlanWeights& weights, uint64_t cpu_moe_layers, const std::vector<TensorOverride>& overrides) {
  HostTensors h{cpu_moe_layers, {}};
  if (overrides.empty()) return h;
  std::vector<std::regex> patterns;
  for (const TensorOverride& o : overrides) patterns.emplace_back(o.pattern);
  for (const TensorPlacement& t : weights.layout.tensors) {
    signed char home = -1;
    for (size_t i = 0; i < patterns.size() && home < 0; ++i)
      if (std::regex_search(t.tensor.name, patterns[i])) home = overrides[i].host ? 1 : 0;
    h.forced.push_back(home);
  }
  return h;
}

LayerSplit layer_split(const ModelSpec& spec, const PlanWeights& weights, uint64_t gpu_layers, const HostTensors& host) {
  LayerSplit s;
  s.host_tensors = host;
  s.cpu_moe_layers = std::min(host.cpu_moe_layers, spec.layers);
  s.gpu_layers = std::min(gpu_layers, split_layer_count(spec));
  s.device_blocks = std::min(s.gpu_layers, spec.layers);
  s.head_on_device = s.gpu_layers > spec.layers;
  const uint64_t first_device_block = spec.layers - s.device_blocks;
  double device = 0, on_host = 0;
  for (size_t i = 0; i < weights.layout.tensors.size(); ++i) {
    const TensorPlacement& t = weights.layout.tensors[i];
    const double bytes = static_cast<double>(t.bytes) * weights.scale;
    const auto rounded = static_cast<uint64_t>(std::llround(bytes));
    // The global tensors (token_embd, output norm and head) go with the head: all on the device is
    // the plan without a split, as the fit counts it. An override decides before --n-cpu-moe.
    bool on_device = t.tensor.layer >= 0 ? static_cast<uint64_t>(t.tensor.layer) >= first_device_block
                                         : s.head_on_device;
    const signed char forced = i < host.forced.size() ? host.forced[i] : -1;
    if (forced >= 0) on_device = forced == 0;
    if (forced == 1 && t.tensor.role != TensorRole::token_embd) {
      ++s.override_host_tensors;
      s.override_host_bytes += rounded;
    }
    if (routed_expert(t.tensor.role)) {
      s.expert_bytes += rounded;
      if (forced < 0 && on_device && static_cast<uint64_t>(t.tensor.layer) < s.cpu_moe_layers) on_device = false;
      if (!on_device && t.tensor.layer >= 0 && static_cast<uint64_t>(t.tensor.layer) >= first_device_block)
        s.host_expert_bytes += rounded;
    }
    (on_device ? device : on_host) += bytes;
    if (t.tensor.role == TensorRole::token_embd) s.embd_bytes += static_cast<uint64_t>(std::llround(bytes));
  }
  // The layout's sum may differ from weights.bytes by rounding; the split keeps the plan's total.
  s.device_weights_bytes = static_cast<uint64_t>(std::llround(device));
  s.host_weights_bytes = weights.bytes - std::min(s.device_weights_bytes, weights.bytes);
  s.device_part = layer_range(spec, first_device_block, spec.layers);
  s.host_part = layer_range(spec, 0, first_device_block);
  return s;
}

std::vector<DeviceLayers> device_layers(const ModelSpec& spec, const PlanWeights& weights,
                                        const std::vector<double>& shares) {
  double total = 0;
  for (double s : shares) total += s;
  std::vector<double> cumulative;
  for (double s : shares) cumulative.push_back((cumulative.empty() ? 0.0 : cumulative.back()) + s / total);
  const uint64_t slots = split_layer_count(spec);
  std::vector<DeviceLayers> devices(shares.size());
  std::vector<uint64_t> device_of(slots);
  for (uint64_t i = 0; i < slots; ++i) {
    const double at = static_cast<double>(i) / static_cast<double>(slots);
    const auto it = std::upper_bound(cumulative.begin(), cumulative.end(), at);
    device_of[i] = std::min<uint64_t>(static_cast<uint64_t>(it - cumulative.begin()), shares.size() - 1);
  }
  for (size_t d = 0; d < devices.size(); ++d) {
    DeviceLayers& dev = devices[d];
    const auto first = std::find(device_of.begin(), device_of.end(), d);
    dev.first = std::min<uint64_t>(static_cast<uint64_t>(first - device_of.begin()), spec.layers);
    dev.end = dev.first;
    while (dev.end < spec.layers && device_of[dev.end] == d) ++dev.end;
    dev.head = device_of[spec.layers] == d;
    dev.part = layer_range(spec, dev.first, dev.end);
  }
  bool own_head = false;
  double embd = 0;
  for (const TensorPlacement& t : weights.layout.tensors) {
    const double bytes = static_cast<double>(t.bytes) * weights.scale;
    own_head |= t.tensor.role == TensorRole::output;
    if (t.tensor.role == TensorRole::token_embd) {  // in host memory
      embd += bytes;
      continue;
    }
    for (DeviceLayers& dev : devices)
      if (t.tensor.layer >= 0 ? static_cast<uint64_t>(t.tensor.layer) >= dev.first &&
                                    static_cast<uint64_t>(t.tensor.layer) < dev.end
                              : dev.head)
        dev.weights_bytes += static_cast<uint64_t>(std::llround(bytes));
  }
  if (!own_head)  // tied embeddings: llama.cpp loads a copy of token_embd as the head
    for (DeviceLayers& dev : devices)
      if (dev.head) dev.weights_bytes += static_cast<uint64_t>(std::llround(embd));
  return devices;
}

std::string device_layers_label(const DeviceLayers& d) {
  const std::string layers = d.end > d.first ? fmt::format("layers {}-{}", d.first, d.end - 1) : "no layer";
  return d.head ? layers + " and the output head" : layers;
}

double split_host_weight_share(const LayerSplit& s) {
  const double embd_on_host = s.head_on_device ? 0.0 : static_cast<double>(s.embd_bytes);
  const double host = std::max(0.0, static_cast<double>(s.host_weights_bytes) - embd_on_host -
                                        static_cast<double>(s.host_expert_bytes));
  const double all = static_cast<double>(s.host_weights_bytes + s.device_weights_bytes) - static_cast<double>(s.embd_bytes);
  return all > 0 ? std::clamp(host / all, 0.0, 1.0) : 0.0;
}

double split_host_expert_share(const LayerSplit& s) {
  return s.expert_bytes ? static_cast<double>(s.host_expert_bytes) / static_cast<double>(s.expert_bytes) : 0.0;
}

double split_host_kv_share(const LayerSplit& s, const ModelSpec& spec) {
  return spec.layers ? static_cast<double>(s.host_part.layers) / static_cast<double>(spec.layers) : 0.0;
}

namespace {
double host_bytes_read(const StepCost& whole, const LayerSplit& s, const ModelSpec& spec) {
  return whole.weight_bytes * split_host_weight_share(s) + whole.expert_bytes * split_host_expert_share(s) +
         whole.kv_bytes * split_host_kv_share(s, spec);
}
}  // namespace

double split_host_s(const StepCost& whole, const LayerSplit& s, const ModelSpec& spec, const HostProfile& host) {
  return host_bytes_read(whole, s, spec) / host.achieved_bandwidth();
}

double split_step_s(const StepCost& whole, const LayerSplit& s, const ModelSpec& spec, const HostProfile& host) {
  const double bytes = whole.bytes();
  const double device_share = bytes > 0 ? 1.0 - host_bytes_read(whole, s, spec) / bytes : 1.0;
  return whole.time_s * device_share + split_host_s(whole, s, spec, host);
}

namespace {
std::string layer_placement_label(const LayerSplit& s, const ModelSpec& spec) {
  const uint64_t total = split_layer_count(spec);
  if (s.gpu_layers >= total) return fmt::format("{}/{} layers on the device (all)", s.gpu_layers, total);
  const uint64_t host_blocks = spec.layers - s.device_blocks;
  const std::string host_blocks_text =
      host_blocks == 0 ? "" : host_blocks == 1 ? ", block 0" : fmt::format(", blocks 0-{}", host_blocks - 1);
  return fmt::format("{}/{} layers on the device (the last {} block{}); in host memory: token_embd{} and the head",
                     s.gpu_layers, total, s.device_blocks, s.device_blocks == 1 ? "" : "s", host_blocks_text);
}
}  // namespace

std::string layer_split_label(const LayerSplit& s, const ModelSpec& spec) {
  const std::string experts =
      s.cpu_moe_layers == 0 ? ""
      : s.cpu_moe_layers >= spec.layers
          ? "; every layer's routed experts in host memory"
          : fmt::format("; the routed experts of layers 0-{} in host memory", s.cpu_moe_layers - 1);
  const std::string overridden =
      s.override_host_tensors == 0
          ? ""
          : fmt::format("; {} tensor{} ({}) in host memory by override_tensor", s.override_host_tensors,
                        s.override_host_tensors == 1 ? "" : "s", format_bytes(s.override_host_bytes));
  return layer_placement_label(s, spec) + experts + overridden;
}


}  // namespace infer_plan
