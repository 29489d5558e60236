#include "planner/calibration/serving_prior.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <mutex>
#include <set>

#include "planner/calibration/calibration.hpp"
#include "planner/catalog/embedded_data.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/limits.hpp"
#include "planner/cost/engine_memory.hpp"
#include "planner/plan/predict.hpp"
#include "planner/serving/engine_policy.hpp"

namespace infer_plan {
namespace {

constexpr uint64_t kServedRequests = 5000;  // per run at most (a burst's mean TTFT needs all of them)
constexpr double kBurstS = 0.1;               // "all at once": every request within this
constexpr uint64_t kThroughputRequests = 30000;  // an offline throughput run's requests at most (trtllm-bench's largest)
// The engine whose step model stands for one whose published runs cannot be fitted: vLLM's, fitted
// on the most runs and devices. Against TensorRT-LLM's offline throughputs (calibrate --loo device
// --engine trtllm), the datasheet ceiling is about twice what was measured.
constexpr std::string_view kStepDonor = "vllm";
// The search (fit_runs): its start for the front end, the least times it tries, sweeps over the
// terms, each term's span (x e^1.2 either way) and golden-section steps.
constexpr double kStartFrontEndS = 0.03, kLeastTimeS = 1e-5, kLeastPerSequenceS = 1e-7;
constexpr double kStartAllReduceCallS = 1e-5;  // per call: a custom all-reduce's order of magnitude
constexpr int kSweeps = 2, kGoldenSteps = 10;
constexpr double kSearchSpan = 1.2;
constexpr double kRobustScale = 0.3;  // the fit's loss: log errors beyond about 30% pull less (robust_loss)
constexpr double kServedTail = 0.05;           // the band: 5th to 95th percentile of held-out residuals
constexpr std::string_view kServingDir = "hwprofiles/serving/";

std::optional<double> ms(const Json& metrics, const char* key, const std::string& where) {
  const std::optional<double> v = optional_number(metrics, key, where);
  if (!v) return std::nullopt;
  if (!(*v > 0) || !std::isfinite(*v))
    throw InputError(fmt::format("{}: field '{}' is {}; expected a time > 0 in ms", where, key, *v));
  return *v / 1e3;
}

std::string weights_name(const std::string& w) {
  if (w == "FP16" || w == "fp16" || w == "float16") return "F16";
  if (w == "bf16" || w == "bfloat16") return "BF16";
  return w;
}

// The KV type a run's cache holds: the engines' "auto" is the model's dtype, except TensorRT-LLM's,
// which takes the checkpoint's KV quantization (hf_quant_config.json's kv_cache_quant_algo, as its
// llmapi tests write it): FP8 in NVIDIA's ModelOpt FP8 checkpoints. Read as BF16, the 72 runs of
// its 1.0 and later tables were 59-60% faster than predicted (median); as FP8, 22-23%.
GgmlType kv_type_of(const ServedRun& r) {
  const bool automatic = r.kv.empty() || r.kv.starts_with("auto");
  if (automatic && r.engine == "trtllm" && r.weights == "FP8") return GgmlType::FP8;
  if (automatic) return r.weights == "F16" ? GgmlType::F16 : GgmlType::BF16;
  return kv_cache_type(weights_name(r.kv), "kv").type;  // the checkpoint's names too: FP16 is f16
}

Plan run_plan(const ServedRun& r, const std::string& engine) {
  Plan p;
  p.model = r.model;
  p.hw = r.hw;
  p.weights = r.weights;
  p.kv.k = p.kv.v = kv_type_of(r);
  p.tp = r.tp;
  p.engine = engine;
  // vLLM's memory follows its version (how it counts its CUDA graphs); a run's is stated where known.
  if (engine == "vllm" && engine_version_number(r.version)) p.engine_settings.engine_version = r.version;
  p.context = static_cast<uint64_t>(std::llround(r.input_tokens + r.output_tokens));
  p.requests = 1;
  return p;
}

// The fit's reading of a run: the regressors at its mean batch (see the header).
struct Row {
  size_t index = 0;
  double itl_s = 0, ttft_s = 0;
  double batch = 0;
  double memory_s = 0, comm_s = 0, prefill_compute_s = 0, prefill_share = 0;  // share: I lambda
  bool moe = false;  // a mixture of experts: its own read and compute fractions
};

std::optional<Row> row_of(const ServedRun& r, size_t index, std::string& why) {
  const std::optional<double> itl = r.inter_token_s(), ttft = r.ttft_s();
  if (!r.excluded.empty()) {
    why = r.excluded;
    return std::nullopt;
  }
  const std::optional<double> throughput = r.request_throughput ? r.request_throughput : r.rate_per_s;
  if (!throughput) {
    why = "a concurrency limit with no request throughput printed";
    return std::nullopt;
  }
  if (r.input_tokens < 1 || r.output_tokens < 1) {
    why = "no prompt or output length";
    return std::nullopt;
  }
  if (!itl || !ttft) {
    why = "needs an inter-token latency (or TPOT) and a TTFT";
    return std::nullopt;
  }
  Row row;
  row.index = index;
  row.itl_s = *itl;
  row.ttft_s = *ttft;
  const double lambda = *throughput;
  row.batch = std::max(1.0, lambda * *itl * std::max(0.0, r.output_tokens - 1));
  Plan p = run_plan(r, std::string(kNoEngine));  // the bare roofline: the regressors
  try {
    const ResolvedPlan rp = resolve_plan(p);
    const StepCost step = rp.roofline->decode_step(static_cast<uint64_t>(std::llround(row.batch)),
                                                   static_cast<uint64_t>(std::llround(r.input_tokens + r.output_tokens / 2)));
    row.memory_s = step.memory_s;
    row.moe = rp.spec.is_moe();
    row.comm_s = step.comm_s;
    row.prefill_compute_s = rp.roofline->prefill(static_cast<uint64_t>(std::llround(r.input_tokens))).compute_s;
  } catch (const InputError& e) {
    why = e.what();
    return std::nullopt;
  }
  row.prefill_share = *itl * lambda;
  return row;
}

// Least squares with every coefficient >= 0 (active set: the most negative leaves, refit).
Eigen::VectorXd nonnegative_least_squares(const Eigen::MatrixXd& a, const Eigen::VectorXd& b) {
  std::vector<bool> free(static_cast<size_t>(a.cols()), true);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(a.cols());
  for (;;) {
    std::vector<Eigen::Index> cols;
    for (Eigen::Index c = 0; c < a.cols(); ++c)
      if (free[static_cast<size_t>(c)]) cols.push_back(c);
    x.setZero();
    if (cols.empty()) return x;
    Eigen::MatrixXd sub(a.rows(), static_cast<Eigen::Index>(cols.size()));
    for (size_t k = 0; k < cols.size(); ++k) sub.col(static_cast<Eigen::Index>(k)) = a.col(cols[k]);
    const Eigen::VectorXd s = sub.colPivHouseholderQr().solve(b);
    Eigen::Index worst = -1;
    for (size_t k = 0; k < cols.size(); ++k) {
      x(cols[k]) = s(static_cast<Eigen::Index>(k));
      if (s(static_cast<Eigen::Index>(k)) < 0 && (worst < 0 || s(static_cast<Eigen::Index>(k)) < x(worst))) worst = cols[k];
    }
    if (worst < 0) return x;
    free[static_cast<size_t>(worst)] = false;
  }
}

// The step terms from rows: I - comm - memory - I lambda prefill =
//   fixed + per_sequence b + (1 / read_efficiency - 1) memory + (1 / compute_efficiency - 1) I lambda prefill
//   + prefill_fixed I lambda,
// the efficiencies dense and mixture-of-experts apart, each row divided by its I (relative
// errors); efficiencies <= 1 (no engine beats the datasheet).
StepCalibration fit_rows(const std::vector<Row>& rows, const std::string& engine) {
  Eigen::MatrixXd a(static_cast<Eigen::Index>(rows.size()), 7);
  Eigen::VectorXd b(static_cast<Eigen::Index>(rows.size()));
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const auto k = static_cast<Eigen::Index>(i);
    const double w = 1.0 / r.itl_s;
    const double prefill = r.prefill_share * r.prefill_compute_s;
    a(k, 0) = w;
    a(k, 1) = w * r.batch;
    a(k, 2) = r.moe ? 0 : w * r.memory_s;
    a(k, 3) = r.moe ? w * r.memory_s : 0;
    a(k, 4) = r.moe ? 0 : w * prefill;
    a(k, 5) = r.moe ? w * prefill : 0;
    a(k, 6) = w * r.prefill_share;  // a fixed time per prefill
    b(k) = w * (r.itl_s - r.comm_s - r.memory_s - prefill);
  }
  const Eigen::VectorXd x = nonnegative_least_squares(a, b);
  StepCalibration c;
  c.engine = engine;
  c.decode.fixed_s = x(0);
  c.decode.per_sequence_s = x(1);
  bool dense = false, moe = false;
  for (const Row& r : rows) (r.moe ? moe : dense) = true;
  // A kind with no rows takes the other's fractions.
  c.decode.read_efficiency = 1.0 / (1.0 + (dense ? x(2) : x(3)));
  if (moe && dense) c.decode.moe_read_efficiency = 1.0 / (1.0 + x(3));
  PrefillTerms p;
  p.compute_efficiency = 1.0 / (1.0 + (dense ? x(4) : x(5)));
  if (moe && dense) p.moe_compute_efficiency = 1.0 / (1.0 + x(5));
  p.fixed_s = x(6);
  c.prefill = p;
  return c;
}

// The study a run was measured in: its source's repository (or site). A study's client reaches
// the server its own way (the chat or the completions endpoint, a gateway or none), which its
// TTFTs carry as tens of milliseconds the engine's steps do not explain: each study has a front
// end of its own in the fit, and a plan gets their geometric mean.
std::string study_of(const ServedRun& r) {
  std::string_view s = r.source;
  for (const std::string_view scheme : {"https://", "http://"})
    if (s.starts_with(scheme)) s.remove_prefix(scheme.size());
  const size_t host_end = s.find('/');
  if (!s.starts_with("github.com/") || host_end == std::string_view::npos) return std::string(s.substr(0, host_end));
  const size_t owner_end = s.find('/', host_end + 1);
  const size_t repo_end = owner_end == std::string_view::npos ? owner_end : s.find('/', owner_end + 1);
  return std::string(s.substr(host_end + 1, repo_end == std::string_view::npos ? repo_end : repo_end - host_end - 1));
}

// The terms a fit found: the engine's, and each study's front end.
struct FittedTerms {
  StepCalibration steps;  // first_token_s: the studies' geometric mean
  std::map<std::string, double> front_end_s;

