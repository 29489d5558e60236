// The commands that start a deployment on its engine, with the engine's own flags and the plan's
// numbers: vLLM's `vllm serve`, SGLang's `python -m sglang.launch_server`, llama.cpp's
// `llama-server`, TensorRT-LLM's `trtllm-serve`; beyond one node their multi-node forms (vLLM over
// Ray, SGLang's --nnodes, TensorRT-LLM under mpirun), and for a prefill/decode split their
// disaggregated forms (vLLM's NixlConnector, SGLang's --disaggregation-mode, TensorRT-LLM's
// `trtllm-serve disaggregated`). The flags are the engines' documented ones
// (tests/data/engine_flags.json lists them with their sources; a test checks every flag emitted).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "planner/advise/advise.hpp"
#include "planner/plan/predict.hpp"

namespace infer_plan::apps {

struct Launch {
  std::vector<std::string> commands;  // one command line each, in the order to start them
  std::vector<std::string> notes;     // what to fill in or run beside them
};

// Empty commands for a plan without an engine ("none"), with a note saying so.
Launch launch_commands(const ResolvedPlan& rp, const DeploymentShape& shape);


// A Kubernetes manifest that runs `launch` (launch_commands' for the same plan and shape): a Deployment
// per server role with the plan's devices per pod (nvidia.com/gpu), or, when the plan spans nodes, a
// LeaderWorkerSet (leaderworkerset.x-k8s.io/v1, as vLLM's and SGLang's multi-node guides deploy them)
// whose group is one replica's nodes. The engines' published images; YAML comments say what to fill in.
std::string k8s_manifest(const ResolvedPlan& rp, const DeploymentShape& shape, const Launch& launch);

}  // namespace infer_plan::apps
