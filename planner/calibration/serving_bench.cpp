#include "planner/calibration/serving_bench.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "planner/core/input_error.hpp"
#include "planner/core/limits.hpp"

namespace infer_plan {
namespace {

constexpr uint64_t kMinStepsPerBatch = 3;  // report rows: fewer steps at a batch size are noise
constexpr auto kMaxInFlight = static_cast<double>(kMaxConcurrentRequests);  // no server holds more requests
constexpr auto kMaxContext = static_cast<double>(kMaxContextTokens);

bool is_vllm_result(const Json& j) {
  return j.is_object() && j.contains("request_throughput") && j.contains("completed") &&
         (j.contains("median_itl_ms") || j.contains("mean_itl_ms") || j.contains("mean_tpot_ms") ||
          j.contains("median_tpot_ms"));
}

bool is_report(const Json& j) { return j.is_object() && j.contains("decode_steps") && j.contains("measured"); }

double positive(const Json& j, const char* key, const std::string& where) {
  const std::optional<double> v = optional_number(j, key, where);
  if (!v) throw InputError(fmt::format("{}: field '{}' is missing", where, key));
  if (!(*v > 0) || !std::isfinite(*v)) throw InputError(fmt::format("{}: field '{}' is {}; expected > 0", where, key, *v));
  return *v;
}

// The first of `keys` present with a value > 0.
std::optional<std::pair<std::string, double>> first_positive(const Json& j, std::initializer_list<const char*> keys,
                                                             const std::string& where) {
  for (const char* k : keys)
    if (const std::optional<double> v = optional_number(j, k, where); v && *v > 0 && std::isfinite(*v)) return std::pair{k, *v};
  return std::nullopt;
}

BenchRow vllm_row(const Json& j, const std::string& where) {
  BenchRow r;
  r.origin = where;
  r.engine = "vllm";
  r.backend = "vllm";
  const double completed = positive(j, "completed", where);
  const double out = positive(j, "total_output_tokens", where) / completed;
  const double in = positive(j, "total_input_tokens", where) / completed;
  const double throughput = positive(j, "request_throughput", where);
  const auto step = first_positive(j, {"median_itl_ms", "mean_itl_ms", "median_tpot_ms", "mean_tpot_ms"}, where);
  if (!step) throw InputError(fmt::format("{}: no inter-token latency or TPOT > 0 (median_itl_ms, mean_itl_ms, "
                                          "median_tpot_ms, mean_tpot_ms)", where));
  double e2e_ms = 0;
  if (const auto e = first_positive(j, {"mean_e2el_ms"}, where)) {
    e2e_ms = e->second;
  } else {
    const auto ttft = first_positive(j, {"mean_ttft_ms"}, where);
    const auto tpot = first_positive(j, {"mean_tpot_ms", "mean_itl_ms"}, where);
    if (!ttft || !tpot)
      throw InputError(fmt::format("{}: needs mean_e2el_ms, or mean_ttft_ms and mean_tpot_ms, for the requests in flight", where));
    e2e_ms = ttft->second + tpot->second * std::max(0.0, out - 1);
  }
  const double in_flight = throughput * e2e_ms / 1e3;  // Little's law
  if (!(in_flight <= kMaxInFlight) || !(in + out / 2 <= kMaxContext))
    throw InputError(fmt::format("{}: {:.3g} requests in flight of {:.3g} tokens each; expected at most {:g} and {:g} "
                                 "(check request_throughput, the latencies and the token totals)",
                                 where, in_flight, in + out / 2, kMaxInFlight, kMaxContext));
  r.step_s = step->second / 1e3;
  r.tokens_per_s = 1 / r.step_s;
  r.batch = std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(in_flight)));
  r.context = static_cast<uint64_t>(std::llround(in + out / 2));
  r.n_gen = static_cast<uint64_t>(std::llround(out));
  r.model_type = optional_string(j, "model_id", where).value_or("");
  r.file_type = optional_string(j, "weights", where).value_or("BF16");
  const std::string kv = optional_string(j, "kv_cache_dtype", where).value_or("auto");
  r.kv_k = r.kv_v = kv == "auto" ? "bf16" : kv;
  r.build = optional_string(j, "date", where).value_or("");
  r.test = fmt::format("served {} ({:.1f} in flight, ctx {})", step->first, in_flight, r.context);
  return r;
}

std::vector<BenchRow> report_rows(const Json& j, const std::string& where) {
  const Json& steps = j.at("decode_steps");
  const std::string w = where + ": decode_steps";
  if (!steps.is_object()) throw InputError(fmt::format("{}: expected an object", w));
  const std::string model = require_string(steps, "model", w);
  const auto found = steps.find("by_batch");
  if (found == steps.end() || !found->is_array())
    throw InputError(fmt::format("{}: 'by_batch' must be an array of {{batch, count, context, p50_ms}}", w));
  const Json& groups = *found;
  std::vector<BenchRow> rows;
  for (size_t k = 0; k < groups.size(); ++k) {
    const std::string g = fmt::format("{}: by_batch[{}]", w, k);
    if (require_uint(groups[k], "count", g) < kMinStepsPerBatch) continue;
    BenchRow r;
    r.origin = g;
    r.model = model;
    r.model_type = model;
    r.model_scale = optional_number(steps, "scale", w).value_or(1.0);
    r.file_type = require_string(steps, "weights", w);
    r.kv_k = require_string(steps, "kv_k", w);
    r.kv_v = require_string(steps, "kv_v", w);
    r.engine = "infer-plan " + require_string(steps, "backend", w);
    r.backend = r.engine;
    r.batch = require_uint(groups[k], "batch", g);
    r.context = require_uint(groups[k], "context", g);
    r.step_s = positive(groups[k], "p50_ms", g) / 1e3;
    r.tokens_per_s = 1 / r.step_s;
    r.n_gen = 1;
    if (r.batch == 0 || static_cast<double>(r.batch) > kMaxInFlight || static_cast<double>(r.context) > kMaxContext)
      throw InputError(fmt::format("{}: batch {} of {} tokens each; expected 1 to {:g} sequences of at most {:g} tokens",
                                   g, r.batch, r.context, kMaxInFlight, kMaxContext));
    r.test = fmt::format("run, batch {} ({} steps)", r.batch, require_uint(groups[k], "count", g));
    rows.push_back(r);
  }
  if (rows.empty())
    throw InputError(fmt::format("{}: no batch size held for {} steps or more", w, kMinStepsPerBatch));
  return rows;
}

}  // namespace

std::optional<std::vector<BenchRow>> served_rows(const Json& j, const std::string& origin) {
  if (is_vllm_result(j)) return std::vector<BenchRow>{vllm_row(j, origin)};
  if (is_report(j)) return report_rows(j, origin);
  return std::nullopt;
}

}  // namespace infer_plan
