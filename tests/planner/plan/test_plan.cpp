// plan.json: defaults, overrides, and field errors.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "planner/core/input_error.hpp"
#include "planner/cost/roofline.hpp"
#include "planner/plan/figures.hpp"
#include "planner/plan/plan.hpp"
#include "planner/plan/predict.hpp"
#include "planner/core/units.hpp"

using namespace infer_plan;

TEST_CASE("defaults and fields") {
  Plan d = plan_from_json(Json::object(), "p.json");
  CHECK(d.model == "qwen3-8b");
  CHECK(d.context == 8192);
  Plan p = plan_from_json(Json{{"model", "qwen3-235b-a22b"}, {"hw", "m2-max-96gb"},
                               {"weights_size", "79.81 GiB"}, {"kv", {{"k", "q8_0"}, {"v", "q4_0"}}},
                               {"context", 32768}, {"requests", 1}, {"reserves", {{"ctx", "1 GiB"}}}},
                          "p.json");
  CHECK(p.weights_bytes == parse_bytes("79.81 GiB", "t"));
  CHECK(p.kv.k == GgmlType::Q8_0);
  CHECK(p.kv.v == GgmlType::Q4_0);
  CHECK(p.context == 32768);
  REQUIRE(p.reserves.size() == 1);
  CHECK(p.reserves[0].bytes == GiB);
  CHECK(plan_from_json(Json{{"kv", "q4_0"}}, "p.json").kv.v == GgmlType::Q4_0);
}

TEST_CASE("plan errors") {
  CHECK_THROWS_WITH_AS(plan_from_json(Json{{"contxt", 8}}, "p.json"), doctest::Contains("unknown field 'contxt'"), InputError);
  CHECK_THROWS_WITH_AS(plan_from_json(Json{{"context", 0}}, "p.json"), doctest::Contains("p.json: field 'context'"), InputError);
  CHECK_THROWS_WITH_AS(plan_from_json(Json{{"requests", -1}}, "p.json"), doctest::Contains("'requests' is -1"), InputError);
  CHECK_THROWS_WITH_AS(plan_from_json(Json{{"kv", 8}}, "p.json"), doctest::Contains("field 'kv'"), InputError);
  CHECK_THROWS_WITH_AS(plan_from_json(Json{{"tp", 100}}, "p.json"), doctest::Contains("1 to 64"), InputError);
  Plan p;
  p.context = 0;
  // The caller names the field (the CLI: by the flag that set it).
  CHECK_THROWS_WITH_AS(validate_plan(p, [](std::string_view f) { return "<" + std::string(f) + ">"; }),
                       doctest::Contains("<context>: 0 tokens is out of range"), InputError);
  // Each section refuses unknown keys alike; keys starting with '_' are comments anywhere.
  CHECK_THROWS_WITH_AS(plan_from_json(Json{{"offload", {{"evry", 2}}}}, "p.json"),
                       doctest::Contains("p.json: offload: unknown field 'evry'; expected one of: buffers, every, link, part"),
                       InputError);
  CHECK(plan_from_json(Json{{"load", {{"_note", "x"}, {"rate_per_s", 1.0}}}}, "p.json").load->rate_per_s == 1.0);
  // The load's own ranges (planner/core/limits): simulated arrivals and running requests.
  CHECK_THROWS_WITH_AS(plan_from_json(Json{{"load", {{"requests", 0}}}}, "p.json"),
                       doctest::Contains("p.json: field 'load.requests': 0 is out of range; expected 1 to 10000000"),
                       InputError);
  CHECK_THROWS_WITH_AS(plan_from_json(Json{{"load", {{"max_batch", 2000000}}}}, "p.json"),
                       doctest::Contains("field 'load.max_batch': 2000000 is out of range; expected 1 to 1000000"),
                       InputError);
  // A link between tensor-parallel devices needs two of them; a link that is not one is named.
  CHECK_THROWS_WITH_AS(plan_from_json(Json{{"tp_link", "pcie-gen5-x16"}}, "p.json"),
                       doctest::Contains("p.json: field 'tp_link': 'pcie-gen5-x16' is the link between tensor-parallel "
                                         "devices, and the plan runs on one"),
                       InputError);
  Plan bad;
  bad.tp = 2;
  bad.tp_link = "pcie-gen9";
  CHECK_THROWS_WITH_AS(resolve_plan(bad), doctest::Contains("field 'tp_link': unknown link 'pcie-gen9'"), InputError);
}

