// advise: seed 000's capacity question answered as the seed does, and the serving search's
// costs, bounds, minimality and frontier checked against hand figures and its own simulations.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "planner/advise/advise.hpp"
#include "planner/calibration/step_prior.hpp"
#include "planner/catalog/catalog.hpp"
#include "planner/cost/engine_capabilities.hpp"
#include "planner/cost/engine_memory.hpp"
#include "planner/cost/kv_cache.hpp"
#include "planner/cost/roofline.hpp"
#include "planner/cost/speculative.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/units.hpp"
#include "planner/plan/predict.hpp"

using namespace infer_plan;

namespace {

AdviseQuery seed_m2(uint64_t context) {
  AdviseQuery q;
  q.model = "qwen3-235b-a22b";
  q.hw = {"tests/data/profile_m2_max_seed.json"};  // 96e9 B less 8 GiB: 81.41 GiB usable
  q.weights = {"BF16", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q3_K_M", "Q2_K"};
  q.kv = {{GgmlType::BF16, GgmlType::BF16}, {GgmlType::Q8_0, GgmlType::Q8_0}, {GgmlType::Q4_0, GgmlType::Q4_0}};
  q.tp = {1};
  q.max_batch = {1};
  q.context = context;
  q.requests = 1;
  return q;
}

AdviseQuery h200_serving() {
  AdviseQuery q;
  q.model = "qwen3-8b";
  q.hw = {"h200"};
  q.weights = {"BF16", "Q8_0"};
  q.kv = {{GgmlType::BF16, GgmlType::BF16}};
  q.tp = {1};
  q.max_batch = {8, 32, 128};
  q.rate_per_s = 2;
  q.prompt = {256, 1024};
  q.output = TokenLengths::fixed(256);
  q.simulated_requests = 200;
  q.slo.at_most(SloMetric::ttft, 1);
  q.slo.at_most(SloMetric::tpot, 0.05);
  return q;
}

bool contains(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(text) != std::string::npos; });
}

}  // namespace

TEST_CASE("seed 000: one 8K request of Qwen3-235B-A22B on the M2 Max takes Q2_K, and 32K fits with no KV type") {
  const AdviseResult at8k = advise(seed_m2(8192));
  REQUIRE_FALSE(at8k.ranked.empty());
  const AdviseCandidate& top = at8k.ranked.front();
  CHECK(top.meets);
  CHECK(top.weights == "Q2_K");  // every type with more bits is larger than the 81.41 GiB usable
  CHECK(top.kv.k == GgmlType::BF16);  // the seed's plan: BF16 KV, the most precise that fits
  CHECK(top.context == 8192);
  CHECK(top.below_quality_floor);  // ~2.9 bits per weight: proposed because nothing above fits
  // SPEC 2: 1.60 GiB left beside the 79.81 GiB file, 1.47 GiB of KV: 0.13 GiB; the recipe's
  // tensors are 79.80 GiB (tests/cli/cases.cmake fit_m2_q2k_recipe): 0.14 GiB.
  CHECK(static_cast<double>(top.headroom_bytes) / GiB == doctest::Approx(0.14).epsilon(0.05).scale(0));

  const AdviseResult at32k = advise(seed_m2(32768));
  REQUIRE_FALSE(at32k.ranked.empty());
  CHECK_FALSE(at32k.ranked.front().meets);
  // SPEC 2-3: 188 KiB per token x 32768 = 5.88 GiB of BF16 KV; q4_0 is 18/64 of it, 1.65 GiB,
  // still 0.05 GiB more than the 1.61 GiB the Q2_K weights leave.
  CHECK(contains(at32k.notes, "KV BF16 needs 5.88 GiB"));
  CHECK(contains(at32k.notes, "KV Q4_0 needs 1.65 GiB (0.05 GiB short)"));
  // The longest contexts instead, best quality first: BF16 KV holds 8K (8896 tokens in whole K).
  CHECK(at32k.ranked.front().weights == "Q2_K");
  CHECK(at32k.ranked.front().kv.k == GgmlType::BF16);
  CHECK(at32k.ranked.front().context == 8192);
  // q8_0 (34/64 of BF16's bytes) holds about 64/34 as many: 16K in whole K; q4_0 31K
  REQUIRE(at32k.ranked.size() == 3);
  CHECK(at32k.ranked[1].context == 16384);
  CHECK(at32k.ranked[2].context == 31744);
}