  // The terms as `run` was measured: its study's front end where the fit saw that study.
  StepCalibration as_measured(const ServedRun& run) const {
    StepCalibration c = steps;
    if (const auto f = front_end_s.find(study_of(run)); f != front_end_s.end()) c.first_token_s = f->second;
    return c;
  }
};

// A log error's weight in the fit: its square while small, growing only as a logarithm beyond
// kRobustScale (Cauchy's loss). A few runs the simulation does not model (a mixture of experts
// served with attention data parallel, a burst's tail of 32000-token prompts) are off by 2-3x;
// squared, they pulled every term their way, and the dense runs at 1-16 req/s ended 18% slower
// than predicted (median; 10% with this loss, the device-out check 5%).
double robust_loss(double log_error) {
  constexpr double c2 = kRobustScale * kRobustScale;
  return c2 * std::log1p(log_error * log_error / c2);
}

// Sum over the targets of the robust losses of the simulation's inter-token figure and TTFT
// (a run the simulation cannot serve counts as a large error).
double misfit(const std::vector<ServedRun>& runs, const std::vector<size_t>& targets, const FittedTerms& t) {
  constexpr double kUnserved = 10;
  double sum = 0;
  for (const size_t i : targets) {
    const std::optional<ServedPrediction> p = predict_served_run(runs[i], t.as_measured(runs[i]));
    if (!p || !(p->itl_s > 0) || !(p->ttft_s > 0)) {
      sum += kUnserved;
      continue;
    }
    sum += robust_loss(std::log(*runs[i].inter_token_s() / p->itl_s)) + robust_loss(std::log(*runs[i].ttft_s() / p->ttft_s));
  }
  return sum;
}

// The terms as coordinates in log space: a time (floored) or an efficiency (at most 1).
struct Coordinate {
  double* value;
  double floor;      // times: the least value; efficiencies: 0
  bool efficiency;
  double get() const { return std::log(std::max(*value, floor > 0 ? floor : 1e-6)); }
  void set(double u) const { *value = efficiency ? std::min(1.0, std::exp(u)) : std::exp(u); }
};

// The rows' linear fit as a start, then each term in turn moved to where the simulation best
// reproduces the targets' inter-token figures and TTFTs (golden sections in log space, a few
// sweeps): the simulation schedules as the engine does, which the linear reading cannot.
std::optional<FittedTerms> fit_runs(const std::vector<ServedRun>& runs, const std::vector<Row>& rows,
                                    const std::vector<size_t>& targets, const std::string& engine) {
  if (rows.size() < 4 || targets.size() < 4) return std::nullopt;
  FittedTerms t;
  t.steps = fit_rows(rows, engine);
  StepCalibration& c = t.steps;
  for (const size_t i : targets) t.front_end_s[study_of(runs[i])] = kStartFrontEndS;
  c.decode.fixed_s = std::max(c.decode.fixed_s, kLeastTimeS);
  c.decode.per_sequence_s = std::max(c.decode.per_sequence_s, kLeastPerSequenceS);
  c.prefill->fixed_s = std::max(c.prefill->fixed_s, kLeastTimeS);
  std::vector<Coordinate> coords{{&c.decode.fixed_s, kLeastTimeS, false},
                                 {&c.decode.per_sequence_s, kLeastPerSequenceS, false},
                                 {&c.decode.read_efficiency, 0, true},
                                 {&c.prefill->compute_efficiency, 0, true},
                                 {&c.prefill->fixed_s, kLeastTimeS, false}};
  for (auto& [study, front_s] : t.front_end_s) coords.push_back({&front_s, kLeastTimeS, false});
  if (c.decode.moe_read_efficiency) coords.push_back({&*c.decode.moe_read_efficiency, 0, true});
  if (std::any_of(targets.begin(), targets.end(), [&](size_t i) { return runs[i].tp > 1; })) {
    c.decode.all_reduce_call_s = kStartAllReduceCallS;
    coords.push_back({&*c.decode.all_reduce_call_s, kLeastTimeS / 10, false});
  }
  if (c.prefill->moe_compute_efficiency) coords.push_back({&*c.prefill->moe_compute_efficiency, 0, true});
  const double phi = (std::sqrt(5.0) - 1) / 2;
  for (int sweep = 0; sweep < kSweeps; ++sweep) {
    for (const Coordinate& k : coords) {
      const double u0 = k.get();
      double lo = u0 - kSearchSpan, hi = k.efficiency ? std::min(u0 + kSearchSpan, 0.0) : u0 + kSearchSpan;
      auto at = [&](double u) {
        k.set(u);
        return misfit(runs, targets, t);
      };
      double x1 = hi - phi * (hi - lo), x2 = lo + phi * (hi - lo);
      double f1 = at(x1), f2 = at(x2);
      for (int i = 0; i < kGoldenSteps; ++i) {
        if (f1 < f2) {
          hi = x2, x2 = x1, f2 = f1, x1 = hi - phi * (hi - lo), f1 = at(x1);
        } else {
          lo = x1, x1 = x2, f1 = f2, x2 = lo + phi * (hi - lo), f2 = at(x2);
        }
      }
      const double best = f1 < f2 ? x1 : x2;
      k.set(at(u0) <= std::min(f1, f2) ? u0 : best);
    }
  }
  double log_sum = 0;
  for (const auto& [study, front_s] : t.front_end_s) log_sum += std::log(front_s);
  c.first_token_s = std::exp(log_sum / static_cast<double>(t.front_end_s.size()));
  return t;
}

// One value per engine, made once per process; made outside the lock, since making a fit
// resolves plans, which may ask for another engine's.
template <typename T>
const T& per_engine(const std::string& engine, T (*make)(const std::string&)) {
  static std::mutex m;
  static std::map<std::string, T> cache;  // node-based: references stay valid
  {
    std::lock_guard<std::mutex> lock(m);
    if (const auto it = cache.find(engine); it != cache.end()) return it->second;
  }
  T value = make(engine);
  std::lock_guard<std::mutex> lock(m);
  return cache.emplace(engine, std::move(value)).first->second;
}

std::vector<ServedRun> read_served_runs(const std::string& engine) {
  const std::string path = fmt::format("{}{}.json", kServingDir, engine);
  for (const EmbeddedFile& f : embedded_files())
    if (f.path == path) return served_runs_from_json(parse_json_text(f.content, "built-in " + path), "built-in " + path);
  return {};
}

std::optional<ServingFit> fit_builtin_runs(const std::string& engine) {
  return fit_served_runs(builtin_served_runs(engine), engine, ServedHoldOut::device);
}

std::optional<ServingFit> read_stored_fit(const std::string& engine) {
  const std::string path = fmt::format("{}fits/{}.json", kServingDir, engine);
  for (const EmbeddedFile& f : embedded_files())
    if (f.path == path) return serving_fit_from_json(parse_json_text(f.content, "built-in " + path), "built-in " + path);
  return std::nullopt;
}

std::string joined_versions(const std::vector<ServedRun>& runs, const std::vector<size_t>& targets) {
  std::set<std::string> v;
  for (const size_t i : targets) v.insert(runs[i].version);
  return fmt::format("{}", fmt::join(v, ", "));
}

}  // namespace

