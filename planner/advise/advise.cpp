#include "planner/advise/advise.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <memory>
#include <unordered_map>

#include "planner/core/input_error.hpp"
#include "planner/core/limits.hpp"
#include "planner/calibration/calibration.hpp"
#include "planner/calibration/serving_prior.hpp"
#include "planner/calibration/step_prior.hpp"
#include "planner/catalog/catalog.hpp"
#include "planner/core/units.hpp"
#include "planner/model/model_spec.hpp"
#include "planner/cost/engine_capabilities.hpp"
#include "planner/cost/layer_split.hpp"
#include "planner/cost/pd_disaggregation.hpp"
#include "planner/cost/speculative.hpp"
#include "planner/plan/predict.hpp"

namespace infer_plan {
namespace {

// Replicas tried above the closed-form lower bound before a configuration is called a miss:
// queueing at p99 needs headroom the bound (utilisation < 1) does not give.
constexpr uint64_t kReplicaTries = 4;

double kv_bits(KvTypes kv) {
  return 0.5 * (ggml_type_info(kv.k).bits_per_value() + ggml_type_info(kv.v).bits_per_value());
}

// Bits per parameter of the whole file (metadata and unquantized tensors included).
double bits_per_weight(const ResolvedPlan& rp) {
  return 8.0 * static_cast<double>(rp.weights.bytes) / static_cast<double>(std::max<uint64_t>(parameter_count(rp.spec).total, 1));
}

Plan candidate_plan(const AdviseQuery& q, const std::string& engine, const std::string& hw, const std::string& weights,
                    KvTypes kv, uint64_t tp, uint64_t context, uint64_t requests, uint64_t output) {
  Plan p;
  p.model = q.model;
  p.engine = engine;
  p.hw = hw;
  p.weights = weights;
  p.kv = kv;
  p.tp = tp;
  if (tp > 1) p.tp_link = q.tp_link;
  p.context = context;
  p.requests = requests;
  p.output = std::min(output, context - 1);
  return p;
}

}  // namespace

const Distribution& slo_distribution(const ServingLatency& l, SloMetric m) {
  switch (m) {
    case SloMetric::ttft: return l.ttft_s;
    case SloMetric::tpot: return l.tpot_s;
    case SloMetric::itl: return l.itl_s;
    case SloMetric::e2el: return l.sojourn_s;
  }
  return l.sojourn_s;
}

std::string_view slo_metric_name(SloMetric m) {
  switch (m) {
    case SloMetric::ttft: return "TTFT";
    case SloMetric::tpot: return "TPOT";
    case SloMetric::itl: return "ITL";
    case SloMetric::e2el: return "E2EL";
  }
  return "?";
}

bool AdviseSlo::has(SloMetric m) const {
  return std::any_of(bounds.begin(), bounds.end(), [m](const SloBound& b) { return b.metric == m; });
}

AdviseSlo& AdviseSlo::at_most(SloMetric m, double limit_s, double percentile) {
  bounds.push_back({m, percentile, limit_s});
  return *this;
}

std::string advise_plan_label(const AdviseCandidate& c) {
  const EngineCapabilities* e = find_engine_capabilities(c.engine);
  const std::string engine = e ? fmt::format("{}: ", e->title) : "";
  const std::string replica = c.tp == 1 ? c.hw : fmt::format("{} x {} (tensor parallel)", c.tp, c.hw);
  const std::string replicas = c.pd_prefill ? fmt::format("{} prefill + {} decode replicas of ", *c.pd_prefill, *c.pd_decode)
                               : c.replicas == 1 ? ""
                                                 : fmt::format("{} replicas of ", c.replicas);
  return fmt::format("{}{}{}, {} weights{}, KV {}{}, max batch {}", engine, replicas, replica, c.weights,
                     c.offload_every ? fmt::format(" (FFN of 1 layer in {} offloaded)", *c.offload_every) : "", kv_types_label(c.kv),
                     c.spec_block ? fmt::format(", speculative block {}", *c.spec_block) : "", c.max_batch);
}

namespace {

// A step model's decode iterations, remembered: the simulation asks for the same batch and
// context many times. Contexts are tabulated every kContextStep tokens per request and
// interpolated linearly between (the step is linear in the context between the roofline's kinks).
class StepCache {
 public:
  explicit StepCache(ServerModel server) : server_(std::move(server)) {}
  double decode(uint64_t batch, uint64_t context_tokens) {
    const double per_request = static_cast<double>(context_tokens) / static_cast<double>(std::max<uint64_t>(batch, 1));
    const auto bucket = static_cast<uint64_t>(per_request / kContextStep);
    const double lo = at(batch, bucket), hi = at(batch, bucket + 1);
    const double f = per_request / kContextStep - static_cast<double>(bucket);
    return lo + (hi - lo) * f;
  }
  double prefill(uint64_t prompt) {
    auto it = prefill_.find(prompt);
    if (it == prefill_.end()) it = prefill_.emplace(prompt, server_.prefill_s(prompt)).first;
    return it->second;
  }
  // The engine's server (its scheduling policy and front end) with the cached step times.
  ServerModel server(uint64_t max_batch, uint64_t kv_tokens) {
    ServerModel m = server_;
    m.decode_iteration_s = [this](uint64_t b, uint64_t c) { return decode(b, c); };
    m.prefill_s = [this](uint64_t p) { return prefill(p); };
    m.max_batch = max_batch;
    m.kv_capacity_tokens = kv_tokens;
    return m;
  }

 private:
  static constexpr double kContextStep = 256;
  double at(uint64_t batch, uint64_t bucket) {
    if (batch >= decode_.size()) decode_.resize(batch + 1);
    std::vector<double>& row = decode_[batch];
    if (bucket >= row.size()) row.resize(bucket + 1, -1.0);
    if (row[bucket] < 0) {
      const auto context = static_cast<uint64_t>(static_cast<double>(bucket) * kContextStep);
      row[bucket] = server_.decode_iteration_s(batch, std::max<uint64_t>(context, 1) * batch);
    }
    return row[bucket];
  }
  ServerModel server_;
  std::vector<std::vector<double>> decode_;  // [batch][context bucket]; -1: not yet asked
  std::unordered_map<uint64_t, double> prefill_;
};

uint64_t percentile_tokens(TokenLengths t, double p) {
  return t.min_tokens + static_cast<uint64_t>(std::ceil(p * static_cast<double>(t.max_tokens - t.min_tokens)));
}

struct SloCheck {
  bool meets = true;
  std::vector<std::string> misses;
  std::string binding;  // the SLO nearest its limit
  double binding_ratio = 0;
};

// "48.2 ms", "2450 ms", "12.3 s" from ten seconds: SLOs are written in ms.
std::string milliseconds(double s) {
  const double ms = s * 1e3;
  return s >= 10 ? fmt::format("{:.3g} s", s) : ms >= 100 ? fmt::format("{:.0f} ms", ms) : fmt::format("{:.3g} ms", ms);
}

// A bound's value: its distribution at its percentile.
double slo_value(const ServingLatency& l, const SloBound& b) { return distribution_percentile(slo_distribution(l, b.metric), b.percentile); }

SloCheck check_slo(const ServingResult& r, const AdviseSlo& slo) {
  SloCheck c;
  if (!r.stable) {
    c.meets = false;
    c.misses.push_back("unstable: the queue grows");
    c.binding = "throughput";
    c.binding_ratio = std::numeric_limits<double>::infinity();
    return c;
  }
  if (!r.latency) {
    c.meets = false;
    c.misses.push_back("no request completed");
    return c;
  }
  for (const SloBound& b : slo.bounds) {
    const double value = slo_value(*r.latency, b);
    const double ratio = value / b.limit_s;
    const std::string name = fmt::format("{} p{:g}", slo_metric_name(b.metric), b.percentile);
    if (ratio > c.binding_ratio) {
      c.binding_ratio = ratio;
      c.binding = fmt::format("{} {} of {} ({:.0f}%)", name, milliseconds(value), milliseconds(b.limit_s), 100 * ratio);
    }
    if (value > b.limit_s) {
      c.meets = false;
      c.misses.push_back(fmt::format("{} {} > {}", name, milliseconds(value), milliseconds(b.limit_s)));
    }
  }
  if (slo.rejection_max && r.rejection_rate > *slo.rejection_max) {
    c.meets = false;
    c.misses.push_back(fmt::format("rejections {:.1f}% > {:.1f}%", 100 * r.rejection_rate, 100 * *slo.rejection_max));
  }
  return c;
}

double e2el_p99(const AdviseCandidate& c) {
  return c.serving && c.serving->latency ? c.serving->latency->sojourn_s.p99 : std::numeric_limits<double>::infinity();
}

class Pruning {
 public:
  void add(const std::string& reason, const std::string& example, uint64_t count = 1) {
    for (AdvisePruned& p : pruned_)
      if (p.reason == reason) {
        p.count += count;
        return;
      }
    pruned_.push_back({reason, count, example, reason == "SLO" || reason == "batch never reached"});
  }
  std::vector<AdvisePruned> take() { return std::move(pruned_); }

