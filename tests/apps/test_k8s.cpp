// advise --emit k8s: the manifests parse as YAML (yaml-cpp, as kubectl's parser would read them), each
// object of the kind Kubernetes expects, its pods with the plan's devices and the launch's words.
#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "apps/launch.hpp"

using namespace infer_plan;
using namespace infer_plan::apps;

namespace {

Plan plan_of(const char* model, const char* engine, const char* weights, uint64_t tp, const char* hw = "h100-sxm") {
  Plan p;
  p.model = model;
  p.engine = engine;
  p.weights = weights;
  p.hw = hw;
  p.tp = tp;
  p.context = 4096;
  p.requests = 16;
  return p;
}

std::vector<YAML::Node> manifest(const Plan& plan, const DeploymentShape& shape) {
  const ResolvedPlan rp = resolve_plan(plan);
  const std::string text = k8s_manifest(rp, shape, launch_commands(rp, shape));
  CAPTURE(text);
  std::vector<YAML::Node> docs;
  REQUIRE_NOTHROW(docs = YAML::LoadAll(text));
  return docs;
}

// The container list of a Deployment's or a LeaderWorkerSet template's pod.
YAML::Node containers(const YAML::Node& pod_spec) { return pod_spec["containers"]; }

std::string words(const YAML::Node& command) {
  std::string out;
  for (const YAML::Node& w : command) out += (out.empty() ? "" : " ") + w.as<std::string>();
  return out;
}

// A Service reaching the pods `selected` at `port`: its selector's labels all on those pods.
void check_service(const YAML::Node& svc, const YAML::Node& pod_labels, int port) {
  CHECK(svc["apiVersion"].as<std::string>() == "v1");
  CHECK(svc["kind"].as<std::string>() == "Service");
  REQUIRE(svc["spec"]["selector"].IsMap());
  for (const auto& kv : svc["spec"]["selector"]) {
    CAPTURE(kv.first.as<std::string>());
    REQUIRE(pod_labels[kv.first.as<std::string>()]);
    CHECK(pod_labels[kv.first.as<std::string>()].as<std::string>() == kv.second.as<std::string>());
  }
  CHECK(svc["spec"]["ports"][0]["port"].as<int>() == port);
}

}  // namespace

TEST_CASE("a one-node plan is a Deployment: its replicas, devices per pod and the launch's command") {
  DeploymentShape shape;
  shape.replicas = 3;
  shape.max_batch = 16;
  // vLLM with three TP-2 replicas: data parallel inside one server on 6 of the node's 8 devices
  const std::vector<YAML::Node> v = manifest(plan_of("qwen3-8b", "vllm", "BF16", 2), shape);
  REQUIRE(v.size() == 2);  // the Deployment and its Service (vllm serve's port 8000)
  check_service(v[1], v[0]["spec"]["template"]["metadata"]["labels"], 8000);
  CHECK(v[0]["apiVersion"].as<std::string>() == "apps/v1");
  CHECK(v[0]["kind"].as<std::string>() == "Deployment");
  CHECK(v[0]["spec"]["replicas"].as<int>() == 1);
  const YAML::Node c = containers(v[0]["spec"]["template"]["spec"])[0];
  CHECK(c["image"].as<std::string>() == "vllm/vllm-openai:latest");
  CHECK(c["resources"]["limits"]["nvidia.com/gpu"].as<int>() == 6);
  CHECK(words(c["command"]).starts_with("vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2"));
  CHECK(words(c["command"]).ends_with("--data-parallel-size 3 --host 0.0.0.0"));  // listening beyond the pod
  // the selector matches the pod's labels (Kubernetes refuses a Deployment whose do not)
  CHECK(v[0]["spec"]["selector"]["matchLabels"]["app"].as<std::string>() ==
        v[0]["spec"]["template"]["metadata"]["labels"]["app"].as<std::string>());
  // llama.cpp: a pod per replica, one device each
  const std::vector<YAML::Node> l = manifest(plan_of("llama-3.1-8b", "llama.cpp", "Q4_K_M", 1, "rtx-4090"), shape);
  REQUIRE(l.size() == 2);
  check_service(l[1], l[0]["spec"]["template"]["metadata"]["labels"], 8080);  // llama-server's port
  CHECK(l[0]["spec"]["replicas"].as<int>() == 3);
  CHECK(containers(l[0]["spec"]["template"]["spec"])[0]["resources"]["limits"]["nvidia.com/gpu"].as<int>() == 1);
  CHECK(words(containers(l[0]["spec"]["template"]["spec"])[0]["command"]).starts_with("llama-server -m Llama-3.1-8B-Q4_K_M.gguf"));
}