std::string ServedRun::label() const {
  return fmt::format("{} {} {} {} TP{} {}", engine, version, hw, model, tp,
                     rate_per_s        ? fmt::format("{:g} req/s", *rate_per_s)
                     : max_concurrency ? fmt::format("{} at once", *max_concurrency)
                                       : std::string("all at once"));
}

std::optional<std::pair<ServedRun::Gap, double>> ServedRun::inter_token() const {
  const std::pair<Gap, const std::optional<double>*> order[] = {
      {Gap::mean_itl, &mean_itl_s}, {Gap::mean_tpot, &mean_tpot_s}, {Gap::median_tpot, &median_tpot_s},
      {Gap::median_itl, &median_itl_s}};
  for (const auto& [gap, v] : order)
    if (*v) return std::pair{gap, **v};
  return std::nullopt;
}

std::optional<double> ServedRun::inter_token_s() const {
  if (const auto g = inter_token()) return g->second;
  return std::nullopt;
}


std::optional<double> ServedRun::offered_rate_per_s() const {
  if (rate_per_s) return rate_per_s;
  if (max_concurrency) return request_throughput;
  return num_prompts ? std::optional<double>(static_cast<double>(num_prompts) / kBurstS) : std::nullopt;
}

std::optional<double> ServedRun::ttft_s() const { return mean_ttft_s ? mean_ttft_s : median_ttft_s; }

