// What engines allocate beside weights and KV, against the figures they print.
#include <doctest/doctest.h>

#include "planner/catalog/catalog.hpp"
#include "planner/cost/engine_memory.hpp"
#include "planner/core/input_error.hpp"
#include "planner/cost/memory_fit.hpp"
#include "planner/plan/plan.hpp"
#include "planner/plan/predict.hpp"

using namespace infer_plan;

TEST_CASE("llama.cpp's compute buffer matches its own log lines (Mistral 7B, n_ubatch 512)") {
  const ModelSpec mistral = load_model("mistral-7b-v0.1");  // n_embd 4096, 32 heads, vocab 32000
  const HwProfile gpu = load_hw_profile("rtx-4090");
  // "CUDA0 compute buffer size = 164.00 MiB" at n_ctx 2048 and "2144.00 MiB" at 32768
  // (github.com/fedora-copr/logdetective/pull/106): the attention phase, 4 x 512 x (1 + 4 x 4096 +
  // n_ctx x 33) B; that log's build ran without flash attention
  EngineSettings no_fa;
  no_fa.flash_attention = false;
  const EngineMemory at2k = engine_memory("llama.cpp", mistral, gpu, 2048, 1, 1, no_fa);
  REQUIRE(at2k.reserves.size() == 2);
  CHECK(at2k.reserves[0].name == "llama.cpp compute buffer");
  CHECK(at2k.reserves[0].bytes == uint64_t{171968512});  // 164.00 MiB
  CHECK(engine_memory("llama.cpp", mistral, gpu, 32768, 1, 1, no_fa).reserves[0].bytes == uint64_t{2248148992});  // 2144.00 MiB
  // n_ctx is every slot's context: 4 slots of 512 size like one of 2048
  CHECK(engine_memory("llama.cpp", mistral, gpu, 512, 4, 1, no_fa).reserves[0].bytes == uint64_t{171968512});
  CHECK(at2k.reserves[1].name == "CUDA context");
  CHECK(at2k.reserves[1].bytes == uint64_t{450} << 20);
  CHECK(at2k.usable_fraction == 1.0);
  // A short context: the output phase (every token's logits) is the larger, 4 x 64 x (4096 + 32000)
  CHECK(engine_memory("llama.cpp", mistral, gpu, 64, 1, 1, no_fa).reserves[0].bytes == uint64_t{4 * 64 * (4096 + 32000)});
  // Apple's GPUs have no CUDA context
  CHECK(engine_memory("llama.cpp", mistral, load_hw_profile("m2-ultra"), 2048, 1).reserves.size() == 1);
}

// vLLM 0.19.0's start-up logs on one to four H100 80GB (torch's total 79.19 GiB), from
// https://github.com/llm-d-incubation/llm-d-planner/tree/d3121e05/accuracy/results/v0.19.0/logs:
// "GPU KV cache size: N tokens" beside what the fit gives the same settings.
struct VllmLog {
  const char* model;
  const char* weights;
  uint64_t tp;
  double utilization;
  uint64_t logged_tokens;
};

