// advise's launch commands: every flag is one its engine documents (tests/data/engine_flags.json), and
// the numbers are the plan's (hand-checked commands for one plan per engine).
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "planner/advise/advise.hpp"
#include "planner/core/json_fields.hpp"
#include "apps/launch.hpp"

using namespace infer_plan;
using namespace infer_plan::apps;

namespace {

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The documented flags of the program `command` runs (the longest program name it starts with).
const Json* program_of(const Json& flags, const std::string& command) {
  const Json* best = nullptr;
  size_t best_size = 0;
  for (const Json& p : flags.at("programs")) {
    const std::string name = p.at("program").get<std::string>();
    std::string start = command;
    if (start.starts_with("mpirun ")) start = "mpirun " + start.substr(7);
    if (start.starts_with(name) && name.size() > best_size) {
      best = &p;
      best_size = name.size();
    }
  }
  return best;
}

// Every word of `command` that is a flag (a dash and a letter) is one its program documents; mpirun's
// command line carries trtllm-serve's after trtllm-llmapi-launch.
void check_flags(const Json& flags, const std::string& command) {
  CAPTURE(command);
  const Json* program = program_of(flags, command);
  REQUIRE(program);
  std::vector<std::string> ws = words(command);
  ws.erase(ws.begin(), ws.begin() + static_cast<long>(words(program->at("program").get<std::string>()).size()));
  const Json* current = program;
  for (const std::string& w : ws) {
    if (w == "trtllm-llmapi-launch") current = program_of(flags, "trtllm-serve");
    if (w.size() < 2 || w[0] != '-' || !std::isalpha(static_cast<unsigned char>(w[w.find_first_not_of('-')]))) continue;
    CAPTURE(w);
    const Json& list = current->at("flags");
    CHECK(std::find(list.begin(), list.end(), Json(w)) != list.end());
  }
}

}  // namespace

TEST_CASE("every flag of every launch command advise prints is one its engine documents") {
  const Json flags = read_json_file("tests/data/engine_flags.json");
  std::vector<AdviseQuery> queries;
  AdviseQuery readme;  // the README's example, every engine searched
  readme.model = "llama-3.1-70b";
  readme.engine = "any";
  readme.hw = {"h100-sxm", "h200", "a100-80gb"};
  readme.weights = {"BF16", "FP8", "Q8_0", "Q4_K_M", "AWQ_INT4_G128"};
  readme.kv = {{GgmlType::BF16, GgmlType::BF16}, {GgmlType::FP8, GgmlType::FP8}, {GgmlType::Q8_0, GgmlType::Q8_0}};
  readme.tp = {1, 2, 4, 8};
  readme.max_batch = {32, 64};
  readme.rate_per_s = 5;
  readme.prompt = {512, 2048};
  readme.output = {128, 512};
  readme.simulated_requests = 200;
  readme.slo.at_most(SloMetric::ttft, 2);
  readme.slo.at_most(SloMetric::tpot, 0.05);
  for (const char* engine : {"any", "vllm", "sglang", "trtllm"}) {
    AdviseQuery q = readme;
    q.engine = engine;
    if (q.engine != "any") q.weights = {"BF16", "FP8", "AWQ_INT4_G128"};
    queries.push_back(q);
  }
  AdviseQuery multi = readme;  // DeepSeek-V3 over two nodes of eight
  multi.model = "deepseek-v3";
  multi.hw = {"h100-sxm"};
  multi.weights = {"FP8_BLOCK128"};
  multi.kv = {{GgmlType::BF16, GgmlType::BF16}};
  multi.tp = {16};
  multi.rate_per_s = 1;
  multi.slo.at_most(SloMetric::tpot, 0.2);
  for (const char* engine : {"vllm", "sglang", "trtllm"}) {
    multi.engine = engine;
    queries.push_back(multi);
  }
  AdviseQuery spec = readme;  // speculative decoding with a draft model
  spec.model = "qwen3-8b";
  spec.hw = {"h100-sxm"};
  spec.weights = {"BF16"};
  spec.kv = {{GgmlType::BF16, GgmlType::BF16}};
  spec.tp = {1};
  spec.speculative = AdviseSpeculative{{0.8}, "qwen3-0.6b", std::nullopt, {4}};
  for (const char* engine : {"vllm", "sglang"}) {
    spec.engine = engine;
    queries.push_back(spec);
  }
  AdviseQuery capacity;  // llama.cpp, a layer split on one card
  capacity.model = "llama-3.1-70b";
  capacity.engine = "llama.cpp";
  capacity.hw = {"rtx-4090"};
  capacity.weights = {"Q4_K_M"};
  capacity.kv = {{GgmlType::Q8_0, GgmlType::Q8_0}};
  capacity.tp = {1};
  capacity.max_batch = {1};
  queries.push_back(capacity);
  size_t commands = 0, multi_node = 0, split = 0;
  for (const AdviseQuery& q : queries) {
    CAPTURE(q.model);
    CAPTURE(q.engine);
    const AdviseResult r = advise(q);
    REQUIRE_FALSE(r.ranked.empty());
    for (const AdviseCandidate& c : r.ranked) {
      REQUIRE(c.shape);
      const Launch launch = launch_commands(resolve_plan(c.plan), *c.shape);
      REQUIRE_FALSE(launch.commands.empty());
      for (const std::string& command : launch.commands) {
        check_flags(flags, command);
        ++commands;
        multi_node += command.find("--nnodes") != std::string::npos || command.find("ray start") != std::string::npos ||
                      command.starts_with("mpirun");
        split += command.find("--disaggregation-mode") != std::string::npos ||
                 command.find("--kv-transfer-config") != std::string::npos;
      }
    }
  }
  CHECK(commands > 50);
  CHECK(multi_node > 0);  // the multi-node forms were checked too
  CHECK(split > 0);       // ... and the disaggregated ones
}

