// SPEC 2: the M2 Max verdicts to the 0.01 GiB the seed prints, and the fit arithmetic.
#include <doctest/doctest.h>

#include "planner/catalog/catalog.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/limits.hpp"
#include "planner/cost/engine_memory.hpp"
#include "planner/cost/memory_fit.hpp"
#include "planner/plan/plan.hpp"
#include "planner/cost/offload.hpp"
#include "planner/weights/weights_size.hpp"
#include "planner/core/units.hpp"

using namespace infer_plan;

namespace {
FitResult seed_fit(const char* weights, uint64_t context, uint64_t requests = 1) {
  Plan plan;
  plan.model = "qwen3-235b-a22b";
  plan.hw = "tests/data/profile_m2_max_seed.json";  // seed 000's 96e9 B with 8 GiB kept
  plan.context = context;
  plan.requests = requests;
  const uint64_t w = parse_bytes(weights, "weights");
  return fit_memory(load_model(plan.model), load_hw_profile(plan.hw), plan, w, "given");
}
double in_gib(int64_t b) { return static_cast<double>(b) / static_cast<double>(GiB); }
}  // namespace

TEST_CASE("SPEC 2: 79.81 GiB + one 8K request fits with 0.13 GiB to spare") {
  const FitResult r = seed_fit("79.81 GiB", 8192);
  CHECK(r.usable_bytes == 87'410'065'408ull);
  CHECK(in_gib(r.free_after_weights_bytes) == doctest::Approx(1.60).epsilon(0.005));
  CHECK(r.kv_bytes == 188 * KiB * 8192);
  CHECK(r.fits);
  CHECK(in_gib(r.headroom_bytes) == doctest::Approx(0.13).epsilon(0.04));  // 0.129 GiB
  CHECK(r.max_requests == 1);
  // free 1,714,730,435 B / 192,512 B per token = 8907 tokens (hand: floor(8907.17)), in whole
  // 16-token pages: 556 x 16 = 8896
  CHECK(r.max_context == 8896);
}

TEST_CASE("SPEC 2: 81.97 GiB is 0.56 GiB short before any KV") {
  const FitResult r = seed_fit("81.97 GiB", 8192);
  CHECK_FALSE(r.fits);
  CHECK(in_gib(r.free_after_weights_bytes) == doctest::Approx(-0.56).epsilon(0.01));
  CHECK(r.max_requests == 0);
  CHECK(r.max_context == 0);
}

TEST_CASE("SPEC 2: 32K needs 5.88 GiB of KV: does not fit") {
  const FitResult r = seed_fit("79.81 GiB", 32768);
  CHECK(in_gib(static_cast<int64_t>(r.kv_bytes)) == doctest::Approx(5.875));
  CHECK_FALSE(r.fits);
}

TEST_CASE("the KV of a request is whole 16-token pages, as the runtime allocates it") {
  Plan plan;  // qwen3-8b: 144 KiB per token at BF16
  plan.requests = 2;
  const ModelSpec s = load_model("qwen3-8b");
  const HwProfile hw = load_hw_profile("h200");
  plan.context = 8190;  // 511.9 pages -> 512 pages = 8192 tokens
  CHECK(fit_memory(s, hw, plan, GiB, "w").kv_bytes == 2 * 8192 * 144 * KiB);
  plan.context = 8193;  // one token more than 512 pages -> 513 pages
  CHECK(fit_memory(s, hw, plan, GiB, "w").kv_bytes_per_request == 8208 * 144 * KiB);
  CHECK(kv_cache_tokens(1) == 16);
  CHECK(kv_cache_tokens(16) == 16);
  CHECK(kv_cache_tokens(17) == 32);
}

TEST_CASE("reserves, tensor parallel, many requests") {
  Plan plan;  // qwen3-8b on h200, BF16 KV, 4 x 8192
  const ModelSpec s = load_model("qwen3-8b");
  HwProfile hw = load_hw_profile("h200");
  const uint64_t w = 16 * GiB;
  FitResult a = fit_memory(s, hw, plan, w, "w");
  CHECK(a.kv_bytes == 4 * 1152 * MiB);
  CHECK(a.headroom_bytes == static_cast<int64_t>(a.usable_bytes - w - a.kv_bytes));
  // max requests: floor((usable - weights) / 1152 MiB)
  CHECK(a.max_requests == (a.usable_bytes - w) / (1152 * MiB));
  CHECK(a.max_context == (a.usable_bytes - w) / (144 * KiB * 4) / 16 * 16);

  plan.reserves.push_back({"cuda_context", 512 * MiB});
  FitResult b = fit_memory(s, hw, plan, w, "w");
  CHECK(b.reserved_bytes == 512 * MiB);
  CHECK(a.headroom_bytes - b.headroom_bytes == static_cast<int64_t>(512 * MiB));

  plan.tp = 2;
  FitResult c = fit_memory(s, hw, plan, w, "w");
  CHECK(c.weights_bytes == 8 * GiB);
  CHECK(c.kv_bytes == 2 * 1152 * MiB);  // half the KV heads per device

  plan.tp = 3;  // 32 heads do not split over 3 devices
  CHECK_THROWS_AS(fit_memory(s, hw, plan, w, "w"), InputError);
}

TEST_CASE("exactly full is a fit with zero headroom") {
  Plan plan;
  plan.requests = 1;
  const ModelSpec s = load_model("qwen3-8b");
  const HwProfile hw = load_hw_profile("h200");
  const uint64_t w = hw.usable_bytes() - 1152 * MiB;
  FitResult r = fit_memory(s, hw, plan, w, "w");
  CHECK(r.fits);
  CHECK(r.headroom_bytes == 0);
  CHECK(r.max_context == 8192);
  r = fit_memory(s, hw, plan, w + 1, "w");
  CHECK_FALSE(r.fits);
  CHECK(r.headroom_bytes == -1);
}

TEST_CASE("SPEC 4 through fit: offloaded groups leave the device, prefetch slots join it") {
  // Qwen3-8B BF16 on an H200 at 8K: the FFN of one layer in every 4 is 9 x 288 MiB = 2592 MiB in
  // host memory; one slot of 288 MiB nets 2304 MiB = exactly 2 more requests of 1152 MiB (8192 x
  // 144 KiB); two slots net 2016 MiB.
  const ModelSpec spec = load_model("qwen3-8b");
  Plan plan;
  plan.model = "qwen3-8b";
  plan.hw = "h200";
  plan.context = 8192;
  plan.requests = 1;
  const WeightsLayout layout = uniform_weights_layout(spec, "BF16");
  const HwProfile hw = load_hw_profile(plan.hw);
  const FitResult none = fit_memory(spec, hw, plan, weights_size(layout).bytes, "BF16");
  CHECK_FALSE(none.offload);
  CHECK(none.device_weights_bytes == none.weights_bytes);

  const OffloadMemory one_slot = offload_memory(spec, layout, 1.0, OffloadPart::ffn, 4, 1);
  CHECK(one_slot.label() == "ffn of 9 of 36 layers, 1 slot of 288 MiB");
  const FitResult one = fit_memory(spec, hw, plan, weights_size(layout).bytes, "BF16", true, &one_slot);
  REQUIRE(one.offload);
  CHECK(one.weights_bytes == none.weights_bytes);  // the model's size does not change
  CHECK(one.device_weights_bytes == none.weights_bytes - 2592 * MiB + 288 * MiB);
  CHECK(one.free_after_weights_bytes - none.free_after_weights_bytes == 2304 * static_cast<int64_t>(MiB));
  CHECK(one.kv_bytes_per_request == 1152 * MiB);
  CHECK(one.max_requests == none.max_requests + 2);

  const OffloadMemory two_slots = offload_memory(spec, layout, 1.0, OffloadPart::ffn, 4, 2);
  const FitResult two = fit_memory(spec, hw, plan, weights_size(layout).bytes, "BF16", true, &two_slots);
  CHECK(two.free_after_weights_bytes - none.free_after_weights_bytes == 2016 * static_cast<int64_t>(MiB));
  bool explained = false;
  for (const std::string& line : two.derivation)
    explained = explained || line.find("device   = weights - offloaded to host + prefetch slots") == 0;
  CHECK(explained);

  // Over 2 devices each holds half of every group (tensor parallel splits each matrix).
  plan.tp = 2;
  const FitResult split = fit_memory(spec, hw, plan, weights_size(layout).bytes, "BF16", false, &one_slot);
  CHECK(split.offload->freed_bytes == 1296 * MiB);
  CHECK(split.offload->buffer_bytes == 144 * MiB);

  CHECK_THROWS_WITH_AS(offload_memory(spec, layout, 1.0, OffloadPart::ffn, 0, 1), doctest::Contains("offload.every (--every): 0 is out of range"),
                       InputError);
  CHECK_THROWS_WITH_AS(offload_memory(spec, layout, 1.0, OffloadPart::ffn, 4, 37), doctest::Contains("offload.buffers (--buffers): 37 is out of range"),
                       InputError);
}

TEST_CASE("sizes past 2^60 bytes are refused, never wrapped into a verdict (issue 15, class 3)") {
  const ModelSpec spec = load_model("qwen3-8b");
  const HwProfile hw = load_hw_profile("h200");
  Plan plan;
  CHECK_THROWS_WITH_AS(fit_memory(spec, hw, plan, kMaxBytes + 1, "given"), doctest::Contains("weights: "),
                       InputError);
  plan.reserves = {{"a", kMaxBytes}, {"b", kMaxBytes}};  // each allowed; the sum is not
  CHECK_THROWS_WITH_AS(fit_memory(spec, hw, plan, GiB, "given"),
                       doctest::Contains("reserves: b and those before it sum to more than 1024 PiB"), InputError);
  // 144 KiB per token x 2^24 tokens x 10^6 requests = 2.5e18 B > 2^60 = 1.15e18 B.
  plan.reserves.clear();
  plan.context = kMaxContextTokens;
  plan.requests = kMaxConcurrentRequests;
  CHECK_THROWS_WITH_AS(fit_memory(spec, hw, plan, GiB, "given"), doctest::Contains("KV cache: 1000000 requests"),
                       InputError);
  // The largest sizes that pass keep their sign: a 1024 PiB reserve does not fit.
  plan.context = 8192;
  plan.requests = 1;
  plan.reserves = {{"a", kMaxBytes}};
  const FitResult r = fit_memory(spec, hw, plan, GiB, "given");
  CHECK_FALSE(r.fits);
  CHECK(r.headroom_bytes < 0);
}

TEST_CASE("GPT-OSS-120B at 128K: its 18 window layers count 128 tokens each (issue 18)") {
  Plan plan;
  plan.model = "gpt-oss-120b";
  plan.hw = "h200";
  plan.context = 131072;
  plan.requests = 2;
  const ModelSpec s = load_model(plan.model);
  const FitResult r = fit_memory(s, load_hw_profile(plan.hw), plan, 60'000'000'000, "given");
  // 2048 B per token and layer (2 x 8 heads x 64 x 2 B) x (18 x 131072 + 18 x 128) per request
  CHECK(r.kv_bytes_per_request == 2048ull * 18 * (131072 + 128));
  CHECK(r.kv_bytes == 2 * r.kv_bytes_per_request);
  // The serving pool's token capacity follows the same mix: the pool holds exactly 2 x 131072.
  CHECK(r.kv_tokens_in(r.kv_bytes) == 2 * 131072);
  // The longest context is where the full layers' growth meets the room.
  CHECK(r.max_context == kv_context_for_bytes(s, plan.kv, r.kv_room_bytes / 2));
  CHECK(kv_bytes_for_context(s, plan.kv, r.max_context) * 2 <= r.kv_room_bytes);
  CHECK(kv_bytes_for_context(s, plan.kv, r.max_context + kKvPageTokens) * 2 > r.kv_room_bytes);
  bool explained = false;
  for (const auto& line : r.derivation) explained |= line.find("18 window layers x min(131072, 128)") != std::string::npos;
  CHECK(explained);
}

TEST_CASE("llama.cpp's window layers keep the window and a micro-batch, padded to 256 cells") {
  // Published log (llama.cpp on 8 Ascend NPUs, GPT-OSS-20B, -c 131072, f16 KV): "creating non-SWA KV cache,
  // size = 131072 cells ... size = 3072.00 MiB (131072 cells, 12 layers)", "creating SWA KV cache, size =
  // 768 cells ... size = 18.00 MiB (768 cells, 12 layers)": 128 + 512 = 640, padded to 768.
  const ModelSpec gpt_oss = engine_model_spec(load_model("gpt-oss-20b"), "llama.cpp");
  CHECK(gpt_oss.sliding_window == 128);  // attention still sees 128 tokens
  CHECK(gpt_oss.cached_window() == 768);
  const KvTypes f16{GgmlType::F16, GgmlType::F16};
  CHECK(kv_bytes_for_context(gpt_oss, f16, 131072) == (3072ull + 18) << 20);
  EngineSettings ub;
  ub.ubatch = 1024;  // 128 + 1024 = 1152 -> 1280
  CHECK(engine_model_spec(load_model("gpt-oss-20b"), "llama.cpp", ub).cached_window() == 1280);
  ub.batch = 256;  // n_ubatch is at most n_batch: 128 + 256 -> 512
  CHECK(engine_model_spec(load_model("gpt-oss-20b"), "llama.cpp", ub).cached_window() == 512);
  // vLLM frees the pages that slide out: the window alone.
  CHECK(engine_model_spec(load_model("gpt-oss-20b"), "vllm").cached_window() == 128);
  // Gemma 3's 1024-token window: 1024 + 512 = 1536 cells, a context shorter than that holds its context.
  const ModelSpec gemma = engine_model_spec(load_model("gemma-3-27b"), "llama.cpp");
  CHECK(gemma.cached_window() == 1536);
  const uint64_t row = kv_bytes_per_token(gemma, f16) / gemma.layers;  // 16 heads x 128 x 2 x 2 B
  CHECK(row == 8192);
  CHECK(kv_bytes_for_context(gemma, f16, 8192) == row * (10 * 8192 + 52 * 1536));
  CHECK(kv_bytes_for_context(gemma, f16, 1024) == row * 62 * 1024);
}

TEST_CASE("llama.cpp runs Mistral as llama, without its window: the fit sizes every layer in full and says so") {
  const ModelSpec declared = load_model("mistral-7b-v0.1");
  const ModelSpec llama_cpp = engine_model_spec(declared, "llama.cpp");
  CHECK(llama_cpp.window_layer_count() == 0);
  CHECK(llama_cpp.ignored_window == 4096);
  CHECK(engine_model_spec(declared, "vllm").window_layer_count() == 32);
  CHECK(engine_model_spec(load_model("gpt-oss-20b"), "llama.cpp").window_layer_count() == 12);  // gpt-oss has SWA there
  Plan plan;
  plan.model = "mistral-7b-v0.1";
  plan.hw = "rtx-4090";
  plan.context = 32768;
  plan.requests = 1;
  plan.engine = "llama.cpp";
  const FitResult r = fit_memory(llama_cpp, load_hw_profile(plan.hw), plan, 1'000'000'000, "given");
  CHECK(r.kv_bytes == kv_bytes_per_token(declared, plan.kv) * 32768);
  bool warned = false;
  for (const auto& w : r.warnings) warned |= w.find("4096-token sliding window; llama.cpp's llama") != std::string::npos;
  CHECK(warned);
}