 private:
  std::vector<AdvisePruned> pruned_;
};

// What the search needs of one profile and engine: its name, price and the profile with that
// engine's step model fitted once (resolve_plan would fit it again for every candidate).
struct HwChoice {
  std::string name;   // as the user gave it (name or path)
  std::string engine;  // "vllm"; empty: the profile's own calibration's, or chosen from the weights
  HwProfile profile;
  std::optional<double> price;
  std::optional<Json> calibrated;  // the profile's JSON with the engine's built-in calibration
  std::string basis = "ceiling";   // what its step model rests on (AdviseCandidate::basis)
  std::string basis_note;
};

// The plan on this profile: by its name, or inline with the engine's calibration fitted once.
void use_profile(Plan& plan, const HwChoice& hw) {
  plan.hw = hw.calibrated ? "inline" : hw.name;
  plan.hw_inline = hw.calibrated;
}

// What a candidate's latencies rest on: its resolved plan's step model (the profile's, the
// engine's, or the one its weights are served with when no engine is given).
void take_basis(AdviseCandidate& c, const HwChoice& hw, const ResolvedPlan& rp) {
  const RooflineRates& r = rp.roofline->rates();
  c.basis = r.basis;
  c.basis_note = r.basis == hw.basis && !hw.basis_note.empty() && hw.basis != "ceiling" ? hw.basis_note : r.step_source;
  if (c.basis_note.starts_with(c.basis + ": ")) c.basis_note.erase(0, c.basis.size() + 2);  // said beside it
}

// The engines searched: the one named (""': each plan's chosen from its weights), or every engine
// in the table ("any").
std::vector<std::string> searched_engines(const AdviseQuery& q) {
  if (q.engine != "any") return {q.engine};
  std::vector<std::string> out;
  for (const EngineCapabilities& e : engine_capability_table()) out.emplace_back(e.name);
  return out;
}

// Each profile once per engine that serves it: with the engine's step model fitted once. Searching
// every engine, one with nothing but the datasheet ceiling on a device is left out (said in `notes`)
// unless no engine has more, when the plans' engines are chosen from their weights.
std::vector<HwChoice> hardware(const AdviseQuery& q, bool need_price, bool* priced, std::vector<std::string>& notes) {
  std::vector<HwChoice> out;
  const std::vector<std::string> engines = searched_engines(q);
  const bool any = engines.size() > 1;
  std::vector<std::string> names;
  for (const std::string& h : q.hw) {
    const HwProfile profile = load_hw_profile(h);
    if (std::find(names.begin(), names.end(), profile.name) != names.end())
      throw InputError(fmt::format("--hw: {} is given twice", profile.name));
    names.push_back(profile.name);
    std::optional<double> price = profile.price_per_hour;
    if (auto it = q.prices.find(profile.name); it != q.prices.end()) price = it->second;
    else if (auto given = q.prices.find(h); given != q.prices.end()) price = given->second;
    std::vector<HwChoice> mine;
    std::vector<std::string> ceilings, borrowed;
    for (const std::string& engine : engines) {
      if (const std::optional<std::string> why = engine_refuses_device(engine, profile.arch)) {
        if (!any) throw InputError(fmt::format("--engine {} --hw {}: {}", engine, h, *why));
        continue;
      }
      // An engine whose step model is another's (TensorRT-LLM's, vLLM's) would differ from that
      // engine's plans only by its scheduler: searched when named, not among every engine.
      if (any && !step_donor(engine).empty()) {
        borrowed.push_back(fmt::format("{} (its step model is {}'s)", find_engine_capabilities(engine)->title,
                                       find_engine_capabilities(step_donor(engine))->title));
        continue;
      }
      HwChoice c{h, engine, profile, price, std::nullopt, "ceiling", ""};
      if (engine.empty()) {  // as resolve_plan chooses
        if (c.profile.calibration) {
          c.basis = c.profile.calibration->basis;
          c.basis_note = fmt::format("{}, {}", c.profile.calibration->engine, c.profile.calibration->source);
        } else {
          c.basis_note = "each plan's engine chosen from its weights (resolve_plan's default_engine)";
        }
      } else if (c.profile.calibration && c.profile.calibration->engine == engine) {  // the profile's own block (calibrate --out)
        c.basis = c.profile.calibration->basis;
        c.basis_note = fmt::format("{}, {}", engine, c.profile.calibration->source);
      } else if (const std::optional<StepCalibration> cal = engine_step_calibration(c.profile, engine)) {
        Json j = hw_profile_json(h);
        j["calibration"] = step_calibration_to_json(*cal);
        c.calibrated = std::move(j);
        c.basis = cal->basis;
        c.basis_note = cal->basis == "transferred" ? fmt::format("{}, {}", cal->engine, cal->basis_note)
                                                   : fmt::format("{}, {}", cal->engine, cal->source);
      }
      if (c.basis == "ceiling" && !engine.empty()) {
        c.basis_note = engine == kNoEngine ? std::string("engine none: the datasheet roofline")
                                           : fmt::format("the datasheet roofline: no {} measurements to transfer", engine);
        if (any) {
          ceilings.push_back(std::string(find_engine_capabilities(engine)->title));
          continue;
        }
      }
      mine.push_back(std::move(c));
    }
    if (any && mine.empty()) {  // no engine's measurements reach this device: each plan's engine from its weights
      HwChoice c{h, "", profile, price, std::nullopt, "ceiling",
                 "each plan's engine chosen from its weights (resolve_plan's default_engine)"};
      if (c.profile.calibration) {
        c.basis = c.profile.calibration->basis;
        c.basis_note = fmt::format("{}, {}", c.profile.calibration->engine, c.profile.calibration->source);
      }
      mine.push_back(std::move(c));
    } else if (!ceilings.empty()) {
      notes.push_back(fmt::format("{} on {}: not searched, no step model there but the datasheet ceiling (naming the engine "
                                  "searches it, marked as such)", fmt::join(ceilings, ", "), profile.name));
    }
    if (any && !borrowed.empty())
      notes.push_back(fmt::format("{} on {}: not searched, no step model of its own (naming the engine searches it, "
                                  "basis transferred)", fmt::join(borrowed, ", "), profile.name));
    for (HwChoice& c : mine) out.push_back(std::move(c));
  }
  for (const auto& priced_hw : q.prices) {
    const std::string& name = priced_hw.first;  // a plain reference: lambdas may not capture structured bindings before C++20's clang 16
    if (std::none_of(out.begin(), out.end(), [&](const HwChoice& c) { return c.name == name || c.profile.name == name; }))
      throw InputError(fmt::format("--price: '{}' is not one of the --hw profiles", name));
  }
  const auto unpriced = std::count_if(out.begin(), out.end(), [](const HwChoice& c) { return !c.price; });
  *priced = unpriced == 0;
  if (need_price && unpriced > 0 && unpriced < static_cast<long>(out.size())) {
    const auto it = std::find_if(out.begin(), out.end(), [](const HwChoice& c) { return !c.price; });
    throw InputError(fmt::format("--hw {}: the profile has no price_per_hour, so its cost cannot be set beside the "
                                 "others'; give --price {}=USD (US dollars per device-hour)",
                                 it->name, it->profile.name));
  }
  return out;
}

// ---- serving ----

// One hardware x weights x KV x tensor-parallel configuration that passed the closed-form
// bounds: its plan resolved at the longest request, its step model (remembered) and what the
// bounds computed, ready for the max-batch limits to be simulated.
struct ServingGroup {
  const HwChoice* hw = nullptr;
  std::string weights, where;
  KvTypes kv;
  uint64_t tp = 1;
  bool last_resort = false;
  std::optional<uint64_t> spec_block;
  Plan plan;
  std::shared_ptr<ResolvedPlan> rp;
  std::shared_ptr<Roofline> draft;  // with spec_block: the draft's roofline
  uint64_t offload_bytes = 0;       // with plan.offload: bytes per device copied in each step
  double offload_round_s = 0;       // ... over the host link
  double compute_step1 = 0;         // with plan.offload: the decode step alone without the copy
  std::shared_ptr<StepCache> cache;
  uint64_t kv_tokens = 0, kv_batch = 1, mean_context = 0;
  double step1 = 0;          // one decode step alone at the mean context
  double e2el_floor = 0;     // the p99 request alone: no plan of this group is faster
  double weight_bits = 0;
  double cost_floor = 0;     // the cheapest any of its max-batch limits can be
};

struct ServingSearch {
  const AdviseQuery& q;
  Pruning pruning;
  uint64_t simulations = 0;
  uint64_t space = 0;
  std::vector<AdviseCandidate> met, missed;

