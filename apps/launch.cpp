#include "apps/launch.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fmt/format.h>

#include "planner/catalog/catalog.hpp"
#include "planner/core/units.hpp"
#include "planner/cost/engine_capabilities.hpp"
#include "planner/cost/engine_memory.hpp"
#include "planner/weights/gguf_reader.hpp"

namespace infer_plan::apps {
namespace launch_detail {  // named: the commands library is compiled several files to a unit

std::string lowercase(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// "%g" without a trailing zero run: 0.92, 0.835
std::string number(double v) { return fmt::format("{:g}", v); }

// What a launch needs of the plan, worked out once.
struct Shape {
  explicit Shape(const ResolvedPlan& r) : rp(r), engine(r.engine), tp(r.plan.tp) {}
  const ResolvedPlan& rp;
  std::string engine, model;       // the engine; the checkpoint (a Hugging Face id, or a placeholder)
  uint64_t tp = 1, nodes = 1, per_node = 0, max_batch = 1, max_model_len = 0;
  uint64_t replicas = 1;
  std::optional<uint64_t> prefill, decode;
  bool fp8_kv = false;
  std::vector<std::string> notes;
};

// The checkpoint the engine loads for the plan's weights: the model's own (16-bit, or quantized as it
// loads: vLLM's and SGLang's --quantization fp8), else a pre-quantized one named after it (a note
// says which). Returns the --quantization method to pass, empty for none.
std::string checkpoint(Shape& s) {
  const std::string& w = s.rp.plan.weights.empty() ? std::string("BF16") : s.rp.plan.weights;
  const std::string id = s.rp.spec.hf_id.empty() ? s.rp.spec.name : s.rp.spec.hf_id;
  if (s.rp.spec.hf_id.empty())
    s.notes.push_back(fmt::format("{}: the model's Hugging Face id or local path (infer-plan knows none for it)", id));
  s.model = id;
  auto sixteen_bit = [](const std::string& f) { return f == "BF16" || f == "F16" || f == "F32"; };
  if (w == s.rp.spec.hf_weights || (sixteen_bit(w) && sixteen_bit(s.rp.spec.hf_weights))) return "";
  if (w == "FP8" && s.engine != "trtllm" && sixteen_bit(s.rp.spec.hf_weights)) return "fp8";  // quantized as it loads
  s.model = fmt::format("{}-{}", id, w);
  s.notes.push_back(fmt::format("{}: a checkpoint of {} in {} ({}); the engine reads its method from its config", s.model, id, w,
                                w.starts_with("AWQ")    ? "AutoAWQ, 4-bit groups of 128"
                                : w.starts_with("GPTQ") ? "GPTQModel, 4-bit groups of 128"
                                : w == "NVFP4"          ? "NVIDIA ModelOpt NVFP4"
                                : w == "INT8_W8A8"      ? "llm-compressor W8A8"
                                                        : "llm-compressor or NVIDIA ModelOpt FP8"));
  return w.starts_with("AWQ") ? "awq_marlin" : w.starts_with("GPTQ") ? "gptq_marlin" : "";
}

std::string command_line(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : " ") + p;
  return out;
}

void add(std::vector<std::string>& argv, std::string_view flag, const std::string& value) {
  argv.emplace_back(flag);
  argv.push_back(value);
}

// A prefill/decode split's two servers: `a` with each role's value of `flag` (none: the same command)
// and its own port.
std::pair<std::vector<std::string>, std::vector<std::string>> split_roles(const std::vector<std::string>& a,
                                                                          std::string_view flag, const std::string& prefill,
                                                                          const std::string& decode, uint64_t port,
                                                                          uint64_t decode_port) {
  std::vector<std::string> p = a, d = a;
  if (!flag.empty()) {
    add(p, flag, prefill);
    add(d, flag, decode);
  }
  add(p, "--port", fmt::format("{}", port));
  add(d, "--port", fmt::format("{}", decode_port));
  return {p, d};
}

std::optional<std::string> draft_id(const ResolvedPlan& rp) {
  if (!rp.plan.speculative || rp.plan.speculative->draft.empty()) return std::nullopt;
  const ModelSpec d = load_model(rp.plan.speculative->draft);
  return d.hf_id.empty() ? d.name : d.hf_id;
}

// The block the plan runs (max_block when it names none).
// "its own device", "its own 4 devices"
std::string own_devices(uint64_t tp) { return tp == 1 ? "its own device" : fmt::format("its own {} devices", tp); }

uint64_t speculative_block(const ResolvedPlan& rp) {
  return rp.plan.speculative ? rp.plan.speculative->block.value_or(rp.plan.speculative->max_block) : 0;
}

// vllm serve: one command per node (Ray beyond one), a server per pool when split.
Launch vllm(Shape& s) {
  const EngineSettings& es = s.rp.plan.engine_settings;
  const std::string method = checkpoint(s);
  std::vector<std::string> a{"vllm", "serve", s.model};
  add(a, "--tensor-parallel-size", fmt::format("{}", s.tp));
  add(a, "--max-model-len", fmt::format("{}", s.max_model_len));
  add(a, "--max-num-seqs", fmt::format("{}", s.max_batch));
  if (es.max_num_batched_tokens) add(a, "--max-num-batched-tokens", fmt::format("{}", *es.max_num_batched_tokens));
  const EngineMemory m = engine_memory("vllm", s.rp.spec, s.rp.hw, s.rp.plan.context, s.rp.plan.requests, s.tp, es);
  add(a, "--gpu-memory-utilization", number(m.usable_fraction));
  if (s.fp8_kv) add(a, "--kv-cache-dtype", "fp8");
  if (!method.empty()) add(a, "--quantization", method);
  if (es.enforce_eager) a.emplace_back("--enforce-eager");
  if (es.enable_prefix_caching) a.emplace_back(*es.enable_prefix_caching ? "--enable-prefix-caching" : "--no-enable-prefix-caching");
  if (const auto draft = draft_id(s.rp))
    add(a, "--speculative-config", fmt::format("'{{\"model\":\"{}\",\"num_speculative_tokens\":{}}}'", *draft, speculative_block(s.rp)));
  if (s.rp.fit.offload)
    add(a, "--cpu-offload-gb", fmt::format("{}", static_cast<uint64_t>(std::ceil(static_cast<double>(s.rp.fit.offload->freed_bytes) / 1e9))));
  Launch l;
  if (s.nodes > 1) {
    add(a, "--distributed-executor-backend", "ray");
    l.commands.push_back("ray start --head --port 6379");
    l.notes.push_back(fmt::format("on {}: ray start --address HEAD:6379; then the command on the head node spans all {} "
                                  "({} devices each)", s.nodes == 2 ? std::string("the other node")
                                                                    : fmt::format("each of the other {} nodes", s.nodes - 1),
                                  s.nodes, s.per_node));
  }
  if (s.prefill) {
    const std::string nixl = "'{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}'";
    const auto [p, d] = split_roles(a, "--kv-transfer-config", nixl, nixl, 8100, 8200);
    l.commands.push_back(command_line(p));
    l.commands.push_back(command_line(d));
    l.notes.push_back(fmt::format("{} prefill and {} decode servers as above, each on {}; a proxy sends each request to a "
                                  "prefill server, then its decode server (vLLM's disaggregated-serving example proxy, or "
                                  "llm-d)", *s.prefill, *s.decode, own_devices(s.tp)));
  } else {
    if (s.replicas > 1 && s.nodes == 1 && (s.per_node == 0 || s.replicas * s.tp <= s.per_node))
      add(a, "--data-parallel-size", fmt::format("{}", s.replicas));
    else if (s.replicas > 1)
      l.notes.push_back(fmt::format("{} copies of this server, each on {}, behind a load balancer", s.replicas,
                                    own_devices(s.tp)));
    l.commands.push_back(command_line(a));
  }
  return l;
}

Launch sglang(Shape& s) {
  const EngineSettings& es = s.rp.plan.engine_settings;
  const std::string method = checkpoint(s);
  std::vector<std::string> a{"python", "-m", "sglang.launch_server", "--model-path", s.model};
  add(a, "--tp", fmt::format("{}", s.tp));
  add(a, "--context-length", fmt::format("{}", s.max_model_len));
  add(a, "--max-running-requests", fmt::format("{}", s.max_batch));
  if (es.max_num_batched_tokens) add(a, "--chunked-prefill-size", fmt::format("{}", *es.max_num_batched_tokens));
  if (es.cuda_graph_max_bs) add(a, "--cuda-graph-max-bs", fmt::format("{}", *es.cuda_graph_max_bs));
  const EngineMemory m = engine_memory("sglang", s.rp.spec, s.rp.hw, s.rp.plan.context, s.rp.plan.requests, s.tp, es);
  add(a, "--mem-fraction-static", number(m.usable_fraction));
  if (s.fp8_kv) add(a, "--kv-cache-dtype", "fp8_e4m3");
  if (!method.empty()) add(a, "--quantization", method);
  if (es.enable_prefix_caching && !*es.enable_prefix_caching) a.emplace_back("--disable-radix-cache");
  if (const auto draft = draft_id(s.rp)) {
    const uint64_t k = speculative_block(s.rp);
    add(a, "--speculative-algorithm", "STANDALONE");
    add(a, "--speculative-draft-model-path", *draft);
    add(a, "--speculative-num-steps", fmt::format("{}", k));
    add(a, "--speculative-eagle-topk", "1");
    add(a, "--speculative-num-draft-tokens", fmt::format("{}", k + 1));
  }
  if (s.rp.fit.offload)
    add(a, "--cpu-offload-gb", fmt::format("{}", static_cast<uint64_t>(std::ceil(static_cast<double>(s.rp.fit.offload->freed_bytes) / 1e9))));
  Launch l;
  auto per_node = [&](std::vector<std::string> argv) {
    if (s.nodes == 1) {
      l.commands.push_back(command_line(argv));
      return;
    }
    add(argv, "--nnodes", fmt::format("{}", s.nodes));
    add(argv, "--dist-init-addr", "HEAD:5000");
    for (uint64_t rank = 0; rank < s.nodes; ++rank) {
      std::vector<std::string> node = argv;
      add(node, "--node-rank", fmt::format("{}", rank));
      l.commands.push_back(command_line(node));
    }
  };
  if (s.prefill) {
    const auto [p, d] = split_roles(a, "--disaggregation-mode", "prefill", "decode", 30000, 30001);
    per_node(p);
    per_node(d);
    l.commands.push_back("python -m sglang_router.launch_router --pd-disaggregation --prefill http://PREFILL:30000 "
                         "--decode http://DECODE:30001");
    l.notes.push_back(fmt::format("{} prefill and {} decode servers, each on {}; the KV moves over "
                                  "--disaggregation-transfer-backend (mooncake by default, nixl)", *s.prefill, *s.decode,
                                  own_devices(s.tp)));
  } else {
    if (s.replicas > 1 && s.nodes == 1 && (s.per_node == 0 || s.replicas * s.tp <= s.per_node))
      add(a, "--dp", fmt::format("{}", s.replicas));
    else if (s.replicas > 1)
      l.notes.push_back(fmt::format("{} copies of this server, each on {}, behind sglang_router or a load balancer",
                                    s.replicas, own_devices(s.tp)));
    per_node(a);
  }
  return l;
}

Launch llama_cpp(Shape& s) {
  const Plan& p = s.rp.plan;
  const EngineSettings& es = p.engine_settings;
  const std::string id = s.rp.spec.hf_id.empty() ? s.rp.spec.name : s.rp.spec.hf_id;
  const std::string repo = id.substr(id.find('/') == std::string::npos ? 0 : id.find('/') + 1);
  const std::string file = is_gguf_path(s.rp.spec.source) ? s.rp.spec.source
                                                          : fmt::format("{}-{}.gguf", repo, p.weights.empty() ? "BF16" : p.weights);
  std::vector<std::string> a{"llama-server", "-m", file};
  add(a, "-c", fmt::format("{}", s.max_model_len * s.max_batch));  // llama-server shares -c among its -np slots
  add(a, "-np", fmt::format("{}", s.max_batch));
  add(a, "-ngl", s.rp.split ? fmt::format("{}", s.rp.split->gpu_layers) : std::string("999"));
  add(a, "-fa", es.flash_attention && !*es.flash_attention ? "off" : "on");
  add(a, "-ctk", lowercase(ggml_type_info(p.kv.k).name));
  add(a, "-ctv", lowercase(ggml_type_info(p.kv.v).name));
  if (es.ubatch) add(a, "-ub", fmt::format("{}", *es.ubatch));
  if (es.batch) add(a, "-b", fmt::format("{}", *es.batch));
  if (s.rp.split && s.rp.split->cpu_moe_layers >= s.rp.spec.layers)
    a.emplace_back("--cpu-moe");
  else if (s.rp.split && s.rp.split->cpu_moe_layers)
    add(a, "--n-cpu-moe", fmt::format("{}", s.rp.split->cpu_moe_layers));
  if (!p.override_tensor.empty()) add(a, "-ot", fmt::format("\"{}\"", tensor_overrides_text(p.override_tensor)));
  if (!p.tensor_split.empty()) {
    std::vector<std::string> shares;
    for (double v : p.tensor_split) shares.push_back(number(v));
    add(a, "-ts", fmt::format("{}", fmt::join(shares, ",")));
  }
  if (const auto draft = draft_id(s.rp)) {
    add(a, "-md", fmt::format("{}-{}.gguf", draft->substr(draft->find('/') == std::string::npos ? 0 : draft->find('/') + 1),
                              p.weights.empty() ? "BF16" : p.weights));
    add(a, "--draft-max", fmt::format("{}", speculative_block(s.rp)));
  }
  Launch l;
  l.commands.push_back(command_line(a));
  if (!is_gguf_path(s.rp.spec.source))
    l.notes.push_back(fmt::format("{}: {} as a {} GGUF (a published -GGUF repository's, or convert_hf_to_gguf.py then "
                                  "llama-quantize)", file, id, p.weights.empty() ? "BF16" : p.weights));
  if (s.tp > 1) l.notes.push_back(fmt::format("its {} devices each hold whole layers (-sm layer, the default)", s.tp));
  if (s.replicas > 1)
    l.notes.push_back(fmt::format("{} copies of this server, each on {} (CUDA_VISIBLE_DEVICES), behind a load balancer",
                                  s.replicas, own_devices(s.tp)));
  return l;
}

Launch trtllm(Shape& s) {
  const EngineSettings& es = s.rp.plan.engine_settings;
  (void)checkpoint(s);
  std::vector<std::string> a{"trtllm-serve", s.model};
  add(a, "--backend", "pytorch");
  add(a, "--tp_size", fmt::format("{}", s.tp));
  add(a, "--max_batch_size", fmt::format("{}", s.max_batch));
  add(a, "--max_seq_len", fmt::format("{}", s.max_model_len));
  if (es.max_num_batched_tokens) add(a, "--max_num_tokens", fmt::format("{}", *es.max_num_batched_tokens));
  if (es.free_gpu_memory_fraction) add(a, "--kv_cache_free_gpu_memory_fraction", number(*es.free_gpu_memory_fraction));
  std::vector<std::string> yaml;
  if (s.fp8_kv) yaml.push_back("kv_cache_config: {dtype: fp8}");
  if (const auto draft = draft_id(s.rp))
    yaml.push_back(fmt::format("speculative_config: {{decoding_type: DraftTarget, max_draft_len: {}, speculative_model_dir: {}}}",
                               speculative_block(s.rp), *draft));
  if (s.prefill) yaml.push_back("cache_transceiver_config: {backend: DEFAULT}");
  if (!yaml.empty()) {
    add(a, "--extra_llm_api_options", "extra.yaml");
    s.notes.push_back(fmt::format("extra.yaml: {}", fmt::join(yaml, "; ")));
  }
  Launch l;
  if (s.nodes > 1) {
    a.insert(a.begin(), {"mpirun", "-np", fmt::format("{}", s.tp), "trtllm-llmapi-launch"});
    l.notes.push_back(fmt::format("under MPI (or Slurm's srun) over {} nodes of {} devices", s.nodes, s.per_node));
  }
  if (s.prefill) {
    const auto [ctx, gen] = split_roles(a, "", "", "", 8001, 8002);
    l.commands.push_back(command_line(ctx));
    l.commands.push_back(command_line(gen));
    l.commands.push_back("trtllm-serve disaggregated -c disagg_config.yaml");
    l.notes.push_back(fmt::format("{} context (prefill) and {} generation servers; disagg_config.yaml lists them "
                                  "(context_servers, generation_servers)", *s.prefill, *s.decode));
  } else {
    l.commands.push_back(command_line(a));
    if (s.replicas > 1)
      l.notes.push_back(fmt::format("{} copies of this server, each on {}, behind a load balancer", s.replicas,
                                    own_devices(s.tp)));
  }
  return l;
}

}  // namespace launch_detail

Launch launch_commands(const ResolvedPlan& rp, const DeploymentShape& shape) {
  using namespace launch_detail;
  Shape s(rp);
  if (!find_engine_capabilities(rp.engine)) {
    Launch l;
    l.notes.push_back("no engine: a plan with --engine none has no launch command");
    return l;
  }
  s.per_node = rp.hw.devices_per_node;
  s.nodes = s.per_node && s.tp > s.per_node ? (s.tp + s.per_node - 1) / s.per_node : 1;
  s.max_model_len = shape.max_model_len ? shape.max_model_len : rp.plan.context;
  s.max_batch = shape.max_batch ? shape.max_batch : rp.plan.load ? rp.plan.load->max_batch : rp.plan.requests;
  s.replicas = shape.replicas;
  s.prefill = shape.prefill;
  s.decode = shape.decode;
  s.fp8_kv = rp.plan.kv.k == GgmlType::FP8;
  Launch l = rp.engine == "vllm" ? vllm(s) : rp.engine == "sglang" ? sglang(s) : rp.engine == "trtllm" ? trtllm(s) : llama_cpp(s);
  l.notes.insert(l.notes.begin(), s.notes.begin(), s.notes.end());
  return l;
}

}  // namespace infer_plan::apps

