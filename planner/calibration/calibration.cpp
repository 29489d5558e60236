// The least squares run on Eigen (a two-column QR per iteration); the Huber constant 1.345 x the
// residuals' robust scale (1.4826 x their median absolute deviation) keeps 95% efficiency on
// clean data while capping an outlier's pull.
#include "planner/calibration/calibration.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <set>

#include "planner/catalog/catalog.hpp"
#include "planner/catalog/embedded_data.hpp"
#include "planner/core/input_error.hpp"
#include "planner/cost/kv_cache.hpp"
#include "planner/model/model_scale.hpp"
#include "planner/cost/engine_memory.hpp"
#include "planner/cost/roofline.hpp"
#include "planner/core/units.hpp"
#include "planner/weights/weights_size.hpp"

namespace infer_plan {
namespace {

constexpr double kHuberK = 1.345;
constexpr double kMadToSigma = 1.4826;
constexpr double kMinScale = 0.01;            // residual scale floor: 1% (measurement noise)
constexpr int kIterations = 20;
constexpr double kParamsTolerance = 0.04;     // a row's parameter count vs a built-in model's
constexpr double kSizeNoteTolerance = 0.03;   // file size vs recipe size worth a note
constexpr double kMinTermSpread = 1.15;       // largest / smallest term needed to fit two terms

// time = fixed + slope x term + sum over types of delta_t x term_t, on relative residuals; the
// deltas (a weight type's own read cost beyond the shared one) are pulled by a ridge penalty
// toward the prior's (FitPrior: the type's relative cost on the device's architecture), else
// toward 0, so a type seen once moves only part of the way and a type never seen keeps the
// prior's relative cost (or the shared rate). `fit_fixed` false: the prior's fixed time, else 0.
// One fixed time for all the engine builds in the data: a fixed time per build was tried and lost
// on leave-one-out (a100-80gb-pcie 8.1% -> 16.0%, h100-pcie 8.8% -> 17.6%, rtx-3090 13.3% -> 15.9%;
// only rtx-4090 gained, 3.1% -> 1.8%).
// The penalty is in units of (a type's term / measured)^2, which is 0.01-0.8 per point. Toward 0
// (no prior), leave-one-file-out medians over 4 devices (a100-80gb-pcie, h100-pcie, rtx-3090,
// rtx-4090) at 0.1: 8.1%, 8.8%, 13.1%, 3.1%; at 0.03: 9.1%, 8.7%, 7.0%, 2.9%. Toward the prior,
// with kFixedPriorWeight, over the 162 built-in decode points of 15 devices (median, worst):
// ridge 0.03 and fixed weight 0.03: 6.3%, 30.3%; 0.1 and 0.03: 4.6%, 30.1%; 0.1 and 0.1: 4.4%,
// 30.4%; 0.3 and 0.1: 5.4%, 69.9% (the P40's Q2_K pulled to the other NVIDIA devices' cost);
// 0.01 and 0.3: 4.3%, 32.3%; without a prior: 9.4%, 94.1%. (That sweep moved the pooled fits'
// ridge too; with theirs kept at 0.03, 0.1 and 0.1 give 4.6%, 28.2%.)
// (The pooled fits of step_prior keep 0.03 toward 0: at 0.1 leave-one-device-out went 10.9% -> 11.3%.)
constexpr double kTypeRidge = 0.03;
constexpr double kTypeRidgeToPrior = 0.1;
// The KV cache's covariate gets a tenth of a type's ridge: its term is a few percent of a step's
// reads where a type's is at least a tenth, so the full ridge held its cost near the weights'
// although attention at long contexts runs several times slower than its bytes (Metal builds of
// 2024: 4-7x on the m1-max-64gb's tg8192 rows). Over the 287 built-in decode points, ridge x1 /
// x0.3 / x0.1 / x0.03 / x0.01: leave-one-file-out median 4.8 / 4.5 / 4.2 / 3.9 / 4.2%, worst 33 /
// 31 / 33 / 31 / 32%; leave-one-device-out median 7.6% (8.0% at x0.01), worst +79 / +76 / +72 /
// +70 / +70%, points beyond 40% 10 / 11 / 10 / 11 / 11.
constexpr double kKvRidgeShare = 0.1;
// The prefill fits' attention covariate, a smaller share still: a prompt's attention is 1-13% of
// its compute at 512-8192 tokens of an 8B model, and runs at a quarter to a half of the GEMMs'
// efficiency in the 2024 CUDA builds without flash attention. Over the 209 built-in prefill points
// (the devices with one file's prompts at several lengths fit it), share x0.1 / x0.03 / x0.01 / 0:
// leave-one-file-out median 7.5 / 7.6 / 8.4 / 9.8% (7.5% without the covariate; pp8192's 12.9% ->
// 8.8 / 6.5 / 6.2 / 9.5%), leave-one-device-out median 13.1 / 12.4 / 12.5 / 12.4% (13.1%), worst
// +165 / +165 / +165 / +162% (+166%: an rx-7900-xtx gpt-oss prompt at a small ubatch), pp8192's
// signed median +29.4% -> +23.6 / +20.2 / +16.0 / +11.7%.
constexpr double kAttentionRidgeShare = 0.03;
// How hard a device's fixed time is pulled toward its prior's (CalibrationOptions::prior) where
// its terms spread enough to fit one: in units of (fixed x the median times it is paid / the median
// step)^2, as the type ridge (the sweep above).
constexpr double kFixedPriorWeight = 0.1;

struct Sample {
  double term = 0;                           // memory_s or compute_s
  std::map<std::string, double> type_terms;  // per GGML type: its weights' share of `term`
  double measured = 0;
  std::string group;                         // one model file in one run: left out together
  double fixed_count = 1;                    // times the fixed time is paid (a prompt's micro-batches)
};

struct Line {
  double fixed = 0;
  double slope = 1;
  std::map<std::string, double> delta;  // per type, added to `slope` for that type's term
  std::vector<double> weights;
  double predict(const Sample& x) const {
    double t = fixed * x.fixed_count + slope * x.term;
    for (const auto& [type, v] : x.type_terms)
      if (const auto it = delta.find(type); it != delta.end()) t += it->second * v;
    return t;
  }
};

// A read cost below the profile's rate / kMaxReadEfficiency is not physical (the profile's rate is
// a datasheet or probed ceiling); the free fit can get there when types trade against the fixed
// time (an old build's slow K-quants beside its fast Q4_0). Such a rate is held at the bound and
// the rest fitted again (an active set): first the shared rate, then the worst type, one at a time.
constexpr double kMaxReadEfficiency = 1.1;
constexpr double kMinSlope = 1.0 / kMaxReadEfficiency;

// What the device's own data is pulled toward where it cannot tell (the terms a device of its
// architecture without data gets, planner/calibration/step_prior): each weight type's read cost
// relative to the shared one (`relative`: cost / shared - 1; the KV covariate too), which the ridge
// pulls the type's own cost toward instead of toward the shared one, and which a type the device
// has no point for takes as it is; and the fixed time, held where the terms do not spread (one
// model size) and otherwise pulled toward with `fixed_weight`. Empty: every type toward the shared
// rate, and fixed 0 where it cannot be told.
struct FitPrior {
  std::map<std::string, double> relative;
  std::optional<double> fixed;
  double fixed_weight = 0;  // in units of (1 / a typical measured step)^2, as the residuals
  double type_ridge = kTypeRidge;
};

// The rates held at the bound: the shared one, and types read at exactly the bound.
struct Pinned {
  bool shared = false;
  std::set<std::string> types;
  std::set<std::string> zero;  // covariates held at 0 (a time that cannot be negative)
};

// One robust least-squares fit with `pinned` held: time = fixed + slope x (term - pinned types'
// terms) + kMinSlope x pinned types' terms + sum of the free types' deltas x their terms, on
// relative residuals with Huber weights; `fit_fixed` false: fixed = 0 (also when it comes out < 0).
Line fit_line_pinned(const std::vector<Sample>& xs, bool fit_fixed, const std::vector<std::string>& all_types,
                     const Pinned& pinned, const FitPrior& prior) {
  std::vector<std::string> types;
  for (const std::string& t : all_types)
    if (!pinned.types.contains(t) && !pinned.zero.contains(t)) types.push_back(t);
  const size_t n = xs.size();
  const size_t k = types.size();
  // columns: [slope unless pinned] [fixed if fitted] [one delta per free type]
  const Eigen::Index c_slope = pinned.shared ? -1 : 0;
  const Eigen::Index c_fixed = fit_fixed ? (pinned.shared ? 0 : 1) : -1;
  const Eigen::Index c_types = (pinned.shared ? 0 : 1) + (fit_fixed ? 1 : 0);
  const Eigen::Index cols = c_types + static_cast<Eigen::Index>(k);
  // the prior's fixed time: held when it is not fitted, else one more row pulling toward it
  const double held_fixed = !fit_fixed && prior.fixed ? *prior.fixed : 0.0;
  const bool fixed_row = fit_fixed && prior.fixed && prior.fixed_weight > 0;
  std::vector<double> measured(n);
  for (size_t i = 0; i < n; ++i) measured[i] = xs[i].measured;
  const double typical = median_abs(measured);
  std::vector<double> counts(n);  // the times a step pays the fixed time (its layers, its micro-batches)
  for (size_t i = 0; i < n; ++i) counts[i] = xs[i].fixed_count;
  const double typical_count = median_abs(counts);
  const Eigen::Index rows = static_cast<Eigen::Index>(n + k) + (fixed_row ? 1 : 0);
  auto relative = [&](const std::string& type) {
    const auto it = prior.relative.find(type);
    return it == prior.relative.end() ? 0.0 : it->second;
  };
  std::vector<double> known(n), free_term(n);
  for (size_t i = 0; i < n; ++i) {
    known[i] = held_fixed * xs[i].fixed_count;
    free_term[i] = xs[i].term;
    for (const auto& [type, v] : xs[i].type_terms)
      if (pinned.types.contains(type)) known[i] += kMinSlope * v, free_term[i] -= v;
    if (pinned.shared) known[i] += kMinSlope * free_term[i];
  }
  Line line;
  line.weights.assign(n, 1.0);
  for (int it = 0; it < kIterations; ++it) {
    // data rows scaled by sqrt(w) / measured: row i's residual is sqrt(w) (measured - predicted) / measured
    Eigen::MatrixXd a = Eigen::MatrixXd::Zero(rows, cols);
    Eigen::VectorXd b = Eigen::VectorXd::Zero(rows);
    for (size_t i = 0; i < n; ++i) {
      const auto r = static_cast<Eigen::Index>(i);
      const double s = std::sqrt(line.weights[i]) / xs[i].measured;
      if (c_slope >= 0) a(r, c_slope) = free_term[i] * s;
      if (c_fixed >= 0) a(r, c_fixed) = s * xs[i].fixed_count;
      for (size_t t = 0; t < k; ++t) {
        const auto f = xs[i].type_terms.find(types[t]);
        if (f != xs[i].type_terms.end()) a(r, c_types + static_cast<Eigen::Index>(t)) = f->second * s;
      }
      b(r) = (xs[i].measured - known[i]) * s;
    }
    // the ridge rows: each type's delta pulled toward the prior's relative cost x the shared slope
    // (0 without a prior), linear in both
    for (size_t t = 0; t < k; ++t) {
      const auto r = static_cast<Eigen::Index>(n + t);
      const double rel = relative(types[t]);
      const double w = std::sqrt(prior.type_ridge * (types[t] == kAttentionCovariate || types[t] == kExpertTileCovariate ? kAttentionRidgeShare
                                                      : types[t] == kKvCovariate         ? kKvRidgeShare
                                                                                         : 1.0));
      a(r, c_types + static_cast<Eigen::Index>(t)) = w;
      if (c_slope >= 0) a(r, c_slope) = -w * rel;
      else b(r) = w * rel * kMinSlope;
    }
    if (fixed_row) {
      a(rows - 1, c_fixed) = std::sqrt(prior.fixed_weight) * typical_count / typical;
      b(rows - 1) = std::sqrt(prior.fixed_weight) * typical_count * *prior.fixed / typical;
    }
    const Eigen::VectorXd x = cols > 0 ? Eigen::VectorXd(a.colPivHouseholderQr().solve(b)) : Eigen::VectorXd();
    line.slope = c_slope >= 0 ? x(c_slope) : kMinSlope;
    line.fixed = c_fixed >= 0 ? x(c_fixed) : held_fixed;
    line.delta.clear();
    for (size_t t = 0; t < k; ++t) line.delta[types[t]] = x(c_types + static_cast<Eigen::Index>(t));
    for (const std::string& t : pinned.types) line.delta[t] = kMinSlope - line.slope;
    for (const std::string& t : pinned.zero) line.delta[t] = 0;
    if (fit_fixed && line.fixed < 0)  // fixed >= 0
      return fit_line_pinned(xs, false, all_types, pinned, FitPrior{prior.relative, std::nullopt, 0, prior.type_ridge});
    std::vector<double> r(n);
    for (size_t i = 0; i < n; ++i) r[i] = (xs[i].measured - line.predict(xs[i])) / xs[i].measured;
    if (n < 4) break;  // too few points to tell an outlier from the line
    const double scale = std::max(kMinScale, kMadToSigma * median_abs(r));
    std::vector<double> next(n);
    for (size_t i = 0; i < n; ++i)
      next[i] = std::abs(r[i]) <= kHuberK * scale ? 1.0 : kHuberK * scale / std::abs(r[i]);
    if (next == line.weights) break;
    line.weights = next;
  }
  return line;
}

// The fit with every read rate physical: pin the shared rate if it crosses the bound, else the
// type that crosses it most, and fit again, until none does (at most 1 + types rounds).
Line fit_line(const std::vector<Sample>& xs, bool fit_fixed, const std::vector<std::string>& types,
              const FitPrior& prior = {}) {
  Pinned pinned;
  for (;;) {
    Line line = fit_line_pinned(xs, fit_fixed, types, pinned, prior);
    if (!pinned.shared && line.slope < kMinSlope) {
      pinned.shared = true;
      continue;
    }
    // the layers with experts' own time and the expert products' tiles are times: held at 0
    // rather than fitted below it
    if (const auto moe = line.delta.find(std::string(kMoeCovariate)); moe != line.delta.end() && moe->second < 0) {
      pinned.zero.insert(moe->first);
      continue;
    }
    if (const auto tiles = line.delta.find(std::string(kExpertTileCovariate)); tiles != line.delta.end() && tiles->second < 0) {
      pinned.zero.insert(tiles->first);
      continue;
    }
    std::string worst;
    double worst_slope = kMinSlope;
    // ('~' names are covariates, not a type's rate; but the KV cache's is a rate too)
    for (const auto& [type, d] : line.delta)
      if ((!type.starts_with('~') || type == kKvCovariate || type == kAttentionCovariate) && !pinned.types.contains(type) &&
          line.slope + d < worst_slope)
        worst = type, worst_slope = line.slope + d;
    if (worst.empty()) {
      // a type the points do not read (or read too little of to fit) costs what the prior says
      // relative to this device's shared rate
      for (const auto& [type, rel] : prior.relative)
        if (!line.delta.contains(type))
          line.delta[type] = type.starts_with('~') ? line.slope * rel  // a covariate: no rate to bound
                                                   : std::max(kMinSlope, line.slope * (1 + rel)) - line.slope;
      return line;
    }
    pinned.types.insert(worst);
  }
}

struct KindFit {
  Line line;
  bool fixed_fitted = true;
  std::vector<double> loo;  // predictions with each point left out
};

// Whether the fixed time can be told from the rate: the terms per fixed time paid (per layer of a
// decode step, per micro-batch of a prompt) spread.
bool terms_spread(const std::vector<Sample>& xs) {
  if (xs.size() < 2) return false;
  const auto per_fixed = [](const Sample& x) { return x.term / x.fixed_count; };
  const auto [lo, hi] = std::minmax_element(xs.begin(), xs.end(),
                                            [&](const Sample& a, const Sample& b) { return per_fixed(a) < per_fixed(b); });
  return per_fixed(*hi) / per_fixed(*lo) >= kMinTermSpread;
}

// The types some point reads a real share of its weights in (>= 10% of its term): each gets its
// own (shrunk) read cost. Prefill samples carry no type terms.
std::vector<std::string> fitted_types(const std::vector<Sample>& xs) {
  std::set<std::string> types;
  for (const Sample& x : xs)
    for (const auto& [type, v] : x.type_terms)
      if (type.starts_with('~') || v >= 0.1 * x.term) types.insert(type);
  return {types.begin(), types.end()};
}

// Whether prefill points tell attention's cost from the GEMMs': one model file's prompts, one
// spending kLongPromptShare of its compute on attention and another less than half that share
// (across models, attention's share moves with the model's shape, not with the prompt).
bool prompts_spread(const std::vector<CalibrationPoint*>& pts) {
  std::map<std::string, std::pair<double, double>> share;  // per model file: lowest and highest
  for (const CalibrationPoint* p : pts) {
    if (p->term_s <= 0) continue;
    const double s = p->attention_term_s / p->term_s;
    auto [it, fresh] = share.try_emplace(p->model + " " + p->weights, s, s);
    it->second = {std::min(it->second.first, s), std::max(it->second.second, s)};
  }
  for (const auto& [file, range] : share)
    if (range.second >= kLongPromptShare && range.second >= 2 * range.first) return true;
  return false;
}

// Fits one kind (decode or prefill); the fixed time only when the terms spread.
KindFit fit_kind(const std::vector<Sample>& xs, const FitPrior& prior, bool leave_one_out) {
  KindFit k;
  k.fixed_fitted = terms_spread(xs);
  k.line = fit_line(xs, k.fixed_fitted, fitted_types(xs), prior);
  if (!leave_one_out) {
    k.loo.assign(xs.size(), std::nan(""));
    return k;
  }
  // Left out with every point of its group: a file's tg512 and tg4096 predict each other too well
  // for either to count as held out. One fit per group serves all its points.
  std::map<std::string, std::optional<Line>> without;  // group -> the fit on the others (none: too few)
  for (const Sample& x : xs) {
    if (without.contains(x.group)) continue;
    std::vector<Sample> rest;
    for (const Sample& y : xs)
      if (y.group != x.group) rest.push_back(y);
    // too few to fit: fewer than two points, or none with a prior's fixed time to hold
    without[x.group] = rest.size() < (prior.fixed ? 1u : 2u) ? std::nullopt
                                       : std::optional<Line>(fit_line(rest, k.fixed_fitted && terms_spread(rest),
                                                                      fitted_types(rest), prior));
  }
  for (const Sample& x : xs) {
    const std::optional<Line>& line = without.at(x.group);
    k.loo.push_back(line ? line->predict(x) : std::nan(""));
  }
  return k;
}

bool has_prefix_ci(std::string_view s, std::string_view p) {
  if (s.size() < p.size()) return false;
  for (size_t i = 0; i < p.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != std::tolower(static_cast<unsigned char>(p[i]))) return false;
  return true;
}

// The built-in model a row names: its architecture and the closest parameter count.
std::string match_model(const BenchRow& row, const BenchModelType& mt) {
  if (!row.params)
    throw InputError(fmt::format("{}: '{}' prints no parameter count to find the model by; give --model",
                                 row.origin, row.model_type));
  // The built-in models' architectures and sizes, read once (a data file has hundreds of rows).
  struct Known {
    std::string name, gguf_arch;
    double params;
  };
  static const std::vector<Known> known = [] {
    std::vector<Known> k;
    for (const std::string& name : builtin_model_names()) {
      const ModelSpec spec = load_model(name);
      k.push_back({name, spec.gguf_arch, static_cast<double>(parameter_count(spec).total)});
    }
    return k;
  }();
  std::string best;
  double best_gap = kParamsTolerance;
  for (const Known& m : known) {
    if (m.gguf_arch != mt.arch) continue;
    const double gap = std::abs(m.params / *row.params - 1.0);
    if (gap < best_gap) best = m.name, best_gap = gap;
  }
  if (best.empty())
    throw InputError(fmt::format("{}: no built-in '{}' model has {:.3g} B parameters; give --model (a name or "
                                 "a config.json)", row.origin, mt.arch, *row.params / 1e9));
  return best;
}

// A served run's model by its name ("meta-llama/Llama-3.1-8B-Instruct" -> llama-3.1-8b): the
// longest built-in name the id contains, case aside.
std::string match_model_name(const BenchRow& row) {
  std::string id = row.model_type;
  std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string best;
  for (const std::string& name : builtin_model_names())
    if (id.find(name) != std::string::npos && name.size() > best.size()) best = name;
  if (best.empty())
    throw InputError(fmt::format("{}: no built-in model is named in '{}'; give --model (a name or a config.json)",
                                 row.origin, row.model_type));
  return best;
}

CalibrationPoint map_row(const BenchRow& row, const HwProfile& base, const CalibrationOptions& o) {
  CalibrationPoint p;
  p.row = row;
  std::string file_type = row.file_type;
  if (file_type.empty()) {  // llama-bench: "llama 7B Q4_0" names the architecture and the file type
    const BenchModelType mt = parse_bench_model_type(row.model_type, row.origin);
    p.model = !o.model.empty() ? o.model : !row.model.empty() ? row.model : match_model(row, mt);
    const std::string arch = load_model(p.model).gguf_arch;
    if (!has_prefix_ci(arch, mt.arch) && o.model.empty())
      throw InputError(fmt::format("{}: model {} is a {} model, the row's is {}", row.origin, p.model, arch, mt.arch));
    file_type = mt.file_type;
  } else {
    p.model = !o.model.empty() ? o.model : !row.model.empty() ? row.model : match_model_name(row);
  }
  ModelSpec spec = load_model(p.model);
  if (row.model_scale != 1) spec = scale_model_spec(spec, row.model_scale, row.origin + ": scale");
  PlanWeights w = plan_weights(spec, file_type, std::nullopt);
  p.weights = w.label;
  double scale = 1.0;
  if (row.model_bytes) {
    scale = static_cast<double>(*row.model_bytes) / static_cast<double>(w.bytes);
    if (!(scale > 0.5 && scale < 2.0))  // another model or type than the row names
      throw InputError(fmt::format("{}: model_size {} is not near {}'s {} recipe, {}; expected within 2x (give --model)",
                                   row.origin, format_bytes(*row.model_bytes), p.model, w.label, format_bytes(w.bytes)));
    if (std::abs(scale - 1.0) > kSizeNoteTolerance)
      p.size_note = fmt::format("file {} vs {} recipe {} ({:+.1f}%)", format_gib(static_cast<double>(*row.model_bytes)),
                                w.label, format_gib(static_cast<double>(w.bytes)), (scale - 1.0) * 100);
  }
  KvTypes kv;
  kv.k = kv_cache_type(row.kv_k.empty() ? "f16" : row.kv_k, row.origin + ": type_k").type;
  kv.v = kv_cache_type(row.kv_v.empty() ? "f16" : row.kv_v, row.origin + ": type_v").type;
  Roofline rl(spec, w.layout, kv, base, 1, scale);
  p.decode = row.is_decode();
  p.measured_s = row.measured_s();
  if (p.decode) {
    // llama-bench: one sequence at the test's mean context; a served run: its batch and context
    const uint64_t context = row.context ? row.context : row.n_depth + row.n_gen / 2;
    const StepCost c = rl.decode_step(row.batch, context);
    p.term_s = c.memory_s;
    p.kv_term_s = c.kv_bytes / rl.rates().memory_bytes_per_s;
    p.moe_layers = spec.moe_layer_units();
    p.layers = static_cast<double>(spec.layers);
    p.ceiling_s = c.ceiling_s;
    p.known_s = c.overhead_s;
    for (const std::string& type : rl.weight_types())
      p.type_terms_s[type] = rl.weight_read_s_of_type(type, static_cast<double>(row.batch));
  } else {
    // llama-bench evaluates the prompt n_ubatch tokens at a time (llama.cpp's default unless -ub says)
    rl.set_prefill_micro_batch(row.n_ubatch ? row.n_ubatch : llama_cpp_micro_batch(EngineSettings{}));
    const StepCost c = rl.prefill(row.n_prompt);  // (a depth before a prefill is not modelled)
    p.micro_batches = c.micro_batches;
    p.term_s = c.compute_s;
    p.attention_term_s = c.attention_s;
    p.expert_tile_s = c.expert_tile_s;
    for (const auto& [type, share] : rl.matmul_share_by_type()) p.type_terms_s[type] = c.compute_s * share;
    p.ceiling_s = c.ceiling_s;
    p.known_s = c.overhead_s;
  }
  return p;
}

std::string joined_builds(const std::vector<CalibrationPoint>& points) {
  std::set<std::string> builds;
  for (const auto& p : points)
    if (!p.row.build.empty()) builds.insert(p.row.build.substr(0, std::min<size_t>(p.row.build.size(), 24)));
  return builds.empty() ? "build not stated" : fmt::format("builds {}", fmt::join(builds, "; "));
}

}  // namespace

StepLine fit_step_line(const std::vector<StepSample>& samples, std::optional<double> held_fixed) {
  std::vector<Sample> xs;
  for (const StepSample& x : samples) xs.push_back({x.term_s, x.type_terms_s, x.measured_s, x.group, x.fixed_count});
  FitPrior prior;
  prior.fixed = held_fixed;
  const Line line = fit_line(xs, !held_fixed && terms_spread(xs), fitted_types(xs), prior);
  return {line.fixed, line.slope, line.delta};
}

double median_abs(std::vector<double> xs) {
  if (xs.empty()) return 0;
  for (double& x : xs) x = std::abs(x);
  std::sort(xs.begin(), xs.end());
  const size_t n = xs.size();
  return n % 2 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}

ErrorBand error_band(const std::vector<double>& r, double tail) {
  ErrorBand b;
  b.points = r.size();
  if (r.empty()) return b;
  std::vector<double> s = r;
  std::sort(s.begin(), s.end());
  auto quantile = [&](double q) {
    const double pos = q * static_cast<double>(s.size() - 1);
    const size_t i = static_cast<size_t>(pos);
    const double f = pos - static_cast<double>(i);
    return i + 1 < s.size() ? s[i] * (1 - f) + s[i + 1] * f : s[i];
  };
  const bool few = s.size() < 10;
  b.lo = std::min(0.0, few ? s.front() : quantile(tail));
  b.hi = std::max(0.0, few ? s.back() : quantile(1 - tail));
  b.lo = std::max(b.lo, -0.95);
  b.loo_median_abs = median_abs(r);
  return b;
}

std::string rows_engine(const std::vector<BenchRow>& rows, const std::string& given) {
  if (!given.empty()) return given;
  std::set<std::string> engines;  // llama-bench's rows are llama.cpp's
  for (const BenchRow& row : rows) engines.insert(row.engine.empty() ? "llama.cpp" : row.engine);
  if (engines.size() > 1)
    throw InputError(fmt::format("calibrate: the files hold runs of {} engines ({}); a profile is one engine's: "
                                 "calibrate them apart, or give --engine", engines.size(), fmt::join(engines, ", ")));
  return engines.empty() ? "llama.cpp" : *engines.begin();
}

CalibrationResult calibrate_step_model(const std::vector<BenchRow>& rows, const HwProfile& hw,
                                       const CalibrationOptions& o) {
  HwProfile base = hw;
  base.calibration.reset();  // fit against the roofline's own counts, not a previous fit
  CalibrationResult res;
  for (const BenchRow& row : rows) {
    if (!row.is_decode() && !row.is_prefill()) {
      res.skipped.push_back({row, fmt::format("{} mixes prompt and generation; give tg and pp tests apart", row.test_name())});
      continue;
    }
    if (!row.exclude.empty()) {
      res.skipped.push_back({row, "excluded by its data file: " + row.exclude});
      continue;
    }
    try {
      res.points.push_back(map_row(row, base, o));
    } catch (const InputError& e) {
      std::string reason = e.what();  // drop the origin the message repeats
      if (reason.starts_with(row.origin + ": ")) reason.erase(0, row.origin.size() + 2);
      res.skipped.push_back({row, reason});
    }
  }
  res.calibration.engine = rows_engine(rows, o.engine);
  return refit_step_model(std::move(res), hw.name, o);
}

CalibrationResult refit_step_model(CalibrationResult res, const std::string& device, const CalibrationOptions& o) {
  StepCalibration& cal = res.calibration;
  const std::string engine = cal.engine;
  cal = StepCalibration{};
  cal.engine = engine;
  res.notes.clear();
  for (const bool decode : {true, false}) {
    std::vector<CalibrationPoint*> pts;
    for (CalibrationPoint& p : res.points)
      if (p.decode == decode) pts.push_back(&p);
    const char* kind = decode ? "decode" : "prefill";
    if (pts.size() < 2) {
      if (decode)
        throw InputError(fmt::format("calibrate: {} decode measurement(s) (llama-bench tg tests, served runs' steps) mapped "
                                     "to a model and weights; at least 2 are needed{}", pts.size(),
                                     res.skipped.empty() ? "" : fmt::format(" (first skipped: {}: {})", res.skipped[0].row.origin, res.skipped[0].reason)));
      if (!pts.empty()) res.notes.push_back("one prefill (pp) measurement: too few to fit; prefill stays the ceiling");
      continue;
    }
    std::vector<Sample> xs;
    const bool long_prompts = !decode && prompts_spread(pts);
    for (CalibrationPoint* p : pts) {
      p->group = fmt::format("{} {} {} {} {} {}", p->model, p->weights, p->row.build, p->row.source, p->row.gpu_info,
                             p->row.batch);
      // The fixed time is paid per micro-batch (prefill) or per layer (decode: each layer's kernels
      // launch and leave tails one sequence's small products do not hide; Llama 3.1 70B's 80 layers
      // pay 2.5 x Llama 2 7B's 32). Over the 342 built-in decode points, per layer against per
      // step: leave-one-file-out median 3.9% -> 3.5%, points beyond 25% 14 -> 6 (worst 31.2% ->
      // 49.5%: the rtx-pro-6000's Qwen3-30B-A3B fitted on two dense files); leave-one-device-out
      // median 8.1% -> 7.0%, beyond 25% 41 -> 35 (m1-max-64gb's Llama 3.1 70B +72% -> +64%,
      // rx-7900-xtx 11.9% -> 2.9%, but rtx-4090 4.7% -> 13.1%). A time per step beside one per
      // layer (shrunk toward 0 as a covariate) lost: 3.8% and 7.6%; paid per (layers + 8, 16, 32,
      // 64) no better.
      xs.push_back({p->term_s, p->type_terms_s, p->measured_s - p->known_s, p->group, decode ? p->layers : p->micro_batches});
      // The KV cache's own read cost: attention at long contexts reads it slower than weights
      if (decode) xs.back().type_terms[std::string(kKvCovariate)] = p->kv_term_s;
      // The layers with experts' own time (router, top-k, the expert products' launches)
      if (decode && p->moe_layers > 0) xs.back().type_terms[std::string(kMoeCovariate)] = p->moe_layers * kMoeLayerUnit;
      // Attention's products over the prompt: without flash attention far slower than the GEMMs
      if (long_prompts) xs.back().type_terms[std::string(kAttentionCovariate)] = p->attention_term_s;
      // A model with experts' products, each of a micro-batch's experts a product of its own
      if (!decode && p->expert_tile_s > 0) xs.back().type_terms[std::string(kExpertTileCovariate)] = p->expert_tile_s;
    }
    FitPrior prior;
    if (decode && o.prior) {
      const DecodeTerms& d = o.prior->decode;
      for (const auto& [type, e] : d.read_efficiency_by_type) prior.relative[type] = d.read_efficiency / e - 1;
      if (d.kv_read_efficiency) prior.relative[std::string(kKvCovariate)] = d.read_efficiency / *d.kv_read_efficiency - 1;
      if (d.moe_layer_s > 0)  // relative to the shared read cost, as the ridge pulls it (delta = slope x relative)
        prior.relative[std::string(kMoeCovariate)] = d.moe_layer_s / kMoeLayerUnit * d.read_efficiency;
      prior.fixed = d.layer_s;
      prior.fixed_weight = kFixedPriorWeight;
      prior.type_ridge = kTypeRidgeToPrior;
    }
    // A prefill's expert products' tiles at the prior's factor, relative to the shared compute
    // cost as the ridge pulls it (delta = slope x relative: the factor scales with the device's own
    // compute cost against the pool's): a device whose own prompts ran no model with experts (most)
    // takes it, one whose prompts did is pulled toward it rather than toward none. Over the 30
    // built-in MoE prefill points, leave-one-file-out 30.0% -> 19.2% (device-out unchanged: the
    // pools fit their devices alone). Without it the rtx-4090 put Qwen3-30B-A3B Q4_K_M's pp512 at
    // 29 ms, where the faster RTX 5090 is measured at 92 ms; with it, 78 ms.
    if (!decode && o.prior && o.prior->prefill && o.prior->prefill->expert_tile_factor > 0)
      prior.relative[std::string(kExpertTileCovariate)] = o.prior->prefill->expert_tile_factor * o.prior->prefill->compute_efficiency;
    const KindFit f = fit_kind(xs, prior, o.leave_one_out);
    std::vector<double> loo_r;
    for (size_t i = 0; i < pts.size(); ++i) {
      pts[i]->fitted_s = pts[i]->known_s + f.line.predict(xs[i]);
      pts[i]->loo_s = pts[i]->known_s + f.loo[i];
      pts[i]->weight = f.line.weights[i];
      if (std::isfinite(f.loo[i])) loo_r.push_back(pts[i]->loo_residual());
    }
    if (!f.fixed_fitted)
      res.notes.push_back(fmt::format("{}: every point moves about the same bytes or FLOPs per {} (one model size), so "
                                      "the fixed time cannot be told from the rate: {}", kind, decode ? "layer" : "micro-batch",
                                      prior.fixed ? fmt::format("the prior's {:.4f} ms per {} held, efficiency fitted", *prior.fixed * 1e3,
                                                                decode ? "layer" : "micro-batch")
                                                  : "fixed time 0, efficiency only"));
    if (decode) {
      cal.decode.layer_s = f.line.fixed;
      cal.decode.read_efficiency = 1.0 / f.line.slope;
      for (const auto& [type, delta] : f.line.delta)
        if (type == kKvCovariate) cal.decode.kv_read_efficiency = 1.0 / std::max(kMinSlope, f.line.slope + delta);
        else if (type == kMoeCovariate) cal.decode.moe_layer_s = std::max(0.0, delta) * kMoeLayerUnit;
        else cal.decode.read_efficiency_by_type[type] = 1.0 / (f.line.slope + delta);
      cal.decode.error = error_band(loo_r);
    } else {
      PrefillTerms t;
      t.fixed_s = f.line.fixed;
      t.compute_efficiency = 1.0 / f.line.slope;
      for (const auto& [type, delta] : f.line.delta)
        if (type == kAttentionCovariate) t.attention_efficiency = 1.0 / std::max(kMinSlope, f.line.slope + delta);
        else if (type == kExpertTileCovariate) t.expert_tile_factor = std::max(0.0, delta);
        else t.compute_efficiency_by_type[type] = 1.0 / (f.line.slope + delta);
      t.error = error_band(loo_r);
      cal.prefill = t;
    }
  }
  if (o.prior)
    res.notes.push_back(fmt::format("decode is pulled toward the terms a device without data would get ({}): each weight "
                                    "type's read cost relative to the shared one, the KV cache's, and {:.4f} ms fixed per "
                                    "layer, where these points cannot tell them apart", o.prior->basis_note.empty() ? "a prior" : o.prior->basis_note,
                                    o.prior->decode.layer_s * 1e3));
  cal.source = fmt::format("{}{} points on {}, {}", o.source.empty() ? "" : o.source + ": ", res.points.size(), device,
                           joined_builds(res.points));
  return res;
}

std::optional<CalibrationResult> builtin_calibration_result(const HwProfile& hw, const std::string& engine,
                                                            const std::optional<StepCalibration>& prior, bool leave_one_out) {
  const std::string path = fmt::format("hwprofiles/calibrations/{}.json", hw.name);
  for (const EmbeddedFile& f : embedded_files()) {
    if (f.path != path) continue;
    const std::string where = "built-in " + path;
    const Json j = parse_json_text(f.content, where);
    if (optional_string(j, "engine", where).value_or("") != engine) return std::nullopt;
    CalibrationOptions o;
    o.engine = engine;
    o.source = path;
    o.prior = prior;
    o.leave_one_out = leave_one_out;
    return calibrate_step_model(parse_bench_text(f.content, where), hw, o);
  }
  return std::nullopt;
}

std::optional<StepCalibration> builtin_calibration(const HwProfile& hw, const std::string& engine) {
  if (std::optional<CalibrationResult> r = builtin_calibration_result(hw, engine)) return r->calibration;
  return std::nullopt;
}

std::vector<std::string> builtin_calibration_names() {
  constexpr std::string_view dir = "hwprofiles/calibrations/";
  std::vector<std::string> out;
  for (const EmbeddedFile& f : embedded_files())
    if (f.path.starts_with(dir) && f.path.ends_with(".json"))
      out.emplace_back(f.path.substr(dir.size(), f.path.size() - dir.size() - 5));
  return out;
}

}  // namespace infer_plan