TEST_CASE("the serving search's cost is the hand figure, and every plan it lists meets its SLOs") {
  const AdviseQuery q = h200_serving();
  const AdviseResult r = advise(q);
  REQUIRE(r.serving);
  REQUIRE(r.priced);  // h200's price_per_hour
  REQUIRE_FALSE(r.ranked.empty());
  const AdviseCandidate& top = r.ranked.front();
  // $3.79 per device-hour; 2 req/s x 256 output tokens x 3600 s = 1.8432M tokens an hour
  CHECK(*top.cost_per_million_tokens == doctest::Approx(3.79 * static_cast<double>(top.devices()) / 1.8432));
  for (const AdviseCandidate& c : r.ranked) {
    REQUIRE(c.serving);
    REQUIRE(c.serving->latency);
    CHECK(c.meets);
    CHECK(c.serving->stable);
    CHECK(c.serving->latency->ttft_s.p99 <= 1.0);
    CHECK(c.serving->latency->tpot_s.p99 <= 0.05);
  }
  for (size_t i = 1; i < r.ranked.size(); ++i)
    CHECK(*r.ranked[i - 1].cost_per_million_tokens <= *r.ranked[i].cost_per_million_tokens);
  // The frontier: each plan cheaper than every faster one (cost up, p99 E2EL strictly down).
  REQUIRE_FALSE(r.frontier.empty());
  CHECK(*r.frontier.front().cost_per_million_tokens == doctest::Approx(*top.cost_per_million_tokens));
  for (size_t i = 1; i < r.frontier.size(); ++i) {
    CHECK(*r.frontier[i - 1].cost_per_million_tokens <= *r.frontier[i].cost_per_million_tokens);
    CHECK(r.frontier[i - 1].serving->latency->sojourn_s.p99 > r.frontier[i].serving->latency->sojourn_s.p99);
  }
  CHECK(r.simulations > 0);
  CHECK_FALSE(top.reasons.empty());
  // The plan written for report: one replica's share of the arrivals, at the limit found.
  REQUIRE(top.plan.load);
  CHECK(*top.plan.load->rate_per_s == doctest::Approx(2.0 / static_cast<double>(top.replicas)));
  CHECK(top.plan.load->max_batch == top.max_batch);
}

TEST_CASE("a TPOT below one decode step's floor is answered by the bound alone, with no simulation") {
  AdviseQuery q = h200_serving();
  q.weights = {"BF16"};
  // qwen3-8b BF16 reads ~16.4 GB a step: 3.4 ms at 4.8 TB/s, so no batch decodes in 1 ms
  q.slo.at_most(SloMetric::tpot, 0.001);
  const AdviseResult r = advise(q);
  CHECK(r.ranked.empty());
  CHECK(r.simulations == 0);
  REQUIRE(r.pruned.size() == 1);
  CHECK(r.pruned.front().reason == "TPOT floor");
  CHECK(r.pruned.front().count == 2 * q.max_batch.size());  // each limit mixed, and split into prefill and decode
  CHECK_FALSE(r.pruned.front().simulated);
}

TEST_CASE("replicas are the fewest that meet: one fewer misses the SLO") {
  AdviseQuery q = h200_serving();
  q.weights = {"BF16"};
  q.max_batch = {8};
  q.rate_per_s = 12;  // more than one server at batch 8 can take
  const AdviseResult r = advise(q);
  REQUIRE_FALSE(r.ranked.empty());
  const AdviseCandidate& top = r.ranked.front();
  REQUIRE(top.replicas > 1);
  // The same server at the rate one replica fewer would each take, simulated here directly.
  Plan plan = top.plan;
  const ResolvedPlan rp = resolve_plan(plan);
  ServerModel server = rp.server;
  server.max_batch = 8;
  server.kv_capacity_tokens = top.kv_capacity_tokens;
  ServingLoad load;
  load.rate_per_s = 12.0 / static_cast<double>(top.replicas - 1);
  load.requests = q.simulated_requests;
  load.prompt_tokens = q.prompt;
  load.output_tokens = q.output;
  load.seed = q.seed;
  const ServingResult fewer = simulate_serving(server, load);
  const bool meets = fewer.stable && fewer.latency && fewer.latency->ttft_s.p99 <= 1.0 && fewer.latency->tpot_s.p99 <= 0.05;
  CHECK_FALSE(meets);
}

TEST_CASE("types under the quality floor are proposed only when nothing above meets the request") {
  AdviseQuery q = seed_m2(8192);
  q.hw = {"h200"};
  q.model = "qwen3-8b";
  q.weights = {"BF16", "Q2_K"};
  const AdviseResult r = advise(q);
  REQUIRE_FALSE(r.ranked.empty());
  for (const AdviseCandidate& c : r.ranked) CHECK(c.weights == "BF16");
}