namespace infer_plan::apps {
namespace launch_detail {

// The engine's published serving image.
std::string_view engine_image(std::string_view engine) {
  return engine == "vllm"     ? "vllm/vllm-openai:latest"
         : engine == "sglang" ? "lmsysorg/sglang:latest"
         : engine == "trtllm" ? "nvcr.io/nvidia/tensorrt-llm/release:latest"
                              : "ghcr.io/ggml-org/llama.cpp:server-cuda";
}

// The words of a command line as an exec list: the shell's single quotes around a JSON value dropped.
std::vector<std::string> exec_words(const std::string& command) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < command.size()) {
    const size_t end = std::min(command.find(' ', at), command.size());
    std::string w = command.substr(at, end - at);
    if (w.size() >= 2 && w.front() == '\'' && w.back() == '\'') w = w.substr(1, w.size() - 2);
    if (!w.empty()) out.push_back(std::move(w));
    at = end + 1;
  }
  return out;
}

// A YAML double-quoted scalar (JSON's escapes are YAML's).
std::string quoted(const std::string& s) { return Json(s).dump(); }

std::string exec_list(const std::vector<std::string>& words) {
  std::string out = "[";
  for (size_t i = 0; i < words.size(); ++i) out += (i ? ", " : "") + quoted(words[i]);
  return out + "]";
}