TEST_CASE("a prefill/decode split is a Deployment per role and the router") {
  DeploymentShape shape;
  shape.prefill = 2;
  shape.decode = 1;
  shape.replicas = 3;
  const std::vector<YAML::Node> s = manifest(plan_of("qwen3-8b", "sglang", "BF16", 1), shape);
  REQUIRE(s.size() == 6);  // a Deployment and a Service for each of prefill, decode and the router
  CHECK(s[0]["spec"]["replicas"].as<int>() == 2);
  CHECK(s[2]["spec"]["replicas"].as<int>() == 1);
  CHECK(words(containers(s[0]["spec"]["template"]["spec"])[0]["command"]).find("--disaggregation-mode prefill") != std::string::npos);
  CHECK(words(containers(s[2]["spec"]["template"]["spec"])[0]["command"]).find("--disaggregation-mode decode") != std::string::npos);
  const std::string router = words(containers(s[4]["spec"]["template"]["spec"])[0]["command"]);
  CHECK(router.find("sglang_router") != std::string::npos);
  for (int k : {0, 2, 4}) check_service(s[k + 1], s[k]["spec"]["template"]["metadata"]["labels"], k == 2 ? 30001 : 30000);
  // the router reaches each pool by its Service's name and port, no placeholder left
  const std::string prefill = s[1]["metadata"]["name"].as<std::string>(), decode = s[3]["metadata"]["name"].as<std::string>();
  CHECK(router.find("--prefill http://" + prefill + ":30000") != std::string::npos);
  CHECK(router.find("--decode http://" + decode + ":30001") != std::string::npos);
  CHECK(router.find("PREFILL") == std::string::npos);
}

TEST_CASE("a plan over two nodes is a LeaderWorkerSet of two: the leader serves, the worker joins it") {
  DeploymentShape shape;
  for (const char* engine : {"vllm", "sglang"}) {
    CAPTURE(engine);
    const std::vector<YAML::Node> m = manifest(plan_of("deepseek-v3", engine, "FP8_BLOCK128", 16), shape);
    REQUIRE(m.size() == 2);
    // the Service reaches the leaders: LWS labels every pod with its set's name, the template adds the role
    YAML::Node leader_labels = m[0]["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["metadata"]["labels"];
    leader_labels["leaderworkerset.sigs.k8s.io/name"] = m[0]["metadata"]["name"].as<std::string>();
    check_service(m[1], leader_labels, std::string(engine) == "vllm" ? 8000 : 30000);
    CHECK(m[0]["apiVersion"].as<std::string>() == "leaderworkerset.x-k8s.io/v1");
    CHECK(m[0]["kind"].as<std::string>() == "LeaderWorkerSet");
    const YAML::Node t = m[0]["spec"]["leaderWorkerTemplate"];
    CHECK(t["size"].as<int>() == 2);  // 16 devices, 8 a node
    const YAML::Node leader = containers(t["leaderTemplate"]["spec"])[0], worker = containers(t["workerTemplate"]["spec"])[0];
    CHECK(leader["resources"]["limits"]["nvidia.com/gpu"].as<int>() == 8);
    CHECK(worker["resources"]["limits"]["nvidia.com/gpu"].as<int>() == 8);
    const std::string lead = words(leader["command"]), work = words(worker["command"]);
    CHECK(lead.find("deepseek-ai/DeepSeek-V3") != std::string::npos);
    CHECK(work.find("$(LWS_LEADER_ADDRESS)") != std::string::npos);  // the worker finds the leader by LWS's variable
    CHECK(lead.find("--host 0.0.0.0") != std::string::npos);
    if (std::string(engine) == "sglang") CHECK(work.ends_with("--node-rank $(LWS_WORKER_INDEX)"));
    else CHECK(lead.find("ray start --head") != std::string::npos);
  }
}