  ServingLoad load(double rate) const {
    ServingLoad l;
    l.rate_per_s = rate;
    l.requests = q.simulated_requests;
    l.prompt_tokens = q.prompt;
    l.output_tokens = q.output;
    l.deadline_s = q.deadline_s;
    l.seed = q.seed;
    l.inter_token_latency = q.slo.has(SloMetric::itl);  // every gap recorded only when a bound reads them
    return l;
  }

  double price(const ServingGroup& g) const { return g.hw->price.value_or(1.0); }

  // Fewest replicas the arrivals' work allows at this limit: every prefill alone, every decode
  // step shared by a full batch, the replicas busy all the time.
  uint64_t replicas_floor(ServingGroup& g, uint64_t max_batch) const {
    const uint64_t batch = std::min(max_batch, g.kv_batch);
    const double step = g.cache->decode(batch, batch * g.mean_context);
    const double work_s = g.cache->prefill(static_cast<uint64_t>(q.prompt.mean())) + q.output.mean() * step / static_cast<double>(batch);
    return static_cast<uint64_t>(std::floor(*q.rate_per_s * work_s)) + 1;
  }

  // The group's steps as speculative rounds, each token's share of one: (the target verifying
  // block + 1 tokens a sequence + the draft's steps) / the tokens a round yields on average; its
  // KV pool less the draft's weights (a separate model; a first-layers draft shares the target's)
  // and holding the draft's KV beside the target's. False (counted) when the draft leaves no room.
  bool speculate(ServingGroup& g, ServerModel& server, uint64_t& kv_tokens) {
    const AdviseSpeculative& sq = *q.speculative;
    const uint64_t block = *g.spec_block;
    SpeculativePlan sp;
    sp.accept = sq.accept;
    sp.draft = sq.draft;
    sp.draft_layers = sq.draft_layers;
    sp.block = block;
    sp.max_block = std::max<uint64_t>(block, 8);
    g.plan.speculative = sp;
    g.rp->plan.speculative = sp;
    g.draft = plan_draft_roofline(*g.rp);
    const ModelSpec draft_spec = sq.draft_layers ? first_layers_spec(g.rp->spec, *sq.draft_layers) : plan_model_spec([&] {
      Plan d = g.plan;
      d.model = sq.draft;
      return d;
    }());
    const uint64_t draft_weights = sq.draft_layers ? 0 : plan_weights(draft_spec, g.weights, std::nullopt).bytes / g.tp;
    const FitResult& fit = g.rp->fit;
    if (draft_weights >= fit.kv_room_bytes) {
      pruning.add("memory", fmt::format("{}: the draft's weights ({} per device) leave no KV", g.where, gib(draft_weights)),
                  q.max_batch.size());
      return false;
    }
    const uint64_t per_token = fit.kv_bytes_per_token + kv_bytes_per_token(draft_spec, g.kv, g.tp);
    kv_tokens = (fit.kv_room_bytes - draft_weights) / std::max<uint64_t>(per_token, 1);
    const double expected = spec_expected_tokens(sq.accept, block);
    const uint64_t drafts = spec_drafts(block, 1);
    const Roofline* target = g.rp->roofline.get();
    const Roofline* draft = g.draft.get();
    server.decode_iteration_s = [target, draft, block, drafts, expected](uint64_t batch, uint64_t context_tokens) {
      const uint64_t context = context_tokens / std::max<uint64_t>(batch, 1);
      return (target->decode_step(batch, context, block + 1).time_s +
              static_cast<double>(drafts) * draft->decode_step(batch, context).time_s) / expected;
    };
    server.prefill_s = [target, draft](uint64_t prompt) { return target->prefill(prompt).time_s + draft->prefill(prompt).time_s; };
    return true;
  }

  // Weights that do not fit: the FFN of one layer in `every` (8, 4, 2, then all) kept in host
  // memory and copied in over the profile's first host link each step, two device slots
  // prefetching (the worked example's offload); the least offload that fits. False when none does.
  bool offload(ServingGroup& g) const {
    if (g.hw->profile.host_links.empty()) return false;
    const LinkProfile& link = g.hw->profile.host_links.front();
    for (uint64_t every : {8, 4, 2, 1}) {
      Plan p = g.plan;
      p.offload = OffloadPlan{"ffn", every, 2, link.name};
      try {
        auto rp = std::make_shared<ResolvedPlan>(resolve_plan(p));
        if (!rp->fit.fits || !rp->fit.offload) continue;
        g.plan = p;
        g.rp = rp;
        g.offload_bytes = rp->fit.offload->freed_bytes;
        g.offload_round_s = static_cast<double>(g.offload_bytes) / link.bandwidth_bytes_per_s;
        g.where += fmt::format(", FFN of 1 layer in {} offloaded", every);
        return true;
      } catch (const InputError&) {
      }
    }
    return false;
  }