TEST_CASE("advise refuses what it cannot answer, naming the flag") {
  AdviseQuery q = h200_serving();
  q.slo = {};
  CHECK_THROWS_WITH_AS(advise(q), doctest::Contains("needs a service level to meet"), InputError);
  q = h200_serving();
  q.hw = {"h200", "tests/data/profile_m2_max_seed.json"};  // a user's profile without a price beside h200's
  CHECK_THROWS_WITH_AS(advise(q), doctest::Contains("--price m2-max-96gb-seed=USD"), InputError);
  q.prices["m2-max-96gb-seed"] = 0.5;
  CHECK_NOTHROW(advise(q));
  q.prices["a100-80gb"] = 1;  // not a candidate
  CHECK_THROWS_WITH_AS(advise(q), doctest::Contains("--price: 'a100-80gb'"), InputError);
  q = h200_serving();
  q.hw = {"tests/data/profile_m2_max_seed.json"};  // no price at all: costs in device-hours
  q.slo = {};
  q.slo.at_most(SloMetric::tpot, 0.5);
  const AdviseResult r = advise(q);
  CHECK_FALSE(r.priced);
}

TEST_CASE("speculative decoding: a plan's decode speed is E_m tokens per round of verify + m draft steps (SPEC 5)") {
  AdviseQuery q = h200_serving();
  q.weights = {"BF16"};
  q.pd = false;
  q.speculative = AdviseSpeculative{{0.75}, "qwen3-0.6b", std::nullopt, {4}};
  const AdviseResult r = advise(q);
  const auto spec = std::find_if(r.ranked.begin(), r.ranked.end(), [](const AdviseCandidate& c) { return c.spec_block; });
  REQUIRE(spec != r.ranked.end());
  CHECK(*spec->spec_block == 4);
  // One request alone at the mean context (640 + 256 / 2 = 768 tokens): T_4 = verify of 5 tokens
  // + 4 draft steps, E_4 = (1 - 0.75^5) / (1 - 0.75) = 3.05 tokens a round.
  // Both on the step model advise predicts with: no --engine, so BF16 weights on a GPU are vLLM's.
  HwProfile hw = load_hw_profile("h200");
  hw.calibration = engine_step_calibration(hw, "vllm");
  REQUIRE(hw.calibration);
  const ModelSpec target = load_model("qwen3-8b"), draft = load_model("qwen3-0.6b");
  const KvTypes bf16{GgmlType::BF16, GgmlType::BF16};
  const Roofline rt(target, plan_weights(target, "BF16", std::nullopt).layout, bf16, hw);
  const Roofline rd(draft, plan_weights(draft, "BF16", std::nullopt).layout, bf16, hw);
  const double round_s = rt.decode_step(1, 768, 5).time_s + 4 * rd.decode_step(1, 768).time_s;
  const double expected = (1 - std::pow(0.75, 5)) / 0.25;
  CHECK(expected == doctest::Approx(3.05).epsilon(0.01));
  CHECK(spec->decode_tokens_per_s == doctest::Approx(expected / round_s).epsilon(0.01));  // tabulated steps: within 1%
  // The draft's weights and KV come out of the pool: it holds fewer tokens than plain decoding's.
  const auto plain = std::find_if(r.ranked.begin(), r.ranked.end(), [](const AdviseCandidate& c) { return !c.spec_block; });
  REQUIRE(plain != r.ranked.end());
  CHECK(spec->kv_capacity_tokens < plain->kv_capacity_tokens);
}