TEST_CASE("a launch command carries the plan's numbers in its engine's words") {
  Plan p;
  p.model = "qwen3-8b";
  p.hw = "h100-sxm";
  p.engine = "vllm";
  p.weights = "FP8";
  p.kv = {GgmlType::FP8, GgmlType::FP8};
  p.tp = 2;
  p.context = 4096;
  p.requests = 64;
  DeploymentShape one;
  one.max_batch = 64;
  const Launch v = launch_commands(resolve_plan(p), one);
  REQUIRE(v.commands.size() == 1);
  // vLLM 0.20's default utilization, as the plan's memory counted it; FP8 weights quantized as loaded
  CHECK(v.commands[0] == "vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2 --max-model-len 4096 --max-num-seqs 64 "
                         "--gpu-memory-utilization 0.92 --kv-cache-dtype fp8 --quantization fp8");
  // two replicas on one node of eight: vLLM's data parallel
  DeploymentShape two = one;
  two.replicas = 2;
  CHECK(launch_commands(resolve_plan(p), two).commands[0].ends_with("--data-parallel-size 2"));

  // SGLang: its default mem_fraction_static on an H100 at TP 2 (0.5.4's rule, as fit uses it)
  p.engine = "sglang";
  const Launch s = launch_commands(resolve_plan(p), one);
  REQUIRE(s.commands.size() == 1);
  CHECK(s.commands[0].starts_with("python -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 2 --context-length 4096 "
                                  "--max-running-requests 64 --mem-fraction-static 0.83"));
  CHECK(s.commands[0].ends_with("--kv-cache-dtype fp8_e4m3 --quantization fp8"));

  // llama.cpp: -c is the slots' context together (llama-server divides it by -np)
  Plan l;
  l.model = "llama-3.1-8b";
  l.hw = "rtx-4090";
  l.engine = "llama.cpp";
  l.weights = "Q4_K_M";
  l.kv = {GgmlType::Q8_0, GgmlType::Q8_0};
  l.context = 8192;
  l.requests = 4;
  DeploymentShape four;
  four.max_batch = 4;
  const Launch c = launch_commands(resolve_plan(l), four);
  REQUIRE(c.commands.size() == 1);
  CHECK(c.commands[0] == "llama-server -m Llama-3.1-8B-Q4_K_M.gguf -c 32768 -np 4 -ngl 999 -fa on -ctk q8_0 -ctv q8_0");
  CHECK(c.notes.front().find("as a Q4_K_M GGUF") != std::string::npos);

  // SGLang over two nodes of eight H100s: one command per node, ranks 0 and 1
  Plan d;
  d.model = "deepseek-v3";
  d.hw = "h100-sxm";
  d.engine = "sglang";
  d.weights = "FP8_BLOCK128";
  d.tp = 16;
  d.context = 4096;
  d.requests = 8;
  const Launch m = launch_commands(resolve_plan(d), DeploymentShape{});
  REQUIRE(m.commands.size() == 2);
  CHECK(m.commands[0].find("--model-path deepseek-ai/DeepSeek-V3 --tp 16") != std::string::npos);  // its own FP8 repository
  CHECK(m.commands[0].ends_with("--nnodes 2 --dist-init-addr HEAD:5000 --node-rank 0"));
  CHECK(m.commands[1].ends_with("--node-rank 1"));
}
