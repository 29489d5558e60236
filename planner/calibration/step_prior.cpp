#include "planner/calibration/step_prior.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include "planner/calibration/serving_prior.hpp"
#include "planner/catalog/catalog.hpp"
#include "planner/catalog/embedded_data.hpp"
#include "planner/core/input_error.hpp"
#include "planner/cost/roofline.hpp"
#include "planner/model/device_arch.hpp"

namespace infer_plan {
namespace {

constexpr std::string_view kEngineLevel = "engine";

// The device the pooled terms are for: what of its profile they scale by.
struct PoolTarget {
  std::string arch;
  double bandwidth = 0;  // datasheet memory bandwidth, B/s
  double compute = 0;    // the compute rate its prefill is measured against, ops/s
  std::optional<double> board_power_w;

  static PoolTarget of(const DeviceCalibration& d) {
    return {d.arch, d.bandwidth_bytes_per_s, d.compute_ops_per_s, d.board_power_w};
  }
  static PoolTarget of(const HwProfile& hw) {
    return {hw.arch, hw.memory_bandwidth_bytes_per_s, prefill_compute(hw), hw.board_power_w};
  }
  // The rate a GGUF's products run at in the roofline (its fp16 rate where the profile lists one);
  // 0 where the profile lists no rate the roofline reads.
  static double prefill_compute(const HwProfile& hw) {
    for (const char* precision : {"bf16", "fp16", "fp32"})
      if (hw.compute_ops_per_s.contains(precision)) return product_rate(hw, roofline_rates(hw), GgmlType::F16);
    return 0;
  }
};

std::optional<StepCalibration> pooled_terms(const std::vector<DeviceCalibration>& all, const std::string& engine,
                                            const PoolTarget& target, const std::string& exclude, BuildEra era);

std::vector<DeviceCalibration> fit_builtin_devices(const std::string& engine) {
  std::vector<DeviceCalibration> out;
  const std::vector<std::string> profiles = builtin_hw_names();
  for (const std::string& device : builtin_calibration_names()) {
    if (std::find(profiles.begin(), profiles.end(), device) == profiles.end()) continue;  // no datasheet to scale by
    // Every built-in file fits (a test checks); one that would not is left out of the pool rather
    // than failing every plan of the engine.
    try {
      const HwProfile hw = load_hw_profile(device);
      if (std::optional<CalibrationResult> r = builtin_calibration_result(hw, engine, std::nullopt, false)) {
        std::vector<BuildEra> eras;
        for (const CalibrationPoint& p : r->points) eras.push_back(build_era(p.row.build));
        out.push_back({device, hw.arch, hw.memory_bandwidth_bytes_per_s, PoolTarget::prefill_compute(hw),
                       hw.board_power_w, std::move(*r), std::move(eras)});
      }
    } catch (const InputError&) {
    }
  }
  return out;
}

// The era most of a device's points stand for: what its own fit's prior borrows from.
BuildEra majority_era(const DeviceCalibration& d) {
  const long newer = std::count(d.eras.begin(), d.eras.end(), BuildEra::from_2025);
  return 2 * newer > static_cast<long>(d.eras.size()) ? BuildEra::from_2025 : BuildEra::before_2025;
}

// The devices pooled for `arch` without `exclude`: the architecture's when any is left, else its
// vendor's (apple-m1 from the other Apple chips), else all; `level` says which.
std::vector<const DeviceCalibration*> pooled(const std::vector<DeviceCalibration>& all, const std::string& arch,
                                             const std::string& exclude, std::string& level) {
  const DeviceArch* a = find_device_arch(arch);
  std::vector<const DeviceCalibration*> same, vendor, every;
  for (const DeviceCalibration& d : all) {
    if (d.device == exclude) continue;
    every.push_back(&d);
    if (!a) continue;
    if (d.arch == arch) same.push_back(&d);
    if (const DeviceArch* b = find_device_arch(d.arch); b && b->vendor == a->vendor) vendor.push_back(&d);
  }
  if (!same.empty()) return level = arch, same;
  if (!vendor.empty()) return level = std::string(a->vendor), vendor;
  level = std::string(kEngineLevel);
  return every;
}

// Covariates of the pooled decode fit: the KV cache's read time (attention reads it slower than
// weights), and the weights' and KV's read time x ln(datasheet bandwidth / 1 TB/s) (a faster
// memory is reached at a smaller fraction by one sequence's matrix-vector products: HBM devices
// near half, GDDR and Apple's near 0.8-1).
constexpr std::string_view kBandwidthCovariate = "~bandwidth";
constexpr std::string_view kSharedCost = "~shared";
constexpr std::string_view kFixedTime = "~fixed";
constexpr double kMinSizeSpread = 1.15;
constexpr double kMinReadCost = 1.0 / 1.1;  // the read cost of a datasheet byte: at most 1.1 x the datasheet's rate
constexpr double kReferenceBandwidth = 1e12;
constexpr size_t kBuildsShown = 6;  // builds named in a transferred model's source
constexpr double kTransferredTail = 0.05;  // a transferred band's quantiles: 5th and 95th
constexpr double kLongContextShare = 0.05;  // a decode point's KV read against its weights' that informs the KV cost
// A transferred prefill's compute efficiency goes as (board power / compute rate)^kPowerShare: a
// chip held to its power runs at about the square root's clock. The ada cards show it: pp512 of
// Llama-3.1-8B Q4_K_M at 2024 builds, tokens/s per datasheet fp16 TFLOPS 27.7 (rtx-4080, 320 W),
// 21.6 (rtx-4090, 450 W), 15.9 (rtx-6000-ada, 300 W), per watt 16.8, 15.9, 19.3. Over the 209
// built-in prefill points, leave-one-device-out, at 0 / 0.5 / 0.75 / 1: median 13.9% (13.3% with
// the mean over powered devices alone) / 13.1% / 12.4% / 13.2%; at 0.5 the rtx-6000-ada 76% ->
// 30%, h100-pcie 36% -> 11%, tesla-p40 61% -> 4%, rtx-4080 32% -> 16%, but a40 29% -> 46%,
// rtx-3090 2% -> 23%, a100-80gb-pcie 9% -> 23% (an A100 is more efficient per watt than the
// GA102 cards it pools with). Unfitted: the L40S (XiongjieDai's notebook, build 2834) pp512 8B
// Q4_K_M +28.7% -> +14.3%, 70B Q4_K_M +18.1% -> +4.9% (measured / predicted - 1).
constexpr double kPowerShare = 0.5;

double log_bandwidth(double bytes_per_s) { return std::log(bytes_per_s / kReferenceBandwidth); }

StepSample decode_sample(const DeviceCalibration& d, const CalibrationPoint& p) {
  StepSample x{p.term_s, p.type_terms_s, p.measured_s - p.known_s, d.device + " " + p.group, p.layers};
  x.type_terms_s[std::string(kKvCovariate)] = p.kv_term_s;
  if (p.moe_layers > 0) x.type_terms_s[std::string(kMoeCovariate)] = p.moe_layers * kMoeLayerUnit;
  x.type_terms_s[std::string(kBandwidthCovariate)] = p.term_s * log_bandwidth(d.bandwidth_bytes_per_s);
  return x;
}

// Whether the decode points read every weight type at one model size (weight bytes per layer within
// kMinSizeSpread): then the fixed time cannot be told from the read costs. Across devices the read
// time spreads with the bandwidth, but so do the devices' achieved fractions of it (an M1 Ultra
// reaches a third of its datasheet's): a pool fitting its fixed time there takes one for the other.
using DevicePoint = std::pair<const DeviceCalibration*, const CalibrationPoint*>;
bool one_size_per_type(const std::vector<DevicePoint>& points) {
  std::map<std::string, std::pair<double, double>> size;  // per file type: least and most weight bytes per layer
  for (const auto& [d, p] : points) {
    if (!p->decode) continue;
    const double bytes = (p->term_s - p->kv_term_s) * d->bandwidth_bytes_per_s / p->layers;
    auto [it, fresh] = size.try_emplace(p->weights, bytes, bytes);
    it->second = {std::min(it->second.first, bytes), std::max(it->second.second, bytes)};
  }
  return std::all_of(size.begin(), size.end(), [](const auto& s) { return s.second.second < kMinSizeSpread * s.second.first; });
}

// Each weight type's read cost (per datasheet byte, at `bandwidth`) on a wider pool than `level`:
// the vendor's devices where `level` is the architecture, else all; from the points of `era`'s
// builds only (the K-quants' kernels of 2023-24 are not today's). "~shared": the shared cost.
std::map<std::string, double> wider_type_costs(const std::vector<DeviceCalibration>& all, const std::string& arch,
                                               const std::string& level, const std::string& exclude, BuildEra era,
                                               double bandwidth) {
  const DeviceArch* a = find_device_arch(arch);
  std::vector<StepSample> xs;
  std::vector<DevicePoint> points;
  for (const DeviceCalibration& d : all) {
    if (d.device == exclude) continue;
    const DeviceArch* b = find_device_arch(d.arch);
    if (level == arch && a && !(b && b->vendor == a->vendor)) continue;
    for (size_t i = 0; i < d.fit.points.size(); ++i)
      if (d.fit.points[i].decode && d.eras[i] == era)
        xs.push_back(decode_sample(d, d.fit.points[i])), points.emplace_back(&d, &d.fit.points[i]);
  }
  std::map<std::string, double> out;
  if (xs.size() < 2) return out;
  const StepLine line = fit_step_line(xs);
  const auto bw = line.delta.find(std::string(kBandwidthCovariate));
  const double slope = std::max(kMinReadCost, line.slope + (bw == line.delta.end() ? 0.0 : bw->second) * log_bandwidth(bandwidth));
  for (const auto& [type, d] : line.delta)
    if (!type.starts_with('~')) out[type] = std::max(kMinReadCost, slope + d);
  out[std::string(kSharedCost)] = slope;
  if (!one_size_per_type(points)) out[std::string(kFixedTime)] = line.fixed_s;
  if (const auto kv = line.delta.find(std::string(kKvCovariate)); kv != line.delta.end())
    out[std::string(kKvCovariate)] = std::max(kMinReadCost, slope + kv->second);
  if (const auto moe = line.delta.find(std::string(kMoeCovariate)); moe != line.delta.end())
    out[std::string(kMoeCovariate)] = std::max(0.0, moe->second) * kMoeLayerUnit;  // seconds per layer
  return out;
}

// The weight types a pool's devices never read, priced from a wider pool of the same builds' era:
// the wider pool's cost x the geometric mean of (this pool's / the wider pool's cost) over the
// types both read (else over the shared costs). Borrowed without the era, the 2023-24 builds'
// K-quant costs made the 2025-26 devices' leave-one-device-out worse (dgx-spark 5.8% -> 22.1%);
// with it, and scaled on the common types, over the 267 built-in decode points: median 7.5% ->
// 7.6%, worst +112.5% -> +80.9%, points beyond 40% 22 -> 15 (leave-one-file-out 4.8% -> 4.6%,
// worst 38.7% -> 42.9%). Returns the types borrowed.
std::vector<std::string> borrow_missing_types(DecodeTerms& d, const std::map<std::string, double>& wider, double slope) {
  if (wider.empty()) return {};
  double log_scale = 0;
  int common = 0;
  for (const auto& [type, cost] : wider)
    if (const auto it = d.read_efficiency_by_type.find(type); it != d.read_efficiency_by_type.end())
      log_scale += std::log(1.0 / it->second / cost), ++common;
  const double scale = common > 0 ? std::exp(log_scale / common) : slope / wider.at(std::string(kSharedCost));
  std::vector<std::string> borrowed;
  for (const auto& [type, cost] : wider)
    if (!type.starts_with('~') && !d.read_efficiency_by_type.contains(type)) {
      d.read_efficiency_by_type[type] = 1.0 / std::max(kMinReadCost, cost * scale);
      borrowed.push_back(type);
    }
  return borrowed;
}

// Whether the device's fit has prefill terms and prefilled a model with experts (its tile factor
// fitted, if only to 0).
bool prefilled_experts(const DeviceCalibration& d) {
  return d.fit.calibration.prefill && std::any_of(d.fit.points.begin(), d.fit.points.end(), [](const CalibrationPoint& p) {
           return !p.decode && p.expert_tile_s > 0;
         });
}

// Whether any of the devices' decode points reads a KV cache of at least kLongContextShare of its
// weights: else the pool cannot tell the KV cache's read cost from the weights'.
bool reads_long_contexts(const std::vector<const DeviceCalibration*>& devices) {
  for (const DeviceCalibration* d : devices)
    for (const CalibrationPoint& p : d->fit.points)
      if (p.decode && p.kv_term_s >= kLongContextShare * p.term_s) return true;
  return false;
}

// The pooled terms for a device of `arch` reading at `bandwidth` (datasheet), without error bands:
// one fit over the pooled devices' points (decode; prefill where any has prefill points).
std::optional<StepCalibration> pooled_terms(const std::vector<DeviceCalibration>& all, const std::string& engine,
                                            const PoolTarget& target, const std::string& exclude, BuildEra era) {
  const std::string& arch = target.arch;
  const double bandwidth = target.bandwidth;
  std::string level;
  const std::vector<const DeviceCalibration*> devices = pooled(all, arch, exclude, level);
  if (devices.empty()) return std::nullopt;
  std::vector<StepSample> decode;
  std::vector<std::string> names;
  std::set<std::string> builds;  // the engine builds the pooled points stand for
  for (const DeviceCalibration* d : devices) {
    names.push_back(d->device);
    for (const CalibrationPoint& p : d->fit.points) {
      if (!p.decode) continue;
      builds.insert(p.row.build.empty() ? "not stated" : p.row.build.substr(0, std::min<size_t>(p.row.build.size(), 16)));
      decode.push_back(decode_sample(*d, p));
    }
  }
  if (decode.size() < 2) return std::nullopt;
  StepCalibration c;
  c.engine = engine;
  c.basis = "transferred";
  std::map<std::string, double> wider;
  if (level != kEngineLevel) wider = wider_type_costs(all, arch, level, exclude, era, bandwidth);
  std::optional<double> held_fixed;
  std::vector<DevicePoint> points;
  for (const DeviceCalibration* d : devices)
    for (const CalibrationPoint& p : d->fit.points) points.emplace_back(d, &p);
  // A pool reading each weight type at one model size holds the wider pool's fixed time. Over
  // the 342 built-in decode points, leave-one-device-out: median 7.0% -> 6.6% (m1-max-64gb's
  // Llama 3.1 70B +64% -> +52%, m2-ultra 8.1% -> 6.2%, m4 6.7% -> 4.0%, m3-max-64gb 5.2% ->
  // 7.1%); leave-one-file-out 3.5% -> 3.4%, beyond 25% 6 -> 7 (the m4's Qwen3 0.6B -27%).
  if (const auto f = wider.find(std::string(kFixedTime)); f != wider.end() && one_size_per_type(points))
    held_fixed = f->second;
  const StepLine line = fit_step_line(decode, held_fixed);
  auto delta = [&](std::string_view name) {
    const auto it = line.delta.find(std::string(name));
    return it == line.delta.end() ? 0.0 : it->second;
  };
  const double slope = std::max(kMinReadCost, line.slope + delta(kBandwidthCovariate) * log_bandwidth(bandwidth));
  c.decode.layer_s = line.fixed_s;  // the samples pay it per layer
  c.decode.read_efficiency = 1.0 / slope;
  for (const auto& [type, d] : line.delta)
    if (!type.starts_with('~')) c.decode.read_efficiency_by_type[type] = 1.0 / std::max(kMinReadCost, slope + d);
  c.decode.kv_read_efficiency = 1.0 / std::max(kMinReadCost, slope + delta(kKvCovariate));
  c.decode.moe_layer_s = std::max(0.0, delta(kMoeCovariate)) * kMoeLayerUnit;
  std::vector<std::string> borrowed;
  std::string kv_from;   // where the KV cache's read cost was borrowed from
  std::string moe_from;  // where the time of a layer with experts was borrowed from
  if (level != kEngineLevel) {
    borrowed = borrow_missing_types(c.decode, wider, slope);
    // A pool whose points all read short contexts (apple-m1's: tg128 only) cannot price the KV
    // cache; it borrows the wider pool's cost, scaled as the types are. Over the 287 built-in
    // decode points, leave-one-device-out: median 7.8% -> 7.6%, worst +82.8% -> +72.2% (the
    // m1-max-64gb's tg8192), points beyond 40% 12 -> 10.
    if (const auto kv = wider.find(std::string(kKvCovariate)); kv != wider.end() && !reads_long_contexts(devices)) {
      c.decode.kv_read_efficiency = 1.0 / std::max(kMinReadCost, kv->second * slope / wider.at(std::string(kSharedCost)));
      kv_from = level == arch ? std::string(find_device_arch(arch)->vendor) : "all";
    }
    // A pool without a model with experts borrows their layers' time from the wider pool's
    // builds of the same era (else all devices'): that time is the kernels' launches and routing
    // per layer, alike across devices of a vendor and era (own fits, 2025-26 builds, per layer of
    // 4 experts: rtx-4090 38, rtx-pro-6000 36, dgx-spark 24 us), and 0 left a 30B-A3B model 60%
    // fast on the rtx-4090.
    // Leave-one-device-out over the 267 built-in decode points: median 7.6% -> 7.3%; rtx-4090
    // 13.6% -> 3.5% (worst +62.1% -> +19.7%), m2-ultra 12.8% -> 9.4%.
    if (!line.delta.contains(std::string(kMoeCovariate))) {
      const std::string key(kMoeCovariate), vendor(find_device_arch(arch)->vendor);
      if (const auto it = wider.find(key); it != wider.end())
        c.decode.moe_layer_s = it->second, moe_from = level == arch ? vendor : "all";
      else if (level == arch)
        if (const std::map<std::string, double> every = wider_type_costs(all, arch, vendor, exclude, era, bandwidth);
            every.contains(key))
          c.decode.moe_layer_s = every.at(key), moe_from = "all";
    }
  }
  // Prefill: each device's own terms averaged (the fixed time's mean, the compute efficiency's
  // geometric mean; attention's efficiency relative to it, the geometric mean over the devices
  // whose prompts told it apart). One fit over the pooled prompts was tried and lost on leave-one-device-out
  // (median 29.8% against 20.9%): the achieved fraction of the datasheet FLOPs differs by device
  // more than a shared line allows.
  // The weight types' own prefill costs are not carried over: averaged the same way, their ratios
  // to each device's shared cost lost on leave-one-device-out (21.9% against 20.9%); within a
  // device they help (its own fit's leave-one-file-out, e.g. rtx-4090 22.5% -> 9.5%).
  // Where the device and pooled ones state their board power, the efficiency moves with
  // (power / compute rate)^kPowerShare (PoolTarget): a board whose datasheet rate outruns its power
  // runs its tensor cores at a lower clock.
  double fixed_sum = 0, log_efficiency_sum = 0, with_prefill = 0, log_powered_sum = 0, powered = 0;
  double log_attention_sum = 0, with_attention = 0;  // attention's efficiency relative to the shared one
  size_t tiles_from = 0;  // where no pooled device prefilled a model with experts: the devices that did
  bool by_power = false;
  for (const DeviceCalibration* d : devices)
    if (const std::optional<PrefillTerms>& own = d->fit.calibration.prefill) {
      fixed_sum += own->fixed_s;
      log_efficiency_sum += std::log(own->compute_efficiency);
      ++with_prefill;
      if (own->attention_efficiency)
        log_attention_sum += std::log(*own->attention_efficiency / own->compute_efficiency), ++with_attention;
      if (d->board_power_w && d->compute_ops_per_s > 0) {
        log_powered_sum += std::log(own->compute_efficiency) - kPowerShare * std::log(*d->board_power_w / d->compute_ops_per_s);
        ++powered;
      }
    }
  if (with_prefill > 0) {
    PrefillTerms& p = c.prefill.emplace();
    p.fixed_s = fixed_sum / with_prefill;
    by_power = target.board_power_w && target.compute > 0 && powered > 0;
    p.compute_efficiency = by_power ? std::exp(log_powered_sum / powered +
                                               kPowerShare * std::log(*target.board_power_w / target.compute))
                                    : std::exp(log_efficiency_sum / with_prefill);
    if (with_attention > 0) p.attention_efficiency = p.compute_efficiency * std::exp(log_attention_sum / with_attention);
    // The expert products' tile factor: the mean over the pooled devices that prefilled a model
    // with experts, else over every device that did.
    std::vector<const DeviceCalibration*> tiled;
    for (const DeviceCalibration* d : devices)
      if (prefilled_experts(*d)) tiled.push_back(d);
    if (tiled.empty()) {
      for (const DeviceCalibration& d : all)
        if (d.device != exclude && prefilled_experts(d)) tiled.push_back(&d);
      tiles_from = tiled.size();
    }
    double factor_sum = 0;
    for (const DeviceCalibration* d : tiled) factor_sum += d->fit.calibration.prefill->expert_tile_factor;
    if (!tiled.empty()) p.expert_tile_factor = factor_sum / static_cast<double>(tiled.size());
  }
  c.basis_note = level == kEngineLevel ? fmt::format("{} devices' measurements pooled ({}){}", devices.size(),
                                                     fmt::join(names, ", "),
                                                     arch.empty() ? "; the profile states no arch" : "; none of arch " + arch)
                 : level == arch ? fmt::format("the {} {} device{} with measurements pooled ({})", devices.size(), arch,
                                               devices.size() == 1 ? "" : "s", fmt::join(names, ", "))
                                 : fmt::format("no {} device has measurements: the {} {} device{} pooled ({})", arch,
                                               devices.size(), level, devices.size() == 1 ? "" : "s", fmt::join(names, ", "));
  if (!borrowed.empty())
    c.basis_note += fmt::format("; {} priced from {} devices' {} builds", fmt::join(borrowed, ", "),
                                level == arch ? std::string(find_device_arch(arch)->vendor) : "all",
                                era == BuildEra::from_2025 ? "2025-26" : "2023-24");
  if (!kv_from.empty())
    c.basis_note += fmt::format("; the KV cache's read cost from {} devices' {} builds", kv_from,
                                era == BuildEra::from_2025 ? "2025-26" : "2023-24");
  if (held_fixed)
    c.basis_note += fmt::format("; the fixed time per layer from {} devices' {} builds (one model size per weight type here)",
                                level == arch ? std::string(find_device_arch(arch)->vendor) : "all",
                                era == BuildEra::from_2025 ? "2025-26" : "2023-24");
  if (!moe_from.empty())
    c.basis_note += fmt::format("; the layers with experts timed from {} devices' {} builds", moe_from,
                                era == BuildEra::from_2025 ? "2025-26" : "2023-24");
  if (tiles_from > 0)
    c.basis_note += fmt::format("; the expert products' tiles from {} device{} that prefilled models with experts", tiles_from,
                                tiles_from == 1 ? "" : "s");
  if (by_power)
    c.basis_note += fmt::format("; the prompt's compute scaled by board power ({:g} W) from {:g} device{}",
                                *target.board_power_w, powered, powered == 1 ? "" : "s");
  std::vector<std::string> shown(builds.begin(), builds.end());
  const size_t more = shown.size() > kBuildsShown ? shown.size() - kBuildsShown : 0;
  shown.resize(std::min(shown.size(), kBuildsShown));
  c.source = fmt::format("{} decode points on {} device{}, fitted together; builds {}{}", decode.size(), devices.size(),
                         devices.size() == 1 ? "" : "s",
                         fmt::join(shown, "; "), more ? fmt::format(" and {} more", more) : "");
  return c;
}

struct EngineBands {
  ErrorBand decode, prefill;
};

EngineBands device_out_bands(const std::string& engine) {
  std::vector<double> decode, prefill;
  for (const DeviceOutPoint& p : leave_one_device_out(engine))
    if (std::isfinite(p.predicted_s)) (p.point.decode ? decode : prefill).push_back(p.residual());
  // The 5th to 95th percentiles: each device's points fall inside the band the other devices' give
  // for 85% of the built-in decode points (73% with the 10th to 90th; 162 points, 15 devices), and
  // for 84% of the prefill points (72%; 132 points).
  return {error_band(decode, kTransferredTail), error_band(prefill, kTransferredTail)};
}

template <typename T>
const T& once_per_engine(const std::string& engine, T (*make)(const std::string&)) {
  static std::mutex m;
  static std::map<std::string, T> cache;  // node-based: references stay valid
  std::lock_guard<std::mutex> lock(m);
  auto it = cache.find(engine);
  if (it == cache.end()) it = cache.emplace(engine, make(engine)).first;
  return it->second;
}

}  // namespace

const std::vector<DeviceCalibration>& builtin_device_calibrations(const std::string& engine) {
  return once_per_engine<std::vector<DeviceCalibration>>(engine, fit_builtin_devices);
}

const CalibrationResult& own_calibration(const std::string& engine, const std::string& device) {
  const std::vector<DeviceCalibration>& all = builtin_device_calibrations(engine);
  static std::mutex m;
  static std::map<std::pair<std::string, std::string>, CalibrationResult> cache;  // node-based: references stay valid
  std::lock_guard<std::mutex> lock(m);
  const auto key = std::make_pair(engine, device);
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  const auto d = std::find_if(all.begin(), all.end(), [&](const DeviceCalibration& x) { return x.device == device; });
  if (d == all.end()) throw InputError(fmt::format("no built-in {} data of {}", engine, device));
  CalibrationOptions o;
  o.engine = engine;
  o.source = fmt::format("hwprofiles/calibrations/{}.json", device);
  o.prior = pooled_terms(all, engine, PoolTarget::of(*d), device, majority_era(*d));
  return cache.emplace(key, refit_step_model(d->fit, device, o)).first->second;
}

double predict_point(const StepCalibration& c, const CalibrationPoint& p) {
  if (!p.decode) {
    if (!c.prefill) return std::nan("");
    double t = p.known_s + c.prefill->fixed_s * p.micro_batches + p.term_s / c.prefill->compute_efficiency;
    if (c.prefill->attention_efficiency)
      t += p.attention_term_s * (1.0 / *c.prefill->attention_efficiency - 1.0 / c.prefill->compute_efficiency);
    t += p.expert_tile_s * c.prefill->expert_tile_factor;
    for (const auto& [type, share_s] : p.type_terms_s)
      if (const auto it = c.prefill->compute_efficiency_by_type.find(type); it != c.prefill->compute_efficiency_by_type.end())
        t += share_s * (1.0 / it->second - 1.0 / c.prefill->compute_efficiency);
    return std::max(t, p.ceiling_s);
  }
  double t = p.known_s + c.decode.fixed_s + c.decode.layer_s * p.layers + p.moe_layers * c.decode.moe_layer_s + p.term_s / c.decode.read_efficiency;
  if (c.decode.kv_read_efficiency) t += p.kv_term_s * (1.0 / *c.decode.kv_read_efficiency - 1.0 / c.decode.read_efficiency);
  for (const auto& [type, share_s] : p.type_terms_s)
    if (const auto it = c.decode.read_efficiency_by_type.find(type); it != c.decode.read_efficiency_by_type.end())
      t += share_s * (1.0 / it->second - 1.0 / c.decode.read_efficiency);
  return std::max(t, p.ceiling_s);  // as the roofline: no engine beats the speed of light
}

std::vector<DeviceOutPoint> leave_one_device_out(const std::string& engine) {
  std::vector<DeviceOutPoint> out;
  for (const DeviceCalibration& d : builtin_device_calibrations(engine)) {
    std::map<BuildEra, std::optional<StepCalibration>> others;
    for (const BuildEra era : d.eras) others.emplace(era, std::nullopt);
    for (auto& [era, c] : others)
      c = pooled_terms(builtin_device_calibrations(engine), engine, PoolTarget::of(d), d.device, era);
    if (!others.begin()->second) continue;  // the only device
    std::string level;
    (void)pooled(builtin_device_calibrations(engine), d.arch, d.device, level);
    for (size_t i = 0; i < d.fit.points.size(); ++i)
      out.push_back({d.device, d.arch, i, level, d.fit.points[i], predict_point(*others.at(d.eras[i]), d.fit.points[i])});
  }
  return out;
}

namespace {
// transferred_calibration's, computed.
std::optional<StepCalibration> pooled_transferred(const std::string& engine, const HwProfile& hw,
                                                  const std::string& exclude) {
  std::optional<StepCalibration> c =
      pooled_terms(builtin_device_calibrations(engine), engine, PoolTarget::of(hw), exclude,
                   BuildEra::from_2025);  // a user runs today's build
  if (!c) return c;
  const EngineBands& bands = once_per_engine<EngineBands>(engine, device_out_bands);
  c->decode.error = bands.decode;
  if (c->prefill) c->prefill->error = bands.prefill;
  return c;
}
}  // namespace

std::optional<StepCalibration> transferred_calibration(const std::string& engine, const HwProfile& hw,
                                                       const std::string& exclude) {
  // What it depends on of the profile is its arch, bandwidth, compute and power: one pooled fit per key and process
  // (a fit takes about a millisecond, and every resolve_plan of a device without data asks).
  using Key = std::tuple<std::string, std::string, double, double, double, std::string>;
  static std::mutex m;
  static std::map<Key, std::optional<StepCalibration>> cache;
  const Key key{engine, hw.arch, hw.memory_bandwidth_bytes_per_s, PoolTarget::prefill_compute(hw),
                hw.board_power_w.value_or(0), exclude};
  {
    std::lock_guard<std::mutex> lock(m);
    if (const auto it = cache.find(key); it != cache.end()) return it->second;
  }
  std::optional<StepCalibration> c = pooled_transferred(engine, hw, exclude);
  std::lock_guard<std::mutex> lock(m);
  return cache.emplace(key, std::move(c)).first->second;
}


std::optional<CalibrationResult> device_calibration_result(const HwProfile& hw, const std::string& engine) {
  if (hw.source.starts_with("built-in "))  // the very profile fitted once per process
    for (const DeviceCalibration& d : builtin_device_calibrations(engine))
      if (d.device == hw.name) return own_calibration(engine, hw.name);
  return builtin_calibration_result(hw, engine, transferred_calibration(engine, hw, hw.name));
}

std::optional<StepCalibration> engine_step_calibration(const HwProfile& hw, const std::string& engine) {
  if (std::optional<CalibrationResult> own = device_calibration_result(hw, engine)) return own->calibration;
  if (std::optional<StepCalibration> served = served_step_calibration(hw, engine)) return served;
  return transferred_calibration(engine, hw);
}

}  // namespace infer_plan