std::vector<ServedRun> served_runs_from_json(const Json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(fmt::format("{}: expected an object with 'engine' and 'points'", where));
  const std::string engine = require_string(j, "engine", where);
  const auto pts = j.find("points");
  if (pts == j.end() || !pts->is_array()) throw InputError(fmt::format("{}: field 'points' must be an array", where));
  std::vector<ServedRun> out;
  for (size_t i = 0; i < pts->size(); ++i) {
    const Json& p = (*pts)[i];
    const std::string w = fmt::format("{}: points[{}]", where, i);
    if (!p.is_object()) throw InputError(fmt::format("{}: expected an object", w));
    ServedRun r;
    r.engine = engine;
    r.version = optional_string(p, "engine_version", w).value_or("");
    r.date = optional_string(p, "date", w).value_or("");
    r.source = require_string(p, "source", w);
    r.note = optional_string(p, "note", w).value_or("");
    r.hw = require_string(p, "hw", w);
    r.model = require_string(p, "model", w);
    r.weights = weights_name(optional_string(p, "weights", w).value_or("BF16"));
    r.kv = optional_string(p, "kv", w).value_or("auto");
    r.flags = optional_string(p, "engine_flags", w).value_or("");
    r.dataset = optional_string(p, "dataset", w).value_or("");
    r.excluded = optional_string(p, "excluded", w).value_or("");
    r.tp = optional_uint(p, "tp", w).value_or(1);
    r.num_prompts = optional_uint(p, "num_prompts", w).value_or(0);
    if (const auto rate = p.find("request_rate"); rate != p.end() && rate->is_number()) {
      if (!(rate->get<double>() > 0)) throw InputError(fmt::format("{}: field 'request_rate' must be > 0 or \"inf\"", w));
      r.rate_per_s = rate->get<double>();
    }
    if (const auto c = p.find("max_concurrency"); c != p.end() && c->is_number()) r.max_concurrency = c->get<uint64_t>();
    auto mean_len = [&](const char* mean_key, const char* set_key) {
      for (const char* k : {mean_key, set_key})
        if (const std::optional<double> v = optional_number(p, k, w); v && *v > 0) return *v;
      return 0.0;
    };
    r.input_len = optional_number(p, "input_len", w);
    r.output_len = optional_number(p, "output_len", w);
    r.input_tokens = mean_len("mean_input_tokens", "input_len");
    r.output_tokens = mean_len("mean_output_tokens", "output_len");
    if (const auto m = p.find("metrics"); m != p.end() && m->is_object()) {
      const std::string mw = w + ": metrics";
      r.mean_ttft_s = ms(*m, "mean_ttft_ms", mw);
      r.median_ttft_s = ms(*m, "median_ttft_ms", mw);
      r.mean_itl_s = ms(*m, "mean_itl_ms", mw);
      r.median_itl_s = ms(*m, "median_itl_ms", mw);
      r.mean_tpot_s = ms(*m, "mean_tpot_ms", mw);
      r.median_tpot_s = ms(*m, "median_tpot_ms", mw);
      r.mean_e2el_s = ms(*m, "mean_e2el_ms", mw);
      r.median_e2el_s = ms(*m, "median_e2el_ms", mw);
      if (const std::optional<double> t = optional_number(*m, "request_throughput", mw)) {
        if (!(*t > 0) || !std::isfinite(*t))
          throw InputError(fmt::format("{}: field 'request_throughput' is {}; expected requests per second > 0", mw, *t));
        r.request_throughput = t;
      }
      for (const char* key : {"output_throughput", "output_throughput_per_gpu"})
        if (const std::optional<double> t = optional_number(*m, key, mw)) {
          if (!(*t > 0) || !std::isfinite(*t))
            throw InputError(fmt::format("{}: field '{}' is {}; expected tokens per second > 0", mw, key, *t));
          const bool per_gpu = std::string_view(key).ends_with("per_gpu");
          r.output_throughput = per_gpu ? *t * static_cast<double>(optional_uint(p, "gpus", w).value_or(r.tp)) : *t;
        }
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::string> served_engines() {
  std::vector<std::string> out;
  for (const EmbeddedFile& f : embedded_files())
    if (f.path.starts_with(kServingDir) && f.path.ends_with(".json") &&
        f.path.find('/', kServingDir.size()) == std::string_view::npos)
      out.emplace_back(f.path.substr(kServingDir.size(), f.path.size() - kServingDir.size() - 5));
  return out;
}

const std::vector<ServedRun>& builtin_served_runs(const std::string& engine) {
  return per_engine<std::vector<ServedRun>>(engine, read_served_runs);
}

namespace {

// The lengths a run's requests had, as its benchmark draws them, with the mean it printed: a
// random dataset's uniformly up to its configured length (SGLang's bench_serving from 1 at a
// range ratio of 0, the mean half the length; vLLM's at its default ratio 0 all equal, the mean
// the length; a mean below it where outputs ended early); ShareGPT's conversations from a few
// tokens to several times the mean, drawn from 1 to twice the mean. Drawn at the mean instead,
// a burst's requests prefill and finish together and a queue forms less: over the built-in runs,
// leave-one-device-out, vLLM's ITL 30.5% -> 24.3% (TTFT 65.1% -> 65.5%), SGLang's TTFT 32.0% ->
// 22.8% (ITL 29.1% -> 29.3%).
TokenLengths drawn_lengths(double mean, std::optional<double> configured, const std::string& dataset, uint64_t least) {
  const uint64_t m = std::max<uint64_t>(least, static_cast<uint64_t>(std::llround(mean)));
  if (configured && *configured > 0) {
    const uint64_t longest = static_cast<uint64_t>(std::llround(*configured));
    if (m >= longest) return TokenLengths::fixed(m);
    return {std::max(least, 2 * m > longest ? 2 * m - longest : least), longest};
  }
  if (dataset == "sharegpt") return {least, 2 * m - least};
  return TokenLengths::fixed(m);
}

// A run's server with `steps`, scheduled by its engine's defaults (chunked prefill as the policy
// says, resolve_plan), its KV pool what the engine's memory leaves; the plan it times steps with
// lives beside it. nullopt when the pool holds nothing.
struct RunServer {
  ResolvedPlan rp;
  ServerModel server;
};
std::optional<RunServer> run_server(const ServedRun& run, const StepCalibration& steps) {
  RunServer s{resolve_plan(run_plan(run, run.engine), steps), {}};
  s.server = s.rp.server;
  s.server.max_batch = engine_policy(run.engine, s.rp.hw, s.rp.plan.engine_settings).max_batch;
  s.server.kv_capacity_tokens = s.rp.fit.kv_tokens_in(s.rp.fit.kv_room_bytes);
  if (*s.server.kv_capacity_tokens == 0) return std::nullopt;
  return s;
}
}  // namespace

std::optional<ServedPrediction> predict_served_run(const ServedRun& run, const StepCalibration& steps) {
  const std::optional<double> rate = run.offered_rate_per_s();
  if (!rate || run.input_tokens < 1 || run.output_tokens < 1) return std::nullopt;
  try {
    const std::optional<RunServer> s = run_server(run, steps);
    if (!s) return std::nullopt;
    const ServerModel& server = s->server;
    ServingLoad load;
    load.rate_per_s = *rate;
    load.finite_run = !run.rate_per_s;  // a burst or a closed loop: latencies whatever the queue
    load.requests = std::clamp<uint64_t>(run.num_prompts ? run.num_prompts : kServedRequests, 50, kServedRequests);
    load.prompt_tokens = drawn_lengths(run.input_tokens, run.input_len, run.dataset, 1);
    load.output_tokens = drawn_lengths(run.output_tokens, run.output_len, run.dataset, 2);
    const ServingResult r = simulate_serving(server, load);
    const auto gap = run.inter_token();
    if (!r.latency || r.latency->itl_s.count == 0 || !gap) return std::nullopt;
    const ServingLatency& l = *r.latency;
    const double itl = gap->first == ServedRun::Gap::mean_itl     ? l.itl_s.mean
                       : gap->first == ServedRun::Gap::mean_tpot  ? l.tpot_s.mean
                       : gap->first == ServedRun::Gap::median_tpot ? l.tpot_s.p50
                                                                   : l.itl_s.p50;
    return ServedPrediction{itl, run.ttft_is_mean() ? l.ttft_s.mean : l.ttft_s.p50};
  } catch (const InputError&) {
    return std::nullopt;
  }
}

std::optional<double> predict_served_throughput(const ServedRun& run, const StepCalibration& steps) {
  if (run.input_tokens < 1 || run.output_tokens < 1) return std::nullopt;
  try {
    const std::optional<RunServer> s = run_server(run, steps);
    if (!s) return std::nullopt;
    ServingLoad load;
    load.requests = std::clamp<uint64_t>(run.num_prompts ? run.num_prompts : kThroughputRequests, 50, kThroughputRequests);
    load.rate_per_s = static_cast<double>(load.requests) / kBurstS;
    load.finite_run = true;
    load.prompt_tokens = drawn_lengths(run.input_tokens, run.input_len, run.dataset, 1);
    load.output_tokens = drawn_lengths(run.output_tokens, run.output_len, run.dataset, 2);
    const ServingResult r = simulate_serving(s->server, load);
    if (r.completed == 0 || !(r.throughput_tok_s > 0)) return std::nullopt;
    return r.throughput_tok_s;
  } catch (const InputError&) {
    return std::nullopt;
  }
}

std::optional<ServingFit> fit_served_runs(const std::vector<ServedRun>& runs, const std::string& engine,
                                          ServedHoldOut hold_out) {
  ServingFit fit;
  std::vector<Row> rows;
  std::vector<size_t> targets;  // what the simulation is fitted to
  std::set<std::string> devices;
  for (size_t i = 0; i < runs.size(); ++i) {
    ServedFitPoint pt;
    pt.run = runs[i];
    std::string why;
    if (std::optional<Row> row = row_of(runs[i], i, why)) rows.push_back(*row);
    if (!runs[i].excluded.empty()) {
      pt.why_not = runs[i].excluded;
    } else if (!runs[i].inter_token_s() || !runs[i].ttft_s() || !runs[i].offered_rate_per_s() ||
               runs[i].input_tokens < 1 || runs[i].output_tokens < 1) {
      pt.why_not = "needs an inter-token latency (or TPOT), a TTFT, the prompt and output lengths, and a rate, a "
                   "concurrency limit or a number of prompts";
    } else {
      pt.fitted = true;
      targets.push_back(i);
      devices.insert(runs[i].hw);
    }
    fit.points.push_back(std::move(pt));
  }
  std::optional<FittedTerms> all = fit_runs(runs, rows, targets, engine);
  if (!all) return std::nullopt;
  fit.devices.assign(devices.begin(), devices.end());
  fit.study_front_end_s = all->front_end_s;
  std::vector<double> itl_res, ttft_res;
  for (ServedFitPoint& pt : fit.points) {  // the runs not fitted too: what the fit says of them
    if (!pt.run.excluded.empty()) continue;
    if (const std::optional<ServedPrediction> p = predict_served_run(pt.run, all->as_measured(pt.run))) {
      pt.predicted_itl_s = p->itl_s;
      pt.predicted_ttft_s = p->ttft_s;
    }
  }
  fit.held_out = hold_out;
  if (hold_out != ServedHoldOut::none) {
    const auto key = [&](size_t i) -> const std::string& {
      return hold_out == ServedHoldOut::device ? runs[i].hw : runs[i].model;
    };
    std::set<std::string> keys;
    for (const size_t i : targets) keys.insert(key(i));
    for (const std::string& d : keys) {
      std::vector<Row> other_rows;
      std::vector<size_t> other_targets;
      for (const Row& r : rows)
        if (key(r.index) != d) other_rows.push_back(r);
      for (const size_t i : targets)
        if (key(i) != d) other_targets.push_back(i);
      const std::optional<FittedTerms> held = fit_runs(runs, other_rows, other_targets, engine);
      if (!held) continue;
      for (const size_t i : targets) {
        if (key(i) != d) continue;
        if (const std::optional<ServedPrediction> p = predict_served_run(runs[i], held->as_measured(runs[i]))) {
          ServedFitPoint& pt = fit.points[i];
          pt.held_itl_s = p->itl_s;
          pt.held_ttft_s = p->ttft_s;
          itl_res.push_back(*runs[i].inter_token_s() / p->itl_s - 1);
          ttft_res.push_back(*runs[i].ttft_s() / p->ttft_s - 1);
        }
      }
    }
  }
  StepCalibration& c = all->steps;
  c.decode.error = error_band(itl_res, kServedTail);
  c.decode.error.points = targets.size();
  c.decode.error.loo_median_abs = median_abs(itl_res);
  c.prefill->error = error_band(ttft_res, kServedTail);
  c.prefill->error.points = targets.size();
  c.prefill->error.loo_median_abs = median_abs(ttft_res);
  c.source = fmt::format("hwprofiles/serving/{}.json: {} published serving runs on {} ({} {})", engine, targets.size(),
                         fmt::join(fit.devices, ", "), engine, joined_versions(runs, targets));
  fit.calibration = c;
  return fit;
}

const ServingFit* builtin_serving_fit(const std::string& engine) {
  const std::optional<ServingFit>& fit = per_engine<std::optional<ServingFit>>(engine, fit_builtin_runs);
  return fit ? &*fit : nullptr;
}

Json serving_fit_to_json(const ServingFit& fit) {
  return Json{{"engine", fit.calibration.engine},
              {"devices", fit.devices},
              {"calibration", step_calibration_to_json(fit.calibration)}};
}

ServingFit serving_fit_from_json(const Json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(fmt::format("{}: expected an object with 'calibration' and 'devices'", where));
  ServingFit fit;
  fit.calibration = step_calibration_from_json(require_object(j, "calibration", where), where + ": calibration");
  const auto d = j.find("devices");
  if (d == j.end() || !d->is_array()) throw InputError(fmt::format("{}: field 'devices' must be an array of names", where));
  for (const Json& name : *d) {
    if (!name.is_string()) throw InputError(fmt::format("{}: field 'devices' must be an array of names", where));
    fit.devices.push_back(name.get<std::string>());
  }
  return fit;
}

const ServingFit* stored_serving_fit(const std::string& engine) {
  const std::optional<ServingFit>& fit = per_engine<std::optional<ServingFit>>(engine, read_stored_fit);
  return fit ? &*fit : nullptr;
}

std::vector<std::string> served_fit_engines() {
  std::vector<std::string> out;
  for (const std::string& e : served_engines())
    if (stored_serving_fit(e)) out.push_back(e);
  return out;
}

std::string step_donor(const std::string& engine) {
  if (engine == kStepDonor || stored_serving_fit(engine)) return "";
  const std::vector<std::string> served = served_engines();
  return std::find(served.begin(), served.end(), engine) == served.end() ? "" : std::string(kStepDonor);
}

std::optional<StepCalibration> served_step_calibration(const HwProfile& hw, const std::string& engine) {
  if (const std::string donor = step_donor(engine); !donor.empty()) {
    const ServingFit* fit = stored_serving_fit(donor);
    if (!fit) return std::nullopt;
    StepCalibration c = fit->calibration;
    c.engine = engine;
    c.basis = "transferred";
    c.basis_note = fmt::format(
        "{}'s step model stands for {} ({}'s published runs are offline throughputs, no latency to fit; "
        "checked against them by calibrate --loo device --engine {}): {}'s published serving runs pooled over {} "
        "devices ({})",
        donor, engine, engine, engine, donor, fit->devices.size(), fmt::join(fit->devices, ", "));
    return c;
  }
  const ServingFit* fit = stored_serving_fit(engine);
  if (!fit) return std::nullopt;
  StepCalibration c = fit->calibration;
  const bool own = std::find(fit->devices.begin(), fit->devices.end(), hw.name) != fit->devices.end();
  c.basis = own ? "calibrated" : "transferred";
  c.basis_note = fmt::format("{}'s published serving runs pooled over {} device{} ({}){}", engine, fit->devices.size(),
                             fit->devices.size() == 1 ? "" : "s", fmt::join(fit->devices, ", "),
                             own ? fmt::format(", {}'s among them", hw.name) : fmt::format(", scaled by {}'s datasheet", hw.name));
  return c;
}

}  // namespace infer_plan
