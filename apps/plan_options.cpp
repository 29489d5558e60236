// Defaults live in planner::Plan; help strings state them with their units.
#include "apps/plan_options.hpp"

#include <fmt/format.h>

#include <charconv>
#include <map>

#include "planner/calibration/calibration.hpp"
#include "planner/catalog/catalog.hpp"
#include "planner/cost/kv_cache.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/units.hpp"
#include "planner/plan/predict.hpp"

namespace infer_plan::apps {

std::pair<CLI::Option*, CLI::Option*> add_prefix_caching_flags(CLI::App& cmd, bool& enable, bool& disable) {
  CLI::Option* on = cmd.add_flag("--enable-prefix-caching", enable,
               "Prefix caching on: a prefix every prompt shares is prefilled once and its KV blocks kept (vLLM's; on by "
               "default in vLLM 0.8 and later, SGLang and TensorRT-LLM)");
  CLI::Option* off = cmd.add_flag("--no-enable-prefix-caching,--disable-radix-cache", disable,
                                  "Prefix caching off: every prompt prefilled whole (vLLM's; SGLang's --disable-radix-cache)");
  return {on, off};
}

std::optional<bool> prefix_caching_setting(bool enable, bool disable) {
  if (enable && disable)
    throw InputError("--enable-prefix-caching and --no-enable-prefix-caching: give one");
  if (enable || disable) return enable;
  return std::nullopt;
}

ServingLoad::Goodput parse_goodput(const std::vector<std::string>& limits) {
  ServingLoad::Goodput g;
  for (const std::string& limit : limits) {
    const size_t colon = limit.find(':');
    const std::string key = limit.substr(0, colon);
    std::optional<double>* slot = key == "ttft"   ? &g.ttft_s
                                  : key == "tpot" ? &g.tpot_s
                                  : key == "e2el" ? &g.e2el_s
                                                  : nullptr;
    if (colon == std::string::npos || slot == nullptr)
      throw InputError(fmt::format("--goodput: '{}' is not KEY:MS; KEY is ttft, tpot or e2el (vLLM's names), MS "
                                   "a limit in milliseconds, e.g. --goodput ttft:500 tpot:50",
                                   limit));
    const std::string ms_text = limit.substr(colon + 1);
    const double limit_ms = parse_number(ms_text).value_or(-1);
    if (!std::isfinite(limit_ms) || limit_ms <= 0 || limit_ms > kMaxTimeS * 1e3)
      throw InputError(fmt::format("--goodput: '{}': '{}' is not a time in milliseconds above 0 and at most {:g}",
                                   limit, ms_text, kMaxTimeS * 1e3));
    if (*slot) throw InputError(fmt::format("--goodput: {} is given twice", key));
    *slot = limit_ms / 1e3;
  }
  return g;
}

namespace {
// vLLM's and SGLang's --quantization methods and the checkpoint format each loads (their names in
// vllm/model_executor/layers/quantization); the others name a family of formats, which --weights spells.
std::string quantization_format(const std::string& method) {
  static const std::map<std::string, std::string, std::less<>> formats{
      {"fp8", "FP8"},           {"awq", "AWQ_INT4_G128"},  {"awq_marlin", "AWQ_INT4_G128"},
      {"gptq", "GPTQ_INT4_G128"}, {"gptq_marlin", "GPTQ_INT4_G128"}, {"mxfp4", "MXFP4_EXPERTS"},
      {"modelopt_fp4", "NVFP4"}};
  if (const auto it = formats.find(method); it != formats.end()) return it->second;
  std::vector<std::string> names;
  for (const auto& [name, format] : formats) names.push_back(name);
  throw InputError(fmt::format("--quantization: '{}' is not a method infer-plan maps to one format; expected {}, or the "
                               "checkpoint's format with --weights (e.g. FP8_CHANNEL, FP8_BLOCK128, INT8_W8A8 for "
                               "compressed-tensors)", method, fmt::join(names, ", ")));
}
}  // namespace

std::string model_option_help(std::string_view default_model) {
  return fmt::format("Model: a built-in name ({}), a Hugging Face config.json path or model folder, a Hugging Face id "
                     "(ORG/NAME, read from the local hub cache under $HF_HOME; nothing is fetched), or a GGUF file "
                     "(default {})",
                     fmt::join(builtin_model_names(), ", "), default_model);
}

std::string checked_tp_link(const std::string& value) {
  try {
    (void)load_link(value);
  } catch (const InputError& e) {
    throw InputError(fmt::format("--tp-link: {}", e.what()));
  }
  return value;
}

std::string kv_option_help(std::string_view default_note) {
  return fmt::format("KV cache type for K and V: {} ({})", fmt::join(kv_cache_type_names(), ", "), default_note);
}

void PlanOptions::add_to(CLI::App& cmd, unsigned groups) {
  const Plan d;
  cmd.add_option("--plan", plan_file, "Plan JSON file; flags given here override its fields")
      ->type_name("FILE");
  cmd.add_option("--model,-m", model, model_option_help(d.model))->type_name("NAME|PATH|ORG/NAME");
  cmd.add_option("--scale", scale,
                 "Shrink the model by this factor (layers, widths, heads, vocab) for a CPU run; "
                 "figures are for the shrunk shape (default 1)")
      ->type_name("FACTOR");
  cmd.add_option("--kv,--kv-cache-dtype", kv,
                 kv_option_help("default bf16, vLLM's auto for BF16 models; f16, llama.cpp's, for a .gguf or --engine "
                                "llama.cpp"))
      ->type_name("TYPE");
  cmd.add_option("--cache-type-k,--kv-k", kv_k, "K cache type, overriding --kv (llama.cpp's -ctk)")->type_name("TYPE");
  cmd.add_option("--cache-type-v,--kv-v", kv_v, "V cache type, overriding --kv (llama.cpp's -ctv)")->type_name("TYPE");
  cmd.add_option("--ctx-size,-c,--ctx,--max-model-len", ctx,
                 fmt::format("Context per request in tokens: 8192, 8K or 32K (default {})", d.context))
      ->type_name("TOKENS");
  cmd.add_option("--parallel,--requests", requests,
                 fmt::format("Concurrent requests (llama.cpp's -np, parallel sequences), each holding --ctx tokens "
                             "of KV (default {}; --requests: the old name, kept for this release)", d.requests))
      ->check(kNonNegativeCount)
      ->type_name("N");
  cmd.add_option("--tp,--tensor-parallel-size", tp,
                 "Tensor-parallel devices: weights and KV heads split across N devices; figures "
                 "are per device (default 1). With --engine llama.cpp, the devices of its -sm layer: each holds "
                 "whole layers and their KV, and they take turns, so a step is not faster")
      ->check(kNonNegativeCount)
      ->type_name("N");
  if (groups & kGeneration) {
    cmd.add_option("--output-len,-n,--output", output,
                   fmt::format("Tokens generated per request (llama.cpp's -n; default {}; --output: the old name, "
                               "kept for this release)", d.output))
      ->check(kNonNegativeCount)
        ->type_name("TOKENS");
    cmd.add_option("--decode-ms", decode_ms,
                   "A measured decode iteration in ms (the whole batch, one token each); default: "
                   "predicted by the roofline")
        ->type_name("MS")
        ->check(CLI::PositiveNumber);
    cmd.add_option("--deadline", deadline_s, "Per-request deadline in seconds (default: none)")
        ->type_name("S")
        ->check(CLI::PositiveNumber);
  }
  if (!(groups & kMemory)) return;
  cmd.add_option("--hw", hw,
                 fmt::format("Hardware profile: a built-in name ({}), or a profile JSON path "
                             "(default {})", fmt::join(builtin_hw_names(), ", "), d.hw))
      ->type_name("NAME|PATH");
  cmd.add_option("--engine", engine,
                 fmt::format("Predict for this engine's measured step model: the built-in calibration of the "
                             "--hw device, fitted from published llama-bench runs (llama.cpp on {}); a profile "
                             "written by `calibrate` carries its own (default: the profile's; without one, "
                             "the datasheet ceiling)", fmt::join(builtin_calibration_names(), ", ")))
      ->type_name("NAME");
  cmd.add_option("--gpu-memory-utilization", gpu_memory_utilization,
                 "vLLM's share of the device's memory (the memory CUDA reports) for weights, activations, its CUDA "
                 "graphs and its KV pool (default 0.92, as vLLM's since 0.20; 0.9 before)")
      ->type_name("F");
  cmd.add_option("--engine-version", engine_version,
                 "vLLM's version, e.g. 0.19 (default: the current): from 0.20 vLLM takes its CUDA graphs' estimated "
                 "memory out of the KV pool and defaults --gpu-memory-utilization to 0.92; before, the graphs live in "
                 "what the utilization leaves")
      ->type_name("MAJOR.MINOR");
  cmd.add_flag("--enforce-eager", enforce_eager, "vLLM's --enforce-eager: no CUDA graphs, so none of their memory");
  add_prefix_caching_flags(cmd, enable_prefix_caching, no_prefix_caching);
  cmd.add_option("--mem-fraction-static", mem_fraction_static,
                 "SGLang's share of the device's free memory for weights and its KV pool (default: SGLang's own, "
                 "from the device's memory and TP: 0.835 on an H100 at TP 1, 0.907 on an H200)")
      ->type_name("F");
  cmd.add_option("--cuda-graph-max-bs", cuda_graph_max_bs,
                 "SGLang's largest batch captured as a CUDA graph (default: SGLang's, by the device's memory and TP: 256 "
                 "on an H100 at TP 1, 512 at TP 4); each takes 2 MiB of the reserve its default mem_fraction_static "
                 "keeps")
      ->check(kNonNegativeCount)
      ->type_name("N");
  cmd.add_option("--quantization", quantization,
                 "vLLM's and SGLang's name for the checkpoint's format, instead of --weights: fp8 (FP8), awq and "
                 "awq_marlin (AWQ_INT4_G128), gptq and gptq_marlin (GPTQ_INT4_G128), mxfp4 (MXFP4_EXPERTS), "
                 "modelopt_fp4 (NVFP4)")
      ->type_name("METHOD");
  cmd.add_option("--kv-cache-free-gpu-memory-fraction,--free-gpu-memory-fraction", free_gpu_memory_fraction,
                 "TensorRT-LLM's share for its KV pool of the memory weights, activations and the CUDA context leave "
                 "(default 0.9, as trtllm-serve's)")
      ->type_name("F");
  cmd.add_option("--tensor-split", tensor_split,
                 "llama.cpp's -ts: each device's share of the layers, e.g. 3,1 (one per --tp device; default equal, "
                 "as llama.cpp's split by free memory gives identical cards); the fit shows the device with the most "
                 "to hold")
      ->type_name("SHARE[,SHARE...]");
  cmd.add_option("--tp-link", tp_link,
                 "The link between the --tp devices that the all-reduce (llama.cpp: the hand-over between devices) "
                 "crosses, by name (hwprofiles/links: pcie-gen5-x16, nvlink-4, ...) or a link JSON path; default the "
                 "profile's device link, else its host link. Two PCIe cards without a bridge: --tp-link pcie-gen5-x16")
      ->type_name("NAME|PATH");
  cmd.add_option("--device", devices,
                 "llama.cpp's -dev: different devices by profile name, in order, e.g. rtx-4090,rtx-3090 (sets --hw to "
                 "the first and --tp to their number); each holds whole layers by its share of the memory (or "
                 "--tensor-split) and runs them at its own speed; the fit shows the device with the least to spare")
      ->type_name("NAME[,NAME...]");
  cmd.add_option("--split-mode", split_mode,
                 "llama.cpp's -sm: layer (the default: each device holds whole layers, run one after another), none "
                 "(one device); row is not modelled and says why")
      ->type_name("layer|none|row");
  cmd.add_option("--gpu-wired-limit", gpu_wired_limit,
                 "Apple silicon: the GPU memory macOS lets Metal wire, raised with `sudo sysctl "
                 "iogpu.wired_limit_mb=N` (give N MiB, e.g. 180000MiB); default: Metal's own limit, "
                 "recommendedMaxWorkingSetSize (about 75% of memory; 2/3 on 32 GB and less), as the profile keeps it")
      ->type_name("SIZE");
  cmd.add_option("--max-num-seqs,--max-running-requests,--max-batch-size", max_num_seqs,
                 "The most requests the engine runs at once (vLLM's; SGLang's --max-running-requests, TensorRT-LLM's "
                 "--max_batch_size; default: the engine's on this device, vLLM 1024 on 70 GiB or more except A100, "
                 "else 256); sizes vLLM's sampler reserve and bounds the serving simulation's batch")
      ->check(kNonNegativeCount)
      ->type_name("N");
  cmd.add_option("--max-num-batched-tokens,--chunked-prefill-size,--max-num-tokens", max_num_batched_tokens,
                 "Tokens one engine step carries, decodes and prefill chunks together (vLLM's; SGLang's "
                 "--chunked-prefill-size, TensorRT-LLM's --max_num_tokens; default vLLM 8192 on 70 GiB or more "
                 "except A100, else 2048); sizes vLLM's profiling run")
      ->check(kNonNegativeCount)
      ->type_name("TOKENS");
  cmd.add_option("--weights,-w", weights,
                 "Weights: a llama.cpp file type with its per-tensor recipe (Q4_K_M, Q8_0, IQ4_XS, MXFP4_MOE, "
                 "BF16, ...; add :imatrix for a file made with an importance matrix, as most published ones "
                 "are), a GGML type stored throughout with :pure (Q4_0:pure; norms stay F32), a vLLM "
                 "checkpoint format (FP8, FP8_CHANNEL, FP8_BLOCK128, INT8_W8A8, AWQ_INT4_G128, "
                 "GPTQ_INT4_G128, NVFP4: linear layers only; MXFP4_EXPERTS: GPT-OSS as published), or file (a .gguf "
                 "model's own types); default "
                 "BF16, file for a .gguf")
      ->type_name("TYPE");
  cmd.add_option("--weights-size", weights_size,
                 "Known weights size instead of --weights, e.g. a GGUF file's size: 79.81GiB, 14 GB")
      ->type_name("SIZE");
  cmd.add_option("--n-gpu-layers", gpu_layers,
                 "llama.cpp's -ngl: layers on the device, counting the output head as the last (a 32-layer model "
                 "has 33); the first layers, the token embeddings and their KV stay in host memory and run on "
                 "the CPU at the host's bandwidth. all (default), auto (the most that fit; all without a host), or N")
      ->type_name("N|all|auto");
  cmd.add_option("--n-cpu-moe", n_cpu_moe,
                 "llama.cpp's --n-cpu-moe: keep the routed experts of the first N layers in host memory, where the "
                 "CPU multiplies the ones each token is routed to at the host's bandwidth (the way a large MoE "
                 "such as GPT-OSS-120B runs on one consumer card); the rest stays on the device")
      ->check(kNonNegativeCount)
      ->type_name("N");
  cmd.add_flag("--cpu-moe", cpu_moe, "llama.cpp's --cpu-moe: every layer's routed experts in host memory");
  cmd.add_option("--override-tensor", override_tensor,
                 "llama.cpp's -ot REGEX=BUFFER[,REGEX=BUFFER...]: the tensors whose GGUF name the regex finds "
                 "(blk.N.ffn_up_exps.weight, ...) go to BUFFER: CPU keeps them in host memory, where the CPU "
                 "multiplies them at the host's bandwidth; a device's (CUDA0, Vulkan0, Metal) keeps them on the "
                 "device; the first pattern that matches decides; repeatable. E.g. -ot \"blk\\.(2[0-9])\\.ffn_.*_exps=CPU\"")
      ->type_name("REGEX=BUFFER");
  cmd.add_option("--host-memory", host_memory,
                 "The host's memory for a layer split, e.g. 64GiB (default: the profile's 'host' section)")
      ->type_name("SIZE");
  cmd.add_option("--host-bandwidth", host_bandwidth,
                 "The rate the host's CPU reads its layers at, e.g. 60GB/s (default: the profile's host bandwidth x "
                 "its efficiency)")
      ->type_name("RATE");
  cmd.add_option("--flash-attn", flash_attn,
                 "llama.cpp's -fa: on, off or auto (default auto: on, as llama.cpp turns it on wherever the backend "
                 "has the kernel); off keeps every head's KQ scores in the compute buffer and refuses a quantized V "
                 "cache, as llama.cpp does")
      ->type_name("on|off|auto");
  cmd.add_option("--ubatch-size", ubatch,
                 "llama.cpp's -ub, tokens per micro-batch (default 512): sizes its compute buffer, and a prompt runs "
                 "in such micro-batches, each reading the weights and costing the step model's fixed time again")
      ->check(kNonNegativeCount)
      ->type_name("N");
  cmd.add_option("--batch-size,-b", batch, "llama.cpp's -b, tokens per batch (default 2048); -ub is at most this")
      ->check(kNonNegativeCount)
      ->type_name("N");
  cmd.add_option("--reserve", reserves,
                 "A named runtime reserve subtracted before KV, e.g. --reserve cuda_context=512MiB "
                 "(repeatable; default: the profile's reserves, none for the built-ins)")
      ->type_name("NAME=SIZE");
}

Plan PlanOptions::resolve() const {
  Plan p;
  if (!plan_file.empty()) p = plan_from_json(read_json_file(plan_file), plan_file);
  if (!model.empty()) p.model = model;
  if (!hw.empty()) p.hw = hw;
  if (!devices.empty()) {
    p.devices.clear();
    for (size_t at = 0; at <= devices.size();) {
      const size_t comma = std::min(devices.find(',', at), devices.size());
      if (comma == at) throw InputError(fmt::format("--device: '{}' has an empty name; expected NAME[,NAME...]", devices));
      p.devices.push_back(devices.substr(at, comma - at));
      at = comma + 1;
    }
    if (hw.empty()) p.hw = p.devices.front();
    if (!tp) p.tp = p.devices.size();
  }
  if (!engine.empty()) p.engine = engine;
  if (scale) p.scale = *scale;
  if (!weights.empty()) {
    p.weights = weights;
    p.weights_bytes.reset();
  }
  if (!weights_size.empty()) {
    if (!weights.empty())
      throw InputError("--weights and --weights-size both given; give the type or the size, not both");
    p.weights_bytes = parse_bytes(weights_size, "--weights-size");
  }
  // No KV type named on the command line or in a plan file: llama.cpp's F16 for a .gguf or the
  // llama.cpp engine, vLLM's auto (the BF16 models' dtype) otherwise.
  if (plan_file.empty() && kv.empty() && (p.model.ends_with(".gguf") || p.engine == "llama.cpp"))
    p.kv.k = p.kv.v = GgmlType::F16;
  if (!kv.empty()) p.kv.k = p.kv.v = kv_cache_type(kv, "--kv").type;
  if (!kv_k.empty()) p.kv.k = kv_cache_type(kv_k, "--cache-type-k").type;
  if (!kv_v.empty()) p.kv.v = kv_cache_type(kv_v, "--cache-type-v").type;
  if (!ctx.empty()) p.context = parse_tokens(ctx, "--ctx-size");
  if (requests) p.requests = *requests;
  if (tp) p.tp = *tp;
  if (output) p.output = *output;
  if (decode_ms) p.decode_ms = *decode_ms;
  if (gpu_memory_utilization) p.engine_settings.gpu_memory_utilization = *gpu_memory_utilization;
  if (max_num_seqs) p.engine_settings.max_num_seqs = *max_num_seqs;
  if (mem_fraction_static) p.engine_settings.mem_fraction_static = *mem_fraction_static;
  if (!tensor_split.empty()) p.tensor_split = parse_tensor_split(tensor_split, "--tensor-split");
  if (free_gpu_memory_fraction) p.engine_settings.free_gpu_memory_fraction = *free_gpu_memory_fraction;
  if (!flash_attn.empty()) p.engine_settings.flash_attention = flash_attention_setting(flash_attn, "--flash-attn");
  if (ubatch) p.engine_settings.ubatch = *ubatch;
  if (batch) p.engine_settings.batch = *batch;
  if (max_num_batched_tokens) p.engine_settings.max_num_batched_tokens = *max_num_batched_tokens;
  if (cuda_graph_max_bs) p.engine_settings.cuda_graph_max_bs = *cuda_graph_max_bs;
  if (!quantization.empty()) {
    const std::string format = quantization_format(quantization);
    if (!weights.empty() && weights != format)
      throw InputError(fmt::format("--quantization {} is --weights {}; --weights {} says otherwise: give one",
                                   quantization, format, weights));
    p.weights = format;
  }
  if (!engine_version.empty()) p.engine_settings.engine_version = engine_version;
  if (enforce_eager) p.engine_settings.enforce_eager = true;
  if (const std::optional<bool> on = prefix_caching_setting(enable_prefix_caching, no_prefix_caching))
    p.engine_settings.enable_prefix_caching = on;
  if (deadline_s) p.deadline_s = *deadline_s;
  for (const std::string& r : reserves) {
    auto eq = r.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError(fmt::format("--reserve: '{}' is not NAME=SIZE (e.g. cuda_context=512MiB)", r));
    p.reserves.push_back({r.substr(0, eq), parse_bytes(r.substr(eq + 1), "--reserve " + r.substr(0, eq))});
  }
  if (gpu_layers == "auto") {
    p.gpu_layers_auto = true;
    p.gpu_layers.reset();
  } else if (gpu_layers == "all") {
    p.gpu_layers_auto = false;
    p.gpu_layers.reset();
  } else if (!gpu_layers.empty()) {
    uint64_t n = 0;
    const auto [end, ec] = std::from_chars(gpu_layers.data(), gpu_layers.data() + gpu_layers.size(), n);
    if (ec != std::errc() || end != gpu_layers.data() + gpu_layers.size())
      throw InputError(fmt::format("--n-gpu-layers: '{}' is not a layer count; expected N >= 0, all or auto",
                                   gpu_layers));
    p.gpu_layers_auto = false;
    p.gpu_layers = n;
  }
  if (n_cpu_moe && cpu_moe) throw InputError("--n-cpu-moe and --cpu-moe: give one (--cpu-moe is every layer)");
  if (n_cpu_moe) p.cpu_moe_layers = *n_cpu_moe;
  if (cpu_moe) p.cpu_moe_layers = Plan::kAllLayers;
  if (!split_mode.empty()) {
    if (!p.engine.empty() && p.engine != "llama.cpp")
      throw InputError(fmt::format("--split-mode: llama.cpp's; the plan's engine is {}", p.engine));
    if (split_mode == "row" || split_mode == "tensor")
      throw InputError(fmt::format(
          "--split-mode {}: llama.cpp's {} split (each matrix {} over every device) is not modelled: no published "
          "step times of it were gathered, and llama.cpp's own multi-GPU guide of 2026 marks row deprecated; "
          "layer (the default) is",
          split_mode, split_mode, split_mode == "row" ? "by rows" : "and the KV cache"));
    if (split_mode == "none" && (p.tp > 1 || !p.devices.empty()))
      throw InputError(fmt::format("--split-mode none runs on one device (llama.cpp's main GPU); the plan has {} (--tp, "
                                   "--device)", std::max<uint64_t>(p.tp, p.devices.size())));
    if (split_mode != "layer" && split_mode != "none")
      throw InputError(fmt::format("--split-mode: '{}'; expected layer, none or row", split_mode));
  }
  if (!override_tensor.empty()) {
    p.override_tensor.clear();
    for (const std::string& text : override_tensor)
      for (TensorOverride& o : parse_tensor_overrides(text, "--override-tensor")) p.override_tensor.push_back(std::move(o));
  }
  if (!tp_link.empty()) p.tp_link = checked_tp_link(tp_link);
  if (!host_memory.empty()) p.host_memory_bytes = parse_bytes(host_memory, "--host-memory");
  if (!gpu_wired_limit.empty()) p.gpu_wired_limit_bytes = parse_bytes(gpu_wired_limit, "--gpu-wired-limit");
  if (!host_bandwidth.empty()) p.host_bandwidth_bytes_per_s = parse_rate(host_bandwidth, "--host-bandwidth");
  // A field set by a flag is named by its flag; one from the plan file by the file and field.
  const std::map<std::string_view, std::pair<const char*, bool>> flags{
      {"context", {"--ctx-size", !ctx.empty()}},   {"requests", {"--parallel", requests.has_value()}},
      {"output", {"--output-len", output.has_value()}}, {"scale", {"--scale", scale.has_value()}},
      {"tp", {"--tp", tp.has_value()}},           {"decode_ms", {"--decode-ms", decode_ms.has_value()}},
      {"deadline_s", {"--deadline", deadline_s.has_value()}},
      {"gpu_memory_utilization", {"--gpu-memory-utilization", gpu_memory_utilization.has_value()}},
      {"max_num_seqs", {"--max-num-seqs", max_num_seqs.has_value()}},
      {"mem_fraction_static", {"--mem-fraction-static", mem_fraction_static.has_value()}},
      {"free_gpu_memory_fraction", {"--kv-cache-free-gpu-memory-fraction", free_gpu_memory_fraction.has_value()}},
      {"ubatch", {"--ubatch-size", ubatch.has_value()}},
      {"batch", {"--batch-size", batch.has_value()}},
      {"max_num_batched_tokens", {"--max-num-batched-tokens", max_num_batched_tokens.has_value()}},
      {"cuda_graph_max_bs", {"--cuda-graph-max-bs", cuda_graph_max_bs.has_value()}},
      {"host_memory", {"--host-memory", !host_memory.empty()}},
      {"gpu_wired_limit", {"--gpu-wired-limit", !gpu_wired_limit.empty()}},
      {"tensor_split", {"--tensor-split", !tensor_split.empty()}},
      {"override_tensor", {"--override-tensor", !override_tensor.empty()}},
      {"engine_version", {"--engine-version", !engine_version.empty()}},
      {"enable_prefix_caching",
       {enable_prefix_caching ? "--enable-prefix-caching" : "--no-enable-prefix-caching",
        enable_prefix_caching || no_prefix_caching}},
      {"devices", {"--device", !devices.empty()}},
      {"tp_link", {"--tp-link", !tp_link.empty()}},
      {"host_bandwidth", {"--host-bandwidth", !host_bandwidth.empty()}}};
  validate_plan(p, [&](std::string_view field) {
    const auto it = flags.find(field);
    if ((it != flags.end() && it->second.second) || plan_file.empty())
      return it != flags.end() ? std::string(it->second.first) : std::string(field);
    return fmt::format("{}: field '{}'", plan_file, field);
  });
  if (!plan_file.empty()) {
    // The whole file is checked whatever the command reads of it (model, profile, weights, offload,
    // draft), so that a broken plan is never half-used; a message names the file, and the plan's
    // field where the flag that would set it was not given.
    try {
      (void)resolve_plan(p);
    } catch (const InputError& e) {
      std::string message = e.what();
      if (weights.empty() && message.starts_with("--weights")) message = "field 'weights'" + message.substr(9);
      if (gpu_layers.empty() && message.starts_with("--n-gpu-layers"))
        message = "field 'gpu_layers'" + message.substr(std::string_view("--n-gpu-layers").size());
      if (message.starts_with("plan: ")) message = message.substr(6);
      if (message.find(plan_file) == std::string::npos) message = fmt::format("{}: {}", plan_file, message);
      throw InputError(message);
    }
  }
  return p;
}

}  // namespace infer_plan::apps