TEST_CASE("a prefill/decode split: its devices, its cost and its TTFT carry the prefill pool and the KV transfer") {
  AdviseQuery q = h200_serving();
  q.weights = {"BF16"};
  q.rate_per_s = 8;
  q.top = 50;
  const AdviseResult r = advise(q);
  const auto pd = std::find_if(r.ranked.begin(), r.ranked.end(), [](const AdviseCandidate& c) { return c.pd_prefill; });
  REQUIRE(pd != r.ranked.end());
  CHECK(pd->replicas == *pd->pd_prefill + *pd->pd_decode);
  // $3.79 per device-hour; 8 req/s x 256 output tokens x 3600 s = 7.3728M tokens an hour
  CHECK(*pd->cost_per_million_tokens == doctest::Approx(3.79 * static_cast<double>(pd->devices()) / 7.3728));
  // The p99 prompt of 256..1024 is 256 + ceil(0.99 x 768) = 1017 tokens of BF16 KV (144 KiB each)
  // over the H200's NVLink: both pools are in one machine.
  const LinkProfile link = *load_hw_profile("h200").device_link;
  CHECK(pd->pd_link == link.name);
  const double transfer_s = 1017.0 * 147456 / link.bandwidth_bytes_per_s + link.all_reduce_latency_s.value_or(0);
  CHECK(pd->pd_transfer_s == doctest::Approx(transfer_s));
  CHECK(pd->serving->latency->ttft_s.p99 >= pd->pd_prefill_ttft_p99_s + transfer_s);
  CHECK(pd->serving->latency->ttft_s.p99 <= 1.0);
  // the stages combined into one distribution that is still one: ordered, its mean within it
  for (const Distribution* d : {&pd->serving->latency->ttft_s, &pd->serving->latency->sojourn_s}) {
    CHECK(d->p50 <= d->p90);
    CHECK(d->p90 <= d->p95);
    CHECK(d->p95 <= d->p99);
    CHECK(d->p99 <= d->max);
    CHECK(d->mean <= d->max);
    CHECK(d->mean >= transfer_s);
  }
}

TEST_CASE("weights that do not fit stream their FFN over the host link: NVLink-C2C holds a TPOT that PCIe cannot (SPEC 4)") {
  AdviseQuery q = h200_serving();
  q.model = "llama-3.1-70b";  // 131 GiB of BF16: on one GH200 or H100 only with offload
  q.hw = {"gh200", "h100-sxm"};
  q.prices["gh200"] = 3;
  q.weights = {"BF16"};
  q.rate_per_s = 0.2;
  q.prompt = TokenLengths::fixed(2048);
  q.slo = {};
  q.slo.at_most(SloMetric::tpot, 0.2);
  const AdviseResult r = advise(q);
  REQUIRE_FALSE(r.ranked.empty());
  for (const AdviseCandidate& c : r.ranked) CHECK(c.hw == "gh200");  // PCIe's copy alone exceeds 200 ms a token
  const AdviseCandidate& top = r.ranked.front();
  REQUIRE(top.offload_every);
  const LinkProfile c2c = load_hw_profile("gh200").host_links.front();
  CHECK(top.offload_link == c2c.name);
  CHECK(top.offload_round_s == doctest::Approx(static_cast<double>(top.offload_bytes) / c2c.bandwidth_bytes_per_s));
  CHECK(top.serving->latency->tpot_s.p99 >= top.offload_round_s);  // a step waits for its copy
  const auto floor = std::find_if(r.pruned.begin(), r.pruned.end(), [](const AdvisePruned& p) { return p.reason == "TPOT floor"; });
  REQUIRE(floor != r.pruned.end());
  CHECK(floor->example.find("h100-sxm") != std::string::npos);
  CHECK(floor->example.find("offloaded") != std::string::npos);
}

TEST_CASE("with --engine, the search times each plan with the engine's step model, as resolve_plan does") {
  AdviseQuery q = h200_serving();
  q.model = "llama-2-7b";
  q.engine = "llama.cpp";  // rtx-3090 has a built-in llama.cpp calibration (hwprofiles/calibrations)
  q.hw = {"rtx-3090"};
  q.prices["rtx-3090"] = 0.3;
  q.weights = {"Q4_K_M"};
  q.kv = {{GgmlType::F16, GgmlType::F16}};
  q.tp = {1};
  q.rate_per_s = 0.5;
  q.prompt = TokenLengths::fixed(512);
  q.output = TokenLengths::fixed(128);
  q.pd = false;
  const AdviseResult r = advise(q);
  REQUIRE_FALSE(r.ranked.empty());
  Plan plan;
  plan.model = "llama-2-7b";
  plan.engine = "llama.cpp";
  plan.hw = "rtx-3090";
  plan.weights = "Q4_K_M";
  plan.kv = {GgmlType::F16, GgmlType::F16};
  const ResolvedPlan rp = resolve_plan(plan);
  REQUIRE(rp.hw.calibration);
  // one request alone at the mean context, 512 + 128 / 2 = 576 tokens
  CHECK(r.ranked.front().decode_tokens_per_s == doctest::Approx(1.0 / rp.server.decode_iteration_s(1, 576)).epsilon(0.005));
}

