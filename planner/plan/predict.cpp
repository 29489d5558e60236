// A plan resolved once (its inputs, step model, fit and server), then predicted section by section.
#include "planner/plan/predict.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <fmt/format.h>
#include <tuple>

#include "planner/calibration/calibration.hpp"
#include "planner/calibration/serving_prior.hpp"
#include "planner/calibration/step_prior.hpp"
#include "planner/model/device_arch.hpp"
#include "planner/weights/gguf_reader.hpp"
#include "planner/cost/engine_capabilities.hpp"
#include "planner/cost/engine_memory.hpp"
#include "planner/plan/figures.hpp"
#include "planner/core/input_error.hpp"
#include "planner/cost/memory_fit.hpp"
#include "planner/plan/plan.hpp"
#include "planner/cost/offload.hpp"
#include "planner/cost/pd_disaggregation.hpp"
#include "planner/serving/littles_law.hpp"
#include "planner/serving/engine_policy.hpp"
#include "planner/serving/serving_sim.hpp"
#include "planner/cost/speculative.hpp"
#include "planner/model/model_scale.hpp"
#include "planner/core/units.hpp"

namespace infer_plan {

namespace {
ResolvedPlan resolve(const Plan& plan, const StepCalibration* steps);
}  // namespace

ResolvedPlan resolve_plan(const Plan& plan) { return resolve(plan, nullptr); }
ResolvedPlan resolve_plan(const Plan& plan, const StepCalibration& steps) { return resolve(plan, &steps); }

namespace {
ResolvedPlan resolve(const Plan& given, const StepCalibration* steps) {
  ResolvedPlan rp;
  rp.plan = given;
  const Plan& plan = rp.plan;  // its KV types gain the engine's state types below
  rp.spec = plan_model_spec(plan);
  if (plan.speculative) {  // the draft is checked with the plan, by every command that reads one
    const SpeculativePlan& sp = *plan.speculative;
    if (sp.draft_layers && *sp.draft_layers > rp.spec.layers)
      throw InputError(fmt::format("plan: field 'speculative.draft_layers' is {}; expected at most the target's {} layers",
                                   *sp.draft_layers, rp.spec.layers));
    if (!sp.draft.empty()) {
      try {
        (void)load_model(sp.draft);
      } catch (const InputError& e) {
        throw InputError(fmt::format("plan: field 'speculative.draft': {}", e.what()));
      }
    }
  }
  rp.hw = plan.hw_inline ? hw_profile_from_json(*plan.hw_inline, "inline", "plan: field 'hw'",
                                                [](const std::string& n) { return load_link(n); })
                         : load_hw_profile(plan.hw);
  if (!plan.tp_link.empty()) {  // the link the plan names, between its devices
    try {
      rp.hw.device_link = load_link(plan.tp_link);
    } catch (const InputError& e) {
      throw InputError(fmt::format("plan: field 'tp_link': {}", e.what()));
    }
  }
  rp.engine = plan.engine;
  if (steps) {
    (void)engine_memory(plan.engine, rp.spec, rp.hw, plan.context, plan.requests);  // a known engine
    rp.hw.calibration = *steps;
  } else if (plan.engine == kNoEngine) {
    rp.engine.clear();
    rp.hw.calibration.reset();
    rp.hw.uncalibrated_note = "engine none: the bare ceiling";
  } else if (!plan.engine.empty() && !(rp.hw.calibration && rp.hw.calibration->engine == plan.engine)) {
    // The engine's step model where published runs were fitted; else the ceiling, saying why
    // (fit still counts the engine's memory).
    (void)engine_memory(plan.engine, rp.spec, rp.hw, plan.context, plan.requests);  // a known engine
    rp.hw.calibration = engine_step_calibration(rp.hw, plan.engine);
    if (!rp.hw.calibration)
      rp.hw.uncalibrated_note = fmt::format("no {} calibration for {}: no published runs of it that can be fitted; built-in "
                                            "step models: llama.cpp (runs of {}, transferred to other devices), {} (their "
                                            "published serving runs); fit your own with `infer-plan calibrate`",
                                            plan.engine, rp.hw.name, fmt::join(builtin_calibration_names(), ", "),
                                            fmt::join(served_fit_engines(), ", "));
  }
  if (plan.gpu_wired_limit_bytes) {  // what `sysctl iogpu.wired_limit_mb` lets Metal wire, in place of its default
    if (!rp.hw.arch.starts_with("apple-"))
      throw InputError(fmt::format("plan: field 'gpu_wired_limit' is macOS's limit on what Apple silicon's GPU may wire; "
                                   "profile {} is {}", rp.hw.name,
                                   rp.hw.arch.empty() ? "of no stated arch" : "of arch " + rp.hw.arch));
    if (*plan.gpu_wired_limit_bytes > rp.hw.memory_capacity_bytes)
      throw InputError(fmt::format("plan: field 'gpu_wired_limit' is {}, more than {}'s {} of memory", format_bytes(
                                       *plan.gpu_wired_limit_bytes), rp.hw.name, format_bytes(rp.hw.memory_capacity_bytes)));
    rp.hw.memory_reserved_bytes = rp.hw.memory_capacity_bytes - *plan.gpu_wired_limit_bytes;
  }
  if (plan.host_memory_bytes || plan.host_bandwidth_bytes_per_s) {
    if (!rp.hw.host && !(plan.host_memory_bytes && plan.host_bandwidth_bytes_per_s))
      throw InputError(fmt::format("--host-memory and --host-bandwidth: profile {} has no 'host' section, so give both",
                                   rp.hw.name));
    HostProfile& host = rp.hw.host ? *rp.hw.host : rp.hw.host.emplace();
    if (plan.host_memory_bytes) {
      host.memory_capacity_bytes = *plan.host_memory_bytes;
      if (host.memory_reserved_bytes >= host.memory_capacity_bytes) host.memory_reserved_bytes = 0;
    }
    if (plan.host_bandwidth_bytes_per_s) {  // given as what the CPU achieves
      host.memory_bandwidth_bytes_per_s = *plan.host_bandwidth_bytes_per_s;
      host.memory_efficiency = 1.0;
    }
  }
  rp.weights = plan_weights(rp.spec, plan.weights, plan.weights_bytes);
  if (plan.engine.empty() && rp.hw.calibration) {
    rp.engine = rp.hw.calibration->engine;  // the profile's own (probe, calibrate)
  } else if (plan.engine.empty() && !steps) {
    std::tie(rp.engine, rp.engine_choice) = default_engine(rp.spec, rp.weights, rp.hw);
    // What only llama.cpp runs decides before the weights do: its KV types, its layer split and
    // flash-attention fields (a llama.cpp user's -ctk q8_0 -ngl 99 on a Hugging Face model).
    const EngineSettings& es = plan.engine_settings;
    const std::optional<std::string> kv_refused = engine_refuses_types(rp.engine, rp.weights.layout, plan.kv);
    const bool llama_fields = plan.gpu_layers || plan.gpu_layers_auto || plan.cpu_moe_layers || !plan.override_tensor.empty() ||
                              !plan.tensor_split.empty() || !plan.devices.empty() || es.flash_attention || es.ubatch || es.batch;
    if (rp.engine != "llama.cpp" && (kv_refused || llama_fields) &&
        !engine_refuses_types("llama.cpp", rp.weights.layout, plan.kv))
      std::tie(rp.engine, rp.engine_choice) = std::pair<std::string, std::string>{
          "llama.cpp", kv_refused ? fmt::format("{} KV is llama.cpp's", kv_types_label(plan.kv))
                                  : "the plan sets llama.cpp's own fields (layers on the device, flash attention, batch)"};
    rp.hw.calibration = engine_step_calibration(rp.hw, rp.engine);
    if (rp.hw.calibration)
      rp.hw.calibration->basis_note = fmt::format("{}{}engine {} chosen: {} (name an engine to choose one, none for the ceiling)",
                                                  rp.hw.calibration->basis_note,
                                                  rp.hw.calibration->basis_note.empty() ? "" : "; ", rp.engine,
                                                  rp.engine_choice);
    else
      rp.hw.uncalibrated_note = fmt::format("{} chosen: {}; no {} data to predict {} from", rp.engine,
                                            rp.engine_choice, rp.engine, rp.hw.name);
  }
  // llama.cpp's devices hold whole layers and run them one after another (-sm layer): a step takes
  // what one device holding every layer takes, and a hand-over per boundary (the overlap of a long
  // prompt's micro-batches across devices, llama.cpp's pipeline parallelism, is not counted).
  // A hybrid model's linear-attention state is kept as the engine keeps it.
  rp.plan.kv = with_state_types(plan.kv, rp.spec, rp.engine);
  const uint64_t step_tp = rp.engine == "llama.cpp" ? 1 : plan.tp;
  rp.roofline = std::make_unique<Roofline>(rp.spec, rp.weights.layout, plan.kv, rp.hw, step_tp, rp.weights.scale);
  if (rp.engine == "llama.cpp") {
    rp.roofline->split_layers(plan.tp);
    rp.roofline->set_prefill_micro_batch(llama_cpp_micro_batch(plan.engine_settings));
  }
  const std::optional<OffloadMemory> offloaded = plan_offload_memory(plan, rp.spec, rp.weights);
  std::optional<uint64_t> gpu_layers = plan.gpu_layers;
  // auto: the most layers that fit; with no host to hold the rest, every layer (the plain fit says
  // whether that fits, and its suggestions what would).
  const uint64_t cpu_moe = std::min(plan.cpu_moe_layers.value_or(0), rp.spec.layers);
  if (cpu_moe && !rp.spec.is_moe())
    throw InputError(fmt::format("plan: field 'cpu_moe_layers' keeps the routed experts of the first layers in host "
                                 "memory; {} has no experts", rp.spec.name));
  if (!plan.override_tensor.empty() && rp.engine != "llama.cpp")
    throw InputError(fmt::format("plan: field 'override_tensor' places tensors by name as llama.cpp's tensor overrides do; the "
                                 "plan's engine is {} (field 'engine': llama.cpp)",
                                 rp.engine.empty() ? "not named" : rp.engine));
  if (!plan.override_tensor.empty() && plan.tp > 1)
    throw InputError("plan: field 'override_tensor' over several devices (field 'tp') is not modelled; one device and "
                     "its host");
  const HostTensors host_tensors_ = host_tensors(rp.weights, cpu_moe, plan.override_tensor);
  if (plan.gpu_layers_auto && rp.hw.host)
    gpu_layers = auto_gpu_layers(rp.spec, rp.hw, fit_request(plan), rp.weights, host_tensors_);
  if ((gpu_layers && *gpu_layers < split_layer_count(rp.spec)) || host_tensors_.any_host())
    rp.split = layer_split(rp.spec, rp.weights, gpu_layers.value_or(split_layer_count(rp.spec)), host_tensors_);
  if (!plan.tensor_split.empty() && rp.engine != "llama.cpp")
    throw InputError(fmt::format("plan: field 'tensor_split' is llama.cpp's share of the layers per device; the plan's "
                                 "engine is {} (field 'engine': llama.cpp)", rp.engine.empty() ? "not named" : rp.engine));
  // llama.cpp over several devices: each its layers, as llama.cpp deals them (by -ts, else by each
  // device's memory); the figures are the device's with the least to spare (its memory less its weights
  // and its layers' KV at the plan's context).
  if (!plan.devices.empty() && rp.engine != "llama.cpp")
    throw InputError(fmt::format("plan: field 'devices' lists different devices, each holding whole layers, as llama.cpp "
                                 "splits a model; the plan's engine is {}, whose tensor parallel takes identical devices "
                                 "(fields 'hw' and 'tp')", rp.engine.empty() ? "not named" : rp.engine));
  std::vector<HwProfile> listed;  // the devices after the first when they differ (the first is rp.hw)
  for (size_t i = 1; i < plan.devices.size(); ++i) {
    HwProfile& d = listed.emplace_back(load_hw_profile(plan.devices[i]));
    d.calibration = engine_step_calibration(d, rp.engine);
  }
  const auto device_of = [&](size_t i) -> const HwProfile& { return i == 0 || listed.empty() ? rp.hw : listed[i - 1]; };
  std::optional<DeviceLayers> device;
  const HwProfile* device_hw = &rp.hw;
  if (rp.engine == "llama.cpp" && plan.tp > 1 && !rp.split && !offloaded) {
    std::vector<double> shares = plan.tensor_split;
    if (shares.empty())
      for (uint64_t i = 0; i < plan.tp; ++i)
        shares.push_back(static_cast<double>(device_of(i).usable_bytes()));
    const std::vector<DeviceLayers> dealt = device_layers(rp.spec, rp.weights, shares);
    int64_t least = 0;
    for (size_t i = 0; i < dealt.size(); ++i) {
      const HwProfile& hw = device_of(i);
      const int64_t spare = static_cast<int64_t>(hw.usable_bytes()) - static_cast<int64_t>(dealt[i].weights_bytes) -
                            static_cast<int64_t>(kv_bytes_for_context(dealt[i].part, plan.kv, plan.context) * plan.requests);
      if (!device || spare < least) {
        least = spare;
        device = dealt[i];
        device_hw = &hw;
      }
    }
    if (!listed.empty()) {  // each device its layers at its own speed
      double total = 0;  // the devices' weights (the token embeddings stay in host memory)
      for (const DeviceLayers& d : dealt) total += static_cast<double>(d.weights_bytes);
      std::vector<std::pair<double, std::shared_ptr<const Roofline>>> others;
      for (size_t i = 1; i < dealt.size(); ++i) {
        auto other = std::make_shared<Roofline>(rp.spec, rp.weights.layout, plan.kv, device_of(i), 1, rp.weights.scale);
        other->set_prefill_micro_batch(llama_cpp_micro_batch(plan.engine_settings));
        others.emplace_back(static_cast<double>(dealt[i].weights_bytes) / total, std::move(other));
      }
      rp.roofline->mix_devices(static_cast<double>(dealt[0].weights_bytes) / total, std::move(others));
    }
  }
  const auto fit_of = [&](const Plan& p) {
    FitResult f = fit_memory(rp.spec, *device_hw, p, rp.weights.bytes, rp.weights.label, true,
                             offloaded ? &*offloaded : nullptr, rp.split ? &*rp.split : nullptr, device ? &*device : nullptr);
    if (!listed.empty() && device) f.device_note = fmt::format("{}: {}", device_hw->name, f.device_note);
    return f;
  };
  rp.fit = fit_of(plan);
  rp.pool_fit = rp.fit;
  if (!rp.engine_choice.empty()) {  // chosen from the weights: the fit counts none of its memory, its server all
    Plan counted = plan;
    counted.engine = rp.engine;
    try {
      rp.pool_fit = fit_of(counted);
    } catch (const InputError& e) {  // the plan's fields are not the chosen engine's: its memory stays uncounted
      rp.pool_fit.engine_assumption += fmt::format("; {}'s memory not counted: {}", rp.engine, e.what());
    }
    rp.fit.engine_assumption += fmt::format("; the step times are {}'s, chosen: {} (name it as the plan's engine to "
                                            "count its memory too)", rp.engine, rp.engine_choice);
  }
  const Roofline* rl = rp.roofline.get();
  if (rp.split) {  // the host's layers at the host's bandwidth (fit_memory checked that there is a host)
    const LayerSplit split = *rp.split;
    const ModelSpec spec = rp.spec;
    const HostProfile host = *rp.hw.host;
    rp.server.decode_iteration_s = [rl, split, spec, host](uint64_t batch, uint64_t context_tokens) {
      return split_step_s(rl->decode_step(batch, context_tokens / std::max<uint64_t>(batch, 1)), split, spec, host);
    };
    rp.server.prefill_s = [rl, split, spec, host](uint64_t prompt) {
      return split_step_s(rl->prefill(prompt), split, spec, host);
    };
  } else {
    rp.server.decode_iteration_s = [rl](uint64_t batch, uint64_t context_tokens) {
      return rl->decode_step(batch, context_tokens / std::max<uint64_t>(batch, 1)).time_s;
    };
    rp.server.prefill_s = [rl](uint64_t prompt) { return rl->prefill(prompt).time_s; };
  }
  rp.server.kv_capacity_tokens = rp.pool_fit.kv_tokens_in(rp.pool_fit.kv_bytes);
  rp.server.max_batch = plan.load ? plan.load->max_batch : plan.requests;
  if (rp.hw.calibration) rp.server.first_token_s = rp.hw.calibration->first_token_s;
  if (plan.engine_settings.gpu_memory_utilization && plan.engine != "vllm")
    throw InputError(fmt::format("plan: field 'gpu_memory_utilization' is vLLM's share of the device's memory; the plan's "
                                 "engine is {} (field 'engine': vllm)", plan.engine.empty() ? "not named" : plan.engine));
  const EngineSettings& es = plan.engine_settings;
  if (es.mem_fraction_static && plan.engine != "sglang")
    throw InputError(fmt::format("plan: field 'mem_fraction_static' is SGLang's share of the device's memory for weights "
                                 "and KV; the plan's engine is {} (field 'engine': sglang)",
                                 plan.engine.empty() ? "not named" : plan.engine));
  if (es.cuda_graph_max_bs && plan.engine != "sglang")
    throw InputError(fmt::format("plan: field 'cuda_graph_max_bs' is SGLang's largest batch with a CUDA graph (it sizes "
                                 "SGLang's reserve); the plan's engine is {} (field 'engine': sglang)",
                                 plan.engine.empty() ? "not named" : plan.engine));
  if (es.free_gpu_memory_fraction && plan.engine != "trtllm")
    throw InputError(fmt::format("plan: field 'free_gpu_memory_fraction' is TensorRT-LLM's share for its KV pool of what "
                                 "weights and activations leave; the plan's engine is {} (field 'engine': trtllm)",
                                 plan.engine.empty() ? "not named" : plan.engine));
  if ((es.engine_version || es.enforce_eager) && plan.engine != "vllm")
    throw InputError(fmt::format("plan: fields 'engine_version' and 'enforce_eager' are vLLM's (its version decides how "
                                 "it counts its CUDA graphs and whether it chunks prefills; the other engines are one "
                                 "version's here); the "
                                 "plan's engine is {} (field 'engine': vllm)",
                                 plan.engine.empty() ? "not named" : plan.engine));
  if ((es.flash_attention || es.ubatch || es.batch) && plan.engine != "llama.cpp")
    throw InputError(fmt::format("plan: fields 'flash_attn', 'ubatch' and 'batch' are llama.cpp's (they size its compute "
                                 "buffer and the micro-batches its prompts run in); the plan's engine is {} (field 'engine': llama.cpp)",
                                 plan.engine.empty() ? "not named" : plan.engine));
  const EnginePolicy policy = engine_policy(rp.engine, rp.hw, plan.engine_settings);
  rp.server.step_token_budget = policy.step_token_budget;
  rp.server.mix_decodes = policy.mix_decodes;
  rp.server.chunk_prompts = policy.chunk_prompts;
  rp.server.kv_page_tokens = policy.kv_page_tokens;
  rp.server.kv_on_demand = policy.kv_on_demand;
  rp.server.prefix_caching = policy.prefix_caching;
  rp.server.prefill_pass_tokens = policy.prefill_pass_tokens;
  return rp;
}
}  // namespace

std::pair<std::string, std::string> default_engine(const ModelSpec& spec, const PlanWeights& weights,
                                                   const HwProfile& hw) {
  const DeviceArch* arch = find_device_arch(hw.arch);
  const bool gpu = !arch || arch->vendor == "nvidia" || arch->vendor == "amd";
  if (is_gguf_path(spec.source)) return {"llama.cpp", "the model is a .gguf file"};
  if (weights.layout.file_type == "MXFP4_EXPERTS" && gpu) return {"vllm", "MXFP4_EXPERTS is a checkpoint format"};
  bool quantized = false;
  for (const TensorPlacement& t : weights.layout.tensors) {
    const GgmlTypeInfo& info = ggml_type_info(t.type);
    if (!info.gguf)
      return {gpu ? "vllm" : "llama.cpp",
              gpu ? fmt::format("{} is a checkpoint format", info.name)
                  : fmt::format("{} is a checkpoint format, but vLLM does not serve {} devices", info.name, arch->vendor)};
    quantized = quantized || info.quantized();
  }
  if (quantized) return {"llama.cpp", fmt::format("{} is a GGUF type", weights.label)};
  if (!gpu) return {"llama.cpp", fmt::format("vLLM does not serve {} devices", arch->vendor)};
  return {"vllm", fmt::format("{} weights of a Hugging Face model", weights.label)};
}

void require_engine_runs(const ResolvedPlan& rp) {
  const EngineCapabilities* e = find_engine_capabilities(rp.engine);
  if (!e) return;
  if (const std::optional<std::string> why = engine_refuses_types(rp.engine, rp.weights.layout, rp.plan.kv))
    throw InputError(fmt::format("plan: {} (fields 'engine', 'weights', 'kv'{})", *why,
                                 rp.plan.engine.empty() ? "; the engine was chosen: " + rp.engine_choice : ""));
  if (const std::optional<std::string> why = engine_refuses_device(rp.engine, rp.hw.arch))
    throw InputError(fmt::format("plan: {} (fields 'engine', 'hw')", *why));
  if (rp.plan.offload && !e->weight_offload)
    throw InputError(fmt::format("plan: {} keeps no weights in host memory to copy in each step (field 'offload'){}",
                                 e->title, e->host_layers ? "; it computes host layers on the CPU (field 'gpu_layers')" : ""));
}

LlamaCppFitChoice llama_cpp_fit(const Plan& plan, const LlamaCppFit& fit) {
  if (plan.engine != "llama.cpp")
    throw InputError(fmt::format("llama.cpp's automatic fit: the plan's engine is {} (field 'engine': llama.cpp)",
                                 plan.engine.empty() ? "not named" : plan.engine));
  if (plan.tp > 1)
    throw InputError("llama.cpp's automatic fit over several devices (field 'tp'; it sets tensor_split too) is not "
                     "modelled; one device only");
  if (!plan.override_tensor.empty())  // llama.cpp's fit leaves a plan with -ot as it is (common/fit.cpp)
    throw InputError("llama.cpp's automatic fit: with tensors placed by name (field 'override_tensor') llama.cpp's "
                     "fit changes nothing; leave one of the two");
  LlamaCppFitChoice c{plan, false, false, false, {}};
  const auto target = static_cast<int64_t>(fit.target_free_bytes);
  auto spare = [&](const Plan& p) {  // what the device keeps free, and whether the host holds its part
    const FitResult f = resolve_plan(p).fit;
    return (!f.host || f.host->fits) ? f.headroom_bytes : std::numeric_limits<int64_t>::min();
  };
  auto meets = [&](const Plan& p) { return spare(p) >= target; };
  const ModelSpec spec = plan_model_spec(plan);
  const bool host = resolve_plan(plan).hw.host.has_value();  // where experts and layers could go
  if (!fit.context_given && spec.max_context) {
    c.plan.context = spec.max_context;
    c.steps.push_back(fmt::format("context not given: {}'s trained context, {} tokens per slot", spec.name, spec.max_context));
  }
  if (meets(c.plan)) {
    c.met = true;
    c.steps.push_back(fmt::format("every layer on the device with {} free: no change", format_bytes(fit.target_free_bytes)));
    return c;
  }
  if (!fit.context_given && c.plan.context > fit.min_context) {
    constexpr uint64_t kStep = 256;  // llama.cpp rounds the context it picks down to this
    Plan p = c.plan;
    const uint64_t hi_step = c.plan.context / kStep;
    uint64_t lo = std::min((fit.min_context + kStep - 1) / kStep, hi_step), hi = hi_step;  // in steps; lo may not fit
    p.context = lo * kStep;
    if (meets(p)) {
      while (lo + 1 < hi) {
        const uint64_t mid = lo + (hi - lo) / 2;
        p.context = mid * kStep;
        (meets(p) ? lo : hi) = mid;
      }
      c.plan.context = lo * kStep;
      c.context_changed = c.met = true;
      c.steps.push_back(fmt::format("context reduced to {} tokens, the longest that leaves {} free", c.plan.context,
                                    format_bytes(fit.target_free_bytes)));
      return c;
    }
    c.plan.context = fit.min_context;
    c.context_changed = true;
    c.steps.push_back(fmt::format("context reduced to its floor, {} tokens; not enough alone", fit.min_context));
  }
  if (fit.layers_given) {
    c.steps.push_back("layers set by the plan (gpu_layers, cpu_moe_layers): llama.cpp's fit leaves them, and stops short");
    return c;
  }
  if (!host) {
    c.steps.push_back("no host memory in the profile for experts or layers (host_memory, host_bandwidth)");
    return c;
  }
  const uint64_t layers = spec.layers;
  if (spec.is_moe()) {  // the routed experts of the first layers to host memory, the fewest that meet it
    Plan p = c.plan;
    p.cpu_moe_layers = layers;
    if (meets(p)) {
      uint64_t lo = 0, hi = layers;  // hi meets, lo (0: none) does not
      while (lo + 1 < hi) {
        const uint64_t mid = lo + (hi - lo) / 2;
        p.cpu_moe_layers = mid;
        (meets(p) ? hi : lo) = mid;
      }
      c.plan.cpu_moe_layers = hi;
      c.layers_changed = c.met = true;
      c.steps.push_back(fmt::format("the routed experts of the first {} of {} layers in host memory", hi, layers));
      return c;
    }
    c.plan.cpu_moe_layers = Plan::kAllLayers;
    c.steps.push_back("every layer's routed experts in host memory; not enough alone");
  }
  const uint64_t slots = split_layer_count(spec);  // the layers and the output head
  Plan p = c.plan;
  for (uint64_t n = slots; n-- > 0;) {  // the most layers on the device that meet it
    p.gpu_layers = n;
    if (meets(p)) {
      c.plan.gpu_layers = n;
      c.layers_changed = c.met = true;
      c.steps.push_back(fmt::format("{} of {} layers on the device", n, slots));
      return c;
    }
  }
  c.steps.push_back(fmt::format("not even no layer on the device leaves {} free", format_bytes(fit.target_free_bytes)));
  return c;
}

std::string devices_label(const ResolvedPlan& rp) {
  if (rp.engine != "llama.cpp") return fmt::format("tensor parallel over {} devices", rp.plan.tp);
  return rp.plan.devices.empty()
             ? fmt::format("layers split over {} devices (llama.cpp runs them one after another)", rp.plan.tp)
             : fmt::format("layers split over {} (llama.cpp runs them one after another, each at its own speed)",
                           fmt::join(rp.plan.devices, ", "));
}

std::string step_band_text(const StepCost& c) {
  return c.calibrated ? fmt::format("{:.2f}-{:.2f} ms", c.time_lo_s * 1e3, c.time_hi_s * 1e3) : std::string();
}

std::string step_model_name(const ResolvedPlan& rp) {
  const RooflineRates& r = rp.roofline->rates();
  if (r.basis == "ceiling" || !rp.hw.calibration) return "roofline ceiling";
  return fmt::format("{} step model ({})", rp.hw.calibration->engine, r.basis);
}

ServingLoad plan_serving_load(const Plan& plan) {
  if (!plan.load || !plan.load->rate_per_s) throw InputError("plan: load.rate_per_s is needed to simulate serving");
  if (plan.output == 0 || plan.output >= plan.context)
    throw InputError(fmt::format("plan: output {} must be at least 1 and less than context {} (the prompt "
                                 "is context - output tokens)", plan.output, plan.context));
  ServingLoad load;
  load.rate_per_s = *plan.load->rate_per_s;
  load.requests = plan.load->requests;
  load.prompt_tokens = TokenLengths::fixed(plan.context - plan.output);
  load.output_tokens = TokenLengths::fixed(plan.output);
  load.shared_prefix_tokens = plan.load->shared_prefix;
  if (load.shared_prefix_tokens > plan.context - plan.output)
    throw InputError(fmt::format("plan: load.shared_prefix {} tokens is longer than the prompt (context {} - output {})",
                                 load.shared_prefix_tokens, plan.context, plan.output));
  load.deadline_s = plan.deadline_s;
  load.seed = plan.load->seed;
  return load;
}

double solve_serving_rate(const ResolvedPlan& rp) {
  if (!rp.plan.load || !rp.plan.load->in_system) throw InputError("plan: load.in_system is needed to solve for a rate");
  const double target = *rp.plan.load->in_system;
  Plan plan = rp.plan;
  auto in_system_at = [&](double rate) {
    plan.load->rate_per_s = rate;
    const ServingResult r = simulate_serving(rp.server, plan_serving_load(plan));
    return r.latency ? r.latency->mean_in_system : 0.0;
  };
  // The same seed at every rate scales one set of arrival gaps (common random numbers), so what is
  // in the system grows with the rate: bracket it by doubling, then bisect the logarithm.
  // Past some rate the load's requests all but arrive at once and what is in the system stops
  // growing: a doubling that adds less than 0.5% ends the search there.
  double lo = 1, hi = 1;
  for (int i = 0; i < 60 && in_system_at(lo) > target; ++i) lo /= 2;
  double at_hi = in_system_at(hi);
  for (int i = 0; i < 60 && at_hi < target; ++i) {
    const double next = in_system_at(hi * 2);
    hi *= 2;
    const bool saturated = at_hi > 0 && next < at_hi * 1.005;
    at_hi = next;
    if (saturated) break;
  }
  if (at_hi < target * 0.99)
    throw InputError(fmt::format("plan: load.in_system {:g}: no arrival rate keeps that many in the system (at {:.3g} "
                                 "req/s, {:.3g}); at most the load's {} requests, or the server's batch and queue",
                                 target, hi, at_hi, plan.load->requests));
  for (int i = 0; i < 60 && hi / lo > 1.0001; ++i) {
    const double mid = std::sqrt(lo * hi);
    (in_system_at(mid) < target ? lo : hi) = mid;
  }
  const double rate = std::sqrt(lo * hi);
  if (std::abs(in_system_at(rate) - target) > 0.02 * target + 0.1)
    throw InputError(fmt::format("plan: load.in_system {:g}: the nearest the simulation comes is {:.3g} (at {:.3g} req/s)",
                                 target, in_system_at(rate), rate));
  return rate;
}

ModelSpec plan_model_spec(const Plan& plan) {
  return engine_model_spec(scale_model_spec(load_model(plan.model), plan.scale, "scale"), plan.engine,
                           plan.engine_settings);
}

double plan_iteration_s(const ResolvedPlan& rp, std::string* source) {
  if (rp.plan.decode_ms) {
    if (source) *source = "given";
    return *rp.plan.decode_ms / 1e3;
  }
  const StepCost step = rp.roofline->decode_step(rp.plan.requests, rp.plan.context);
  // the basis named, and a calibrated figure's band beside it: never a ceiling shown as a prediction
  if (source)
    *source = step.calibrated ? fmt::format("{}, {}, batch {}", step_model_name(rp), step_band_text(step), rp.plan.requests)
                              : fmt::format("{}, batch {}", step_model_name(rp), rp.plan.requests);
  return step.time_s;
}

std::unique_ptr<Roofline> plan_draft_roofline(const ResolvedPlan& rp) {
  const SpeculativePlan& sp = *rp.plan.speculative;
  if (sp.draft_layers) {  // at most the target's layers: resolve_plan checked
    return std::make_unique<Roofline>(first_layers_spec(rp.spec, *sp.draft_layers),
                                      first_layers_layout(rp.weights.layout, *sp.draft_layers), rp.plan.kv, rp.hw,
                                      rp.roofline->tp(), rp.weights.scale);
  }
  if (sp.draft.empty() || (sp.verify_ms && sp.draft_ms)) return nullptr;
  Plan draft_plan = rp.plan;
  draft_plan.model = sp.draft;
  draft_plan.weights_bytes.reset();
  draft_plan.offload.reset();
  draft_plan.speculative.reset();
  ResolvedPlan draft = resolve_plan(draft_plan);
  return std::move(draft.roofline);
}

namespace {

SpecPrediction spec_prediction(const ResolvedPlan& rp) {
  const SpeculativePlan& sp = *rp.plan.speculative;
  SpecInputs in;
  in.accept_rates = sp.accept;
  in.max_block = sp.max_block;
  in.group = sp.group;
  in.names = {"speculative.accept", "speculative.verify_ms", "speculative.draft_ms", "decode_ms",
              "speculative.max_block", "speculative.group"};
  if (const std::unique_ptr<Roofline> draft = plan_draft_roofline(rp)) {
    in.verify_ms = roofline_verify_ms(*rp.roofline, rp.plan.requests, rp.plan.context);
    in.draft_ms = roofline_draft_ms(*draft, rp.plan.requests, rp.plan.context);
  } else {
    in.verify_ms = constant_verify_ms(*sp.verify_ms);
    in.draft_ms = *sp.draft_ms;
  }
  if (rp.plan.decode_ms) in.plain_ms_per_token = *rp.plan.decode_ms;
  SpecPrediction p{speculative_table(in), in.draft_ms, sp.block};
  if (sp.block && (*sp.block == 0 || *sp.block > p.table.rows.size()))
    throw InputError(fmt::format("speculative.block: {} is outside the table 1..{}", *sp.block, p.table.rows.size()));
  return p;
}

// Poisson arrivals on the plan's server (its KV pool is the one the runtime allocates, so a
// request waits for KV space in both at the same moments).
ServingPrediction serving_prediction(const ResolvedPlan& rp) {
  Plan plan = rp.plan;
  if (plan.load && !plan.load->rate_per_s && plan.load->in_system) plan.load->rate_per_s = solve_serving_rate(rp);
  const ServingLoad load = plan_serving_load(plan);
  return ServingPrediction{simulate_serving(rp.server, load), *rp.server.kv_capacity_tokens, load.rate_per_s};
}

}  // namespace

std::optional<OffloadMemory> plan_offload_memory(const Plan& plan, const ModelSpec& spec, const PlanWeights& weights) {
  if (!plan.offload) return std::nullopt;
  return offload_memory(spec, weights.layout, weights.scale, parse_offload_part(plan.offload->part, "offload.part"),
                        plan.offload->every, plan.offload->buffers);
}

OffloadInput plan_offload_input(const ResolvedPlan& rp, LinkProfile* link_used) {
  const Plan& plan = rp.plan;
  if (!plan.offload) throw InputError("plan: no 'offload' section");
  OffloadInput in;
  in.part = parse_offload_part(plan.offload->part, "offload.part");
  in.every = plan.offload->every;
  in.buffers = plan.offload->buffers;
  LinkProfile link;
  if (!plan.offload->link.empty()) {
    try {
      link = load_link(plan.offload->link);
    } catch (const InputError& e) {
      throw InputError(std::string("offload.link: ") + e.what());
    }
  } else if (!rp.hw.host_links.empty()) link = rp.hw.host_links.front();
  else throw InputError(fmt::format("offload: profile {} has no host link; name one with --link (offload.link)", rp.hw.name));
  in.link_name = link.name;
  in.link_bytes_per_s = link.bandwidth_bytes_per_s;
  in.prompt_tokens = plan.context;
  in.output_tokens = plan.output;
  in.requests = plan.requests;
  in.iteration_s = plan_iteration_s(rp, &in.iteration_source);
  in.deadline_s = plan.deadline_s;
  if (link_used) *link_used = link;
  return in;
}

LinkProfile plan_pd_link(const Plan& plan) {
  if (!plan.pd) throw InputError("plan: no 'pd' section");
  LinkProfile link;
  try {
    link = load_link(plan.pd->link);
  } catch (const InputError& e) {
    throw InputError(std::string("pd.link: ") + e.what());
  }
  link.bandwidth_bytes_per_s *= plan.pd->link_scale;  // a slower link is slower in both
  link.message_latency_s /= plan.pd->link_scale;
  return link;
}

PdServerModel pd_server_model(const ServerModel& server, const ModelSpec& spec, KvTypes kv, const LinkProfile& link,
                              uint64_t prefill_workers, uint64_t decode_workers, bool stream) {
  PdServerModel model;
  model.prefill_s = server.prefill_s;
  model.decode = server;
  const double link_bytes_per_s = link.bandwidth_bytes_per_s;
  model.transfer_s = [spec, kv, link_bytes_per_s](uint64_t prompt) {
    return kv_transfer_ms(pd_kv_bytes_per_request(spec, kv, prompt), link_bytes_per_s) / 1e3;
  };
  model.message_s = link.message_latency_s;
  model.prefill_workers = prefill_workers;
  model.decode_workers = decode_workers;
  if (stream) {
    model.stream_pieces = spec.layers;
    model.stream_ready_share = pd_kv_written_share(spec);
    model.prefill_pass_tokens = server.prefill_pass_tokens;
  }
  return model;
}

PdServerModel plan_pd_server(const ResolvedPlan& rp) {
  const Plan& plan = rp.plan;
  PdServerModel model = pd_server_model(rp.server, rp.spec, plan.kv, plan_pd_link(plan), plan.pd->prefill_workers,
                                        plan.pd->decode_workers, plan.pd->stream);
  // A plan's split is what the runtime executes: its prompts in the runtime's passes, whatever the
  // engine whose step times predict them.
  if (plan.pd->stream) model.prefill_pass_tokens = kRuntimePrefillPassTokens;
  return model;
}

namespace {

PdPrediction pd_prediction(const ResolvedPlan& rp) {
  const Plan& plan = rp.plan;
  const ServingLoad load = plan_serving_load(plan);
  const std::vector<ServingRequest> requests = serving_requests(load);
  const PdServerModel model = plan_pd_server(rp);
  const LinkProfile link = plan_pd_link(plan);
  PdPrediction p;
  p.link = link.name;
  p.link_bytes_per_s = link.bandwidth_bytes_per_s;
  p.kv_transfer_bytes = pd_kv_bytes_per_request(rp.spec, plan.kv, plan.context - plan.output);
  p.link_message_s = link.message_latency_s;
  p.kv_transfer_s = model.link_s(plan.context - plan.output);
  p.prefill_workers = model.prefill_workers;
  p.decode_workers = model.decode_workers;
  p.stream = plan.pd->stream;
  p.split = simulate_pd_serving(model, requests);
  p.split_served = summarize_served(p.split, requests);
  p.colocated = simulate_colocated(rp.server, load, requests, model.prefill_workers + model.decode_workers);
  p.choice = pd_choice(p.split_served, p.colocated);
  return p;
}

}  // namespace

Prediction predict(const ResolvedPlan& rp) {
  const Plan& plan = rp.plan;
  Prediction p;
  p.model = rp.spec.name;
  p.hw = rp.hw.name;
  p.fit = rp.fit;
  if (plan.load) {
    const LoadPlan& lp = *plan.load;
    const int given = (lp.rate_per_s ? 1 : 0) + (lp.sojourn_s ? 1 : 0) + (lp.in_system ? 1 : 0);
    if (given == 2)
      p.queue = solve_littles_law(
          {lp.rate_per_s, lp.sojourn_s, lp.in_system, "load.rate_per_s", "load.sojourn_s", "load.in_system"});
    if (lp.simulate) p.serving = serving_prediction(rp);
  }
  p.latency = estimate_latency(*rp.roofline, plan.requests, plan.context, plan.output);
  p.rates = rp.roofline->rates();
  p.weights_type = find_ggml_type(plan.weights.empty() ? std::string("BF16") : plan.weights);
  p.context = plan.context;
  for (GgmlType t : {GgmlType::BF16, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0})
    p.kv.push_back({t, kv_bytes_per_token(rp.spec, {t, t}, plan.tp)});
  if (plan.speculative) p.spec = spec_prediction(rp);
  if (plan.offload) {
    LinkProfile link;
    const OffloadInput in = plan_offload_input(rp, &link);
    p.offload = OffloadPrediction{
        plan_offload(rp.spec, rp.weights.layout, rp.weights.scale, plan.kv, in, rp.roofline.get(), 4096), link.name};
  }
  if (plan.pd) p.pd = pd_prediction(rp);
  return p;
}

Json predicted_figures(const Plan& plan) { return prediction_figures(predict(resolve_plan(plan))); }

}  // namespace infer_plan