  // The closed-form bounds; nullopt (counted in `pruning`) when one rules the configuration out.
  std::optional<ServingGroup> prepare(const HwChoice& hw, const std::string& weights, KvTypes kv, uint64_t tp, bool last_resort,
                                      std::optional<uint64_t> spec_block = std::nullopt) {
    // Each max-batch limit mixed, and split into prefill and decode pools where that is searched.
    const uint64_t n = q.max_batch.size() * (q.pd && !spec_block ? 2 : 1);
    space += n;
    ServingGroup g;
    g.hw = &hw;
    g.weights = weights;
    g.kv = kv;
    g.tp = tp;
    g.last_resort = last_resort;
    g.spec_block = spec_block;
    const uint64_t longest = q.prompt.max_tokens + q.output.max_tokens;
    g.plan = candidate_plan(q, hw.engine, hw.name, weights, kv, tp, longest, 1, q.output.max_tokens);
    use_profile(g.plan, hw);
    g.where = fmt::format("{}{} on {}{}", hw.engine.empty() ? "" : hw.engine + " ", weights,
                          tp == 1 ? hw.profile.name : fmt::format("{} x {}", tp, hw.profile.name),
                          spec_block ? fmt::format(", speculative block {}", *spec_block) : "");
    if (tp > q.max_devices) {
      pruning.add("devices", fmt::format("{}: {} devices > --max-devices {}", g.where, tp, q.max_devices), n);
      return std::nullopt;
    }
    try {
      g.rp = std::make_shared<ResolvedPlan>(resolve_plan(g.plan));
    } catch (const InputError& e) {
      pruning.add("tensor parallel", fmt::format("{}: {}", g.where, e.what()), n);
      return std::nullopt;
    }
    const EngineCapabilities* caps = find_engine_capabilities(g.rp->engine);
    if (const std::optional<std::string> why = engine_refuses_types(g.rp->engine, g.rp->weights.layout, kv)) {
      pruning.add("engine", fmt::format("{}: {}", g.where, *why), n);  // an engine chosen from the weights
      return std::nullopt;
    }
    if (spec_block && q.speculative->draft_layers && caps) {
      pruning.add("engine", fmt::format("{}: {} has no draft of the model's own first layers (a separate draft model "
                                        "is its speculative decoding)", g.where, caps->title), n);
      return std::nullopt;
    }
    if (!g.rp->fit.fits) {
      const FitResult& short_fit = g.rp->fit;
      const std::string example = fmt::format("{}: weights {} per device and one {}-token request need {} more than the {} usable",
                                              g.where, gib(short_fit.device_weights_bytes), longest,
                                              gib(-short_fit.headroom_bytes), gib(short_fit.usable_bytes));
      if (spec_block || (caps && !caps->weight_offload) || !offload(g)) {
        pruning.add("memory", example, n);
        return std::nullopt;
      }
    }
    const FitResult& fit = g.rp->fit;
    ServerModel server = g.rp->server;
    if (g.plan.offload) {  // prefetched: a step takes the longer of its compute and its copy
      const ServerModel base = server;
      const double round_s = g.offload_round_s;
      server.decode_iteration_s = [base, round_s](uint64_t b, uint64_t c) { return std::max(base.decode_iteration_s(b, c), round_s); };
      server.prefill_s = [base, round_s](uint64_t p) { return std::max(base.prefill_s(p), round_s); };
    }
    uint64_t kv_tokens = fit.kv_tokens_in(fit.kv_room_bytes);
    if (spec_block && !speculate(g, server, kv_tokens)) return std::nullopt;
    g.cache = std::make_shared<StepCache>(server);
    const double mean_prompt = q.prompt.mean(), mean_output = q.output.mean();
    g.mean_context = static_cast<uint64_t>(mean_prompt + mean_output / 2);
    g.step1 = g.cache->decode(1, g.mean_context);
    g.compute_step1 = g.rp->server.decode_iteration_s(1, g.mean_context);
    // Each bound's floor: no token comes faster than one decode step alone (TPOT, ITL), no first
    // token before the prefill of the prompt at the bound's percentile alone (TTFT), no request ends
    // before that prefill and its output's steps alone (E2EL).
    for (const SloBound& b : q.slo.bounds) {
      const uint64_t prompt = percentile_tokens(q.prompt, b.percentile / 100), output = percentile_tokens(q.output, b.percentile / 100);
      const std::string slo = fmt::format("{} p{:g} {}", slo_metric_name(b.metric), b.percentile, milliseconds(b.limit_s));
      if ((b.metric == SloMetric::tpot || b.metric == SloMetric::itl) && g.step1 > b.limit_s) {
        pruning.add("TPOT floor", fmt::format("{}: one decode step alone takes {} > {}", g.where, milliseconds(g.step1), slo), n);
        return std::nullopt;
      }
      if (b.metric == SloMetric::ttft && g.cache->prefill(prompt) > b.limit_s) {
        pruning.add("TTFT floor", fmt::format("{}: the prefill of a {}-token prompt alone takes {} > {}", g.where, prompt,
                                              milliseconds(g.cache->prefill(prompt)), slo), n);
        return std::nullopt;
      }
      const double e2el = g.cache->prefill(prompt) + static_cast<double>(output - 1) * g.step1;
      if (b.metric == SloMetric::e2el && e2el > b.limit_s) {
        pruning.add("E2EL floor", fmt::format("{}: a {}+{}-token request alone takes {} > {}", g.where, prompt, output,
                                              milliseconds(e2el), slo), n);
        return std::nullopt;
      }
    }
    const uint64_t p99_prompt = percentile_tokens(q.prompt, 0.99), p99_output = percentile_tokens(q.output, 0.99);
    g.e2el_floor = g.cache->prefill(p99_prompt) + static_cast<double>(p99_output - 1) * g.step1;
    g.kv_tokens = kv_tokens;
    const auto mean_kv = static_cast<uint64_t>(std::ceil(mean_prompt + mean_output));
    g.kv_batch = std::max<uint64_t>(1, g.kv_tokens / std::max<uint64_t>(mean_kv, 1));
    g.weight_bits = bits_per_weight(*g.rp);
    g.cost_floor = std::numeric_limits<double>::infinity();
    for (uint64_t max_batch : q.max_batch)
      g.cost_floor = std::min(g.cost_floor, static_cast<double>(replicas_floor(g, max_batch) * tp) * price(g));
    return g;
  }

  // Whether plans already found make this one pointless: `top` of them on the same hardware
  // cheaper than its cost floor (so it can join neither the list nor be that hardware's best),
  // and one no dearer that is faster than its latency floor (nor the frontier).
  bool dominated(const std::string& hw, double cost_floor, double e2el_floor) const {
    uint64_t cheaper = 0;
    bool faster = false;
    const double per_hour = advise_tokens_per_hour(q) / 1e6;
    for (const AdviseCandidate& c : met) {
      const double cost = *c.cost_per_million_tokens * per_hour;  // back to dollars (or devices) per hour
      if (c.hw == hw && cost < cost_floor * (1 - 1e-9)) ++cheaper;
      if (cost <= cost_floor * (1 + 1e-9) && c.serving->latency && c.serving->latency->sojourn_s.p99 <= e2el_floor) faster = true;
    }
    return cheaper >= q.top && faster;
  }

  AdviseCandidate candidate(const ServingGroup& g, uint64_t max_batch, uint64_t replicas, const ServingResult& r,
                            const SloCheck& check) const {
    const double rate = *q.rate_per_s;
    AdviseCandidate c;
    c.hw = g.hw->profile.name;
    c.engine = g.rp->engine;
    take_basis(c, *g.hw, *g.rp);
    c.weights = g.weights;
    c.kv = g.kv;
    c.tp = g.tp;
    c.replicas = replicas;
    c.max_batch = max_batch;
    c.spec_block = g.spec_block;
    if (g.plan.offload) {
      c.offload_every = g.plan.offload->every;
      c.offload_link = g.plan.offload->link;
      c.offload_bytes = g.offload_bytes;
      c.offload_round_s = g.offload_round_s;
      c.offload_compute_s = g.compute_step1;
    }
    c.weight_bits = g.weight_bits;
    c.kv_bits = kv_bits(g.kv);
    c.below_quality_floor = g.last_resort;
    c.weights_bytes_per_device = g.rp->fit.device_weights_bytes;
    c.kv_capacity_tokens = g.kv_tokens;
    c.decode_tokens_per_s = 1.0 / g.step1;
    if (g.hw->price) c.price_per_hour = *g.hw->price * static_cast<double>(c.devices());
    c.cost_per_million_tokens = price(g) * static_cast<double>(c.devices()) / advise_tokens_per_hour(q) * 1e6;
    c.serving = r;
    c.meets = check.meets;
    c.slo_ratio = check.binding_ratio;
    c.binding = check.meets ? check.binding : fmt::format("misses: {}", fmt::join(check.misses, ", "));
    c.plan = g.plan;
    c.plan.requests = std::min(max_batch, g.kv_batch);
    c.plan.context = static_cast<uint64_t>(std::llround(q.prompt.mean() + q.output.mean()));
    c.plan.output = std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(q.output.mean())));
    c.plan.load = LoadPlan{};
    c.plan.load->rate_per_s = rate / static_cast<double>(replicas);
    c.plan.load->simulate = true;
    c.plan.load->requests = q.simulated_requests;
    c.plan.load->seed = q.seed;
    c.plan.load->max_batch = max_batch;
    c.plan.deadline_s = q.deadline_s;
    return c;
  }

  // Each max-batch limit at the fewest replicas (from its floor up) whose simulation meets the SLOs.
  void evaluate(ServingGroup& g) {
    // Runs by replicas: a run whose batch never reached its limit is the run of every larger limit.
    std::map<uint64_t, std::pair<uint64_t, ServingResult>> runs;
    uint64_t previous = 0;
    for (uint64_t max_batch : q.max_batch) {
      if (previous >= g.kv_batch) {  // the KV already held back the previous limit: the same server
        pruning.add("batch past the KV", fmt::format("{}: max batch {} (the KV holds about {} requests)", g.where, max_batch,
                                                     g.kv_batch));
        continue;
      }
      previous = max_batch;
      const uint64_t lower = replicas_floor(g, max_batch);
      if (lower * g.tp > q.max_devices) {
        pruning.add("devices", fmt::format("{}, max batch {}: the rate's work needs at least {} replicas, {} devices > "
                                           "--max-devices {}", g.where, max_batch, lower, lower * g.tp, q.max_devices));
        continue;
      }
      if (dominated(g.hw->profile.name, static_cast<double>(lower * g.tp) * price(g), g.e2el_floor)) {
        pruning.add("dominated", fmt::format("{}, max batch {}: {} cheaper plans on {} were found, and one faster than its "
                                             "best case ({:.3g} s)", g.where, max_batch, q.top, g.hw->profile.name,
                                             g.e2el_floor));
        continue;
      }
      std::optional<AdviseCandidate> best;
      bool found = false, same_run = false;
      for (uint64_t replicas = lower; replicas <= lower + kReplicaTries && replicas * g.tp <= q.max_devices; ++replicas) {
        ServingResult r;
        const auto known = runs.find(replicas);
        same_run = known != runs.end() && known->second.second.peak_batch < known->second.first;
        if (same_run) {
          r = known->second.second;
        } else {
          r = simulate_serving(g.cache->server(max_batch, g.kv_tokens), load(*q.rate_per_s / static_cast<double>(replicas)));
          ++simulations;
          runs[replicas] = {max_batch, r};
        }
        const SloCheck check = check_slo(r, q.slo);
        if (check.meets) {
          if (same_run)  // a smaller limit's plan, which it never reached: the same deployment
            pruning.add("batch never reached", fmt::format("{}, max batch {}: the runs never held more than {}", g.where,
                                                           max_batch, r.peak_batch));
          else
            met.push_back(candidate(g, max_batch, replicas, r, check));
          found = true;
          break;
        }
        best = candidate(g, max_batch, replicas, r, check);
      }
      if (!found && best && !same_run) {
        pruning.add("SLO", fmt::format("{}, max batch {}, {} replicas: {}", g.where, max_batch, best->replicas, best->binding));
        missed.push_back(std::move(*best));
      }
    }
  }