TEST_CASE("every engine searched: each plan names one that runs its weights, KV type and split") {
  AdviseQuery q = h200_serving();
  q.engine = "any";
  q.weights = {"BF16", "FP8", "Q8_0"};
  q.kv = {{GgmlType::BF16, GgmlType::BF16}, {GgmlType::FP8, GgmlType::FP8}, {GgmlType::Q8_0, GgmlType::Q8_0}};
  q.top = 50;
  const AdviseResult r = advise(q);
  REQUIRE_FALSE(r.ranked.empty());
  std::set<std::string> engines;
  for (const AdviseCandidate& c : r.ranked) {
    CAPTURE(advise_plan_label(c));
    engines.insert(c.engine);
    REQUIRE(find_engine_capabilities(c.engine));
    CHECK_FALSE(engine_refuses_types(c.engine, plan_weights(load_model(q.model), c.weights, std::nullopt).layout, c.kv));
    if (c.pd_prefill) CHECK(find_engine_capabilities(c.engine)->pd_disaggregation);
    if (c.engine != "llama.cpp") CHECK(c.kv.k != GgmlType::Q8_0);  // the datacenter engines' KV is 16-bit or fp8
    if (c.engine == "llama.cpp") CHECK(c.kv.k != GgmlType::FP8);
    CHECK(c.plan.engine == c.engine);
  }
  CHECK(engines.size() >= 2);  // several engines serve qwen3-8b on an H200 with a step model of their own
  // what no engine runs is set aside, saying why: vLLM's q8_0 KV, llama.cpp's FP8 weights
  const auto engine = std::find_if(r.pruned.begin(), r.pruned.end(), [](const AdvisePruned& p) { return p.reason == "engine"; });
  REQUIRE(engine != r.pruned.end());
  CHECK(engine->count > 0);
  // TensorRT-LLM's step model is vLLM's (its published runs are throughputs only): not searched
  // among every engine, and said so
  CHECK(contains(r.notes, "TensorRT-LLM (its step model is vLLM's) on h200: not searched"));
  CHECK(engines.count("trtllm") == 0);
}

TEST_CASE("the engine capability table: what each engine loads, caches and serves") {
  const ModelSpec spec = load_model("qwen3-8b");
  const WeightsLayout bf16 = plan_weights(spec, "BF16", std::nullopt).layout;
  const WeightsLayout q4 = plan_weights(spec, "Q4_K_M", std::nullopt).layout;
  const WeightsLayout fp8 = plan_weights(spec, "FP8", std::nullopt).layout;
  const KvTypes b{GgmlType::BF16, GgmlType::BF16}, q8{GgmlType::Q8_0, GgmlType::Q8_0}, f8{GgmlType::FP8, GgmlType::FP8};
  CHECK_FALSE(engine_refuses_types("llama.cpp", q4, q8));
  CHECK_FALSE(engine_refuses_types("llama.cpp", bf16, b));
  CHECK(engine_refuses_types("llama.cpp", fp8, b)->find("FP8 is a checkpoint format") != std::string::npos);
  CHECK(engine_refuses_types("llama.cpp", q4, f8)->find("llama.cpp has no fp8 KV cache") != std::string::npos);
  for (const char* e : {"vllm", "sglang", "trtllm"}) {
    CAPTURE(e);
    CHECK_FALSE(engine_refuses_types(e, fp8, f8));
    CHECK_FALSE(engine_refuses_types(e, bf16, b));
    CHECK(engine_refuses_types(e, bf16, q8)->find("no q8_0 KV cache") != std::string::npos);
    CHECK(engine_refuses_types(e, q4, b)->find("does not load Q4_K weights") != std::string::npos);
  }
  CHECK(engine_refuses_device("trtllm", "apple-m2")->find("serves nvidia devices") != std::string::npos);
  CHECK(engine_refuses_device("vllm", "rdna3") == std::nullopt);  // AMD
  CHECK(engine_refuses_device("llama.cpp", "apple-m2") == std::nullopt);
  CHECK(engine_capability_table().size() == known_engines().size());
}

