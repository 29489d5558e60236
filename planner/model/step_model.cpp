// JSON of the calibration block. Times are written in ms and per-byte costs in ms per GB, the
// units a reader checks against a benchmark table; unknown keys are refused as in every profile.
#include "planner/model/step_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <set>

#include "planner/core/ggml_type.hpp"
#include "planner/core/input_error.hpp"

namespace infer_plan {
namespace {

void refuse_unknown(const Json& obj, const std::set<std::string>& allowed, const std::string& where) {
  for (const auto& [key, value] : obj.items()) {
    if (key.starts_with('_') || allowed.count(key)) continue;
    throw InputError(fmt::format("{}: unknown field '{}'; expected one of: {}", where, key,
                                 fmt::join(allowed, ", ")));
  }
}

double bounded(const Json& obj, std::string_view key, const std::string& where, double lo, double hi,
               double fallback, std::string_view what) {
  const double v = optional_number(obj, key, where).value_or(fallback);
  if (!(v >= lo && v <= hi))
    throw InputError(fmt::format("{}: field '{}' is {}; expected {} in [{}, {}]", where, key, v, what, lo, hi));
  return v;
}

ErrorBand band_from_json(const Json& obj, const std::string& where) {
  ErrorBand b;
  if (obj.contains("error")) {
    const Json& e = obj.at("error");
    if (!e.is_array() || e.size() != 2 || !e[0].is_number() || !e[1].is_number() ||
        !(e[0].get<double>() <= 0 && e[1].get<double>() >= 0 && e[0].get<double>() > -1))
      throw InputError(fmt::format("{}: field 'error' is {}; expected [lo, hi], relative errors with "
                                   "-1 < lo <= 0 <= hi (e.g. [-0.08, 0.12])", where, e.dump()));
    b.lo = e[0].get<double>();
    b.hi = e[1].get<double>();
  }
  b.points = optional_uint(obj, "points", where).value_or(0);
  b.loo_median_abs = bounded(obj, "loo_median_abs_error", where, 0, 10, 0, "a relative error");
  return b;
}

Json band_to_json(const ErrorBand& b) {
  return Json{{"error", {b.lo, b.hi}}, {"points", b.points}, {"loo_median_abs_error", b.loo_median_abs}};
}

}  // namespace

double extra_token_s_per_byte(const ExtraTokenCurve& curve, double tokens) {
  if (curve.empty() || tokens <= 1) return 0;
  double t0 = 1, s0 = 0;  // one token costs nothing extra
  for (const auto& [t1, s1] : curve) {
    if (tokens <= t1) return s0 + (s1 - s0) * (tokens - t0) / (t1 - t0);
    t0 = t1;
    s0 = s1;
  }
  // past the last point: the last segment's slope
  const double tp = curve.size() >= 2 ? curve[curve.size() - 2].first : 1.0;
  const double sp = curve.size() >= 2 ? curve[curve.size() - 2].second : 0.0;
  return s0 + (s0 - sp) / (t0 - tp) * (tokens - t0);
}

StepCalibration step_calibration_from_json(const Json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(fmt::format("{}: expected an object", where));
  refuse_unknown(j, {"engine", "source", "basis", "basis_note", "first_token_ms", "decode", "prefill"}, where);
  StepCalibration c;
  c.engine = optional_string(j, "engine", where).value_or("unnamed engine");
  c.source = optional_string(j, "source", where).value_or("");
  c.basis = optional_string(j, "basis", where).value_or("calibrated");
  if (c.basis != "calibrated" && c.basis != "transferred")
    throw InputError(fmt::format("{}: field 'basis' is \"{}\"; expected \"calibrated\" or \"transferred\"", where, c.basis));
  c.basis_note = optional_string(j, "basis_note", where).value_or("");
  c.first_token_s = bounded(j, "first_token_ms", where, 0, 1e5, 0, "milliseconds") / 1e3;
  const std::string dw = where + ": decode";
  const Json& d = require_object(j, "decode", where);
  refuse_unknown(d, {"fixed_ms", "fixed_per_layer_ms", "per_sequence_ms", "read_efficiency", "read_efficiency_by_type", "kv_read_efficiency",
                     "moe_read_efficiency", "moe_layer_ms", "all_reduce_call_ms",
                     "extra_token_ms_per_gb", "error", "points", "loo_median_abs_error"}, dw);
  c.decode.fixed_s = bounded(d, "fixed_ms", dw, 0, 1e5, 0, "milliseconds") / 1e3;
  c.decode.layer_s = bounded(d, "fixed_per_layer_ms", dw, 0, 1e3, 0, "milliseconds") / 1e3;
  c.decode.per_sequence_s = bounded(d, "per_sequence_ms", dw, 0, 1e3, 0, "milliseconds") / 1e3;
  c.decode.read_efficiency = bounded(d, "read_efficiency", dw, 1e-3, 10, 1, "a fraction of the read rate");
  if (d.contains("kv_read_efficiency"))
    c.decode.kv_read_efficiency = bounded(d, "kv_read_efficiency", dw, 1e-3, 10, 1, "a fraction of the read rate");
  if (d.contains("all_reduce_call_ms"))
    c.decode.all_reduce_call_s = bounded(d, "all_reduce_call_ms", dw, 0, 100, 0, "milliseconds") / 1e3;
  c.decode.moe_layer_s = bounded(d, "moe_layer_ms", dw, 0, 1e3, 0, "milliseconds") / 1e3;
  if (d.contains("moe_read_efficiency"))
    c.decode.moe_read_efficiency = bounded(d, "moe_read_efficiency", dw, 1e-3, 10, 1, "a fraction of the read rate");
  if (d.contains("read_efficiency_by_type")) {
    const std::string ew = fmt::format("{}: read_efficiency_by_type", dw);
    for (const auto& [type, value] : require_object(d, "read_efficiency_by_type", dw).items()) {
      const GgmlTypeInfo& t = ggml_type_by_name(type, fmt::format("{}.{}", ew, type));
      c.decode.read_efficiency_by_type[std::string(t.name)] = bounded(d.at("read_efficiency_by_type"), type, ew, 1e-3, 10, 1,
                                                                      "a fraction of the read rate");
    }
  }
  if (d.contains("extra_token_ms_per_gb")) {
    const Json& x = require_object(d, "extra_token_ms_per_gb", dw);
    for (const auto& [type, value] : x.items()) {
      const std::string xw = fmt::format("{}: extra_token_ms_per_gb", dw);
      const GgmlTypeInfo& t = ggml_type_by_name(type, fmt::format("{}.{}", xw, type));
      ExtraTokenCurve curve;
      if (value.is_object()) {  // {"T": ms per GB of the whole T-token product beyond one token}
        const std::string tw = fmt::format("{}.{}", xw, type);
        for (const auto& [tokens, ms] : value.items()) {
          const double tk = std::atof(tokens.c_str());
          if (!(tk >= 2 && tk <= 1e6) || tk != std::floor(tk))
            throw InputError(fmt::format("{}: key '{}' is not a token count >= 2", tw, tokens));
          curve.emplace_back(tk, bounded(value, tokens, tw, 0, 1e9, 0, "ms per GB") / 1e3 / 1e9);
        }
        std::sort(curve.begin(), curve.end());
      } else {  // one figure per extra token: the point at T = 2
        curve.emplace_back(2.0, bounded(x, type, xw, 0, 1e6, 0, "ms per GB") / 1e3 / 1e9);
      }
      c.decode.extra_token_s_per_byte[std::string(t.name)] = curve;
    }
  }
  c.decode.error = band_from_json(d, dw);
  if (j.contains("prefill")) {
    const std::string pw = where + ": prefill";
    const Json& p = require_object(j, "prefill", where);
    refuse_unknown(p, {"fixed_ms", "compute_efficiency", "compute_efficiency_by_type", "moe_compute_efficiency",
                       "attention_efficiency", "expert_tile_factor", "error", "points", "loo_median_abs_error"}, pw);
    PrefillTerms t;
    t.fixed_s = bounded(p, "fixed_ms", pw, 0, 1e6, 0, "milliseconds") / 1e3;
    t.compute_efficiency = bounded(p, "compute_efficiency", pw, 1e-4, 10, 1, "a fraction of the compute rate");
    if (p.contains("moe_compute_efficiency"))
      t.moe_compute_efficiency = bounded(p, "moe_compute_efficiency", pw, 1e-4, 10, 1, "a fraction of the compute rate");
    if (p.contains("attention_efficiency"))
      t.attention_efficiency = bounded(p, "attention_efficiency", pw, 1e-4, 10, 1, "a fraction of the compute rate");
    if (p.contains("compute_efficiency_by_type")) {
      const std::string ew = fmt::format("{}: compute_efficiency_by_type", pw);
      for (const auto& [type, value] : require_object(p, "compute_efficiency_by_type", pw).items()) {
        const GgmlTypeInfo& info = ggml_type_by_name(type, fmt::format("{}.{}", ew, type));
        t.compute_efficiency_by_type[std::string(info.name)] =
            bounded(p.at("compute_efficiency_by_type"), type, ew, 1e-4, 10, 1, "a fraction of the compute rate");
      }
    }
    t.expert_tile_factor = bounded(p, "expert_tile_factor", pw, 0, 1e3, 0, "a multiple of the expert products' tile time");
    t.error = band_from_json(p, pw);
    c.prefill = t;
  }
  return c;
}

Json step_calibration_to_json(const StepCalibration& c) {
  Json d{{"fixed_ms", c.decode.fixed_s * 1e3}, {"read_efficiency", c.decode.read_efficiency}};
  if (c.decode.layer_s > 0) d["fixed_per_layer_ms"] = c.decode.layer_s * 1e3;
  if (c.decode.per_sequence_s > 0) d["per_sequence_ms"] = c.decode.per_sequence_s * 1e3;
  if (!c.decode.read_efficiency_by_type.empty()) d["read_efficiency_by_type"] = c.decode.read_efficiency_by_type;
  if (c.decode.kv_read_efficiency) d["kv_read_efficiency"] = *c.decode.kv_read_efficiency;
  if (c.decode.moe_read_efficiency) d["moe_read_efficiency"] = *c.decode.moe_read_efficiency;
  if (c.decode.moe_layer_s > 0) d["moe_layer_ms"] = c.decode.moe_layer_s * 1e3;
  if (c.decode.all_reduce_call_s) d["all_reduce_call_ms"] = *c.decode.all_reduce_call_s * 1e3;
  if (!c.decode.extra_token_s_per_byte.empty()) {
    Json x = Json::object();
    for (const auto& [type, curve] : c.decode.extra_token_s_per_byte) {
      Json points = Json::object();
      for (const auto& [tokens, s_per_byte] : curve) points[fmt::format("{:g}", tokens)] = s_per_byte * 1e3 * 1e9;
      x[type] = points;
    }
    d["extra_token_ms_per_gb"] = x;
  }
  d.update(band_to_json(c.decode.error));
  Json j{{"engine", c.engine}, {"source", c.source}, {"basis", c.basis}, {"decode", d}};
  if (!c.basis_note.empty()) j["basis_note"] = c.basis_note;
  if (c.first_token_s > 0) j["first_token_ms"] = c.first_token_s * 1e3;
  if (c.prefill) {
    Json p{{"fixed_ms", c.prefill->fixed_s * 1e3}, {"compute_efficiency", c.prefill->compute_efficiency}};
    if (!c.prefill->compute_efficiency_by_type.empty()) p["compute_efficiency_by_type"] = c.prefill->compute_efficiency_by_type;
    if (c.prefill->moe_compute_efficiency) p["moe_compute_efficiency"] = *c.prefill->moe_compute_efficiency;
    if (c.prefill->expert_tile_factor > 0) p["expert_tile_factor"] = c.prefill->expert_tile_factor;
    if (c.prefill->attention_efficiency) p["attention_efficiency"] = *c.prefill->attention_efficiency;
    p.update(band_to_json(c.prefill->error));
    j["prefill"] = p;
  }
  return j;
}

}  // namespace infer_plan
