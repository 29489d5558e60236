// What engines allocate beside weights and KV, against the figures they print.
#include <doctest/doctest.h>

#include "planner/catalog/catalog.hpp"
#include "planner/cost/engine_memory.hpp"
#include "planner/core/input_error.hpp"
#include "planner/cost/memory_fit.hpp"
#include "planner/plan/plan.hpp"

using namespace infer_plan;

TEST_CASE("llama.cpp's compute buffer matches its own log lines (Mistral 7B, n_ubatch 512)") {
  const ModelSpec mistral = load_model("mistral-7b-v0.1");  // n_embd 4096, 32 heads, vocab 32000
  const HwProfile gpu = load_hw_profile("rtx-4090");
  // "CUDA0 compute buffer size = 164.00 MiB" at n_ctx 2048 and "2144.00 MiB" at 32768
  // (github.com/fedora-copr/logdetective/pull/106): the attention phase, 4 x 512 x (1 + 4 x 4096 +
  // n_ctx x 33) B
  const EngineMemory at2k = engine_memory("llama.cpp", mistral, gpu, 2048, 1);
  REQUIRE(at2k.reserves.size() == 2);
  CHECK(at2k.reserves[0].name == "llama.cpp compute buffer");
  CHECK(at2k.reserves[0].bytes == uint64_t{171968512});  // 164.00 MiB
  CHECK(engine_memory("llama.cpp", mistral, gpu, 32768, 1).reserves[0].bytes == uint64_t{2248148992});  // 2144.00 MiB
  // n_ctx is every slot's context: 4 slots of 512 size like one of 2048
  CHECK(engine_memory("llama.cpp", mistral, gpu, 512, 4).reserves[0].bytes == uint64_t{171968512});
  CHECK(at2k.reserves[1].name == "CUDA context");
  CHECK(at2k.reserves[1].bytes == uint64_t{450} << 20);
  CHECK(at2k.usable_fraction == 1.0);
  // A short context: the output phase (every token's logits) is the larger, 4 x 64 x (4096 + 32000)
  CHECK(engine_memory("llama.cpp", mistral, gpu, 64, 1).reserves[0].bytes == uint64_t{4 * 64 * (4096 + 32000)});
  // Apple's GPUs have no CUDA context
  CHECK(engine_memory("llama.cpp", mistral, load_hw_profile("m2-ultra"), 2048, 1).reserves.size() == 1);
}

TEST_CASE("vLLM: gpu_memory_utilization and the activation peak") {
  const ModelSpec llama = load_model("llama-3.1-8b");  // n_ff 14336, n_embd 4096, vocab 128256
  const EngineMemory m = engine_memory("vllm", llama, load_hw_profile("h100-sxm"), 8192, 16);
  CHECK(m.usable_fraction == 0.9);
  REQUIRE(m.reserves.size() == 2);
  // 8192 x (3 x 14336 + 4 x 4096) x 2 + 256 x 128256 x 4 = 1,104,412,672 B = 1.03 GiB (vLLM
  // logged a 1.26 GiB peak for Llama-3-8B on an H100, vllm PR #10511: the estimate is 18% low)
  CHECK(m.reserves[0].bytes == uint64_t{1104412672});
}

TEST_CASE("fit counts the engine and says what it assumed") {
  Plan plan;
  plan.model = "llama-3.1-8b";
  plan.hw = "h100-sxm";
  plan.context = 8192;
  plan.requests = 4;
  const ModelSpec spec = load_model(plan.model);
  const HwProfile hw = load_hw_profile(plan.hw);
  const FitResult bare = fit_memory(spec, hw, plan, 16'000'000'000, "given", false);
  CHECK(bare.engine_assumption.find("no engine") == 0);
  plan.engine = "vllm";
  const FitResult vllm = fit_memory(spec, hw, plan, 16'000'000'000, "given", false);
  CHECK(vllm.usable_bytes == static_cast<uint64_t>(static_cast<double>(hw.memory_capacity_bytes) * 0.9));
  CHECK(vllm.reserved_bytes == bare.reserved_bytes + 1104412672 + (uint64_t{450} << 20));
  CHECK(vllm.headroom_bytes < bare.headroom_bytes);
  plan.engine = "tgi";
  CHECK_THROWS_WITH_AS(fit_memory(spec, hw, plan, 1, "given", false), doctest::Contains("'tgi'"), InputError);
}