  // Every group, cheapest first (so that the plans found early set aside the dearer ones without
  // simulating), mixed and, where searched, split into prefill and decode pools.
  void evaluate_all(std::vector<ServingGroup>& groups) {
    std::stable_sort(groups.begin(), groups.end(),
                     [](const ServingGroup& a, const ServingGroup& b) { return a.cost_floor < b.cost_floor; });
    for (ServingGroup& g : groups) {
      evaluate(g);
      if (!q.pd || g.spec_block) continue;
      const EngineCapabilities* caps = find_engine_capabilities(g.rp->engine);
      if (caps && !caps->pd_disaggregation)
        pruning.add("engine", fmt::format("{}, prefill/decode split: {} serves prefill and decode together", g.where,
                                          caps->title), q.max_batch.size());
      else
        evaluate_pd(g);
    }
  }

  // The link a prefill/decode split moves each request's KV over: the device link while both
  // pools fit in one machine, else the node link; nullopt when the profile has neither.
  static std::optional<LinkProfile> pd_link(const HwProfile& hw, uint64_t devices) {
    if (hw.device_link && (hw.devices_per_node == 0 || devices <= hw.devices_per_node)) return hw.device_link;
    if (hw.node_link) return hw.node_link;
    return std::nullopt;
  }

  // Prefill/decode disaggregation: `prefill` replicas that only prefill (each request
  // alone, as the mixed server does), the KV sent over the link, `decode` replicas that only
  // decode (no prefill stalls their batch). Each pool is simulated on its own at its share of the
  // arrivals; the plan's TTFT p99 is the sum of the prefill pool's, the transfer of the p99 prompt
  // and the decode pool's wait for a slot, its E2EL p99 the prefill's, the transfer and the
  // decode pool's (sums of p99s: an upper bound on the p99 of the sums).
  // The decode pool alone meets every TPOT and ITL bound (the prefill is the other pool's).
  bool decode_meets(const ServingLatency& l) const {
    for (const SloBound& b : q.slo.bounds)
      if ((b.metric == SloMetric::tpot || b.metric == SloMetric::itl) && slo_value(l, b) > b.limit_s) return false;
    return true;
  }

  void evaluate_pd(ServingGroup& g) {
    const double rate = *q.rate_per_s, mean_prompt = q.prompt.mean(), mean_output = q.output.mean();
    const uint64_t p99_prompt = percentile_tokens(q.prompt, 0.99);
    const double prefill_mean = g.cache->prefill(static_cast<uint64_t>(mean_prompt));
    const uint64_t prefill_floor = static_cast<uint64_t>(std::floor(rate * prefill_mean)) + 1;
    // The prefill pool's runs do not depend on the decode pool's limit: one search serves them all.
    std::map<uint64_t, ServingResult> prefill_runs;
    auto prefill_run = [&](uint64_t replicas) -> const ServingResult& {
      auto it = prefill_runs.find(replicas);
      if (it != prefill_runs.end()) return it->second;
      ServerModel ps = g.cache->server(1, g.kv_tokens);
      ServingLoad l = load(rate / static_cast<double>(replicas));
      l.output_tokens = TokenLengths::fixed(1);  // the first token comes from the prefill; decoding is elsewhere
      ++simulations;
      return prefill_runs[replicas] = simulate_serving(ps, l);
    };
    const uint64_t kv_per_token = g.rp->fit.kv_bytes_per_token * g.tp;  // the whole model's K and V
    const std::string where = g.where + ", prefill/decode split";
    for (size_t i = 0; i < q.max_batch.size(); ++i) {
      const uint64_t max_batch = q.max_batch[i];
      const uint64_t batch = std::min(max_batch, g.kv_batch);
      const double step = g.cache->decode(batch, batch * g.mean_context);
      const uint64_t decode_floor = static_cast<uint64_t>(std::floor(rate * mean_output * step / static_cast<double>(batch))) + 1;
      const uint64_t floor_devices = (prefill_floor + decode_floor) * g.tp;
      if (floor_devices > q.max_devices) {
        pruning.add("devices", fmt::format("{}, max batch {}: at least {} + {} replicas, {} devices > --max-devices {}", where,
                                           max_batch, prefill_floor, decode_floor, floor_devices, q.max_devices));
        continue;
      }
      if (!pd_link(g.hw->profile, floor_devices)) {
        pruning.add("no link", fmt::format("{}: {} has no device or node link to send the KV over", where, g.hw->profile.name));
        continue;
      }
      if (dominated(g.hw->profile.name, static_cast<double>(floor_devices) * price(g), g.e2el_floor)) {
        pruning.add("dominated", fmt::format("{}, max batch {}: {} cheaper plans on {} were found, and one faster than its "
                                             "best case", where, max_batch, q.top, g.hw->profile.name));
        continue;
      }
      // The decode pool: the fewest replicas whose TPOT (and E2EL share) meets the SLOs.
      ServerModel ds = g.cache->server(max_batch, g.kv_tokens);
      ds.prefill_s = [](uint64_t) { return 0.0; };  // the KV arrives computed
      std::optional<ServingResult> decode;
      uint64_t decode_replicas = decode_floor;
      for (; decode_replicas <= decode_floor + kReplicaTries; ++decode_replicas) {
        ServingResult r = simulate_serving(ds, load(rate / static_cast<double>(decode_replicas)));
        ++simulations;
        if (r.stable && r.latency && decode_meets(*r.latency)) {
          decode = std::move(r);
          break;
        }
      }
      if (!decode) {
        pruning.add("SLO", fmt::format("{}, max batch {}: no decode pool of {} to {} replicas meets the TPOT", where, max_batch,
                                       decode_floor, decode_floor + kReplicaTries), 1);
        continue;
      }
      const ServingLatency& dl = *decode->latency;
      bool found = false;
      for (uint64_t prefill_replicas = prefill_floor; prefill_replicas <= prefill_floor + kReplicaTries; ++prefill_replicas) {
        const uint64_t devices = (prefill_replicas + decode_replicas) * g.tp;
        const std::optional<LinkProfile> link = pd_link(g.hw->profile, devices);
        if (devices > q.max_devices || !link) break;
        const double transfer_s = link_transfer_s(kv_per_token * p99_prompt, 1, *link);
        const ServingResult& pr = prefill_run(prefill_replicas);
        if (!pr.stable || !pr.latency) continue;
        // A request's TTFT is its prefill pool's, the transfer and its wait in the decode pool: the
        // mean of that sum is the sum of the means; its percentiles and largest value are bounded
        // by the sums of the stages' (the stages' tails need not meet in one request).
        ServingResult combined = *decode;
        for (double Distribution::*p : {&Distribution::mean, &Distribution::p50, &Distribution::p90, &Distribution::p95,
                                        &Distribution::p99, &Distribution::max}) {
          combined.latency->ttft_s.*p = pr.latency->ttft_s.*p + transfer_s + dl.ttft_s.*p;
          combined.latency->sojourn_s.*p = pr.latency->ttft_s.*p + transfer_s + dl.sojourn_s.*p;
        }
        const SloCheck check = check_slo(combined, q.slo);
        if (!check.meets) continue;
        AdviseCandidate c = candidate(g, max_batch, prefill_replicas + decode_replicas, combined, check);
        c.pd_prefill = prefill_replicas;
        c.pd_decode = decode_replicas;
        c.pd_link = link->name;
        c.pd_transfer_s = transfer_s;
        c.pd_prefill_ttft_p99_s = pr.latency->ttft_s.p99;
        c.plan.load->rate_per_s = rate / static_cast<double>(decode_replicas);  // a decode replica's share
        met.push_back(std::move(c));
        found = true;
        break;
      }
      if (!found)
        pruning.add("SLO", fmt::format("{}, max batch {}, {} decode replicas: no prefill pool of {} to {} replicas meets the "
                                       "TTFT", where, max_batch, decode_replicas, prefill_floor, prefill_floor + kReplicaTries));
      if (decode->peak_batch < max_batch && i + 1 < q.max_batch.size()) {  // larger limits: the same decode pool
        pruning.add("batch never reached", fmt::format("{}, max batch {} and up: the decode pool never held more than {}", where,
                                                       q.max_batch[i + 1], decode->peak_batch),
                    q.max_batch.size() - i - 1);
        break;
      }
    }
  }
};