TEST_CASE("llama.cpp with flash attention (its default): no KQ scores, the output phase is the peak") {
  // Qwen3-235B-A22B at n_ctx 16384, -fa, llama.cpp build 5269 (1d36b3): "CPU compute buffer size =
  // 304.75 MiB" for the graph's output part (github.com/ikawrakow/ik_llama.cpp/discussions/357,
  // 2025-05-03, a mainline log): 4 x 512 x (4096 + 151936) B = 319,553,536 B; on one device the logits
  // are placed after the F16 mask's place, 2 x 512 x 16384 B more (the published logs' table is in
  // test_engine_startup_logs)
  const ModelSpec qwen = load_model("qwen3-235b-a22b");
  const uint64_t mask = 2 * 512 * 16384;
  const EngineMemory fa = engine_memory("llama.cpp", qwen, load_hw_profile("h100-sxm"), 16384, 1);
  CHECK(fa.reserves[0].bytes == uint64_t{319553536} + mask);
  CHECK(fa.assumption.find("flash attention on: llama.cpp's auto") != std::string::npos);
  // without it, the KQ scores of 64 heads: 4 x 512 x (1 + 4 x 4096 + 16384 x 65) B
  EngineSettings off;
  off.flash_attention = false;
  CHECK(engine_memory("llama.cpp", qwen, load_hw_profile("h100-sxm"), 16384, 1, 1, off).reserves[0].bytes ==
        uint64_t{4} * 512 * (1 + 4 * 4096 + 16384 * 65));
  // -ub 256 halves the output phase; -b below -ub bounds it
  EngineSettings small;
  small.ubatch = 256;
  CHECK(engine_memory("llama.cpp", qwen, load_hw_profile("h100-sxm"), 16384, 1, 1, small).reserves[0].bytes ==
        (uint64_t{319553536} + mask) / 2);
  small.ubatch = 1024;
  small.batch = 256;
  CHECK(engine_memory("llama.cpp", qwen, load_hw_profile("h100-sxm"), 16384, 1, 1, small).reserves[0].bytes ==
        (uint64_t{319553536} + mask) / 2);
}

TEST_CASE("vLLM's KV pool as its start-up logs report it") {
  const VllmLog logs[] = {
      {"llama-3.1-8b", "BF16", 1, 0.95, 476016},      {"llama-3.1-8b", "BF16", 2, 0.95, 1044688},
      {"llama-3.1-8b", "BF16", 4, 0.95, 2209792},     {"qwen2.5-7b", "BF16", 4, 0.95, 5043280},
      {"qwen3-8b", "BF16", 1, 0.95, 418688},          {"gemma-2-9b", "BF16", 1, 0.95, 168880},
      {"phi-4", "BF16", 1, 0.95, 241568},             {"qwen3-30b-a3b", "BF16", 1, 0.95, 168288},
      {"mixtral-8x7b", "BF16", 2, 0.95, 465936},      {"deepseek-v2-lite", "BF16", 1, 0.95, 1505552},
      {"llama-3.3-70b", "FP8_CHANNEL", 4, 0.95, 708992}, {"gpt-oss-20b", "MXFP4_EXPERTS", 2, 0.9, 2591776},
  };
  for (const VllmLog& log : logs) {
    Plan plan;
    plan.model = log.model;
    plan.hw = "h100-sxm";
    plan.engine = "vllm";
    plan.weights = log.weights;
    plan.tp = log.tp;
    plan.context = 8192;
    plan.requests = 1;
    plan.engine_settings.gpu_memory_utilization = log.utilization;
    plan.engine_settings.engine_version = "0.19.0";
    const FitResult r = resolve_plan(plan).fit;
    CAPTURE(log.model);
    CAPTURE(log.tp);
    REQUIRE(r.kv_pool_tokens);
    CHECK(*r.kv_pool_tokens % 16 == 0);  // whole blocks
    CHECK(static_cast<double>(*r.kv_pool_tokens) == doctest::Approx(static_cast<double>(log.logged_tokens)).epsilon(0.01));
  }
}