// A pod's container running `words` on `gpus` devices.
std::string container(std::string_view engine, const std::vector<std::string>& words, uint64_t gpus, std::string_view indent) {
  return fmt::format("{0}- name: server\n"
                     "{0}  image: {1}\n"
                     "{0}  command: {2}\n"
                     "{0}  resources:\n"
                     "{0}    limits:\n"
                     "{0}      nvidia.com/gpu: {3}\n",
                     indent, engine_image(engine), exec_list(words), gpus);
}

std::string deployment(std::string_view name, std::string_view engine, uint64_t replicas, const std::string& command,
                       uint64_t gpus) {
  return fmt::format("apiVersion: apps/v1\n"
                     "kind: Deployment\n"
                     "metadata:\n"
                     "  name: {0}\n"
                     "spec:\n"
                     "  replicas: {1}\n"
                     "  selector:\n"
                     "    matchLabels:\n"
                     "      app: {0}\n"
                     "  template:\n"
                     "    metadata:\n"
                     "      labels:\n"
                     "        app: {0}\n"
                     "    spec:\n"
                     "      containers:\n{2}",
                     name, replicas, container(engine, exec_words(command), gpus, "        "));
}

// The port a server command listens on: its --port, else the engine's default (vllm serve and
// trtllm-serve 8000, SGLang's server and router 30000, llama-server 8080).
uint64_t server_port(std::string_view engine, const std::string& command) {
  if (const size_t at = command.find("--port "); at != std::string::npos) {
    uint64_t port = 0;
    for (size_t i = at + 7; i < command.size() && std::isdigit(static_cast<unsigned char>(command[i])); ++i)
      port = port * 10 + static_cast<uint64_t>(command[i] - '0');
    if (port > 0) return port;
  }
  return engine == "sglang" ? 30000 : engine == "llama.cpp" ? 8080 : 8000;
}