TEST_CASE("tensor parallel over the link the plan names: two PCIe cards without a bridge") {
  // Llama-3.1-70B on 2 x H100 PCIe, the bare roofline, one token: per step 2 all-reduces per layer
  // x 80 layers of 8192 bf16 activations, of which a ring moves 2 x (n - 1) / n = 1 share:
  // 160 x 8192 x 2 B = 2,621,440 B; each call 5 us (no link in hwprofiles/links states its own).
  Plan plan;
  plan.model = "llama-3.1-70b";
  plan.weights = "BF16";
  plan.hw = "h100-pcie";
  plan.engine = "none";
  plan.tp = 2;
  const StepCost bridged = resolve_plan(plan).roofline->decode_step(1, 512);
  plan.tp_link = "pcie-gen5-x16";
  const StepCost pcie = resolve_plan(plan).roofline->decode_step(1, 512);
  CHECK(bridged.comm_bytes == doctest::Approx(2621440));
  CHECK(pcie.comm_bytes == doctest::Approx(2621440));
  // The profile's NVLink bridge: 300 GB/s per direction; PCIe 5.0 x16: 64 GB/s
  CHECK(bridged.comm_s == doctest::Approx(2621440 / 300e9 + 160 * 5e-6));
  CHECK(pcie.comm_s == doctest::Approx(2621440 / 64e9 + 160 * 5e-6));
}

TEST_CASE("speculative section: a draft of the target's first layers, and the runtime's temperature") {
  const Plan p = plan_from_json(Json{{"speculative", {{"draft_layers", 2}, {"temperature", 1.5}, {"max_block", 6}}}}, "p.json");
  REQUIRE(p.speculative);
  CHECK(p.speculative->draft_layers == 2u);
  CHECK(p.speculative->temperature == 1.5f);
  CHECK(p.speculative->draft.empty());
  const Plan greedy = plan_from_json(Json{{"speculative", {{"draft", "qwen3-0.6b"}}}}, "p.json");
  CHECK(greedy.speculative->temperature == 0.0f);  // greedy unless told
  CHECK_THROWS_WITH_AS(plan_from_json(Json{{"speculative", {{"draft_layers", 0}}}}, "p.json"),
                       doctest::Contains("p.json: speculative: field 'draft_layers' is 0"), InputError);
  CHECK_THROWS_WITH_AS(plan_from_json(Json{{"speculative", {{"draft_layers", 1}, {"draft", "qwen3-0.6b"}}}}, "p.json"),
                       doctest::Contains("not both"), InputError);
  CHECK_THROWS_WITH_AS(plan_from_json(Json{{"speculative", {{"draft_layers", 1}, {"temperature", -1}}}}, "p.json"),
                       doctest::Contains("field 'temperature' is -1"), InputError);
  CHECK_THROWS_WITH_AS(plan_from_json(Json{{"speculative", {{"accept", 0.5}}}}, "p.json"),
                       doctest::Contains("'draft_layers'"), InputError);
}

TEST_CASE("plan_to_json writes what plan_from_json reads back") {
  Plan p;
  p.model = "llama-3.1-70b";
  p.scale = 0.5;
  p.hw = "h100-sxm";
  p.engine = "vllm";
  p.weights = "FP8";
  p.kv = {GgmlType::Q8_0, GgmlType::BF16};
  p.context = 1792;
  p.output = 320;
  p.requests = 24;
  p.tp = 2;
  p.deadline_s = 7;
  p.load = LoadPlan{};
  p.load->rate_per_s = 2.5;
  p.load->simulate = true;
  p.load->requests = 400;
  p.load->seed = 3;
  p.load->max_batch = 64;
  p.engine_settings.gpu_memory_utilization = 0.95;
  p.engine_settings.max_num_seqs = 128;
  p.engine_settings.max_num_batched_tokens = 4096;
  p.engine_settings.flash_attention = false;
  p.engine_settings.ubatch = 256;
  p.engine_settings.batch = 1024;
  p.gpu_wired_limit_bytes = uint64_t{180} << 30;
  p.cpu_moe_layers = Plan::kAllLayers;
  p.tp_link = "pcie-gen5-x16";
  const Json j = plan_to_json(p);
  const Plan back = plan_from_json(j, "round trip");
  CHECK(back.model == p.model);
  CHECK(back.scale == p.scale);
  CHECK(back.hw == p.hw);
  CHECK(back.engine == p.engine);
  CHECK(back.weights == p.weights);
  CHECK(back.kv.k == GgmlType::Q8_0);
  CHECK(back.kv.v == GgmlType::BF16);
  CHECK(back.context == 1792);
  CHECK(back.output == 320);
  CHECK(back.requests == 24);
  CHECK(back.tp == 2);
  CHECK(*back.deadline_s == 7);
  REQUIRE(back.load);
  CHECK(*back.load->rate_per_s == 2.5);
  CHECK(back.load->simulate);
  CHECK(back.load->requests == 400);
  CHECK(back.load->seed == 3);
  CHECK(back.load->max_batch == 64);
  CHECK(back.engine_settings == p.engine_settings);
  CHECK(back.gpu_wired_limit_bytes == p.gpu_wired_limit_bytes);
  CHECK(back.cpu_moe_layers == Plan::kAllLayers);
  CHECK(j.at("cpu_moe_layers") == "all");
  CHECK(back.tp_link == "pcie-gen5-x16");
  CHECK(plan_to_json(back) == j);  // and writes it the same way again
}