TEST_CASE("vLLM's reserves: non-torch memory grows with TP, the sampler's rows with the vocabulary") {
  const ModelSpec llama = load_model("llama-3.1-8b");  // n_ff 14336, n_embd 4096, vocab 128256
  const HwProfile h100 = load_hw_profile("h100-sxm");  // >= 70 GiB, not an A100: 1024 sequences, 8192 tokens
  EngineSettings v019;
  v019.engine_version = "0.19.0";
  const EngineMemory one = engine_memory("vllm", llama, h100, 8192, 1, 1, v019);
  CHECK(one.usable_fraction == 0.9);
  CHECK(one.pool_block_tokens == uint64_t{16});
  REQUIRE(one.reserves.size() == 2);
  CHECK(one.reserves[0].bytes == static_cast<uint64_t>(0.25 * (1 << 30)));
  // the sampler: 1024 x 128256 x 4 B x 3.73 + 8192 x 4096 x 2 B = 2,026,614,292 B (1.887 GiB; logged
  // 1.89), above the forward pass's 8192 x (3 x 14336 + 4 x 4096) x 2 = 973,078,528 B
  CHECK(one.reserves[1].bytes == uint64_t{2026614292});
  EngineSettings at95 = v019;
  at95.gpu_memory_utilization = 0.95;
  const EngineMemory four = engine_memory("vllm", llama, h100, 8192, 1, 4, at95);
  CHECK(four.usable_fraction == 0.95);
  CHECK(four.reserves[0].bytes == static_cast<uint64_t>(2.16 * (1 << 30)));  // 2.0 + 4 x 0.04 GiB (logged 2.13)
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
  plan.engine_settings.engine_version = "0.19";
  const FitResult vllm = fit_memory(spec, hw, plan, 16'000'000'000, "given", false);
  // 0.9 of what CUDA reports, the capacity less the driver's 450 MiB
  CHECK(vllm.usable_bytes == static_cast<uint64_t>(static_cast<double>(hw.memory_capacity_bytes - (uint64_t{450} << 20)) * 0.9));
  CHECK(vllm.reserved_bytes == bare.reserved_bytes + 2026614292 + static_cast<uint64_t>(0.25 * (1 << 30)));
  CHECK(vllm.headroom_bytes < bare.headroom_bytes);
  plan.engine = "tgi";
  CHECK_THROWS_WITH_AS(fit_memory(spec, hw, plan, 1, "given", false), doctest::Contains("'tgi'"), InputError);
}

TEST_CASE("vLLM 0.20 and later: its CUDA graphs' estimate out of the pool, 0.92 of the memory by default") {
  const ModelSpec llama = load_model("llama-3.1-8b");
  const HwProfile h100 = load_hw_profile("h100-sxm");
  const auto gib = [](double g) { return static_cast<uint64_t>(g * (1 << 30)); };
  const EngineMemory now = engine_memory("vllm", llama, h100, 8192, 1);
  CHECK(now.usable_fraction == 0.92);
  REQUIRE(now.reserves.size() == 3);
  CHECK(now.reserves[2].name == "vLLM CUDA graphs (estimated)");
  // 1024 sequences: capture sizes 1, 2, 4, 8 ... 248 (31), 256 ... 512 (17) = 51 piecewise, all of them
  // at most 1024 full: 0.52 + 0.002 x (102 - 2) GiB
  CHECK(now.reserves[2].bytes == gib(0.72));
  // 256 sequences (an A100 40GB's default): 51 piecewise, 35 full (up to 256): 0.52 + 0.002 x 84. vLLM 0.19.0
  // on an H100 estimated 0.84 GiB at 1024 (CodeLlama-7B) and 0.21.0 on an RTX A5000 0.52 at 256 (Qwen3-8B):
  // the rule is within 0.2 GiB of both
  EngineSettings s;
  s.max_num_seqs = 256;
  CHECK(engine_memory("vllm", llama, h100, 8192, 1, 1, s).reserves[2].bytes == gib(0.688));
  // 8 sequences: sizes up to 16, 1 2 4 8 16 piecewise and 1 2 4 8 full
  s.max_num_seqs = 8;
  CHECK(engine_memory("vllm", llama, h100, 8192, 1, 1, s).reserves[2].bytes == gib(0.534));
  // enforce_eager: none; a version before 0.20: none, and 0.9
  EngineSettings eager;
  eager.enforce_eager = true;
  const EngineMemory e = engine_memory("vllm", llama, h100, 8192, 1, 1, eager);
  CHECK(e.reserves.size() == 2);
  CHECK(e.usable_fraction == 0.92);
  EngineSettings old;
  old.engine_version = "v0.19.1";
  CHECK(engine_memory("vllm", llama, h100, 8192, 1, 1, old).reserves.size() == 2);
  CHECK(engine_memory("vllm", llama, h100, 8192, 1, 1, old).usable_fraction == 0.9);
  old.engine_version = "0.23.1rc1.dev531+ga65f93fb2";
  CHECK(engine_memory("vllm", llama, h100, 8192, 1, 1, old).reserves.size() == 3);
  // Versions as engines print them
  CHECK(engine_version_number("0.19") == std::pair{0u, 19u});
  CHECK(engine_version_number("v0.20.1") == std::pair{0u, 20u});
  CHECK(engine_version_number("0.9.1.dev705+g01220ce89") == std::pair{0u, 9u});
  CHECK(engine_version_number("0.19rc1") == std::pair{0u, 19u});
  CHECK_FALSE(engine_version_number("latest"));
  CHECK_FALSE(engine_version_number("1"));
  CHECK_FALSE(engine_version_number("0.x"));
  CHECK_FALSE(engine_version_number("0.19-"));
}

TEST_CASE("SGLang's mem_fraction_static as its server_args sets it by device and TP") {
  // reserved = 512 + 1.5 x max(chunked_prefill_size, 2048) + 2 x cuda_graph_max_bs + 128 x TP MiB, at
  // least 10 GiB above 60 GiB; fraction = round((MiB - reserved) / MiB, 3). By hand: H100 (81559 MiB) TP 1:
  // 512 + 12288 + 512 + 128 = 13440 -> 0.835; TP 8: 512 + 12288 + 1024 + 1024 = 14848 -> 0.818; H200
  // (143771 MiB): 0.907; RTX 4090 (24564 MiB, 2048 and 24): 512 + 3072 + 48 + 128 = 3760 -> 0.847
  const ModelSpec llama = load_model("llama-3.1-8b");
  CHECK(engine_memory("sglang", llama, load_hw_profile("h100-sxm"), 8192, 1).usable_fraction == doctest::Approx(0.835));
  CHECK(engine_memory("sglang", llama, load_hw_profile("h100-sxm"), 8192, 1, 8).usable_fraction == doctest::Approx(0.818));
  CHECK(engine_memory("sglang", llama, load_hw_profile("h200"), 8192, 1).usable_fraction == doctest::Approx(0.907));
  CHECK(engine_memory("sglang", llama, load_hw_profile("rtx-4090"), 8192, 1).usable_fraction == doctest::Approx(0.847));
  EngineSettings given;
  given.mem_fraction_static = 0.93;
  const EngineMemory m = engine_memory("sglang", llama, load_hw_profile("h100-sxm"), 8192, 1, 1, given);
  CHECK(m.usable_fraction == 0.93);
  CHECK(m.pool_block_tokens == uint64_t{1});  // page size 1: the pool is whole tokens
  CHECK(m.reserves.empty());                   // activations and graphs come out of the rest
}

TEST_CASE("TensorRT-LLM's pool: its fraction of what weights, non-torch memory and the profiling run leave") {
  // TensorRT-LLM 1.2.1 (PyTorch backend, LLM API), Qwen3-0.6B BF16 on one H100, defaults (fraction 0.9,
  // max_num_tokens 8192): "[MemUsageChange] Allocated 68.69 GiB for max tokens in paged KV cache (643136)".
  // The non-torch constant (1.57 GiB) was fitted to this log; the rest is the rule, by hand:
  // activations 8192 x (3 x 3072 + 4 x 1024) x 2 B = 218,103,808 B; KV = 0.9 x (capacity - 450 MiB -
  // weights - 1.57 GiB - activations), in 114,688 B tokens, whole 32-token blocks.
  Plan plan;
  plan.model = "qwen3-0.6b";
  plan.hw = "h100-sxm";
  plan.weights = "BF16";
  plan.engine = "trtllm";
  plan.context = 8192;
  plan.requests = 1;
  const ResolvedPlan rp = resolve_plan(plan);
  const EngineMemory m = engine_memory("trtllm", rp.spec, rp.hw, 8192, 1);
  REQUIRE(m.reserves.size() == 3);
  CHECK(m.reserves[2].bytes == uint64_t{218103808});
  CHECK(m.kv_share == 0.9);
  CHECK(m.pool_block_tokens == uint64_t{32});
  const double left = static_cast<double>(rp.hw.memory_capacity_bytes - (uint64_t{450} << 20) - rp.fit.weights_bytes -
                                          static_cast<uint64_t>(1.57 * (1 << 30)) - 218103808);
  const uint64_t by_hand = static_cast<uint64_t>(0.9 * left) / 114688 / 32 * 32;
  CHECK(rp.fit.kv_bytes_per_token == 114688);
  CHECK(rp.fit.kv_pool_tokens == by_hand);
  CHECK(static_cast<double>(*rp.fit.kv_pool_tokens) == doctest::Approx(643136).epsilon(0.001));
  // Its fraction is the plan's to set, and only TensorRT-LLM's.
  plan.engine_settings.free_gpu_memory_fraction = 0.45;
  CHECK(static_cast<double>(*resolve_plan(plan).fit.kv_pool_tokens) == doctest::Approx(0.5 * static_cast<double>(by_hand)).epsilon(0.001));
  plan.engine = "vllm";
  CHECK_THROWS_WITH_AS(resolve_plan(plan), doctest::Contains("field 'free_gpu_memory_fraction' is TensorRT-LLM's"),
                       InputError);
}

TEST_CASE("SGLang's pool against its start-up logs; over PCIe a TP group keeps no all-reduce buffers") {
  // "KV Cache is allocated. #tokens: N" with mem_fraction_static as each run set it:
  //   Llama-3.1-8B BF16, one H100, 0.88 (SGLang's documentation, 2025-01, v0.4.1): 444,500 tokens;
  //   its "Load weight begin. avail mem=78.81 GB" is the memory free after CUDA and torch, 79.65 - 0.84 GiB.
  //   Qwen3-235B-A22B-FP8, 4 x H100, 0.93 (a log pasted into a vLLM issue thread): 367,404 tokens.
  auto pool = [](const char* model, const char* weights, uint64_t tp, double fraction) {
    Plan plan;
    plan.model = model;
    plan.weights = weights;
    plan.hw = "h100-sxm";
    plan.engine = "sglang";
    plan.tp = tp;
    plan.context = 4096;
    plan.requests = 1;
    plan.engine_settings.mem_fraction_static = fraction;
    return static_cast<double>(*resolve_plan(plan).fit.kv_pool_tokens);
  };
  CHECK(pool("llama-3.1-8b", "BF16", 1, 0.88) == doctest::Approx(444500).epsilon(0.01));
  CHECK(pool("qwen3-235b-a22b", "FP8_BLOCK128", 4, 0.93) == doctest::Approx(367404).epsilon(0.01));
  // What is taken before the probe: the CUDA context and torch's start-up alone (0.44 + 0.40 GiB), the
  // same over PCIe at TP 4 (4 x L4 log: 0.86 GB), and NCCL's and the all-reduce's buffers over NVLink.
  const ModelSpec llama = load_model("llama-3.1-8b");
  const uint64_t alone = engine_memory("sglang", llama, load_hw_profile("h100-sxm"), 4096, 1).unseen_bytes;
  CHECK(alone == (uint64_t{450} << 20) + static_cast<uint64_t>(0.40 * (1 << 30)));
  CHECK(engine_memory("sglang", llama, load_hw_profile("rtx-4090"), 4096, 1, 4).unseen_bytes == alone);
  CHECK(engine_memory("sglang", llama, load_hw_profile("h100-sxm"), 4096, 1, 4).unseen_bytes ==
        (uint64_t{450} << 20) + static_cast<uint64_t>((2.0 + 0.04 * 4) * (1 << 30)));
}