TEST_CASE("SLOs at the percentiles the field writes: p95 TTFT and TPOT, every plan within them") {
  AdviseQuery q = h200_serving();
  q.slo = {};
  q.slo.at_most(SloMetric::ttft, 1.0, 95).at_most(SloMetric::tpot, 0.04, 95);
  const AdviseResult r = advise(q);
  REQUIRE_FALSE(r.ranked.empty());
  for (const AdviseCandidate& c : r.ranked) {
    REQUIRE(c.serving->latency);
    CHECK(c.serving->latency->ttft_s.p95 <= 1.0);
    CHECK(c.serving->latency->tpot_s.p95 <= 0.04);
    // p95 lies between the median and p99 of the same sample (nearest rank)
    CHECK(c.serving->latency->ttft_s.p95 >= c.serving->latency->ttft_s.p50);
    CHECK(c.serving->latency->ttft_s.p95 <= c.serving->latency->ttft_s.p99);
  }
  CHECK(r.ranked.front().binding.find(" p95 ") != std::string::npos);
  // an ITL bound has the inter-token gaps recorded
  AdviseQuery itl = h200_serving();
  itl.slo = {};
  itl.slo.at_most(SloMetric::itl, 0.05, 99);
  const AdviseResult ri = advise(itl);
  REQUIRE_FALSE(ri.ranked.empty());
  CHECK(ri.ranked.front().serving->latency->itl_s.count > 0);
  CHECK(ri.ranked.front().serving->latency->itl_s.p99 <= 0.05);
}

TEST_CASE("times as SLOs are written: a bare number is ms") {
  CHECK(parse_duration_ms("500ms", "x") == 500);
  CHECK(parse_duration_ms("500", "x") == 500);
  CHECK(parse_duration_ms("2s", "x") == 2000);
  CHECK(parse_duration_ms("1.5 s", "x") == 1500);
  CHECK(parse_duration_ms("250us", "x") == doctest::Approx(0.25));
  CHECK_THROWS_WITH_AS(parse_duration_ms("5 parsecs", "--slo-ttft-p99"), doctest::Contains("--slo-ttft-p99: unknown unit 'parsecs'"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse_duration_ms("-5ms", "--slo-ttft-p99"), doctest::Contains("is negative"), InputError);
}

TEST_CASE("every built-in device can be advised without --price: an assumed price, with where it is from") {
  for (const std::string& name : builtin_hw_names()) {
    CAPTURE(name);
    const HwProfile hw = load_hw_profile(name);
    REQUIRE(hw.price_per_hour);
    CHECK(*hw.price_per_hour > 0);
    CHECK(*hw.price_per_hour < 20);  // per device-hour: no single device rents for more
    const Json j = hw_profile_json(name);
    const Json& sources = j.at("sources");
    CHECK(std::any_of(sources.begin(), sources.end(),
                      [](const Json& s) { return s.get<std::string>().starts_with("price_per_hour: a"); }));
  }
}

TEST_CASE("a tensor-parallel link given for the search: every plan of 2 or more devices all-reduces over it") {
  AdviseQuery q;
  q.model = "llama-3.1-70b";
  q.engine = "vllm";
  q.hw = {"h100-pcie"};  // its device link is the optional NVLink bridge, 300 GB/s
  q.weights = {"FP8"};
  q.kv = {{GgmlType::BF16, GgmlType::BF16}};
  q.tp = {1, 2};
  q.max_batch = {8};
  q.context = 8192;
  q.requests = 8;
  const AdviseResult bridge = advise(q);
  q.tp_link = "pcie-gen5-x16";
  const AdviseResult pcie = advise(q);
  auto tp2 = [](const AdviseResult& r) {
    const auto it = std::find_if(r.ranked.begin(), r.ranked.end(), [](const AdviseCandidate& c) { return c.tp == 2; });
    REQUIRE(it != r.ranked.end());
    return *it;
  };
  const AdviseCandidate over_pcie = tp2(pcie);
  CHECK(over_pcie.plan.tp_link == "pcie-gen5-x16");
  CHECK(tp2(bridge).plan.tp_link.empty());
  for (const AdviseCandidate& c : pcie.ranked)
    if (c.tp == 1) CHECK(c.plan.tp_link.empty());  // a plan of one device has no link to name
  // The candidate's decode speed is its plan's, resolved with the link (8 requests of 8192 tokens)...
  const ResolvedPlan rp = resolve_plan(over_pcie.plan);
  CHECK(rp.hw.device_link->name == "pcie-gen5-x16");
  CHECK(over_pcie.decode_tokens_per_s == doctest::Approx(1.0 / rp.server.decode_iteration_s(8, 8 * 8192)).epsilon(1e-9));
  // ... and slower than over the bridge: the all-reduce's bytes cross 64 GB/s instead of 300
  CHECK(over_pcie.decode_tokens_per_s < tp2(bridge).decode_tokens_per_s);
  CHECK(contains(pcie.notes, "all-reduces over pcie-gen5-x16"));
}