TEST_CASE("llama.cpp's devices hold whole layers and run them one after another") {
  // XiongjieDai/GPU-Benchmarks-on-LLM-Inference (llama.cpp, May 2024), llama-bench tg512 of
  // Llama-3-70B Q4_K_M: 19.22 t/s on 2 x RTX 4090 and 19.80 on 4: no faster than one device holding
  // every layer would be, where tensor parallelism would halve the step. (Its 8B rows on 1-8 devices
  // gave the hand-over constant, 0.2 ms per added device; the 70B rows are held out.)
  Plan plan;
  plan.model = "llama-3.1-70b";
  plan.weights = "Q4_K_M";
  plan.hw = "rtx-4090";
  plan.engine = "llama.cpp";
  plan.requests = 1;
  plan.context = 512;
  plan.output = 256;
  plan.tp = 2;
  const ResolvedPlan two = resolve_plan(plan);
  CHECK(two.roofline->tp() == 1);
  CHECK(two.roofline->layer_split() == 2);
  plan.tp = 4;
  const ResolvedPlan four = resolve_plan(plan);
  const StepCost s2 = two.roofline->decode_step(1, 256), s4 = four.roofline->decode_step(1, 256);
  // one more boundary per device: 0.2 ms and one token's hidden state (8192 x 4 B) over the link each
  const double hop = 0.2e-3 + 8192 * 4.0 / two.roofline->rates().device_link_bytes_per_s;
  CHECK(s4.time_s - s2.time_s == doctest::Approx(2 * hop));
  CHECK(std::string(s2.comm_kind) == "hand-over");
  CHECK(1.0 / s2.time_s == doctest::Approx(19.22).epsilon(0.05));
  CHECK(1.0 / s4.time_s == doctest::Approx(19.80).epsilon(0.05));
  // vLLM's tensor parallelism divides the step instead
  plan.engine = "vllm";
  plan.weights = "BF16";
  plan.hw = "h100-sxm";
  plan.tp = 2;
  CHECK(resolve_plan(plan).roofline->tp() == 2);
  // Memory: three devices deal 81 slots 27/27/26 + the head (llama.cpp needs no even split of the heads);
  // the last, with the Q6_K head (0.8 GiB) beside 26 blocks, has the most to hold: 26 layers' KV,
  // 26 x 8 KV heads x 128 x 2 x 2 B per token at f16
  plan.engine = "llama.cpp";
  plan.weights = "Q4_K_M";
  plan.hw = "rtx-3090";
  plan.tp = 3;
  plan.context = 8192;
  const ResolvedPlan three = resolve_plan(plan);
  CHECK(three.fit.kv_bytes_per_token == uint64_t{26} * 8 * 128 * 2 * 2);
  CHECK(three.fit.device_note == "layers 54-79 and the output head, the device with the least to spare");
  // Without an engine named, GGUF weights are served by llama.cpp: the same split, in memory and in time
  plan.engine.clear();
  const ResolvedPlan chosen = resolve_plan(plan);
  CHECK(chosen.engine == "llama.cpp");
  CHECK(chosen.fit.layer_split);
  CHECK(chosen.fit.kv_bytes_per_token == three.fit.kv_bytes_per_token);
  CHECK(chosen.roofline->layer_split() == 3);
  CHECK(three.fit.fits);
}

