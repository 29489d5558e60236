// plan.json keys: model, scale, hw, weights, weights_size, kv {k, v} or "kv": "q8_0", context, output,
// requests, tp, reserves {name: size}. Ranges are checked here so the CLI and files agree.
#include "planner/plan/plan.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <functional>

#include "planner/core/input_error.hpp"
#include "planner/core/limits.hpp"
#include "planner/core/units.hpp"
#include "planner/cost/speculative.hpp"

namespace infer_plan {

namespace {

std::string kv_type_name(GgmlType t) {
  std::string name(ggml_type_info(t).name);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return name;
}

}  // namespace

Json plan_to_json(const Plan& plan) {
  const Plan d;
  Json j = Json::object();
  j["model"] = plan.model;
  if (plan.scale != d.scale) j["scale"] = plan.scale;
  if (plan.hw_inline) j["hw"] = *plan.hw_inline;
  else j["hw"] = plan.hw;
  if (!plan.engine.empty()) j["engine"] = plan.engine;
  if (!plan.weights.empty()) j["weights"] = plan.weights;
  if (plan.weights_bytes) j["weights_size"] = fmt::format("{} B", *plan.weights_bytes);
  if (plan.kv.k == plan.kv.v) j["kv"] = kv_type_name(plan.kv.k);
  else j["kv"] = Json{{"k", kv_type_name(plan.kv.k)}, {"v", kv_type_name(plan.kv.v)}};
  j["context"] = plan.context;
  j["output"] = plan.output;
  j["requests"] = plan.requests;
  if (plan.tp != d.tp) j["tp"] = plan.tp;
  if (!plan.tp_link.empty()) j["tp_link"] = plan.tp_link;
  if (plan.gpu_layers_auto) j["gpu_layers"] = "auto";
  else if (plan.gpu_layers) j["gpu_layers"] = *plan.gpu_layers;
  if (plan.cpu_moe_layers)
    j["cpu_moe_layers"] = *plan.cpu_moe_layers == Plan::kAllLayers ? Json("all") : Json(*plan.cpu_moe_layers);
  if (!plan.override_tensor.empty()) j["override_tensor"] = tensor_overrides_text(plan.override_tensor);
  if (plan.host_memory_bytes) j["host_memory"] = fmt::format("{} B", *plan.host_memory_bytes);
  if (plan.gpu_wired_limit_bytes) j["gpu_wired_limit"] = fmt::format("{} B", *plan.gpu_wired_limit_bytes);
  if (!plan.tensor_split.empty()) j["tensor_split"] = plan.tensor_split;
  if (!plan.devices.empty()) j["devices"] = plan.devices;
  if (plan.host_bandwidth_bytes_per_s) j["host_bandwidth"] = fmt::format("{:.0f} B/s", *plan.host_bandwidth_bytes_per_s);
  if (!plan.reserves.empty()) {
    Json r = Json::object();
    for (const NamedBytes& b : plan.reserves) r[b.name] = fmt::format("{} B", b.bytes);
    j["reserves"] = r;
  }
  if (plan.engine_settings.gpu_memory_utilization)
    j["gpu_memory_utilization"] = *plan.engine_settings.gpu_memory_utilization;
  if (plan.engine_settings.mem_fraction_static) j["mem_fraction_static"] = *plan.engine_settings.mem_fraction_static;
  if (plan.engine_settings.free_gpu_memory_fraction)
    j["free_gpu_memory_fraction"] = *plan.engine_settings.free_gpu_memory_fraction;
  if (plan.engine_settings.flash_attention) j["flash_attn"] = *plan.engine_settings.flash_attention ? "on" : "off";
  if (plan.engine_settings.ubatch) j["ubatch"] = *plan.engine_settings.ubatch;
  if (plan.engine_settings.batch) j["batch"] = *plan.engine_settings.batch;
  if (plan.engine_settings.max_num_seqs) j["max_num_seqs"] = *plan.engine_settings.max_num_seqs;
  if (plan.engine_settings.max_num_batched_tokens) j["max_num_batched_tokens"] = *plan.engine_settings.max_num_batched_tokens;
  if (plan.engine_settings.engine_version) j["engine_version"] = *plan.engine_settings.engine_version;
  if (plan.engine_settings.enforce_eager) j["enforce_eager"] = true;
  if (plan.engine_settings.cuda_graph_max_bs) j["cuda_graph_max_bs"] = *plan.engine_settings.cuda_graph_max_bs;
  if (plan.engine_settings.enable_prefix_caching) j["enable_prefix_caching"] = *plan.engine_settings.enable_prefix_caching;
  if (plan.decode_ms) j["decode_ms"] = *plan.decode_ms;
  if (plan.deadline_s) j["deadline_s"] = *plan.deadline_s;
  if (plan.offload)
  {
    j["offload"] = Json{{"part", plan.offload->part}, {"every", plan.offload->every}, {"buffers", plan.offload->buffers}};
    if (!plan.offload->link.empty()) j["offload"]["link"] = plan.offload->link;
  }
  if (plan.speculative) {
    const SpeculativePlan& sp = *plan.speculative;
    Json o{{"accept", sp.accept}, {"temperature", sp.temperature}, {"max_block", sp.max_block}, {"group", sp.group}};
    if (!sp.draft.empty()) o["draft"] = sp.draft;
    if (sp.draft_layers) o["draft_layers"] = *sp.draft_layers;
    if (sp.verify_ms) o["verify_ms"] = *sp.verify_ms;
    if (sp.draft_ms) o["draft_ms"] = *sp.draft_ms;
    if (sp.block) o["block"] = *sp.block;
    j["speculative"] = o;
  }
  if (plan.load) {
    const LoadPlan& lp = *plan.load;
    Json o{{"simulate", lp.simulate}, {"requests", lp.requests}, {"seed", lp.seed}, {"max_batch", lp.max_batch}};
    if (lp.shared_prefix) o["shared_prefix"] = lp.shared_prefix;
    if (lp.rate_per_s) o["rate_per_s"] = *lp.rate_per_s;
    if (lp.sojourn_s) o["sojourn_s"] = *lp.sojourn_s;
    if (lp.in_system) o["in_system"] = *lp.in_system;
    j["load"] = o;
  }
  if (plan.pd)
    j["pd"] = Json{{"prefill_workers", plan.pd->prefill_workers}, {"decode_workers", plan.pd->decode_workers},
                   {"link", plan.pd->link}, {"link_scale", plan.pd->link_scale}, {"stream", plan.pd->stream}};
  return j;
}

std::optional<bool> flash_attention_setting(std::string_view value, std::string_view what) {
  if (value == "on") return true;
  if (value == "off") return false;
  if (value == "auto") return std::nullopt;
  throw InputError(fmt::format("{}: '{}' is not a flash attention setting; expected on, off or auto", what, value));
}

Plan plan_from_json(const Json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(fmt::format("{}: expected a JSON object", where));
  check_known_fields(j, {"model", "scale", "hw", "engine", "weights", "weights_size", "kv", "context", "output",
                         "requests", "tp", "reserves", "decode_ms", "deadline_s", "offload", "speculative", "load",
                         "pd", "gpu_layers", "cpu_moe_layers", "host_memory", "host_bandwidth", "gpu_memory_utilization", "max_num_seqs",
                         "max_num_batched_tokens", "gpu_wired_limit", "tensor_split", "devices", "flash_attn", "ubatch", "batch",
                         "mem_fraction_static", "free_gpu_memory_fraction", "engine_version", "enforce_eager",
                         "enable_prefix_caching", "override_tensor", "cuda_graph_max_bs", "tp_link"},
                     where);
  Plan p;
  p.model = optional_string(j, "model", where).value_or(p.model);
  p.scale = optional_number(j, "scale", where).value_or(p.scale);
  if (auto it = j.find("hw"); it != j.end() && it->is_object()) {
    p.hw = "inline";
    p.hw_inline = *it;
  } else {
    p.hw = optional_string(j, "hw", where).value_or(p.hw);
  }
  p.engine = optional_string(j, "engine", where).value_or(p.engine);
  p.weights = optional_string(j, "weights", where).value_or(p.weights);
  if (auto size = optional_string(j, "weights_size", where))
    p.weights_bytes = parse_bytes(*size, where + ": field 'weights_size'");
  if (j.contains("kv")) {
    const Json& kv = j.at("kv");
    if (kv.is_string()) {
      p.kv.k = p.kv.v = kv_cache_type(kv.get<std::string>(), where + ": field 'kv'").type;
    } else if (kv.is_object()) {
      if (auto k = optional_string(kv, "k", where + ": kv")) p.kv.k = kv_cache_type(*k, where + ": field 'kv.k'").type;
      if (auto v = optional_string(kv, "v", where + ": kv")) p.kv.v = kv_cache_type(*v, where + ": field 'kv.v'").type;
    } else {
      throw InputError(fmt::format("{}: field 'kv' must be a type name or {{\"k\": ..., \"v\": ...}}", where));
    }
  }
  p.context = optional_uint(j, "context", where).value_or(p.context);
  p.output = optional_uint(j, "output", where).value_or(p.output);
  p.requests = optional_uint(j, "requests", where).value_or(p.requests);
  p.tp = optional_uint(j, "tp", where).value_or(p.tp);
  p.tp_link = optional_string(j, "tp_link", where).value_or("");
  if (auto it = j.find("gpu_layers"); it != j.end() && !it->is_null()) {
    if (it->is_string() && (it->get<std::string>() == "auto" || it->get<std::string>() == "all")) {
      p.gpu_layers_auto = it->get<std::string>() == "auto";
    } else if (!it->is_number_unsigned()) {
      throw InputError(fmt::format("{}: field 'gpu_layers' is {}; expected a layer count >= 0, \"all\" or \"auto\"",
                                   where, it->dump()));
    } else {
      p.gpu_layers = it->get<uint64_t>();
    }
  }
  if (auto it = j.find("cpu_moe_layers"); it != j.end() && !it->is_null()) {
    if (it->is_string() && it->get<std::string>() == "all")
      p.cpu_moe_layers = Plan::kAllLayers;
    else if (it->is_number_unsigned())
      p.cpu_moe_layers = it->get<uint64_t>();
    else
      throw InputError(fmt::format("{}: field 'cpu_moe_layers' is {}; expected a layer count >= 0 or \"all\"", where,
                                   it->dump()));
  }
  if (const auto it = j.find("override_tensor"); it != j.end()) {  // "A=CPU,B=CPU" or ["A=CPU", "B=CPU"]
    const std::string what = where + ": field 'override_tensor'";
    if (it->is_string()) {
      p.override_tensor = parse_tensor_overrides(it->get<std::string>(), what);
    } else if (it->is_array()) {
      for (const Json& v : *it) {
        if (!v.is_string())
          throw InputError(fmt::format("{} holds {}; expected strings REGEX=BUFFER", what, v.dump()));
        for (TensorOverride& o : parse_tensor_overrides(v.get<std::string>(), what)) p.override_tensor.push_back(std::move(o));
      }
    } else {
      throw InputError(fmt::format("{} is {}; expected \"REGEX=BUFFER\" or a list of them", what, it->dump()));
    }
  }
  if (auto size = optional_string(j, "host_memory", where))
    p.host_memory_bytes = parse_bytes(*size, where + ": field 'host_memory'");
  if (const auto it = j.find("tensor_split"); it != j.end()) {
    if (it->is_string()) {
      p.tensor_split = parse_tensor_split(it->get<std::string>(), where + ": field 'tensor_split'");
    } else if (it->is_array()) {
      for (const Json& v : *it) {
        if (!v.is_number())
          throw InputError(fmt::format("{}: field 'tensor_split' holds {}; expected numbers, each device's share",
                                       where, v.dump()));
        p.tensor_split.push_back(v.get<double>());
      }
    } else {
      throw InputError(fmt::format("{}: field 'tensor_split' is {}; expected a list of shares or \"3,1\"", where,
                                   it->dump()));
    }
  }
  if (const auto it = j.find("devices"); it != j.end()) {
    if (!it->is_array() || it->empty() || !std::all_of(it->begin(), it->end(), [](const Json& v) { return v.is_string(); }))
      throw InputError(fmt::format("{}: field 'devices' is {}; expected a list of hardware profile names, e.g. "
                                   "[\"rtx-4090\", \"rtx-3090\"]", where, it->dump()));
    for (const Json& v : *it) p.devices.push_back(v.get<std::string>());
    if (!j.contains("hw")) p.hw = p.devices.front();
    if (!j.contains("tp")) p.tp = p.devices.size();
  }
  if (auto size = optional_string(j, "gpu_wired_limit", where))
    p.gpu_wired_limit_bytes = parse_bytes(*size, where + ": field 'gpu_wired_limit'");
  if (auto rate = optional_string(j, "host_bandwidth", where))
    p.host_bandwidth_bytes_per_s = parse_rate(*rate, where + ": field 'host_bandwidth'");
  if (j.contains("reserves")) {
    const Json& r = require_object(j, "reserves", where);
    for (const auto& [name, value] : r.items()) {
      if (!value.is_string())
        throw InputError(fmt::format("{}: reserves.{} is {}; expected a size such as \"512 MiB\"", where, name, value.dump()));
      p.reserves.push_back({name, parse_bytes(value.get<std::string>(), where + ": reserves." + name)});
    }
  }
  p.engine_settings.gpu_memory_utilization = optional_number(j, "gpu_memory_utilization", where);
  p.engine_settings.max_num_seqs = optional_uint(j, "max_num_seqs", where);
  p.engine_settings.mem_fraction_static = optional_number(j, "mem_fraction_static", where);
  p.engine_settings.free_gpu_memory_fraction = optional_number(j, "free_gpu_memory_fraction", where);
  if (const auto fa = optional_string(j, "flash_attn", where))
    p.engine_settings.flash_attention = flash_attention_setting(*fa, where + ": field 'flash_attn'");
  p.engine_settings.ubatch = optional_uint(j, "ubatch", where);
  p.engine_settings.batch = optional_uint(j, "batch", where);
  p.engine_settings.max_num_batched_tokens = optional_uint(j, "max_num_batched_tokens", where);
  p.engine_settings.engine_version = optional_string(j, "engine_version", where);
  p.engine_settings.enforce_eager = optional_bool(j, "enforce_eager", where).value_or(false);
  p.engine_settings.enable_prefix_caching = optional_bool(j, "enable_prefix_caching", where);
  p.engine_settings.cuda_graph_max_bs = optional_uint(j, "cuda_graph_max_bs", where);
  p.decode_ms = optional_number(j, "decode_ms", where);
  p.deadline_s = optional_number(j, "deadline_s", where);
  if (j.contains("offload") && !j.at("offload").is_null()) {
    const std::string ow = where + ": offload";
    const Json& o = require_object(j, "offload", where);
    check_known_fields(o, {"part", "every", "buffers", "link"}, ow);
    OffloadPlan off;
    off.part = optional_string(o, "part", ow).value_or(off.part);
    off.every = optional_uint(o, "every", ow).value_or(off.every);
    off.buffers = optional_uint(o, "buffers", ow).value_or(off.buffers);
    off.link = optional_string(o, "link", ow).value_or("");
    p.offload = off;
  }
  if (j.contains("speculative") && !j.at("speculative").is_null()) {
    const std::string sw = where + ": speculative";
    const Json& o = require_object(j, "speculative", where);
    check_known_fields(o, {"accept", "draft", "draft_layers", "temperature", "verify_ms", "draft_ms", "max_block",
                           "group", "block"}, sw);
    SpeculativePlan sp;
    if (o.contains("accept")) {
      const Json& a = o.at("accept");
      sp.accept.clear();
      if (a.is_number()) sp.accept.push_back(a.get<double>());
      else if (a.is_array() && !a.empty() && std::all_of(a.begin(), a.end(), [](const Json& x) { return x.is_number(); }))
        for (const Json& x : a) sp.accept.push_back(x.get<double>());
      else
        throw InputError(fmt::format("{}: field 'accept' is {}; expected a rate in [0, 1] or a list of them", sw, a.dump()));
    }
    sp.draft = optional_string(o, "draft", sw).value_or("");
    sp.draft_layers = optional_uint(o, "draft_layers", sw);
    if (sp.draft_layers && *sp.draft_layers == 0)
      throw InputError(fmt::format("{}: field 'draft_layers' is 0; expected the number of the target's first layers the draft runs (>= 1)", sw));
    if (sp.draft_layers && !sp.draft.empty())
      throw InputError(fmt::format("{}: give 'draft' (a model) or 'draft_layers' (the target's first layers), not both", sw));
    const std::optional<double> temperature = optional_number(o, "temperature", sw);
    if (temperature && !(*temperature >= 0 && *temperature <= 100))
      throw InputError(fmt::format("{}: field 'temperature' is {}; expected 0 (greedy) or a positive temperature up to 100", sw, *temperature));
    sp.temperature = static_cast<float>(temperature.value_or(0.0));
    sp.verify_ms = optional_number(o, "verify_ms", sw);
    sp.draft_ms = optional_number(o, "draft_ms", sw);
    sp.max_block = optional_uint(o, "max_block", sw).value_or(sp.max_block);
    sp.group = optional_uint(o, "group", sw).value_or(sp.group);
    sp.block = optional_uint(o, "block", sw);
    if (sp.draft.empty() && !sp.draft_layers && (!sp.verify_ms || !sp.draft_ms))
      throw InputError(fmt::format("{}: give 'draft' (a model: times from the roofline), 'draft_layers' (the target's first "
                                   "layers as the draft), or both 'verify_ms' and 'draft_ms'", sw));
    p.speculative = sp;
  }
  if (j.contains("load") && !j.at("load").is_null()) {
    const std::string lw = where + ": load";
    const Json& o = require_object(j, "load", where);
    check_known_fields(o, {"rate_per_s", "sojourn_s", "in_system", "simulate", "requests", "seed", "max_batch",
                           "shared_prefix"}, lw);
    LoadPlan lp;
    lp.rate_per_s = optional_number(o, "rate_per_s", lw);
    lp.sojourn_s = optional_number(o, "sojourn_s", lw);
    lp.in_system = optional_number(o, "in_system", lw);
    lp.simulate = optional_bool(o, "simulate", lw).value_or(false);
    lp.requests = optional_uint(o, "requests", lw).value_or(lp.requests);
    lp.seed = optional_uint(o, "seed", lw).value_or(lp.seed);
    lp.max_batch = optional_uint(o, "max_batch", lw).value_or(lp.max_batch);
    lp.shared_prefix = optional_uint(o, "shared_prefix", lw).value_or(0);  // within the prompt: plan_serving_load
    if (lp.simulate && !lp.rate_per_s && !lp.in_system)
      throw InputError(fmt::format("{}: 'simulate' needs 'rate_per_s' (arrivals per second), or 'in_system' (the "
                                   "requests kept in the system on average; the rate is solved for it)", lw));
    p.load = lp;
  }
  if (j.contains("pd") && !j.at("pd").is_null()) {
    const std::string pw = where + ": pd";
    const Json& o = require_object(j, "pd", where);
    check_known_fields(o, {"prefill_workers", "decode_workers", "link", "link_scale", "stream"}, pw);
    PdPlan pd;
    pd.prefill_workers = optional_uint(o, "prefill_workers", pw).value_or(pd.prefill_workers);
    pd.decode_workers = optional_uint(o, "decode_workers", pw).value_or(pd.decode_workers);
    pd.link = optional_string(o, "link", pw).value_or(pd.link);
    pd.link_scale = optional_number(o, "link_scale", pw).value_or(pd.link_scale);
    pd.stream = optional_bool(o, "stream", pw).value_or(false);
    p.pd = pd;
  }
  validate_plan(p, where);
  return p;
}

void validate_plan(const Plan& p, const std::function<std::string(std::string_view field)>& name) {
  if (p.context == 0 || p.context > kMaxContextTokens)
    throw InputError(fmt::format("{}: {} tokens is out of range; expected 1 to {}", name("context"), p.context,
                                 kMaxContextTokens));
  if (p.requests == 0 || p.requests > kMaxConcurrentRequests)
    throw InputError(fmt::format("{}: {} is out of range; expected 1 to {} requests", name("requests"), p.requests,
                                 kMaxConcurrentRequests));
  if (p.output > kMaxContextTokens)
    throw InputError(fmt::format("{}: {} tokens is out of range; expected 0 to {}", name("output"), p.output,
                                 kMaxContextTokens));
  if (!(p.scale >= kMinModelScale && p.scale <= 1))
    throw InputError(fmt::format("{}: {} is out of range; expected a factor from {} to 1, e.g. 0.25", name("scale"),
                                 p.scale, kMinModelScale));
  if (p.tp == 0 || p.tp > kMaxTensorParallel)
    throw InputError(fmt::format("{}: {} is out of range; expected 1 to {} devices", name("tp"), p.tp, kMaxTensorParallel));
  if (!p.tp_link.empty() && p.tp < 2)
    throw InputError(fmt::format("{}: '{}' is the link between tensor-parallel devices, and the plan runs on one "
                                 "(tp 1); expected tp 2 or more", name("tp_link"), p.tp_link));
  if (p.load && (p.load->requests == 0 || p.load->requests > kMaxSimulatedRequests))
    throw InputError(fmt::format("{}: {} is out of range; expected 1 to {} simulated arrivals", name("load.requests"),
                                 p.load->requests, kMaxSimulatedRequests));
  if (p.load && (p.load->max_batch == 0 || p.load->max_batch > kMaxConcurrentRequests))
    throw InputError(fmt::format("{}: {} is out of range; expected 1 to {} running requests", name("load.max_batch"),
                                 p.load->max_batch, kMaxConcurrentRequests));
  // Times and rates: finite and positive (NaN fails every comparison, so test the range itself).
  auto in_range = [&](std::string_view field, const std::optional<double>& v, double hi, std::string_view unit) {
    if (v && !(*v > 0 && *v <= hi))
      throw InputError(fmt::format("{}: {} is out of range; expected a positive {} up to {:g}", name(field), *v, unit, hi));
  };
  in_range("decode_ms", p.decode_ms, kMaxTimeS * 1e3, "time in ms");
  in_range("gpu_memory_utilization", p.engine_settings.gpu_memory_utilization, 1.0, "fraction of the device's memory");
  in_range("mem_fraction_static", p.engine_settings.mem_fraction_static, 1.0, "fraction of the device's free memory");
  in_range("free_gpu_memory_fraction", p.engine_settings.free_gpu_memory_fraction, 1.0,
           "fraction of what weights and activations leave");
  if (const auto& n = p.engine_settings.max_num_seqs; n && (*n == 0 || *n > kMaxConcurrentRequests))
    throw InputError(fmt::format("{}: {} is out of range; expected 1 to {} running requests", name("max_num_seqs"), *n,
                                 kMaxConcurrentRequests));
  if (const auto& n = p.engine_settings.cuda_graph_max_bs; n && (*n == 0 || *n > kMaxConcurrentRequests))
    throw InputError(fmt::format("{}: {} is out of range; expected 1 to {} requests", name("cuda_graph_max_bs"), *n,
                                 kMaxConcurrentRequests));
  for (const auto& [field, n] : {std::pair{"ubatch", p.engine_settings.ubatch}, std::pair{"batch", p.engine_settings.batch}})
    if (n && (*n == 0 || *n > kMaxContextTokens))
      throw InputError(fmt::format("{}: {} is out of range; expected 1 to {} tokens", name(field), *n, kMaxContextTokens));
  if (const auto& v = p.engine_settings.engine_version; v && !engine_version_number(*v))
    throw InputError(fmt::format("{}: '{}' is not a version; expected MAJOR.MINOR as the engine prints it, e.g. 0.19 or "
                                 "0.20.1", name("engine_version"), *v));
  if (const auto& n = p.engine_settings.max_num_batched_tokens; n && (*n == 0 || *n > kMaxContextTokens))
    throw InputError(fmt::format("{}: {} is out of range; expected 1 to {} tokens per step", name("max_num_batched_tokens"),
                                 *n, kMaxContextTokens));
  in_range("host_bandwidth", p.host_bandwidth_bytes_per_s, kMaxRateBytesPerS, "rate in B/s");
  if (p.pd) {
    for (const auto& [field, n] : {std::pair{"pd.prefill_workers", p.pd->prefill_workers},
                                   std::pair{"pd.decode_workers", p.pd->decode_workers}})
      if (n == 0 || n > kMaxPdWorkers)
        throw InputError(fmt::format("{}: {} is out of range; expected 1 to {} workers", name(field), n, kMaxPdWorkers));
    in_range("pd.link_scale", p.pd->link_scale, 1e6, "factor on the link's bandwidth");
    if (!p.load || !p.load->rate_per_s)
      throw InputError(fmt::format("{}: a split is compared under a Poisson load; give load.rate_per_s", name("pd")));
  }
  if (p.host_memory_bytes && (*p.host_memory_bytes == 0 || *p.host_memory_bytes > kMaxBytes))
    throw InputError(fmt::format("{}: {} bytes is out of range; expected a positive size up to 1024 PiB",
                                 name("host_memory"), *p.host_memory_bytes));
  for (double share : p.tensor_split)
    if (!(share >= 0 && share <= 1e6))
      throw InputError(fmt::format("{}: share {} is out of range; expected 0 to 1e6", name("tensor_split"), share));
  if (!p.tensor_split.empty()) {
    double total = 0;
    for (double share : p.tensor_split) total += share;
    if (!(total > 0)) throw InputError(fmt::format("{}: every share is 0; expected one above 0", name("tensor_split")));
    if (p.tensor_split.size() != p.tp)
      throw InputError(fmt::format("{}: {} shares for {} devices (field 'tp'); expected one per device",
                                   name("tensor_split"), p.tensor_split.size(), p.tp));
  }
  if (!p.devices.empty()) {
    if (p.devices.size() != p.tp)
      throw InputError(fmt::format("{}: {} devices and {} {}; expected the same number", name("devices"),
                                   p.devices.size(), name("tp"), p.tp));
    if (p.devices.front() != p.hw)
      throw InputError(fmt::format("{}: the first device is {}, the plan's hw {}; the first of the list is the plan's "
                                   "device (field 'hw')", name("devices"), p.devices.front(), p.hw));
  }
  if (p.gpu_wired_limit_bytes && (*p.gpu_wired_limit_bytes == 0 || *p.gpu_wired_limit_bytes > kMaxBytes))
    throw InputError(fmt::format("{}: {} bytes is out of range; expected a positive size up to 1024 PiB",
                                 name("gpu_wired_limit"), *p.gpu_wired_limit_bytes));
  in_range("deadline_s", p.deadline_s, kMaxTimeS, "time in s");
  if (p.load) {
    in_range("load.rate_per_s", p.load->rate_per_s, kMaxArrivalRate, "rate in requests/s");
    in_range("load.sojourn_s", p.load->sojourn_s, kMaxTimeS, "time in s");
    in_range("load.in_system", p.load->in_system, static_cast<double>(kMaxConcurrentRequests), "number of requests");
  }
  if (p.speculative) {
    const SpeculativePlan& sp = *p.speculative;
    const SpecInputNames names{name("speculative.accept"),    name("speculative.verify_ms"),
                               name("speculative.draft_ms"),  name("decode_ms"),
                               name("speculative.max_block"), name("speculative.group")};
    validate_spec_rates(sp.accept, sp.max_block, sp.group, names);
    if (sp.block && (*sp.block == 0 || *sp.block > sp.max_block))
      throw InputError(fmt::format("{}: {} is out of range; expected a block length of 1 to {} ({})",
                                   name("speculative.block"), *sp.block, sp.max_block, name("speculative.max_block")));
    in_range("speculative.verify_ms", sp.verify_ms, kMaxTimeS * 1e3, "time in ms");
    in_range("speculative.draft_ms", sp.draft_ms, kMaxTimeS * 1e3, "time in ms");
  }
}

void validate_plan(const Plan& plan, std::string_view where) {
  validate_plan(plan, [where](std::string_view field) { return fmt::format("{}: field '{}'", where, field); });
}

std::vector<double> parse_tensor_split(const std::string& text, const std::string& what) {
  std::vector<double> shares;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size())
      throw InputError(fmt::format("{}: '{}' is not a share; expected numbers separated by commas, e.g. 3,1", what, item));
    shares.push_back(v);
    at = comma + 1;
  }
  return shares;
}

FitRequest fit_request(const Plan& plan) {
  return FitRequest{plan.tp, plan.context, plan.requests, plan.kv, plan.reserves, plan.engine, plan.engine_settings};
}

FitResult fit_memory(const ModelSpec& spec, const HwProfile& hw, const Plan& plan, uint64_t weights_bytes,
                     const std::string& weights_label, bool with_derivation, const OffloadMemory* offload,
                     const LayerSplit* split, const DeviceLayers* device) {
  validate_plan(plan, "plan");
  return fit_memory(spec, hw, fit_request(plan), weights_bytes, weights_label, with_derivation, offload, split, device);
}

}  // namespace infer_plan