// The closest misses: stable ones first, then by how far the binding SLO is over.
std::vector<AdviseCandidate> closest(std::vector<AdviseCandidate> v, uint64_t n) {
  std::sort(v.begin(), v.end(), [](const AdviseCandidate& a, const AdviseCandidate& b) {
    const bool sa = a.serving && a.serving->stable, sb = b.serving && b.serving->stable;
    if (sa != sb) return sa;
    return e2el_p99(a) < e2el_p99(b);
  });
  if (v.size() > n) v.resize(n);
  return v;
}

std::vector<AdviseCandidate> pareto(std::vector<AdviseCandidate> v) {
  std::sort(v.begin(), v.end(), [](const AdviseCandidate& a, const AdviseCandidate& b) {
    if (*a.cost_per_million_tokens != *b.cost_per_million_tokens)
      return *a.cost_per_million_tokens < *b.cost_per_million_tokens;
    return e2el_p99(a) < e2el_p99(b);
  });
  std::vector<AdviseCandidate> out;
  double best = std::numeric_limits<double>::infinity();
  for (AdviseCandidate& c : v) {
    const double e = e2el_p99(c);
    if (e < best) {
      best = e;
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::string money(const AdviseResult& r, double v) {
  return r.priced ? fmt::format("${:.3g}", v) : fmt::format("{:.3g} device-h", v);
}

// Why the top plans, in the user's terms: what binds, what the memory holds, which lever bought
// what against the highest-precision plan on the same hardware, and the other hardware's best.
void explain_serving(const AdviseQuery& q, AdviseResult& r, const std::vector<AdviseCandidate>& all_met,
                     const std::vector<HwChoice>& hws) {
  // The cheapest plan of the first weights and KV types on a profile with the same engine, searched
  // on its own (the main search may have set it aside as dominated); nullopt when none meets the SLOs.
  std::map<std::string, std::optional<AdviseCandidate>> references;
  auto reference_for = [&](const AdviseCandidate& c) -> const std::optional<AdviseCandidate>& {
    const std::string key = c.hw + " " + c.engine;
    if (auto it = references.find(key); it != references.end()) return it->second;
    auto choice = std::find_if(hws.begin(), hws.end(), [&](const HwChoice& h) { return h.profile.name == c.hw && h.engine == c.engine; });
    if (choice == hws.end())  // an engine chosen from the weights
      choice = std::find_if(hws.begin(), hws.end(), [&](const HwChoice& h) { return h.profile.name == c.hw; });
    AdviseQuery sub = q;
    sub.top = 1;
    ServingSearch s{sub, {}, 0, 0, {}, {}};
    std::vector<ServingGroup> groups;
    for (uint64_t tp : q.tp)
      if (std::optional<ServingGroup> g = s.prepare(*choice, q.weights.front(), q.kv.front(), tp, false)) groups.push_back(std::move(*g));
    s.evaluate_all(groups);
    r.simulations += s.simulations;
    std::optional<AdviseCandidate> best;
    for (AdviseCandidate& m : s.met)
      if (!best || *m.cost_per_million_tokens < *best->cost_per_million_tokens) best = std::move(m);
    return references[key] = std::move(best);
  };
  for (AdviseCandidate& c : r.ranked) {
    const ServingResult& s = *c.serving;
    DeploymentShape shape;
    shape.replicas = c.replicas;
    shape.prefill = c.pd_prefill;
    shape.decode = c.pd_decode;
    shape.max_model_len = q.prompt.max_tokens + q.output.max_tokens;
    shape.max_batch = c.max_batch;
    c.shape = shape;
    c.reasons.push_back(fmt::format("meets every SLO; nearest its limit: {}", c.binding));
    const uint64_t kv_requests = c.kv_capacity_tokens / std::max<uint64_t>(1, static_cast<uint64_t>(q.prompt.mean() + q.output.mean()));
    c.reasons.push_back(fmt::format("{} weights take {} per device and leave KV for {} tokens ({} requests of the mean "
                                    "length){}", c.weights, gib(c.weights_bytes_per_device), c.kv_capacity_tokens,
                                    kv_requests,
                                    c.max_batch < kv_requests ? fmt::format("; max batch {} keeps the decode step short", c.max_batch)
                                                              : fmt::format("; the KV, not max batch {}, limits the batch", c.max_batch)));
    if (c.pd_prefill)
      c.reasons.push_back(fmt::format("prefill/decode split: {} prefill replica{} (TTFT p99 {:.3g} s alone), the KV of the p99 "
                                      "prompt over {} in {:.1f} ms, {} decode replica{} of {} device{} with no prefill "
                                      "stalling their batch (mean batch {:.1f}, at most {})",
                                      *c.pd_prefill, *c.pd_prefill == 1 ? "" : "s", c.pd_prefill_ttft_p99_s, c.pd_link,
                                      c.pd_transfer_s * 1e3, *c.pd_decode, *c.pd_decode == 1 ? "" : "s", c.tp,
                                      c.tp == 1 ? "" : "s", s.mean_batch, s.peak_batch));
    else
      c.reasons.push_back(fmt::format("{} replica{} of {} device{} (tensor parallel {}): {:.3g} req/s each, mean batch {:.1f}, "
                                      "at most {}", c.replicas, c.replicas == 1 ? "" : "s", c.tp, c.tp == 1 ? "" : "s", c.tp,
                                      *q.rate_per_s / static_cast<double>(c.replicas), s.mean_batch, s.peak_batch));
    if (c.offload_every)
      c.reasons.push_back(fmt::format("the weights do not fit on {} device{}: the FFN of 1 layer in {} ({} per device) stays in "
                                      "host memory and is copied over {} every step, {:.1f} ms a round against {:.1f} ms of "
                                      "compute at batch 1: {}", c.tp, c.tp == 1 ? "" : "s", *c.offload_every,
                                      gib(c.offload_bytes), c.offload_link, c.offload_round_s * 1e3, c.offload_compute_s * 1e3,
                                      c.offload_round_s > c.offload_compute_s ? "the copy sets the pace (offload pays only "
                                                                                "when the copy is the shorter)"
                                                                              : "hidden under compute by the prefetch"));
    if (c.spec_block) {
      const double expected = spec_expected_tokens(q.speculative->accept, *c.spec_block);
      c.reasons.push_back(fmt::format("speculative decoding, block {}: {:.2f} tokens a round on average; one request alone "
                                      "decodes {:.1f} tokens/s", *c.spec_block, expected, c.decode_tokens_per_s));
    }
    // Against the cheapest plan with the most bits on the same hardware (the first weights and KV asked).
    const std::optional<AdviseCandidate>& ref = reference_for(c);
    const AdviseCandidate* reference = ref ? &*ref : nullptr;
    if (c.weights != q.weights.front() || c.kv.k != q.kv.front().k) {
      std::string lever;
      if (c.weights != q.weights.front())
        lever += fmt::format("{} weights ({:.1f} bits) instead of {}", c.weights, c.weight_bits, q.weights.front());
      if (c.kv.k != q.kv.front().k || c.kv.v != q.kv.front().v)
        lever += fmt::format("{}KV {} instead of {}", lever.empty() ? "" : ", ", kv_types_label(c.kv), kv_types_label(q.kv.front()));
      if (reference) {
        std::string bought;
        if (c.weights_bytes_per_device * c.tp < reference->weights_bytes_per_device * reference->tp)
          bought += fmt::format("weights {} instead of {} in all; ", gib(c.weights_bytes_per_device * c.tp),
                                gib(reference->weights_bytes_per_device * reference->tp));
        bought += fmt::format("KV for {} tokens per replica instead of {} ({:.1f}x); decode step alone {:.1f} ms instead of {:.1f}",
                              c.kv_capacity_tokens, reference->kv_capacity_tokens,
                              static_cast<double>(c.kv_capacity_tokens) / static_cast<double>(std::max<uint64_t>(reference->kv_capacity_tokens, 1)),
                              1e3 / c.decode_tokens_per_s, 1e3 / reference->decode_tokens_per_s);
        c.reasons.push_back(fmt::format("{}: {}; {} per million tokens against {} for the cheapest {} plan ({}): {:.0f}% of its "
                                        "cost, at p99 TPOT {:.1f} ms against {:.1f} ms",
                                        lever, bought, money(r, *c.cost_per_million_tokens),
                                        money(r, *reference->cost_per_million_tokens),
                                        fmt::format("{} / KV {}", q.weights.front(), kv_types_label(q.kv.front())),
                                        advise_plan_label(*reference),
                                        100 * *c.cost_per_million_tokens / *reference->cost_per_million_tokens,
                                        s.latency->tpot_s.p99 * 1e3, reference->serving->latency->tpot_s.p99 * 1e3));
      } else {
        c.reasons.push_back(fmt::format("{}: with {} weights and KV {}, no plan on {} meets the SLOs within {} devices", lever,
                                        q.weights.front(), kv_types_label(q.kv.front()), c.hw, q.max_devices));
      }
    }
    for (const HwChoice& h : hws) {
      if (h.profile.name == c.hw || (&h != &hws.front() && (&h - 1)->profile.name == h.profile.name)) continue;
      const auto best = std::find_if(all_met.begin(), all_met.end(), [&](const AdviseCandidate& o) { return o.hw == h.profile.name; });
      if (best == all_met.end()) c.reasons.push_back(fmt::format("{}: no plan meets the SLOs", h.profile.name));
      else if (&c == &r.ranked.front())
        c.reasons.push_back(fmt::format("best on {}: {}, {} per million tokens ({:+.0f}%)", h.profile.name,
                                        advise_plan_label(*best), money(r, *best->cost_per_million_tokens),
                                        100 * (*best->cost_per_million_tokens / *c.cost_per_million_tokens - 1)));
    }
    if (c.below_quality_floor)
      c.reasons.push_back(fmt::format("below the quality floor ({}): nothing above it met the SLOs", kAdviseQualityFloor));
  }
}

AdviseResult advise_serving(const AdviseQuery& q) {
  if (!q.slo.any())
    throw InputError("advise: a serving search (rate_per_s) needs a service level to meet: a TTFT, TPOT, ITL or E2EL "
                     "percentile at most a limit (slo)");
  AdviseResult result;
  result.serving = true;
  const std::vector<HwChoice> hws = hardware(q, true, &result.priced, result.notes);
  ServingSearch s{q, {}, 0, 0, {}, {}};
  std::vector<ServingGroup> groups;
  for (bool last_resort : {false, true}) {
    for (const HwChoice& hw : hws)
      for (const std::string& w : q.weights)
        for (const KvTypes& kv : q.kv) {
          if (advise_below_quality_floor(w, kv) != last_resort) continue;
          for (uint64_t tp : q.tp) {
            if (std::optional<ServingGroup> g = s.prepare(hw, w, kv, tp, last_resort)) groups.push_back(std::move(*g));
            if (q.speculative)
              for (uint64_t block : q.speculative->blocks)
                if (std::optional<ServingGroup> g = s.prepare(hw, w, kv, tp, last_resort, block)) groups.push_back(std::move(*g));
          }
        }
    s.evaluate_all(groups);
    groups.clear();
    if (!s.met.empty()) break;
    if (!last_resort)
      result.notes.push_back(fmt::format("nothing at or above the quality floor ({}) meets the SLOs; the types below it were "
                                         "tried next", kAdviseQualityFloor));
  }
  result.space = s.space;
  result.simulations = s.simulations;
  result.pruned = s.pruning.take();
  std::vector<AdviseCandidate> met = s.met;
  std::sort(met.begin(), met.end(), [](const AdviseCandidate& a, const AdviseCandidate& b) {
    if (*a.cost_per_million_tokens != *b.cost_per_million_tokens)
      return *a.cost_per_million_tokens < *b.cost_per_million_tokens;
    if (e2el_p99(a) != e2el_p99(b)) return e2el_p99(a) < e2el_p99(b);  // then the faster
    return a.slo_ratio < b.slo_ratio;  // then the most room under the SLOs
  });
  result.frontier = pareto(met);
  result.ranked.assign(met.begin(), met.begin() + static_cast<long>(std::min<uint64_t>(q.top, met.size())));
  if (met.empty()) result.near_misses = closest(s.missed, q.top);
  explain_serving(q, result, met, hws);
  if (q.speculative)
    result.notes.push_back(fmt::format("speculative decoding at the acceptance given ({}), blocks {}: a round's tokens are "
                                       "its expected count, spread evenly over its time (the simulation emits one a step)",
                                       fmt::join(q.speculative->accept, ", "), fmt::join(q.speculative->blocks, ", ")));
  else
    result.notes.push_back("speculative decoding: not searched (give --spec-accept and --draft or --draft-layers)");
  if (q.pd)
    result.notes.push_back("prefill/decode splits: each pool simulated on its own; TTFT and E2EL p99 are sums of the "
                           "stages' p99s (prefill, the KV transfer of the p99 prompt, the decode pool), an upper bound");
  result.notes.push_back("weight offload: tried only where the weights do not fit, FFN of 1 layer in 8, 4, 2 or all over the "
                         "profile's first host link, two prefetch slots; a step takes the longer of compute and copy");
  return result;
}

// ---- capacity ----

AdviseCandidate capacity_candidate(const AdviseQuery& q, const HwChoice& hw, const std::string& w, KvTypes kv, uint64_t tp,
                                   uint64_t context, const ResolvedPlan& rp, bool last_resort) {
  AdviseCandidate c;
  c.hw = hw.profile.name;
  c.engine = rp.engine;
  take_basis(c, hw, rp);
  c.weights = w;
  c.kv = kv;
  c.tp = tp;
  c.max_batch = q.requests;
  c.weight_bits = bits_per_weight(rp);
  c.kv_bits = kv_bits(kv);
  c.below_quality_floor = last_resort;
  c.weights_bytes_per_device = rp.fit.device_weights_bytes;
  c.kv_capacity_tokens = rp.fit.kv_tokens_in(rp.fit.kv_room_bytes);
  c.headroom_bytes = rp.fit.headroom_bytes;
  c.context = context;
  c.max_context = rp.fit.max_context;
  c.decode_tokens_per_s = 1.0 / rp.server.decode_iteration_s(q.requests, q.requests * context);
  if (hw.price) c.price_per_hour = *hw.price * static_cast<double>(tp);
  c.meets = rp.fit.fits && context >= q.context;
  c.plan = rp.plan;
  return c;
}

// Longest context a fit allows, in whole K tokens when it is at least 1K.
uint64_t round_context(uint64_t tokens) { return tokens >= 1024 ? tokens / 1024 * 1024 : tokens; }

AdviseResult advise_capacity(const AdviseQuery& q) {
  AdviseResult result;
  const std::vector<HwChoice> hws = hardware(q, false, &result.priced, result.notes);
  Pruning pruning;
  std::vector<AdviseCandidate> fits, shorter;
  struct Short {
    std::string hw, weights;
    KvTypes kv;
    uint64_t tp;
    FitResult fit;
  };
  std::vector<Short> shorts;  // at the context asked for, the fits that fail
  for (bool last_resort : {false, true}) {
    for (const HwChoice& hw : hws)
      for (const std::string& w : q.weights)
        for (const KvTypes& kv : q.kv)
          for (uint64_t tp : q.tp) {
            Plan plan = candidate_plan(q, hw.engine, hw.name, w, kv, tp, q.context, q.requests, 256);
            use_profile(plan, hw);
            std::optional<ResolvedPlan> rp;
            try {
              rp = resolve_plan(plan);
            } catch (const InputError& e) {
              if (!last_resort) {  // counted once, in the first pass
                result.space += 1;
                pruning.add("tensor parallel", e.what());
              }
              continue;
            }
            if (advise_below_quality_floor(w, kv) != last_resort) continue;
            result.space += 1;
            if (const std::optional<std::string> why = engine_refuses_types(rp->engine, rp->weights.layout, kv)) {
              pruning.add("engine", fmt::format("{} {} KV {} on {}: {}", rp->engine, w, kv_types_label(kv), hw.profile.name, *why));
              continue;
            }
            if (rp->fit.fits) {
              fits.push_back(capacity_candidate(q, hw, w, kv, tp, q.context, *rp, last_resort));
              continue;
            }
            shorts.push_back({hw.profile.name, w, kv, tp, rp->fit});
            const EngineCapabilities* caps = find_engine_capabilities(rp->engine);
            if (hw.profile.host && tp == 1 && (!caps || caps->host_layers)) {  // llama.cpp's layer split
              Plan split = plan;
              split.gpu_layers_auto = true;
              try {
                const ResolvedPlan r = resolve_plan(split);
                if (r.fit.fits && r.split && r.split->gpu_layers > 0) {
                  AdviseCandidate c = capacity_candidate(q, hw, w, kv, tp, q.context, r, last_resort);
                  c.gpu_layers = r.split->gpu_layers;
                  c.layers = split_layer_count(r.spec);
                  fits.push_back(std::move(c));
                  continue;
                }
              } catch (const InputError&) {
              }
            }
            const uint64_t context = round_context(rp->fit.max_context);
            if (context == 0) {
              pruning.add("memory", fmt::format("{} on {}: weights {} per device and the reserves leave no room for {} request{}",
                                                w, hw.profile.name, gib(rp->fit.device_weights_bytes), q.requests,
                                                q.requests == 1 ? "" : "s"));
              continue;
            }
            pruning.add("context", fmt::format("{} KV {} on {}: {} tokens need {} more", w, kv_types_label(kv), hw.profile.name,
                                               q.context, gib(-rp->fit.headroom_bytes)));
            Plan relaxed = plan;
            relaxed.context = context;
            try {
              const ResolvedPlan r = resolve_plan(relaxed);
              if (r.fit.fits) shorter.push_back(capacity_candidate(q, hw, w, kv, tp, context, r, last_resort));
            } catch (const InputError&) {
            }
          }
    if (!fits.empty()) break;
  }
  // Above the floor first; then the plans wholly on the device, best quality first; then layer
  // splits, fastest first (their host layers, not their bits, decide how usable they are).
  auto better = [](const AdviseCandidate& a, const AdviseCandidate& b) {
    if (a.below_quality_floor != b.below_quality_floor) return !a.below_quality_floor;
    if (a.gpu_layers.has_value() != b.gpu_layers.has_value()) return !a.gpu_layers;
    if (a.gpu_layers) return a.decode_tokens_per_s > b.decode_tokens_per_s;
    if (a.weight_bits != b.weight_bits) return a.weight_bits > b.weight_bits;
    if (a.kv_bits != b.kv_bits) return a.kv_bits > b.kv_bits;
    if (a.tp != b.tp) return a.tp < b.tp;
    return a.decode_tokens_per_s > b.decode_tokens_per_s;
  };
  std::vector<AdviseCandidate>& chosen = fits.empty() ? shorter : fits;
  std::stable_sort(chosen.begin(), chosen.end(), better);
  result.pruned = pruning.take();
  if (fits.empty()) {
    // Why the context asked for fits nowhere: the smallest weights with the highest and the
    // lowest KV precision asked, per profile.
    for (const HwChoice& hw : hws) {
      if (&hw != &hws.front() && (&hw - 1)->profile.name == hw.profile.name) continue;  // once per profile
      const Short* smallest = nullptr;
      for (const Short& s : shorts)
        if (s.hw == hw.profile.name && s.tp == q.tp.front() &&
            (!smallest || s.fit.device_weights_bytes < smallest->fit.device_weights_bytes))
          smallest = &s;
      if (!smallest) continue;
      const FitResult& f = smallest->fit;
      std::string line = fmt::format("{} tokens x {} on {}: the smallest weights, {} ({}), ", q.context,
                                     fmt::format("{} request{}", q.requests, q.requests == 1 ? "" : "s"), hw.profile.name,
                                     smallest->weights, gib(f.device_weights_bytes));
      if (f.free_after_weights_bytes < 0) {
        line += fmt::format("are {} over the usable {} before any KV", gib(-f.free_after_weights_bytes), gib(f.usable_bytes));
      } else {
        line += fmt::format("leave {} of the usable {} for KV and reserves", gib(f.free_after_weights_bytes), gib(f.usable_bytes));
        for (const Short& s : shorts)
          if (s.hw == hw.profile.name && s.weights == smallest->weights && s.tp == smallest->tp &&
              (s.kv.k == q.kv.front().k || s.kv.k == q.kv.back().k))
            line += fmt::format("; KV {} needs {} ({} short)", kv_types_label(s.kv), gib(s.fit.kv_bytes), gib(-s.fit.headroom_bytes));
      }
      result.notes.push_back(line);
    }
    if (!chosen.empty())
      result.notes.push_back(fmt::format("so no plan holds {} tokens; below, the longest context each plan holds (in whole K)",
                                         q.context));
  }
  if (chosen.size() > q.top) chosen.resize(q.top);
  result.ranked = std::move(chosen);
  for (AdviseCandidate& c : result.ranked) {
    DeploymentShape shape;
    shape.max_model_len = c.context;
    shape.max_batch = c.max_batch;
    c.shape = shape;
    c.reasons.push_back(fmt::format("{} weights {} + KV {} for {} x {} tokens{}: {} to spare", c.weights,
                                    gib(c.weights_bytes_per_device), kv_types_label(c.kv), c.max_batch, c.context,
                                    c.context < q.context ? fmt::format(" (not {})", q.context) : "", gib(c.headroom_bytes)));
    if (c.gpu_layers)
      c.reasons.push_back(fmt::format("-ngl {}: {} of {} layers on the device (the output head counted last), the rest and "
                                      "their KV in host memory, read there by the CPU; the whole model does not fit the "
                                      "device", *c.gpu_layers, *c.gpu_layers, c.layers));
    c.reasons.push_back(fmt::format("decode {:.1f} tokens/s per request at batch {}", c.decode_tokens_per_s, c.max_batch));
    if (c.below_quality_floor)
      c.reasons.push_back(fmt::format("below the quality floor ({}): nothing above it fits", kAdviseQualityFloor));
  }
  return result;
}

}  // namespace

bool advise_below_quality_floor(std::string_view weights, KvTypes kv) {
  std::string w(weights);
  for (char& c : w) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const bool low_weights = w.starts_with("Q3_") || w.starts_with("Q2_") || w.starts_with("IQ3") || w.starts_with("IQ2") ||
                           w.starts_with("IQ1") || w.starts_with("TQ");
  return low_weights || kv_bits(kv) < 8.0;
}

double advise_tokens_per_hour(const AdviseQuery& query) {
  return query.rate_per_s.value_or(0) * query.output.mean() * 3600.0;
}

AdviseResult advise(const AdviseQuery& q) {
  if (q.hw.empty()) throw InputError("--hw: give at least one profile");
  if (q.weights.empty()) throw InputError("--weights: give at least one type");
  if (q.kv.empty()) throw InputError("--kv: give at least one type");
  if (q.tp.empty()) throw InputError("--tp: give at least one size");
  if (q.max_batch.empty()) throw InputError("--max-batch: give at least one limit");
  // The model and every weight type checked once, so that an error names its flag here rather
  // than setting aside every configuration.
  Plan model_only;
  model_only.model = q.model;
  model_only.engine = q.engine;
  const ModelSpec spec = plan_model_spec(model_only);
  for (const std::string& w : q.weights) (void)plan_weights(spec, w, std::nullopt);
  if (q.speculative) {
    const AdviseSpeculative& sq = *q.speculative;
    if (sq.accept.empty()) throw InputError("--spec-accept: give the draft's acceptance rate (e.g. 0.7)");
    for (double a : sq.accept)
      if (!(a >= 0 && a <= 1)) throw InputError(fmt::format("--spec-accept: {} is not a rate in [0, 1]", a));
    if (sq.draft.empty() == !sq.draft_layers)
      throw InputError("--spec-accept: name the draft: --draft MODEL or --draft-layers N (one of the two)");
    if (sq.draft_layers && (*sq.draft_layers == 0 || *sq.draft_layers >= spec.layers))
      throw InputError(fmt::format("--draft-layers: {} is out of range 1..{} ({}'s layers less one)", *sq.draft_layers,
                                   spec.layers - 1, spec.name));
    if (!sq.draft.empty()) (void)load_model(sq.draft);
    if (sq.blocks.empty()) throw InputError("--spec-blocks: give at least one block length");
    for (uint64_t b : sq.blocks) {
      if (b == 0 || b > 64) throw InputError(fmt::format("--spec-blocks: {} is out of range 1..64", b));
      if (sq.accept.size() > 1 && sq.accept.size() < b)
        throw InputError(fmt::format("--spec-accept: {} rates, one per position, but block {} needs {}", sq.accept.size(), b, b));
    }
  }
  AdviseResult result = q.rate_per_s ? advise_serving(q) : advise_capacity(q);
  if (!q.tp_link.empty())
    result.notes.push_back(fmt::format("tensor parallel: every candidate of 2 or more devices all-reduces over {} "
                                       "rather than over its profile's device link", load_link(q.tp_link).name));
  return result;
}

}  // namespace infer_plan