TEST_CASE("llama.cpp's --fit: the context first, then experts in host memory, then layers, 1 GiB kept free") {
  constexpr int64_t kGiB = int64_t{1} << 30;
  auto spare = [](const Plan& p) { return resolve_plan(p).fit.headroom_bytes; };
  Plan plan;
  plan.engine = "llama.cpp";
  plan.hw = "rtx-4090";
  plan.requests = 1;
  // Llama-3.1-8B Q8_0 at its trained 131072 tokens does not fit a 24 GB card: the longest context in
  // steps of 256 that leaves 1 GiB, and 256 more would not
  plan.model = "llama-3.1-8b";
  plan.weights = "Q8_0";
  const LlamaCppFitChoice ctx = llama_cpp_fit(plan, {});
  CHECK(ctx.met);
  CHECK(ctx.context_changed);
  CHECK_FALSE(ctx.layers_changed);
  CHECK(ctx.plan.context % 256 == 0);
  CHECK(ctx.plan.context < 131072);
  CHECK(spare(ctx.plan) >= kGiB);
  Plan longer = ctx.plan;
  longer.context += 256;
  CHECK(spare(longer) < kGiB);
  // -c given: the context stays, and so does the plan when it leaves 1 GiB
  LlamaCppFit given;
  given.context_given = true;
  plan.context = 8192;
  const LlamaCppFitChoice kept = llama_cpp_fit(plan, given);
  CHECK(kept.met);
  CHECK(kept.plan.context == 8192);
  CHECK_FALSE(kept.context_changed);
  // GPT-OSS-120B (61 GiB): 4096 tokens, then the fewest layers' experts in host memory
  plan.model = "gpt-oss-120b";
  plan.weights = "MXFP4_MOE";
  const LlamaCppFitChoice moe = llama_cpp_fit(plan, {});
  CHECK(moe.met);
  CHECK(moe.plan.context == 4096);
  REQUIRE(moe.plan.cpu_moe_layers);
  CHECK(spare(moe.plan) >= kGiB);
  Plan fewer = moe.plan;
  *fewer.cpu_moe_layers -= 1;
  CHECK(spare(fewer) < kGiB);
  // A dense 70B: -ngl, the most layers that leave 1 GiB
  plan.model = "llama-3.1-70b";
  plan.weights = "Q4_K_M";
  const LlamaCppFitChoice dense = llama_cpp_fit(plan, {});
  CHECK(dense.met);
  REQUIRE(dense.plan.gpu_layers);
  CHECK(spare(dense.plan) >= kGiB);
  Plan more = dense.plan;
  *more.gpu_layers += 1;
  CHECK(spare(more) < kGiB);
  // Not llama.cpp's: refused by name
  plan.engine = "vllm";
  CHECK_THROWS_WITH_AS(llama_cpp_fit(plan, {}), doctest::Contains("llama.cpp's automatic fit: the plan's engine is vllm"), InputError);
}

TEST_CASE("a load given by what it keeps in the system: the rate solved, as Little's law says") {
  // One request at a time (load.max_batch 1), each the same length, few enough in the system that
  // they seldom wait: L = lambda x W with W the time a request takes alone, S. Queueing adds
  // M/D/1's rho^2 / (2 (1 - rho)): for L = 0.05, rho + rho^2 / (2 (1 - rho)) = 0.05 at
  // rho = lambda x S = 0.04877 (by hand, two Newton steps from 0.05).
  Plan plan;
  plan.model = "qwen3-8b";
  plan.hw = "h100-sxm";
  plan.context = 1024;
  plan.output = 64;
  LoadPlan load;
  load.in_system = 0.05;
  load.simulate = true;
  load.max_batch = 1;
  load.requests = 4000;
  plan.load = load;
  const ResolvedPlan rp = resolve_plan(plan);
  const double rate = solve_serving_rate(rp);
  // S: arrivals far apart, a request's sojourn less the engine's front end (first_token_s: in the
  // sojourn, but no request is in the server then, as the runtime counts it).
  Plan alone = plan;
  alone.load->rate_per_s = rate / 1000;
  alone.load->requests = 20;
  const double service_s =
      simulate_serving(rp.server, plan_serving_load(alone)).latency->sojourn_s.mean - rp.server.first_token_s;
  INFO("rate ", rate, " req/s, service ", service_s, " s");
  // 4000 Poisson arrivals: their realized rate is within 1.6% (one sd) of the offered one (here
  // 2.3% below it).
  CHECK(rate * service_s == doctest::Approx(0.04877).epsilon(0.05).scale(0));
  // The prediction offers that rate when none is given.
  const Prediction p = predict(rp);
  REQUIRE(p.serving);
  CHECK(p.serving->rate_per_s == doctest::Approx(rate));
  // More in the system than the load has requests: no rate does it.
  plan.load->in_system = 5000;
  CHECK_THROWS_WITH_AS(solve_serving_rate(resolve_plan(plan)), doctest::Contains("no arrival rate keeps"), InputError);
}

