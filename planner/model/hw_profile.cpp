// Profile JSON: {"name", "description", "memory": {"capacity", "reserved", "bandwidth"},
// "compute": {"bf16": "989 TFLOPS", ...}, "host_links": ["pcie-gen5-x16" | {"name", "bandwidth"}],
// "device_link": {"name", "bandwidth"}, "reserves": {"name": "512 MiB"}, "sources": [...],
// "host": {"description", "memory": {"capacity", "reserved", "bandwidth"}, "efficiency"},
// "price_per_hour": US dollars per device-hour, "arch": "ampere" (planner/model/device_arch),
// "board_power_w": the datasheet's board power in watts}.
#include "planner/model/hw_profile.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <set>

#include "planner/core/ggml_type.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/limits.hpp"
#include "planner/core/units.hpp"
#include "planner/model/device_arch.hpp"

namespace infer_plan {
namespace {

void refuse_unknown_keys(const Json& obj, const std::set<std::string>& allowed, std::string_view where) {
  for (const auto& [key, value] : obj.items()) {
    if (key.starts_with('_') || allowed.count(key)) continue;
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    throw InputError(fmt::format("{}: unknown field '{}'; expected one of: {}", where, key, list));
  }
}

std::string field_path(std::string_view where, std::string_view key) {
  return fmt::format("{}: field '{}'", where, key);
}

uint64_t size_field(const Json& obj, std::string_view key, std::string_view where, bool required) {
  auto text = optional_string(obj, key, where);
  if (!text) {
    if (auto n = optional_uint(obj, key, where)) return *n;  // a plain number is bytes
    if (required)
      throw InputError(fmt::format("{}: field '{}' is missing; expected a size such as \"96 GB\"", where, key));
    return 0;
  }
  return parse_bytes(*text, field_path(where, key));
}

double rate_field(const Json& obj, std::string_view key, std::string_view where) {
  const Json& v = obj.at(std::string(key));
  if (v.is_number()) {
    double d = v.get<double>();
    if (!(d > 0 && d <= kMaxRateBytesPerS))
      throw InputError(fmt::format("{} is {}; expected a positive rate up to {:g} B/s", field_path(where, key), d,
                                   kMaxRateBytesPerS));
    return d;
  }
  if (!v.is_string())
    throw InputError(fmt::format("{} is {}; expected a rate such as \"64 GB/s\"", field_path(where, key), v.dump()));
  double r = parse_rate(v.get<std::string>(), field_path(where, key));
  if (!(r > 0 && r <= kMaxRateBytesPerS))
    throw InputError(fmt::format("{} is \"{}\"; expected a positive rate up to 1 EB/s", field_path(where, key),
                                 v.get<std::string>()));
  return r;
}

// 0 would divide every compute time into inf or NaN.
double compute_rate(const std::string& text, const std::string& where) {
  const double ops = parse_flops(text, where);
  if (!(ops > 0 && ops <= kMaxOpsPerS))
    throw InputError(fmt::format("{} is \"{}\"; expected a positive figure up to 1e24 (a million EFLOPS)", where, text));
  return ops;
}

// A "memory" object: {"capacity", "reserved", "bandwidth"}, the device's or the host's.
struct MemorySection {
  uint64_t capacity_bytes = 0, reserved_bytes = 0;
  double bandwidth_bytes_per_s = 0;
};
MemorySection memory_section(const Json& parent, const std::string& where, std::string_view example_rate) {
  const std::string mem_where = where + ": memory";
  const Json& mem = require_object(parent, "memory", where);
  refuse_unknown_keys(mem, {"capacity", "reserved", "bandwidth"}, mem_where);
  MemorySection m;
  m.capacity_bytes = size_field(mem, "capacity", mem_where, true);
  if (m.capacity_bytes == 0) throw InputError(fmt::format("{}: field 'capacity' is 0; expected a positive size", mem_where));
  m.reserved_bytes = size_field(mem, "reserved", mem_where, false);
  if (m.reserved_bytes >= m.capacity_bytes)
    throw InputError(fmt::format("{}: 'reserved' ({}) must be below 'capacity' ({})", mem_where,
                                 format_bytes(m.reserved_bytes), format_bytes(m.capacity_bytes)));
  if (!mem.contains("bandwidth"))
    throw InputError(
        fmt::format("{}: field 'bandwidth' is missing; expected a rate such as \"{}\"", mem_where, example_rate));
  m.bandwidth_bytes_per_s = rate_field(mem, "bandwidth", mem_where);
  return m;
}

LinkProfile inline_link(const Json& j, std::string_view where) {
  refuse_unknown_keys(j, {"name", "bandwidth", "description", "latency_us", "message_latency_us"}, where);
  LinkProfile l;
  l.name = require_string(j, "name", where);
  l.description = optional_string(j, "description", where).value_or("");
  if (!j.contains("bandwidth"))
    throw InputError(fmt::format("{}: field 'bandwidth' is missing; expected a rate per direction such as \"64 GB/s\"", where));
  l.bandwidth_bytes_per_s = rate_field(j, "bandwidth", where);
  if (const std::optional<double> us = optional_number(j, "latency_us", where)) {
    if (!(*us >= 0 && *us <= 1e6))
      throw InputError(fmt::format("{}: field 'latency_us' is {}; expected microseconds from 0 to 1e6", where, *us));
    l.all_reduce_latency_s = *us * 1e-6;
  }
  if (const std::optional<double> us = optional_number(j, "message_latency_us", where)) {
    if (!(*us >= 0 && *us <= 1e6))
      throw InputError(fmt::format("{}: field 'message_latency_us' is {}; expected microseconds from 0 to 1e6", where, *us));
    l.message_latency_s = *us * 1e-6;
  }
  return l;
}

}  // namespace

const std::vector<std::string>& compute_precisions() {
  static const std::vector<std::string> k{"fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp4", "int4"};
  return k;
}

LinkProfile link_profile_from_json(const Json& j, const std::string& name, const std::string& where) {
  if (!j.is_object()) throw InputError(fmt::format("{}: expected a JSON object", where));
  refuse_unknown_keys(j, {"name", "kind", "bandwidth", "description", "sources", "latency_us", "message_latency_us"},
                     where);
  if (auto kind = optional_string(j, "kind", where); kind && *kind != "link")
    throw InputError(fmt::format("{}: field 'kind' is \"{}\"; a link profile has \"link\"", where, *kind));
  Json copy = j;
  copy.erase("kind");
  copy.erase("sources");
  if (!copy.contains("name")) copy["name"] = name;
  return inline_link(copy, where);
}

HwProfile hw_profile_from_json(const Json& j, const std::string& name, const std::string& where,
                               const LinkResolver& resolve_link) {
  if (!j.is_object()) throw InputError(fmt::format("{}: expected a JSON object", where));
  refuse_unknown_keys(j, {"name", "kind", "description", "memory", "compute", "host_links", "device_link",
                          "reserves", "sources", "efficiency", "measured", "calibration", "host",
                          "devices_per_node", "node_link", "price_per_hour", "arch", "board_power_w"}, where);
  if (auto kind = optional_string(j, "kind", where); kind && *kind != "device")
    throw InputError(fmt::format("{}: field 'kind' is \"{}\"; expected \"device\" (links are "
                                 "named in 'host_links')", where, *kind));
  HwProfile p;
  p.name = optional_string(j, "name", where).value_or(name);
  p.source = where;
  p.description = optional_string(j, "description", where).value_or("");
  if (const std::optional<std::string> arch = optional_string(j, "arch", where)) {
    if (!find_device_arch(*arch))
      throw InputError(fmt::format("{}: field 'arch' is \"{}\"; expected one of: {}", where, *arch, device_arch_names()));
    p.arch = *arch;
  }

  const MemorySection memory = memory_section(j, where, "4.8 TB/s");
  p.memory_capacity_bytes = memory.capacity_bytes;
  p.memory_reserved_bytes = memory.reserved_bytes;
  p.memory_bandwidth_bytes_per_s = memory.bandwidth_bytes_per_s;

  if (j.contains("compute")) {
    const std::string cw = where + ": compute";
    const Json& c = require_object(j, "compute", where);
    for (const auto& [prec, value] : c.items()) {
      const auto& known = compute_precisions();
      if (std::find(known.begin(), known.end(), prec) == known.end())
        throw InputError(fmt::format("{}: unknown precision '{}'; expected one of: fp32, tf32, fp16, "
                                     "bf16, fp8, int8, fp4, int4", cw, prec));
      if (!value.is_string())
        throw InputError(fmt::format("{}: field '{}' is {}; expected a figure such as \"989 TFLOPS\"", cw, prec, value.dump()));
      p.compute_ops_per_s[prec] = compute_rate(value.get<std::string>(), field_path(cw, prec));
    }
  }

  if (j.contains("host_links")) {
    const Json& links = j.at("host_links");
    if (!links.is_array())
      throw InputError(fmt::format("{}: field 'host_links' must be an array of link names or {{name, bandwidth}} objects", where));
    for (const auto& l : links) {
      if (l.is_string()) p.host_links.push_back(resolve_link(l.get<std::string>()));
      else if (l.is_object()) p.host_links.push_back(inline_link(l, where + ": host_links"));
      else throw InputError(fmt::format("{}: host_links entry {} is neither a link name nor an object", where, l.dump()));
    }
  }
  if (j.contains("device_link")) {
    const Json& l = j.at("device_link");
    if (l.is_string()) p.device_link = resolve_link(l.get<std::string>());
    else if (l.is_object()) p.device_link = inline_link(l, where + ": device_link");
    else throw InputError(fmt::format("{}: field 'device_link' is neither a link name nor an object", where));
  }
  if (const std::optional<uint64_t> n = optional_uint(j, "devices_per_node", where)) {
    if (*n == 0 || *n > kMaxTensorParallel)
      throw InputError(fmt::format("{}: field 'devices_per_node' is {}; expected 1 to {}", where, *n, kMaxTensorParallel));
    p.devices_per_node = *n;
  }
  if (const std::optional<double> price = optional_number(j, "price_per_hour", where)) {
    if (!(*price > 0 && *price <= kMaxPricePerHour))
      throw InputError(fmt::format("{}: field 'price_per_hour' is {}; expected US dollars per device-hour above 0 and "
                                   "at most {:g}", where, *price, kMaxPricePerHour));
    p.price_per_hour = *price;
  }
  if (const std::optional<double> watts = optional_number(j, "board_power_w", where)) {
    if (!(*watts >= 1 && *watts <= kMaxBoardPowerW))
      throw InputError(fmt::format("{}: field 'board_power_w' is {}; expected the board power in watts, 1 to {:g}", where,
                                   *watts, kMaxBoardPowerW));
    p.board_power_w = *watts;
  }
  if (j.contains("node_link")) {
    const Json& l = j.at("node_link");
    if (l.is_string()) p.node_link = resolve_link(l.get<std::string>());
    else if (l.is_object()) p.node_link = inline_link(l, where + ": node_link");
    else throw InputError(fmt::format("{}: field 'node_link' is neither a link name nor an object", where));
  }
  if (j.contains("host")) {
    const std::string hw = where + ": host";
    const Json& h = require_object(j, "host", where);
    refuse_unknown_keys(h, {"description", "memory", "efficiency"}, hw);
    HostProfile& host = p.host.emplace();
    host.description = optional_string(h, "description", hw).value_or("");
    const MemorySection host_memory = memory_section(h, hw, "89.6 GB/s");
    host.memory_capacity_bytes = host_memory.capacity_bytes;
    host.memory_reserved_bytes = host_memory.reserved_bytes;
    host.memory_bandwidth_bytes_per_s = host_memory.bandwidth_bytes_per_s;
    host.memory_efficiency = optional_number(h, "efficiency", hw).value_or(1.0);
    if (!(host.memory_efficiency > 0 && host.memory_efficiency <= 1))
      throw InputError(fmt::format("{}: field 'efficiency' is {}; expected a fraction in (0, 1]", hw,
                                   host.memory_efficiency));
  }
  if (j.contains("reserves")) {
    const std::string rw = where + ": reserves";
    const Json& r = require_object(j, "reserves", where);
    for (const auto& [key, value] : r.items()) {
      if (!value.is_string())
        throw InputError(fmt::format("{}: field '{}' is {}; expected a size such as \"512 MiB\"", rw, key, value.dump()));
      p.reserves.push_back({key, parse_bytes(value.get<std::string>(), field_path(rw, key))});
    }
  }
  if (j.contains("efficiency")) {
    const std::string ew = where + ": efficiency";
    const Json& e = require_object(j, "efficiency", where);
    refuse_unknown_keys(e, {"memory", "compute"}, ew);
    auto fraction = [&](std::string_view key, double fallback) {
      double v = optional_number(e, key, ew).value_or(fallback);
      if (!(v > 0 && v <= 1))
        throw InputError(fmt::format("{}: field '{}' is {}; expected a fraction in (0, 1]", ew, key, v));
      return v;
    };
    p.memory_efficiency = fraction("memory", 1.0);
    p.compute_efficiency = fraction("compute", 1.0);
  }
  if (j.contains("measured")) {
    const std::string mw = where + ": measured";
    const Json& m = require_object(j, "measured", where);
    refuse_unknown_keys(m, {"memory_bandwidth", "compute", "host_to_device", "device_to_host", "matvec", "matmul", "launch_overhead_us", "launch_unit", "source"}, mw);
    MeasuredFigures f;
    if (m.contains("memory_bandwidth")) f.memory_bandwidth_bytes_per_s = rate_field(m, "memory_bandwidth", mw);
    if (m.contains("host_to_device")) f.host_to_device_bytes_per_s = rate_field(m, "host_to_device", mw);
    if (m.contains("device_to_host")) f.device_to_host_bytes_per_s = rate_field(m, "device_to_host", mw);
    if (m.contains("compute")) {
      for (const auto& [prec, value] : require_object(m, "compute", mw).items()) {
        if (!value.is_string())
          throw InputError(fmt::format("{}: compute.{} is {}; expected a figure such as \"790 TFLOPS\"", mw, prec, value.dump()));
        f.compute_ops_per_s[prec] = compute_rate(value.get<std::string>(), fmt::format("{}: compute.{}", mw, prec));
      }
    }
    if (m.contains("matvec"))
      for (const auto& [type, value] : require_object(m, "matvec", mw).items()) {
        const GgmlTypeInfo& t = ggml_type_by_name(type, fmt::format("{}: matvec.{}", mw, type));
        f.matvec_bytes_per_s[std::string(t.name)] = rate_field(m.at("matvec"), type, mw + ": matvec");
      }
    if (m.contains("matmul"))
      for (const auto& [type, value] : require_object(m, "matmul", mw).items()) {
        const GgmlTypeInfo& t = ggml_type_by_name(type, fmt::format("{}: matmul.{}", mw, type));
        if (!value.is_string())
          throw InputError(fmt::format("{}: matmul.{} is {}; expected a figure such as \"90 GFLOPS\"", mw, type, value.dump()));
        f.matmul_ops_per_s[std::string(t.name)] = compute_rate(value.get<std::string>(), fmt::format("{}: matmul.{}", mw, type));
      }
    if (auto us = optional_number(m, "launch_overhead_us", mw)) {
      if (!(*us >= 0) || *us > 1e6)
        throw InputError(fmt::format("{}: launch_overhead_us is {}; expected microseconds in [0, 1e6]", mw, *us));
      f.launch_overhead_s = *us * 1e-6;
    }
    f.launch_unit = optional_string(m, "launch_unit", mw).value_or("projection");
    if (f.launch_unit != "projection" && f.launch_unit != "kernel")
      throw InputError(fmt::format("{}: launch_unit is \"{}\"; expected \"projection\" (the CPU runtime) or \"kernel\" "
                                   "(the CUDA runtime)", mw, f.launch_unit));
    f.source = optional_string(m, "source", mw).value_or("probe");
    p.measured = f;
  }
  if (j.contains("calibration"))
    p.calibration = step_calibration_from_json(require_object(j, "calibration", where), where + ": calibration");
  if (j.contains("sources")) {
    const Json& s = j.at("sources");
    if (!s.is_array()) throw InputError(fmt::format("{}: field 'sources' must be an array of strings", where));
    for (const auto& e : s)
      if (e.is_string()) p.sources.push_back(e.get<std::string>());
  }
  return p;
}

}  // namespace infer_plan