// A ClusterIP Service: the pods `selector` (YAML lines at four spaces) picks, at `port`.
std::string service(std::string_view name, std::string_view selector, uint64_t port) {
  return fmt::format("---\n"
                     "apiVersion: v1\n"
                     "kind: Service\n"
                     "metadata:\n"
                     "  name: {0}\n"
                     "spec:\n"
                     "  selector:\n{1}"
                     "  ports:\n"
                     "  - port: {2}\n"
                     "    targetPort: {2}\n",
                     name, selector, port);
}

// A Deployment's pods, by the label deployment() gives them.
std::string app_selector(std::string_view name) { return fmt::format("    app: {}\n", name); }

// "llama-3.1-70b-vllm": a Kubernetes name (lower case, digits and dashes).
std::string k8s_name(const ResolvedPlan& rp, std::string_view role) {
  std::string name = fmt::format("{}-{}{}{}", rp.spec.name, rp.engine, role.empty() ? "" : "-", role);
  for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '-';
  return name;
}

}  // namespace launch_detail

std::string k8s_manifest(const ResolvedPlan& rp, const DeploymentShape& shape, const Launch& launch) {
  using namespace launch_detail;
  std::string out = fmt::format("# {} on {} ({}): {}\n", rp.spec.name, rp.hw.name, rp.engine,
                                launch.commands.empty() ? "no engine, no launch" : "the launch advise printed");
  for (const std::string& note : launch.notes) out += "# " + note + "\n";
  if (launch.commands.empty()) return out;
  const uint64_t tp = rp.plan.tp, per_node = rp.hw.devices_per_node;
  const uint64_t nodes = per_node && tp > per_node ? (tp + per_node - 1) / per_node : 1;
  std::vector<std::string> servers;  // the server commands (no ray start, no router)
  std::string router;
  // In a pod a server must listen beyond localhost (SGLang's, its router's, llama-server's and
  // trtllm-serve's default) for its Service to reach it.
  auto listen_all = [](std::string c) {
    return c.find("--host ") != std::string::npos || c.starts_with("trtllm-serve disaggregated") ? c : c + " --host 0.0.0.0";
  };
  for (const std::string& c : launch.commands) {
    if (c.starts_with("ray start")) continue;
    if (c.find("sglang_router") != std::string::npos || c.starts_with("trtllm-serve disaggregated")) router = listen_all(c);
    else servers.push_back(listen_all(c));
  }
  if (nodes > 1) {  // one LeaderWorkerSet: the leader runs the server, the workers join it
    const std::string leader_cmd = rp.engine == "vllm" ? "ray start --head --port 6379 && " + servers.front() : servers.front();
    std::string worker_cmd = rp.engine == "vllm"     ? "ray start --address $(LWS_LEADER_ADDRESS):6379 --block"
                             : rp.engine == "sglang" ? servers.back()
                                                     : "/usr/sbin/sshd -D";  // mpirun reaches the workers over ssh
    auto lws = [&](std::string text) {
      for (size_t at = text.find("HEAD:"); at != std::string::npos; at = text.find("HEAD:", at)) text.replace(at, 4, "$(LWS_LEADER_ADDRESS)");
      return text;
    };
    if (rp.engine == "sglang") {
      const size_t rank = worker_cmd.rfind("--node-rank ");
      worker_cmd = worker_cmd.substr(0, rank) + "--node-rank $(LWS_WORKER_INDEX)";
    }
    out += fmt::format("apiVersion: leaderworkerset.x-k8s.io/v1\n"
                       "kind: LeaderWorkerSet\n"
                       "metadata:\n"
                       "  name: {}\n"
                       "spec:\n"
                       "  replicas: {}\n"
                       "  leaderWorkerTemplate:\n"
                       "    size: {}\n"
                       "    leaderTemplate:\n"
                       "      metadata:\n"
                       "        labels:\n"
                       "          role: leader\n"
                       "      spec:\n"
                       "        containers:\n{}"
                       "    workerTemplate:\n"
                       "      spec:\n"
                       "        containers:\n{}",
                       k8s_name(rp, ""), shape.replicas, nodes,
                       container(rp.engine, {"sh", "-c", lws(leader_cmd)}, per_node, "        "),
                       container(rp.engine, {"sh", "-c", lws(worker_cmd)}, per_node, "        "));
    // requests go to the leaders (LWS labels every pod with its set's name)
    out += service(k8s_name(rp, ""),
                   fmt::format("    leaderworkerset.sigs.k8s.io/name: {}\n    role: leader\n", k8s_name(rp, "")),
                   server_port(rp.engine, servers.front()));
    return out;
  }
  if (shape.prefill && servers.size() >= 2) {  // a prefill/decode split: a Deployment and Service per role, and the router
    const std::string prefill = k8s_name(rp, "prefill"), decode = k8s_name(rp, "decode");
    out += deployment(prefill, rp.engine, *shape.prefill, servers[0], tp);
    out += service(prefill, app_selector(prefill), server_port(rp.engine, servers[0]));
    out += "---\n" + deployment(decode, rp.engine, *shape.decode, servers[1], tp);
    out += service(decode, app_selector(decode), server_port(rp.engine, servers[1]));
    if (!router.empty()) {  // the router reaches each pool by its Service's name
      for (const auto& [host, name] : {std::pair{std::string("PREFILL:"), prefill}, std::pair{std::string("DECODE:"), decode}})
        for (size_t at = router.find(host); at != std::string::npos; at = router.find(host, at))
          router.replace(at, host.size() - 1, name);
      const std::string name = k8s_name(rp, "router");
      out += "---\n" + deployment(name, rp.engine, 1, router, 0);
      out += service(name, app_selector(name), server_port(rp.engine, router));
    }
    return out;
  }
  // One server: data parallel inside it (its devices all the replicas'), or one pod per replica.
  const bool data_parallel = servers.front().find("--data-parallel-size") != std::string::npos ||
                             servers.front().find("--dp ") != std::string::npos;
  out += deployment(k8s_name(rp, ""), rp.engine, data_parallel ? 1 : shape.replicas, servers.front(),
                    data_parallel ? tp * shape.replicas : tp);
  out += service(k8s_name(rp, ""), app_selector(k8s_name(rp, "")), server_port(rp.engine, servers.front()));
  return out;
}

}  // namespace infer_plan::apps