TEST_CASE("pd section: workers and a scaled link, compared under the plan's load") {
  const Json j = Json::parse(R"({"model": "qwen3-8b", "context": 2048, "output": 64, "kv": "q8_0",
      "load": {"rate_per_s": 0.5, "requests": 20},
      "pd": {"prefill_workers": 1, "decode_workers": 3, "link": "25gbe", "link_scale": 0.5}})");
  const Plan p = plan_from_json(j, "p.json");
  REQUIRE(p.pd);
  CHECK(p.pd->decode_workers == 3u);
  CHECK(plan_from_json(plan_to_json(p), "again").pd->link_scale == 0.5);
  // 25 Gb/s = 3.125 GB/s, halved; its 35 us latency doubled
  CHECK(plan_pd_link(p).bandwidth_bytes_per_s == doctest::Approx(1.5625e9));
  CHECK(plan_pd_link(p).message_latency_s == doctest::Approx(70e-6).scale(0));
  const Prediction pr = predict(resolve_plan(p));
  REQUIRE(pr.pd);
  // Qwen3-8B's KV: 36 layers x 8 KV heads x 128 x (K + V) at Q8_0 (34 bytes per 32 values) =
  // 36 x 2 x 1024 x 34 / 32 = 78,336 bytes per token; the 1984-token prompt fills 124 pages exactly.
  CHECK(pr.pd->kv_transfer_bytes == 1984u * 78336u);
  CHECK(pr.pd->kv_transfer_s == doctest::Approx(70e-6 + 1984.0 * 78336 / 1.5625e9));
  CHECK(pr.pd->split.completed == 20u);
  CHECK(pr.pd->colocated.completed == 20u);
  CHECK(pr.pd->split.link_s.mean == doctest::Approx(pr.pd->kv_transfer_s));
  const Json f = prediction_figures(pr);
  CHECK(f.at("pd").at("kv_transfer_bytes") == pr.pd->kv_transfer_bytes);
  CHECK(f.at("pd").at("choice") == pd_choice_name(pr.pd->choice));

  // Streamed layer by layer: the same bytes on the link, most of them while the prompt prefills,
  // each of the 36 layers a transfer of its own in each of the runtime's passes: 1984 tokens in
  // passes of 256 are 8 (7 x 16 pages and 12), 8 x 36 = 288 transfers, 287 more latencies.
  Json streamed = j;
  streamed["pd"]["stream"] = true;
  const Plan ps = plan_from_json(streamed, "p.json");
  CHECK(plan_from_json(plan_to_json(ps), "again").pd->stream);
  const Prediction prs = predict(resolve_plan(ps));
  CHECK(prs.pd->stream);
  CHECK(prs.pd->split.link_s.mean == doctest::Approx(pr.pd->kv_transfer_s + 287 * 70e-6));
  CHECK(prs.pd->kv_transfer_s == doctest::Approx(prs.pd->split.link_s.mean));
  CHECK(prs.pd->split.transfer_s.mean < pr.pd->split.transfer_s.mean);
  CHECK(prs.pd->split_served.ttft_s.mean < pr.pd->split_served.ttft_s.mean);

  Json no_load = j;
  no_load.erase("load");
  CHECK_THROWS_WITH_AS(plan_from_json(no_load, "p.json"), doctest::Contains("load.rate_per_s"), InputError);
  Json zero = j;
  zero["pd"]["prefill_workers"] = 0;
  CHECK_THROWS_WITH_AS(plan_from_json(zero, "p.json"), doctest::Contains("'pd.prefill_workers'"), InputError);
  Json scale = j;
  scale["pd"]["link_scale"] = -1;
  CHECK_THROWS_WITH_AS(plan_from_json(scale, "p.json"), doctest::Contains("'pd.link_scale'"), InputError);
  Json unknown = j;
  unknown["pd"]["links"] = "x";
  CHECK_THROWS_WITH_AS(plan_from_json(unknown, "p.json"), doctest::Contains("links"), InputError);
  Json link = j;
  link["pd"]["link"] = "no-such-link";
  CHECK_THROWS_WITH_AS(predict(resolve_plan(plan_from_json(link, "p.json"))), doctest::Contains("pd.link"), InputError);
}
