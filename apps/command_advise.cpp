// `infer-plan advise`: the cheapest deployment meeting a workload's SLOs (with --rate), or the
// best-quality plan that fits a context and a number of requests (without), with reasons; a
// table, --json, an SVG of the cost / latency frontier, and --verify (the winner executed by
// `report` on this machine, at a scale it can run).
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "apps/commands.hpp"
#include "apps/exit_code.hpp"
#include "apps/format.hpp"
#include "apps/output.hpp"
#include "apps/plan_options.hpp"
#include "apps/plan_verifier.hpp"
#include "apps/output_files.hpp"
#include "apps/svg_plot.hpp"
#include "apps/text_table.hpp"
#include "apps/launch.hpp"
#include "planner/plan/figures.hpp"
#include "planner/advise/advise.hpp"
#include "planner/catalog/catalog.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/limits.hpp"
#include "planner/core/units.hpp"
#include "planner/cost/kv_cache.hpp"
#include "planner/model/model_scale.hpp"
#include "planner/model/model_spec.hpp"
#include "planner/serving/engine_policy.hpp"

namespace infer_plan::apps {
namespace {

struct AdviseArgs {
  OutputOptions out;
  std::string model = "qwen3-8b", engine = "any";
  std::vector<std::string> hw{"h200"}, prices, weights, kv, exclude, exclude_kv;
  std::string tp, max_batch = "8,16,32,64,128,256", tp_link;
  uint64_t max_devices = 64, top = 10, num_prompts = 400, seed = 1;
  std::optional<double> rate, deadline, slo_reject;
  // --slo-METRIC-pP VALUE (500ms, 2s; a bare number is ms), by flag name; and vLLM's --goodput KEY:MS
  std::map<std::string, std::string> slo;
  std::vector<std::string> goodput;
  std::string prompt = "512", output = "256", ctx = "8192";
  uint64_t requests = 1;
  std::string svg, verify_plan = "advise-verify.json", backend = "cpu";
  bool verify = false, no_pd = false;
  std::string emit;  // k8s: the winner's Kubernetes manifest instead of the report
  std::vector<double> spec_accept;
  std::string draft, spec_blocks = "2,4,6";
  std::optional<uint64_t> draft_layers;
};

// llama.cpp's file types and vLLM's checkpoint formats, most bits first; the KV types of the engine.
const std::vector<std::string> kAllWeights{"BF16", "FP8", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "AWQ_INT4_G128", "Q3_K_M", "Q2_K"};
const std::vector<std::string> kLlamaCppWeights{"BF16", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q3_K_M", "Q2_K"};
const std::vector<std::string> kVllmWeights{"BF16", "FP8", "AWQ_INT4_G128"};

// "1,2,4" -> {"1", "2", "4"}: the flags whose one value is a list (the others are CLI11 lists).
std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  for (size_t from = 0;;) {
    const size_t comma = text.find(',', from);
    out.push_back(text.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
    if (comma == std::string::npos) return out;
    from = comma + 1;
  }
}

std::vector<uint64_t> count_list(const std::string& text, std::string_view flag, uint64_t hi) {
  std::vector<uint64_t> out;
  for (const std::string& item : split_list(text)) {
    const std::optional<double> v = parse_number(item);
    if (!v || *v < 1 || *v > static_cast<double>(hi) || std::floor(*v) != *v)
      throw InputError(fmt::format("{}: '{}' is not a whole number from 1 to {}", flag, item, hi));
    out.push_back(static_cast<uint64_t>(*v));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The metric of a flag --slo-METRIC-pP (ttft, tpot, itl or e2el: the flags are declared from these).
SloMetric slo_metric(const std::string& name) {
  return name == "ttft" ? SloMetric::ttft : name == "tpot" ? SloMetric::tpot : name == "itl" ? SloMetric::itl : SloMetric::e2el;
}

bool same_type_name(std::string_view x, std::string_view y) {
  return x.size() == y.size() && std::equal(x.begin(), x.end(), y.begin(), [](char p, char r) {
           return std::toupper(static_cast<unsigned char>(p)) == std::toupper(static_cast<unsigned char>(r));
         });
}

// The candidates less the excluded ones; InputError naming `flag` for an exclusion that is not a
// candidate (a typo would otherwise exclude nothing) or one that leaves none.
std::vector<std::string> without_excluded(const std::vector<std::string>& candidates, const std::vector<std::string>& excluded,
                                          std::string_view flag, std::string_view what) {
  for (const std::string& e : excluded)
    if (std::none_of(candidates.begin(), candidates.end(), [&](const std::string& c) { return same_type_name(c, e); }))
      throw InputError(fmt::format("{}: '{}' is none of the candidate {} types ({})", flag, e, what, fmt::join(candidates, ", ")));
  std::vector<std::string> out;
  for (const std::string& c : candidates)
    if (std::none_of(excluded.begin(), excluded.end(), [&](const std::string& e) { return same_type_name(c, e); }))
      out.push_back(c);
  if (out.empty()) throw InputError(fmt::format("{}: every {} type is excluded", flag, what));
  return out;
}

AdviseQuery advise_query(const AdviseArgs& a) {
  AdviseQuery q;
  q.model = a.model;
  q.engine = a.engine;
  q.hw = a.hw;
  for (const std::string& p : a.prices) {
    const size_t eq = p.find('=');
    const std::optional<double> usd = eq == std::string::npos ? std::nullopt : parse_number(p.substr(eq + 1));
    if (!usd || !(*usd > 0 && *usd <= kMaxPricePerHour))
      throw InputError(fmt::format("--price: '{}' is not NAME=USD (US dollars per device-hour above 0, e.g. h100-sxm=2.49)", p));
    q.prices[p.substr(0, eq)] = *usd;
  }
  q.weights = without_excluded(!a.weights.empty()          ? a.weights
                               : a.engine == "llama.cpp" ? kLlamaCppWeights
                               : a.engine == "vllm" || a.engine == "sglang" || a.engine == "trtllm" ? kVllmWeights
                                                                                                   : kAllWeights,
                               a.exclude, "--exclude", "weight");
  const bool datacenter = a.engine == "vllm" || a.engine == "sglang" || a.engine == "trtllm";
  const std::vector<std::string> kv = !a.kv.empty()          ? a.kv
                                      : datacenter           ? std::vector<std::string>{"bf16", "fp8"}
                                      : a.engine == "llama.cpp" ? std::vector<std::string>{"f16", "q8_0", "q4_0"}  // its default, -ctk f16
                                                              : std::vector<std::string>{"bf16", "fp8", "q8_0", "q4_0"};
  for (const std::string& k : without_excluded(kv, a.exclude_kv, "--exclude-kv", "KV")) {
    const GgmlType t = kv_cache_type(k, "--kv").type;
    q.kv.push_back({t, t});
  }
  // One device for the capacity question unless asked; the serving search tries a node's worth.
  q.tp = count_list(!a.tp.empty() ? a.tp : a.rate ? "1,2,4,8" : "1", "--tp", kMaxTensorParallel);
  if (!a.tp_link.empty()) {
    if (std::none_of(q.tp.begin(), q.tp.end(), [](uint64_t n) { return n > 1; }))
      throw InputError(fmt::format("--tp-link: '{}' is the link between tensor-parallel devices, and --tp {} tries no "
                                   "plan of more than one; expected a --tp size of 2 or more", a.tp_link, fmt::join(q.tp, ",")));
    q.tp_link = checked_tp_link(a.tp_link);
  }
  q.max_batch = count_list(a.max_batch, "--max-batch", kMaxConcurrentRequests);
  q.max_devices = a.max_devices;
  if (q.max_devices == 0 || q.max_devices > kMaxConcurrentRequests)
    throw InputError(fmt::format("--max-devices: {} is out of range 1..{}", a.max_devices, kMaxConcurrentRequests));
  q.rate_per_s = a.rate;
  q.prompt = parse_token_lengths(a.prompt, "--input-len");
  q.output = parse_token_lengths(a.output, "--output-len");
  q.simulated_requests = a.num_prompts;
  if (q.simulated_requests < 100 || q.simulated_requests > 100'000)
    throw InputError(fmt::format("--num-prompts: {} is out of range 100..100000 (a p99 needs 100 requests)", a.num_prompts));
  q.seed = a.seed;
  q.deadline_s = a.deadline;
  for (const auto& [flag, text] : a.slo) {
    if (text.empty()) continue;
    const SloMetric metric = slo_metric(flag.substr(6, flag.rfind("-p") - 6));  // --slo-ttft-p99
    const double percentile = std::stod(flag.substr(flag.rfind("-p") + 2));
    const double ms = parse_duration_ms(text, flag);
    if (!(ms > 0) || ms > kMaxTimeS * 1e3) throw InputError(fmt::format("{}: {} is out of range; expected a time above 0 and at most {:g} s", flag, text, kMaxTimeS));
    q.slo.at_most(metric, ms / 1e3, percentile);
  }
  const ServingLoad::Goodput goodput = parse_goodput(a.goodput);  // vLLM bench's form, each limit read at p99
  for (const auto& [metric, limit] : {std::pair{SloMetric::ttft, goodput.ttft_s}, std::pair{SloMetric::tpot, goodput.tpot_s},
                                      std::pair{SloMetric::e2el, goodput.e2el_s}})
    if (limit) q.slo.at_most(metric, *limit, 99);
  std::stable_sort(q.slo.bounds.begin(), q.slo.bounds.end(), [](const SloBound& x, const SloBound& y) {  // TTFT, TPOT, ITL, E2EL
    return x.metric < y.metric;
  });
  q.slo.rejection_max = a.slo_reject;
  if (q.rate_per_s && !q.slo.any())
    throw InputError("--rate: a serving search needs a service level to meet: --slo-ttft-p99 2s, --slo-tpot-p95 50ms, ... "
                     "(TTFT, TPOT, ITL or E2EL at p50, p90, p95 or p99) or --goodput ttft:2000 tpot:50");
  q.pd = !a.no_pd;
  if (!a.spec_accept.empty() || !a.draft.empty() || a.draft_layers) {
    if (!a.rate) throw InputError("--spec-accept: speculative decoding is searched for a serving load: give --rate");
    AdviseSpeculative sp;
    sp.accept = a.spec_accept;
    sp.draft = a.draft;
    sp.draft_layers = a.draft_layers;
    sp.blocks = count_list(a.spec_blocks, "--spec-blocks", 64);
    q.speculative = sp;
  }
  q.context = parse_tokens(a.ctx, "--ctx-size");
  if (q.context < 2 || q.context > kMaxContextTokens)
    throw InputError(fmt::format("--ctx-size: {} is out of range 2..{}", q.context, kMaxContextTokens));
  q.requests = a.requests;
  if (q.requests == 0 || q.requests > kMaxConcurrentRequests)
    throw InputError(fmt::format("--parallel: {} is out of range 1..{}", a.requests, kMaxConcurrentRequests));
  q.top = a.top;
  if (q.top == 0) throw InputError("--top: must be at least 1");
  if (!q.rate_per_s && (q.slo.any() || q.slo.rejection_max))
    throw InputError("--slo-*: service levels need a load: give --rate (requests per second)");
  return q;
}

std::string usd(std::optional<double> v) { return v ? fmt::format("{:.3g}", *v) : "-"; }

// One line per device of the plans shown: what their latencies rest on.
void print_bases(const std::vector<const std::vector<AdviseCandidate>*>& lists) {
  std::map<std::string, const AdviseCandidate*> by_hw;  // profile and engine
  for (const auto* list : lists)
    for (const AdviseCandidate& c : *list) by_hw.emplace(fmt::format("{} {}", c.hw, c.engine), &c);
  if (by_hw.empty()) return;
  fmt::print("\nlatencies rest on:\n");
  for (const auto& [hw, c] : by_hw) fmt::print("  {:<24} {}: {}\n", hw, c->basis, c->basis_note);
}

// The commands that start a ranked plan on its engine; none for the others.
Launch plan_launch(const AdviseCandidate& c) { return c.shape ? launch_commands(resolve_plan(c.plan), *c.shape) : Launch{}; }

Json candidate_json(const AdviseResult& r, const AdviseCandidate& c) {
  const Launch launch = plan_launch(c);
  Json j{{"hw", c.hw},
         {"engine", c.engine},
         {"basis", c.basis},
         {"basis_note", c.basis_note},
         {"weights", c.weights},
         {"kv", kv_types_label(c.kv)},
         {"tp", c.tp},
         {"replicas", c.replicas},
         {"devices", c.devices()},
         {"max_batch", c.max_batch},
         {"spec_block", c.spec_block ? Json(*c.spec_block) : Json(nullptr)},
         {"offload", c.offload_every ? Json{{"part", "ffn"}, {"every", *c.offload_every}, {"link", c.offload_link},
                                            {"bytes_per_round", c.offload_bytes}, {"round_ms", c.offload_round_s * 1e3}}
                                      : Json(nullptr)},
         {"pd", c.pd_prefill ? Json{{"prefill_replicas", *c.pd_prefill}, {"decode_replicas", *c.pd_decode}, {"link", c.pd_link},
                                    {"transfer_ms", c.pd_transfer_s * 1e3}, {"prefill_ttft_p99_ms", c.pd_prefill_ttft_p99_s * 1e3}}
                             : Json(nullptr)},
         {"weight_bits", c.weight_bits},
         {"kv_bits", c.kv_bits},
         {"below_quality_floor", c.below_quality_floor},
         {"weights_bytes_per_device", c.weights_bytes_per_device},
         {"kv_capacity_tokens", c.kv_capacity_tokens},
         {"price_per_hour", c.price_per_hour ? Json(*c.price_per_hour) : Json(nullptr)},
         {"meets", c.meets},
         {"binding", c.binding},
         {"reasons", c.reasons},
         {"launch", launch.commands},
         {"launch_notes", launch.notes},
         {"plan", plan_to_json(c.plan)}};
  if (r.serving) {
    j[r.priced ? "cost_per_million_tokens_usd" : "device_hours_per_million_tokens"] = *c.cost_per_million_tokens;
    const ServingResult& s = *c.serving;
    const bool l = s.latency.has_value();
    j["ttft_p99_ms"] = l ? Json(s.latency->ttft_s.p99 * 1e3) : Json(nullptr);
    j["tpot_p99_ms"] = l ? Json(s.latency->tpot_s.p99 * 1e3) : Json(nullptr);
    j["e2el_p99_ms"] = l ? Json(s.latency->sojourn_s.p99 * 1e3) : Json(nullptr);
    // the distributions in every command's one shape (queue's, run's): ms, median and p90/p95/p99
    for (const auto& [key, member] : {std::pair{"ttft_ms", &ServingLatency::ttft_s}, std::pair{"tpot_ms", &ServingLatency::tpot_s},
                                      std::pair{"itl_ms", &ServingLatency::itl_s}, std::pair{"e2el_ms", &ServingLatency::sojourn_s}})
      j[key] = l && ((*s.latency).*member).count > 0 ? distribution_figures((*s.latency).*member, 1e3) : Json(nullptr);
    j["stable"] = s.stable;
    j["utilisation"] = s.utilisation;
    j["mean_batch"] = s.mean_batch;
    j["rejection_rate"] = s.rejection_rate;
    j["decode_tokens_per_s_batch1"] = c.decode_tokens_per_s;
  } else {
    j["context"] = c.context;
    j["max_context"] = c.max_context;
    j["headroom_bytes"] = c.headroom_bytes;
    j["decode_tokens_per_s"] = c.decode_tokens_per_s;
    j["gpu_layers"] = c.gpu_layers ? Json(*c.gpu_layers) : Json(nullptr);
  }
  return j;
}

Json result_json(const AdviseQuery& q, const AdviseResult& r) {
  Json j{{"mode", r.serving ? "serving" : "capacity"},
         {"model", q.model},
         {"hw", q.hw},
         {"space", r.space},
         {"simulations", r.simulations},
         {"priced", r.priced},
         {"notes", r.notes},
         {"pruned", Json::array()},
         {"ranked", Json::array()},
         {"frontier", Json::array()},
         {"near_misses", Json::array()}};
  for (const AdvisePruned& p : r.pruned)
    j["pruned"].push_back({{"reason", p.reason}, {"count", p.count}, {"example", p.example}, {"simulated", p.simulated}});
  for (const AdviseCandidate& c : r.ranked) j["ranked"].push_back(candidate_json(r, c));
  for (const AdviseCandidate& c : r.frontier) j["frontier"].push_back(candidate_json(r, c));
  for (const AdviseCandidate& c : r.near_misses) j["near_misses"].push_back(candidate_json(r, c));
  j["slo"] = Json::array();
  for (const SloBound& b : q.slo.bounds)
    j["slo"].push_back({{"metric", slo_metric_name(b.metric)}, {"percentile", b.percentile}, {"limit_ms", b.limit_s * 1e3}});
  if (r.serving)
    j["workload"] = {{"rate_per_s", *q.rate_per_s},
                     {"input_len", {{"min", q.prompt.min_tokens}, {"max", q.prompt.max_tokens}}},
                     {"output_len", {{"min", q.output.min_tokens}, {"max", q.output.max_tokens}}},
                     {"num_prompts", q.simulated_requests},
                     {"seed", q.seed}};
  else
    j["request"] = {{"context", q.context}, {"requests", q.requests}};
  return j;
}

std::string lengths(TokenLengths t) {
  return t.min_tokens == t.max_tokens ? fmt::format("{}", t.min_tokens) : fmt::format("{}..{}", t.min_tokens, t.max_tokens);
}

std::string slo_line(const AdviseQuery& q) {
  std::vector<std::string> parts;
  for (const SloBound& b : q.slo.bounds)
    parts.push_back(fmt::format("{} p{:g} <= {:g} ms", slo_metric_name(b.metric), b.percentile, b.limit_s * 1e3));
  if (q.slo.rejection_max) parts.push_back(fmt::format("rejections <= {:.3g}%", 100 * *q.slo.rejection_max));
  return fmt::format("{}", fmt::join(parts, ", "));
}

// The table's latencies at the percentile the SLOs ask (the highest of them; p99 without any).
std::string serving_table(const AdviseQuery& q, const AdviseResult& r, const std::vector<AdviseCandidate>& rows, bool ranked) {
  const std::string cost = r.priced ? "$/M tok" : "dev-h/M tok";
  double p = 0;
  for (const SloBound& b : q.slo.bounds) p = std::max(p, b.percentile);
  if (p == 0) p = 99;
  const std::string at = fmt::format(" p{:g}", p);
  TextTable t{{"#", "hardware", "engine", "weights", "KV", "spec", "TP", "replicas", "max batch", "TTFT" + at, "TPOT" + at,
               "E2EL" + at, "basis", cost, r.priced ? "$/h" : "devices"},
              {true, false, false, false, false, true, true, true, true, true, true, true, false, true, true},
              {}};
  uint64_t i = 0;
  for (const AdviseCandidate& c : rows) {
    ++i;
    const ServingResult& s = *c.serving;
    auto lat = [&](auto f) { return s.latency ? f(*s.latency) : std::string("-"); };
    t.rows.push_back({ranked ? fmt::format("{}", i) : "-", c.hw, c.engine.empty() ? "none" : c.engine,
                      fmt::format("{}{}{}", c.weights, c.offload_every ? fmt::format(" (FFN 1/{} off)", *c.offload_every) : "",
                                  c.below_quality_floor ? "*" : ""),
                      kv_types_label(c.kv), c.spec_block ? fmt::format("{}", *c.spec_block) : "-", fmt::format("{}", c.tp),
                      c.pd_prefill ? fmt::format("{}P+{}D", *c.pd_prefill, *c.pd_decode) : fmt::format("{}", c.replicas),
                      fmt::format("{}", c.max_batch),
                      lat([&](const ServingLatency& l) { return fmt::format("{:.3g} s", distribution_percentile(l.ttft_s, p)); }),
                      lat([&](const ServingLatency& l) { return fmt::format("{:.1f} ms", distribution_percentile(l.tpot_s, p) * 1e3); }),
                      lat([&](const ServingLatency& l) { return fmt::format("{:.3g} s", distribution_percentile(l.sojourn_s, p)); }),
                      c.basis,  // what the latencies rest on (the lines after the table say more)
                      usd(c.cost_per_million_tokens),
                      r.priced ? fmt::format("{:.2f}", *c.price_per_hour) : fmt::format("{}", c.devices())});
  }
  return t.render("  ");
}

std::string capacity_table(const AdviseResult& r) {
  TextTable t{{"#", "hardware", "engine", "weights", "KV", "TP", "layers", "context", "requests", "weights/device", "spare",
               "tok/s each"},
              {true, false, false, false, false, true, true, true, true, true, true, true},
              {}};
  uint64_t i = 0;
  for (const AdviseCandidate& c : r.ranked)
    t.rows.push_back({fmt::format("{}", ++i), c.hw, c.engine.empty() ? "none" : c.engine, fmt::format("{}{}", c.weights, c.below_quality_floor ? "*" : ""),
                      kv_types_label(c.kv), fmt::format("{}", c.tp),
                      c.gpu_layers ? fmt::format("{}/{}", *c.gpu_layers, c.layers) : "all", fmt::format("{}", c.context),
                      fmt::format("{}", c.max_batch),
                      gib(c.weights_bytes_per_device), gib(c.headroom_bytes), fmt::format("{:.1f}", c.decode_tokens_per_s)});
  return t.render("  ");
}

void print_pruned(const AdviseResult& r) {
  if (r.pruned.empty()) return;
  fmt::print("\nset aside:\n");
  for (const AdvisePruned& p : r.pruned) fmt::print("  {:<18} {:>5}  e.g. {}\n", p.reason, p.count, p.example);
}

// The frontier: cost against each latency the SLOs bound (TTFT and TPOT when none does), one
// panel each at the bound's percentile, the bound as a line; every plan meeting the SLOs as a
// marker, the cost / latency frontier joined and named by its rank, engine, device, weights and shape.
std::string frontier_svg(const AdviseQuery& q, const AdviseResult& r) {
  std::vector<std::pair<SloMetric, double>> axes;  // metric, percentile (the highest bound on it)
  for (const SloBound& b : q.slo.bounds) {
    auto at = std::find_if(axes.begin(), axes.end(), [&](const auto& a) { return a.first == b.metric; });
    if (at == axes.end())
      axes.emplace_back(b.metric, b.percentile);
    else
      at->second = std::max(at->second, b.percentile);
  }
  if (axes.empty()) axes = {{SloMetric::ttft, 99}, {SloMetric::tpot, 99}};
  auto name = [&](size_t rank, const AdviseCandidate& c) {
    const std::string shape = c.pd_prefill  ? fmt::format("{}P+{}D", *c.pd_prefill, *c.pd_decode)
                              : c.replicas > 1 ? fmt::format("{} x TP{}", c.replicas, c.tp)
                                               : fmt::format("TP{}", c.tp);
    return fmt::format("#{} {} {} {} {}", rank + 1, c.engine.empty() ? "none" : c.engine, c.hw, c.weights, shape);
  };
  std::vector<LinePanel> panels;
  for (const auto& [metric, percentile] : axes) {
    // Ranked is cheapest first: a plan is on this panel's frontier when it is faster than every
    // cheaper one (of two at one cost, the faster); the recommendation is marked on its own.
    Series frontier{"cost / latency frontier", {}, {}, false}, others{"plans meeting the SLOs", {}, {}, true},
        chosen{"recommended (#1)", {}, {}, true};
    double fastest = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < r.ranked.size(); ++i) {
      const AdviseCandidate& c = r.ranked[i];
      if (!c.serving || !c.serving->latency || !c.cost_per_million_tokens) continue;
      const double cost = *c.cost_per_million_tokens;
      const double ms = 1e3 * distribution_percentile(slo_distribution(*c.serving->latency, metric), percentile);
      (i == 0 ? chosen : others).x.push_back(cost);
      (i == 0 ? chosen : others).y.push_back(ms);
      if (i == 0) chosen.labels.push_back(name(i, c));
      if (!(ms < fastest)) continue;
      fastest = ms;
      if (!frontier.x.empty() && frontier.x.back() == cost) {
        frontier.x.pop_back();
        frontier.y.pop_back();
        frontier.labels.pop_back();
      }
      frontier.x.push_back(cost);
      frontier.y.push_back(ms);
      frontier.labels.push_back(i == 0 ? "" : name(i, c));  // the recommendation's label is its own
    }
    LinePanel panel{r.priced ? "US dollars per million output tokens" : "device-hours per million output tokens",
                    fmt::format("{} p{:g} (ms)", slo_metric_name(metric), percentile), {others, frontier, chosen}};
    for (const SloBound& b : q.slo.bounds)
      if (b.metric == metric)
        panel.guides.push_back({fmt::format("SLO: {} p{:g} <= {:g} ms", slo_metric_name(metric), b.percentile, b.limit_s * 1e3),
                                b.limit_s * 1e3});
    panels.push_back(std::move(panel));
  }
  return svg_line_panels(fmt::format("{}: {:g} req/s, cost against the latencies the SLOs bound", q.model, *q.rate_per_s),
                         panels);
}

// The winner, as this machine can execute it: the same weight and KV precision in a type the
// CPU runtime has (Q8_0 for 8-bit, Q4_0 for 4-bit), a model scaled to about 150M parameters, one
// device. A serving search's winner keeps its load: Poisson arrivals at the rate that fills this
// machine's batch (at most 4) as the winner's simulation fills its own (load.in_system; report
// solves the rate on the profile it probes), its engine's scheduling policy, and its mean prompt
// and output scaled to at most 128 and 32 tokens; a capacity answer runs its batch closed.
// Returns what changed, in words.
std::string verify_plan_for_cpu(const AdviseQuery& q, const AdviseCandidate& c, Plan& plan) {
  plan = c.plan;
  const std::string w = c.weights;
  // ':pure': every tensor of that type (llama.cpp's recipes keep some, e.g. the output head, at
  // types the CPU runtime does not multiply)
  plan.weights = w == "BF16" || w == "F16"  ? w
                 : c.weight_bits >= 6       ? "Q8_0:pure"
                 : c.weight_bits >= 3.5     ? "Q4_0:pure"
                                            : "Q2_K:pure";
  auto kv_cpu = [](GgmlType t) {
    const double bits = ggml_type_info(t).bits_per_value();
    return bits >= 16 ? t : bits >= 8 ? GgmlType::Q8_0 : GgmlType::Q4_0;
  };
  plan.kv = {kv_cpu(c.kv.k), kv_cpu(c.kv.v)};
  const ModelSpec full = load_model(plan.model);
  const double target = 150e6, params = static_cast<double>(parameter_count(full).total);
  double scale = 1.0;
  if (params > target) {
    double lo = kMinModelScale, hi = 1.0;
    for (int i = 0; i < 30; ++i) {
      const double mid = std::sqrt(lo * hi);
      (static_cast<double>(parameter_count(scale_model_spec(full, mid, "scale")).total) > target ? hi : lo) = mid;
    }
    scale = lo;
  }
  plan.scale = std::round(scale * 1000) / 1000;
  if (plan.scale < kMinModelScale) plan.scale = kMinModelScale;
  plan.hw = "h200";  // report --probe replaces it with this machine's profile
  plan.hw_inline.reset();
  plan.tp = 1;
  plan.deadline_s.reset();
  // The levers the CPU run does not reproduce at this scale: said, not silently dropped.
  std::vector<std::string> left;
  if (plan.speculative) left.push_back(fmt::format("speculative decoding (block {})", *c.spec_block));
  if (plan.offload) left.push_back("the offload");
  if (c.pd_prefill) left.push_back("the prefill/decode split (one colocated server)");
  if (c.tp > 1) left.push_back(fmt::format("TP {} (one device)", c.tp));
  if (c.replicas > 1 && !c.pd_prefill) left.push_back(fmt::format("{} replicas (one, at its share of the rate)", c.replicas));
  if (q.deadline_s) left.push_back("the deadline");
  plan.speculative.reset();
  plan.offload.reset();
  const uint64_t batch = std::min<uint64_t>(c.max_batch, 4);
  std::string load_words;
  if (c.serving && c.serving->latency && q.rate_per_s) {
    // Lengths: the means, scaled by one factor so that the prompt : output ratio stays.
    auto mean = [](TokenLengths t) { return 0.5 * static_cast<double>(t.min_tokens + t.max_tokens); };
    const double factor = std::min({1.0, 128 / mean(q.prompt), 32 / mean(q.output)});
    const uint64_t prompt = std::max<uint64_t>(8, std::llround(mean(q.prompt) * factor));
    plan.output = std::max<uint64_t>(4, std::llround(mean(q.output) * factor));
    plan.context = prompt + plan.output;
    // The winner's batch as full as its simulation kept it (queue included), at most 0.8 of this
    // one's: near saturation a CPU run of a few dozen requests says little.
    const double occupancy = c.serving->latency->mean_in_system / static_cast<double>(c.max_batch);
    LoadPlan load;
    load.in_system = std::round(std::clamp(occupancy, 0.125, 0.8) * static_cast<double>(batch) * 100) / 100;
    load.simulate = true;
    load.requests = 24;
    load.max_batch = batch;
    plan.load = load;
    plan.requests = batch;
    // The engine's step budget (chunked prefill) scaled with the prompts; its batch limit this one.
    if (!c.engine.empty() && c.engine != "llama.cpp") {
      const EnginePolicy policy = engine_policy(c.engine, load_hw_profile(c.hw), c.plan.engine_settings);
      if (policy.step_token_budget)
        plan.engine_settings.max_num_batched_tokens =
            std::max<uint64_t>(plan.context, std::llround(static_cast<double>(*policy.step_token_budget) * factor));
      plan.engine_settings.max_num_seqs = batch;
    }
    load_words = fmt::format("Poisson arrivals keeping {:.2g} of {} in the system as #1's simulation keeps {:.3g} of {} "
                             "({} scheduling), prompts of {} and outputs of {} tokens (the means{})",
                             *load.in_system, batch, c.serving->latency->mean_in_system, c.max_batch,
                             c.engine.empty() ? "no engine's" : c.engine + "'s", prompt, plan.output,
                             factor < 1 ? fmt::format(" x {:.3g}", factor) : "");
  } else {
    plan.requests = batch;
    plan.context = 96;
    plan.output = 32;
    plan.load.reset();
    load_words = fmt::format("{} x {} tokens ({} generated), closed batch", plan.requests, plan.context, plan.output);
  }
  const std::string without = left.empty() ? "" : fmt::format("; without {}: not run here", fmt::join(left, ", "));
  return fmt::format("{} at scale {:g} ({} parameters), weights {}{}, KV {}, {}, one device{}", c.plan.model, plan.scale,
                     parameter_count(scale_model_spec(full, plan.scale, "scale")).total, plan.weights,
                     plan.weights != c.weights ? fmt::format(" for {}", c.weights) : "", kv_types_label(plan.kv), load_words,
                     without);
}

// ... and what to fill in beside them.
void print_launch(const AdviseCandidate& c) {
  const Launch l = plan_launch(c);
  if (l.commands.empty()) return;
  fmt::print("  launch:\n");
  for (const std::string& command : l.commands) fmt::print("    {}\n", command);
  for (const std::string& note : l.notes) fmt::print("    ({})\n", note);
}

void print_serving(const AdviseQuery& q, const AdviseResult& r, double seconds) {
  fmt::print("advise: {}, {:g} req/s (Poisson), prompt {} tokens, output {} tokens; SLO {}\n", q.model, *q.rate_per_s,
             lengths(q.prompt), lengths(q.output), slo_line(q));
  uint64_t pruned = 0;
  for (const AdvisePruned& p : r.pruned) pruned += p.count;
  fmt::print("searched {} on {}: {} set aside ({} by closed-form bounds before any simulation), {} "
             "simulations of {} requests; {:.2f} s\n",
             count_of(r.space, "configuration"), fmt::join(q.hw, ", "), pruned,
             pruned - std::accumulate(r.pruned.begin(), r.pruned.end(), uint64_t{0},
                                      [](uint64_t s, const AdvisePruned& p) { return s + (p.simulated ? p.count : 0); }),
             r.simulations, q.simulated_requests, seconds);
  if (!r.priced) fmt::print("no prices given: costs are device-hours per million output tokens (--price NAME=USD)\n");
  if (r.ranked.empty()) {
    fmt::print("\nNO PLAN MEETS THE SLOs within {} devices.\n", q.max_devices);
    if (!r.near_misses.empty()) {
      fmt::print("closest:\n{}", serving_table(q, r, r.near_misses, false));
      for (const AdviseCandidate& c : r.near_misses) fmt::print("  {} {} {}: {}\n", c.hw, c.weights, kv_types_label(c.kv), c.binding);
    }
  } else {
    fmt::print("\ncheapest plans meeting the SLOs (cost per million output tokens at the offered rate):\n{}",
               serving_table(q, r, r.ranked, true));
    if (std::any_of(r.ranked.begin(), r.ranked.end(), [](const AdviseCandidate& c) { return c.below_quality_floor; }))
      fmt::print("  * below the quality floor ({})\n", kAdviseQualityFloor);
    for (size_t i = 0; i < std::min<size_t>(3, r.ranked.size()); ++i) {
      fmt::print("\nwhy #{}:\n", i + 1);
      for (const std::string& reason : r.ranked[i].reasons) fmt::print("  - {}\n", reason);
      print_launch(r.ranked[i]);
    }
    fmt::print("\nPareto frontier (each cheaper than every faster plan), cost against p99 E2EL:\n");
    for (const AdviseCandidate& c : r.frontier)
      fmt::print("  {:>8} {:>8.3g} s  {}\n", usd(c.cost_per_million_tokens), c.serving->latency->sojourn_s.p99,
                 advise_plan_label(c));
  }
  print_bases({&r.ranked, &r.near_misses});
  print_pruned(r);
  for (const std::string& n : r.notes) fmt::print("note: {}\n", n);
}

void print_capacity(const AdviseQuery& q, const AdviseResult& r, double seconds) {
  fmt::print("advise: {}, {} x {} tokens on {}; {}, {:.2f} s\n", q.model, count_of(q.requests, "request"), q.context,
             fmt::join(q.hw, ", "), count_of(r.space, "configuration"), seconds);
  for (const std::string& n : r.notes) fmt::print("{}\n", n);
  if (r.ranked.empty()) {
    fmt::print("\nNOTHING FITS, at any context: each weight type with its reserves fills the memory\n");
  } else {
    fmt::print("\n{}\n", r.ranked.front().context >= q.context ? "plans that fit, best quality first:" : "the longest contexts that fit, best quality first:");
    fmt::print("{}", capacity_table(r));
    if (std::any_of(r.ranked.begin(), r.ranked.end(), [](const AdviseCandidate& c) { return c.gpu_layers; }))
      fmt::print("  layers N/M: llama.cpp's -ngl N, the rest in host memory; such splits come after the plans wholly on the "
                 "device, fastest first\n");
    if (std::any_of(r.ranked.begin(), r.ranked.end(), [](const AdviseCandidate& c) { return c.below_quality_floor; }))
      fmt::print("  * below the quality floor ({})\n", kAdviseQualityFloor);
    fmt::print("\nwhy #1:\n");
    for (const std::string& reason : r.ranked.front().reasons) fmt::print("  - {}\n", reason);
    print_launch(r.ranked.front());
  }
  print_bases({&r.ranked});
  print_pruned(r);
}

void run_advise(const AdviseArgs& a) {
  const AdviseQuery q = advise_query(a);
  if (!a.svg.empty()) {
    if (!q.rate_per_s) throw InputError("--svg: the frontier is drawn for a serving search: give --rate");
    check_output_path(a.svg, "--svg");
  }
  if (a.verify) {
    check_output_path(a.verify_plan, "--verify-plan");
    if (!plan_verifier())
      throw InputError("--verify: this build has no runtime (configure with -DINFER_PLAN_RUNTIME=ON, as tools/setup.sh test does)");
  }
  if (!a.emit.empty() && (a.verify || a.out.json()))
    throw InputError("--emit k8s: the manifest is the whole output; leave --json and --verify out");
  const auto start = std::chrono::steady_clock::now();
  const AdviseResult r = advise(q);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!a.emit.empty()) {  // the winner's manifest alone, for kubectl apply -f -
    if (r.ranked.empty() || !r.ranked.front().meets) {
      fmt::print(stderr, "advise: no plan meets the request, so there is no manifest to emit (run without --emit to see why)\n");
      throw ExitCode{kDoesNotFitExitCode};
    }
    const AdviseCandidate& c = r.ranked.front();
    const ResolvedPlan rp = resolve_plan(c.plan);
    fmt::print("{}", k8s_manifest(rp, *c.shape, launch_commands(rp, *c.shape)));
    return;
  }
  if (a.out.json()) {
    print_json(result_json(q, r));
  } else if (r.serving) {
    print_serving(q, r, seconds);
  } else {
    print_capacity(q, r, seconds);
  }
  if (!a.svg.empty()) write_text_file(a.svg, frontier_svg(q, r), "--svg");
  const bool answered = !r.ranked.empty() && r.ranked.front().meets;
  if (a.verify) {
    if (r.ranked.empty()) throw InputError("--verify: no plan to verify");
    Plan plan;
    const std::string what = verify_plan_for_cpu(q, r.ranked.front(), plan);
    write_text_file(a.verify_plan, json_text(plan_to_json(plan)) + "\n", "--verify-plan");
    fmt::print(a.out.json() ? stderr : stdout, "\nverify #1 on this machine ({}): {}; plan written to {}\n\n", a.backend, what,
               a.verify_plan);
    std::fflush(stdout);
    plan_verifier()(a.verify_plan, a.backend);
  }
  if (!answered) throw ExitCode{kDoesNotFitExitCode};
}

}  // namespace

void add_advise_command(CLI::App& app) {
  auto a = std::make_shared<AdviseArgs>();
  CLI::App* cmd = app.add_subcommand(
      "advise",
      "The cheapest deployment meeting your SLOs at a request rate (with --rate), or the best-quality plan that fits "
      "a context and a number of requests (without), with the reasons");
  cmd->add_option("--model,-m", a->model, "Model: built-in name or config.json (default qwen3-8b)")->type_name("NAME|PATH");
  cmd->add_option("--hw", a->hw, "Candidate hardware, comma-separated profile names or paths (default h200)")
      ->type_name("HW[,HW...]")->delimiter(',');
  cmd->add_option("--price", a->prices,
                  "US dollars per device-hour, over the profile's price_per_hour: NAME=USD, comma-separated "
                  "(e.g. --price h100-sxm=2.49,a100-80gb=1.29)")
      ->type_name("NAME=USD[,...]")->delimiter(',');
  cmd->add_option("--engine", a->engine,
                  "The engine that serves the plans: llama.cpp, vllm, sglang or trtllm (its memory beside weights and "
                  "KV, its step model, its scheduling, and only the weight and KV types, splits and speculation it "
                  "runs); any (the default): every engine that runs a configuration on the device and has a step "
                  "model there, each plan naming its own; none: weights, KV and the profile's reserves alone on the "
                  "datasheet ceiling (the SPEC's budget)")
      ->check(CLI::IsMember({"any", "none", "llama.cpp", "vllm", "sglang", "trtllm"}))->type_name("NAME");
  cmd->add_option("--weights,-w", a->weights,
                  "Candidate weight types, most bits first (default BF16,FP8,Q8_0,Q6_K,Q5_K_M,Q4_K_M,AWQ_INT4_G128,"
                  "Q3_K_M,Q2_K; llama.cpp's or vLLM's with --engine)")
      ->type_name("TYPE[,TYPE...]")->delimiter(',');
  cmd->add_option("--kv", a->kv, "Candidate KV cache types, most bits first, each tried with the engines that have it (default "
                  "bf16,fp8,q8_0,q4_0; f16,q8_0,q4_0 with --engine llama.cpp, its default first; bf16,fp8 with vllm, sglang or trtllm)")
      ->type_name("TYPE[,TYPE...]")->delimiter(',');
  cmd->add_option("--exclude", a->exclude,
                  "Weight types never to propose (a quality floor of your own; by default types under 4 bits are "
                  "proposed only when nothing above them works)")
      ->type_name("TYPE[,TYPE...]")->delimiter(',');
  cmd->add_option("--exclude-kv", a->exclude_kv,
                  "KV types never to propose (by default those under 8 bits are proposed only when nothing above works)")
      ->type_name("TYPE[,TYPE...]")->delimiter(',');
  cmd->add_option("--tp", a->tp, "Tensor-parallel sizes to try (default 1,2,4,8 with --rate, else 1)")->type_name("N[,N...]");
  cmd->add_option("--tp-link", a->tp_link,
                 "The link every tensor-parallel candidate's all-reduce crosses, by name (hwprofiles/links: "
                 "pcie-gen5-x16, nvlink-4, ...) or a link JSON path; default each profile's device link (h100-pcie's is "
                 "its optional NVLink bridge: cards without one, --tp-link pcie-gen5-x16)")
      ->type_name("NAME|PATH");
  cmd->add_option("--max-batch", a->max_batch, "Running-request limits to try (default 8,16,32,64,128,256)")->type_name("N[,N...]");
  cmd->add_option("--max-devices", a->max_devices, "Devices at most, tensor parallel x replicas (default 64)")
      ->check(kNonNegativeCount)->type_name("N");
  cmd->add_option("--rate", a->rate, "Arrivals per second (Poisson): ask for the cheapest plan meeting the --slo-* flags")
      ->check(kArrivalRate)->type_name("REQ/S");
  cmd->add_option("--input-len,-p,--prompt", a->prompt, "Prompt tokens: N, or MIN:MAX uniform (default 512)")->type_name("TOKENS");
  cmd->add_option("--output-len,-n,--output", a->output, "Output tokens: N, or MIN:MAX uniform (default 256)")->type_name("TOKENS");
  cmd->add_option("--num-prompts", a->num_prompts, "Requests per simulation (default 400; a p99 needs 100)")
      ->check(kNonNegativeCount)->type_name("N");
  cmd->add_option("--seed", a->seed, "Seed of the arrivals and lengths (default 1)")->check(kNonNegativeCount)->type_name("N");
  cmd->add_option("--deadline", a->deadline, "Reject at arrival a request predicted to finish later than this, in s (default none)")
      ->check(kPositiveSeconds)->type_name("S");
  for (const auto& [metric, what] : {std::pair{"ttft", "time to first token"}, std::pair{"tpot", "time per output token"},
                                      std::pair{"itl", "inter-token latency (every gap)"},
                                      std::pair{"e2el", "end-to-end latency"}})
    for (const char* p : {"p50", "p90", "p95", "p99"}) {
      const std::string flag = fmt::format("--slo-{}-{}", metric, p);
      cmd->add_option(flag, a->slo[flag],
                      fmt::format("SLO: the {} {} at most this: 500ms, 2s (a bare number is ms, as vLLM's --goodput)", p, what))
          ->type_name("TIME");
    }
  cmd->add_option("--goodput", a->goodput,
                  "vLLM bench's form, KEY:MS ...: ttft:500 tpot:50 (e2el too); each limit is met at p99 (vLLM counts "
                  "the requests within all of them)")
      ->type_name("KEY:MS ...");
  cmd->add_option("--slo-reject", a->slo_reject, "SLO: most rejected arrivals with --deadline, a fraction 0..1")
      ->check(kFraction)->type_name("FRACTION");
  cmd->add_option("--spec-accept", a->spec_accept,
                  "Also search speculative decoding: the draft's acceptance rate (one, or one per position; "
                  "measure yours with the spec command or a report of a speculative plan)")
      ->type_name("RATE[,RATE...]")->delimiter(',')->check(kFraction);
  cmd->add_option("--draft", a->draft, "With --spec-accept: the draft model (same vocabulary)")->type_name("NAME|PATH");
  cmd->add_option("--draft-layers", a->draft_layers, "With --spec-accept: the draft is the target's first N layers and its head")
      ->check(kNonNegativeCount)->type_name("N");
  cmd->add_option("--spec-blocks", a->spec_blocks, "With --spec-accept: block lengths to try (default 2,4,6)")->type_name("N[,N...]");
  cmd->add_option("--emit", a->emit,
                  "k8s: print the cheapest plan's Kubernetes manifest instead of the report (a Deployment per server "
                  "role, a LeaderWorkerSet when it spans nodes), for kubectl apply -f -")
      ->check(CLI::IsMember({"k8s"}))->type_name("k8s");
  cmd->add_flag("--no-pd", a->no_pd,
                "Leave prefill/decode splits out of the search (by default tried where the profile has a device or node "
                "link: P prefill replicas, D decode replicas)");
  cmd->add_option("--ctx-size,-c,--ctx", a->ctx, "Without --rate: tokens per request (default 8192)")->type_name("TOKENS");
  cmd->add_option("--parallel,--requests", a->requests, "Without --rate: concurrent requests, llama.cpp's -np (default 1)")
      ->check(kNonNegativeCount)->type_name("N");
  cmd->add_option("--top", a->top, "Plans listed (default 10)")->check(kNonNegativeCount)->type_name("N");
  cmd->add_option("--svg", a->svg, "Write the cost / latency frontier as an SVG chart to this file: one panel per latency the SLOs bound (TTFT and "
                              "TPOT without SLOs) at the bound's percentile, the SLO as a line, frontier plans named")->type_name("FILE");
  cmd->add_flag("--verify", a->verify,
                "Execute the top plan on this machine with `report` (the CPU: the model scaled to ~150M parameters "
                "and the nearest types it runs) under its own load: Poisson arrivals filling a batch of at most 4 as "
                "the winner's simulation fills its own, its engine's scheduling, the mean lengths scaled to at most "
                "128 + 32 tokens; prints predicted against measured and what it leaves out");
  cmd->add_option("--verify-plan", a->verify_plan, "Where --verify writes the plan it runs (default advise-verify.json)")
      ->type_name("FILE");
  cmd->add_option("--backend", a->backend, "--verify's backend: cpu or cuda (default cpu)")
      ->check(CLI::IsMember({"cpu", "cuda"}))->type_name("NAME");
  a->out.add_to(*cmd, false);
  cmd->footer(
      "The search: every hardware x weights x KV x tensor-parallel x max-batch configuration (each also split into\n"
      "prefill and decode pools, and with --spec-accept speculative; weights that do not fit offload FFN layers over\n"
      "the host link), on every engine that runs it (--engine), is fitted, bounded in closed form (memory; one\n"
      "decode step against the TPOT and ITL SLOs; the prefill of the prompt at the SLO's percentile against the\n"
      "TTFT SLO; the replicas the arrivals' work needs; cheaper and faster plans\n"
      "already found), and the rest simulated (continuous batching, Poisson arrivals) at the fewest replicas\n"
      "meeting every SLO. Costs are per million output tokens at the offered rate, at the profiles' price_per_hour\n"
      "(an assumption every built-in profile states with its source and date: cloud on-demand rates, or for devices no\n"
      "cloud rents a list price over three years) or --price. SLOs are any of TTFT, TPOT, ITL and E2EL at p50,\n"
      "p90, p95 or p99, in ms as vLLM writes them (--slo-ttft-p95 1000ms, --goodput ttft:1000 tpot:40). Types under 4-bit weights or 8-bit KV are\n"
      "proposed only when nothing above meets the request, and are marked *.\n\n"
      "Exit status: 0 a plan meets the request; 1 none does (the closest plans, or the longest contexts that fit,\n"
      "are listed); 2 bad input.\n\n"
      "Examples:\n"
      "  infer-plan advise -m llama-3.1-70b --hw h100-sxm,h200,a100-80gb --rate 5 -p 512:2048 -n 128:512 \\\n"
      "      --slo-ttft-p99 2s --slo-tpot-p99 50ms\n"
      "  infer-plan advise -m llama-3.1-8b --hw h100-sxm --rate 8 --slo-ttft-p95 1000ms --slo-tpot-p95 40ms --engine vllm\n"
      "  infer-plan advise -m qwen3-235b-a22b --hw tests/data/profile_m2_max_seed.json -c 32K -np 1\n"
      "                                                # what fits a 96 GB Mac, and why not 32K\n"
      "  infer-plan advise -m qwen3-8b --hw h200 --rate 4 --slo-tpot-p99 30ms --verify");
  cmd->callback([a] { run_advise(*a); });
}

}  // namespace infer_plan::apps
