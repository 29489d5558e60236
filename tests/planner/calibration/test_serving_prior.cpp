// The datacenter engines' step model: their published serving runs, the fit the commands read
// (stored, and refitted here), the engines' scheduling defaults, chunked prefill in the
// simulation, and the engine a plan without one is served with.
#include <doctest/doctest.h>
#include <cmath>
#include <fmt/format.h>
#include <set>

#include "planner/calibration/serving_prior.hpp"
#include "planner/catalog/catalog.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/json_fields.hpp"
#include "planner/plan/predict.hpp"
#include "planner/serving/engine_policy.hpp"
#include "planner/serving/serving_sim.hpp"

using namespace infer_plan;

TEST_CASE("the stored serving fits are what the built-in runs give") {
  // The commands read hwprofiles/serving/fits/<engine>.json and never fit; this refits (without the
  // held-out devices, whose bands are not compared) and compares every term. On a failure, after a
  // change to the data or the fit: infer-plan calibrate --loo device --engine E --out hwprofiles/serving/fits/E.json
  for (const std::string engine : {"vllm", "sglang"}) {
    CAPTURE(engine);
    const ServingFit* stored = stored_serving_fit(engine);
    REQUIRE(stored != nullptr);
    const std::optional<ServingFit> fresh = fit_served_runs(builtin_served_runs(engine), engine, ServedHoldOut::none);
    REQUIRE(fresh);
    const StepCalibration& a = stored->calibration;
    const StepCalibration& b = fresh->calibration;
    auto same = [](double x, double y) { return doctest::Approx(x).epsilon(1e-6) == y; };
    CHECK(same(a.decode.fixed_s, b.decode.fixed_s));
    CHECK(same(a.decode.per_sequence_s, b.decode.per_sequence_s));
    CHECK(same(a.decode.read_efficiency, b.decode.read_efficiency));
    CHECK(a.decode.moe_read_efficiency.has_value() == b.decode.moe_read_efficiency.has_value());
    if (a.decode.moe_read_efficiency && b.decode.moe_read_efficiency)
      CHECK(same(*a.decode.moe_read_efficiency, *b.decode.moe_read_efficiency));
    REQUIRE(a.prefill);
    REQUIRE(b.prefill);
    CHECK(same(a.prefill->fixed_s, b.prefill->fixed_s));
    CHECK(same(a.prefill->compute_efficiency, b.prefill->compute_efficiency));
    CHECK(same(a.first_token_s, b.first_token_s));
    CHECK(stored->devices == fresh->devices);
    // A front end per study (a fitted run's source repository), a plan's their geometric mean.
    std::set<std::string> studies;
    for (const ServedFitPoint& p : fresh->points) {
      if (!p.fitted) continue;
      const std::string repo = p.run.source.substr(std::string("https://github.com/").size());
      studies.insert(repo.substr(0, repo.find('/', repo.find('/') + 1)));
    }
    CHECK(fresh->study_front_end_s.size() == studies.size());
    double log_sum = 0;
    for (const std::string& study : studies) {
      CAPTURE(study);
      REQUIRE(fresh->study_front_end_s.contains(study));
      log_sum += std::log(fresh->study_front_end_s.at(study));
    }
    CHECK(same(b.first_token_s, std::exp(log_sum / static_cast<double>(studies.size()))));
    // every device named has a built-in profile, and the efficiencies are fractions
    for (const std::string& d : stored->devices) CHECK_NOTHROW((void)load_hw_profile(d));
    CHECK(a.decode.read_efficiency > 0);
    CHECK(a.decode.read_efficiency <= 1);
    CHECK(a.prefill->compute_efficiency <= 1);
    CHECK(a.decode.error.lo <= 0);
    CHECK(a.decode.error.hi >= 0);
  }
}

TEST_CASE("every built-in serving run names a built-in model and profile, a source and its lengths") {
  for (const std::string& engine : served_engines()) {
    CAPTURE(engine);
    const std::vector<ServedRun>& runs = builtin_served_runs(engine);
    CHECK(!runs.empty());
    for (const ServedRun& r : runs) {
      CAPTURE(r.label());
      CHECK_NOTHROW((void)load_model(r.model));
      CHECK_NOTHROW((void)load_hw_profile(r.hw));
      CHECK(r.source.starts_with("https://"));
      CHECK(r.tp >= 1);
    }
  }
}

TEST_CASE("a serving data file with a bad field is refused, naming it") {
  const Json bad = Json::parse(R"({"engine": "vllm", "points": [{"source": "https://x", "hw": "h100-sxm",
    "model": "llama-3.1-8b", "metrics": {"mean_itl_ms": -3}}]})");
  CHECK_THROWS_WITH_AS(served_runs_from_json(bad, "f.json"), doctest::Contains("f.json: points[0]: metrics: field 'mean_itl_ms'"),
                       InputError);
  const Json no_source = Json::parse(R"({"engine": "vllm", "points": [{"hw": "h100-sxm", "model": "llama-3.1-8b"}]})");
  CHECK_THROWS_AS(served_runs_from_json(no_source, "f.json"), InputError);
}

TEST_CASE("an offline throughput run: its tokens per second read, predicted with the step model standing for its engine") {
  // output_throughput is all devices'; a per-GPU figure is multiplied by the run's gpus
  const Json j = Json::parse(R"({"engine": "trtllm", "points": [
    {"source": "https://x", "hw": "h200", "model": "llama-3.1-8b", "weights": "FP8", "kv": "auto", "tp": 1,
     "dataset": "fixed", "num_prompts": 3000, "request_rate": "inf", "input_len": 128, "output_len": 2048,
     "metrics": {"output_throughput": 9000}},
    {"source": "https://x", "hw": "h200", "model": "llama-3.1-8b", "gpus": 4, "tp": 4,
     "metrics": {"output_throughput_per_gpu": 1500}}]})");
  const std::vector<ServedRun> runs = served_runs_from_json(j, "t.json");
  CHECK(runs[0].output_throughput == 9000.0);
  CHECK(runs[1].output_throughput == 6000.0);  // 1500 x 4
  const Json bad = Json::parse(R"({"engine": "trtllm", "points": [{"source": "https://x", "hw": "h200",
    "model": "llama-3.1-8b", "metrics": {"output_throughput_per_gpu": 0}}]})");
  CHECK_THROWS_WITH_AS(served_runs_from_json(bad, "t.json"),
                       doctest::Contains("t.json: points[0]: metrics: field 'output_throughput_per_gpu'"), InputError);
  // TensorRT-LLM fits nothing of its own: vLLM's step model stands for it; engines with a fit keep theirs
  CHECK(step_donor("trtllm") == "vllm");
  CHECK(step_donor("vllm").empty());
  CHECK(step_donor("sglang").empty());
  CHECK(step_donor("llama.cpp").empty());
  const std::optional<StepCalibration> steps = served_step_calibration(load_hw_profile("h200"), "trtllm");
  REQUIRE(steps);
  const std::optional<double> tput = predict_served_throughput(runs[0], *steps);
  REQUIRE(tput);
  // TensorRT-LLM's "auto" KV is the checkpoint's: FP8 for an FP8 checkpoint, so the same run with
  // its KV named fp8 is the same simulation; named BF16, its pool holds half the tokens and the
  // batch, long outputs being KV-bound, runs slower
  ServedRun fp8 = runs[0], bf16 = runs[0];
  fp8.kv = "fp8";
  bf16.kv = "bf16";
  CHECK(*predict_served_throughput(fp8, *steps) == doctest::Approx(*tput));
  CHECK(*predict_served_throughput(bf16, *steps) < *tput);
  // every step costs at least the step model's fixed time: at most max_batch (2048) tokens each
  CHECK(*tput > 0);
  CHECK(*tput < 2048 / steps->decode.fixed_s);
}

TEST_CASE("the engines' scheduling defaults") {
  // vLLM V1 get_batch_defaults: >= 70 GiB and not an A100: 1024 sequences, 8192 tokens; else 256, 2048
  const EnginePolicy h100 = engine_policy("vllm", load_hw_profile("h100-sxm"));
  CHECK(h100.max_batch == 1024);
  CHECK(h100.step_token_budget == 8192u);
  const EnginePolicy a100 = engine_policy("vllm", load_hw_profile("a100-80gb"));
  CHECK(a100.max_batch == 256);
  CHECK(a100.step_token_budget == 2048u);
  const EnginePolicy l40s = engine_policy("vllm", load_hw_profile("l40s"));  // 45 GiB
  CHECK(l40s.max_batch == 256);
  // llama-server: prompts' tokens beside the slots' up to n_batch, 2048 or the plan's 'batch'
  const EnginePolicy llama = engine_policy("llama.cpp", load_hw_profile("rtx-4090"));
  CHECK((llama.step_token_budget == 2048u && llama.mix_decodes && llama.chunk_prompts && llama.kv_page_tokens == 1));
  EngineSettings n_batch;
  n_batch.batch = 512;
  CHECK(engine_policy("llama.cpp", load_hw_profile("rtx-4090"), n_batch).step_token_budget == 512u);
  // no engine (infer-plan's runtime): each prompt alone
  CHECK(!engine_policy("", load_hw_profile("rtx-4090")).step_token_budget);
  // SGLang: chunks in steps of their own; TensorRT-LLM: whole prompts beside the decodes, 32-token blocks
  const EnginePolicy sglang = engine_policy("sglang", load_hw_profile("h100-sxm"));  // 80 GiB: 8192
  CHECK((sglang.step_token_budget == 8192u && !sglang.mix_decodes && sglang.chunk_prompts && sglang.kv_page_tokens == 1));
  const EnginePolicy trt = engine_policy("trtllm", load_hw_profile("h200"));
  CHECK((trt.max_batch == 2048 && trt.mix_decodes && !trt.chunk_prompts && trt.kv_page_tokens == 32));
  CHECK(h100.kv_page_tokens == 16);
  // a plan's limits replace the defaults of the engines that have them, and only theirs
  EngineSettings limits;
  limits.max_num_seqs = 64;
  limits.max_num_batched_tokens = 512;
  const EnginePolicy set = engine_policy("vllm", load_hw_profile("h100-sxm"), limits);
  CHECK(set.max_batch == 64);
  CHECK(set.step_token_budget == 512u);
  limits.max_num_batched_tokens.reset();
  CHECK(engine_policy("sglang", load_hw_profile("h200"), limits).max_batch == 64);
  CHECK_THROWS_WITH_AS(engine_policy("llama.cpp", load_hw_profile("rtx-4090"), limits),
                       doctest::Contains("llama.cpp has none"), InputError);
  // vLLM's V0 engine (before 0.8.0): each prefill alone, 256 sequences, on any device; V1 from 0.8.0
  EngineSettings v0;
  v0.engine_version = "0.6.0";
  const EnginePolicy old = engine_policy("vllm", load_hw_profile("h100-sxm"), v0);
  CHECK(old.max_batch == 256);
  CHECK(!old.step_token_budget);
  v0.max_num_seqs = 64;  // its limit is still its own
  CHECK(engine_policy("vllm", load_hw_profile("h100-sxm"), v0).max_batch == 64);
  EngineSettings v1;
  v1.engine_version = "0.8.3";
  CHECK(engine_policy("vllm", load_hw_profile("h100-sxm"), v1).step_token_budget == 8192u);
  // A prompt's forward pass: the step budget where prompts are chunked, llama.cpp's micro-batch
  // (n_ubatch 512, or -b when smaller), whole where prompts are not cut, the runtime's 256
  CHECK(h100.prefill_pass_tokens == 8192u);
  CHECK(set.prefill_pass_tokens == 512u);
  CHECK(sglang.prefill_pass_tokens == 8192u);
  CHECK(llama.prefill_pass_tokens == 512u);
  CHECK(engine_policy("llama.cpp", load_hw_profile("rtx-4090"), n_batch).prefill_pass_tokens == 512u);
  EngineSettings ubatch;
  ubatch.ubatch = 128;
  CHECK(engine_policy("llama.cpp", load_hw_profile("rtx-4090"), ubatch).prefill_pass_tokens == 128u);
  CHECK(trt.prefill_pass_tokens == 0u);
  CHECK(old.prefill_pass_tokens == 0u);
  CHECK(engine_policy("", load_hw_profile("rtx-4090")).prefill_pass_tokens == 256u);
}

TEST_CASE("chunked prefill: the queue's heads share a step with the batch's decode iteration") {
  // decode 10 ms per iteration, prefill 1 ms per prompt token, a 100-token budget; two requests of
  // 50 prompt tokens and 2 output tokens, arriving evenly at 1000/s: at 1 and 2 ms.
  //   t = 1 ms: request 0 alone is waiting: a step of its prefill, 50 ms -> its first token at 51.
  //   t = 51 ms: request 1 (waiting since 2 ms) is prefilled in the step that decodes request 0:
  //     10 + 50 = 60 ms -> request 0's last token and request 1's first at 111 ms (TTFT 109 ms).
  //   t = 111 ms: request 1 decodes once: 10 ms -> done at 121 ms (E2EL 119 ms).
  // ITL gaps: request 0's 60 ms, request 1's 10 ms: mean 35 ms. TTFT mean (50 + 109) / 2 = 79.5 ms.
  ServerModel server;
  server.decode_iteration_s = [](uint64_t, uint64_t) { return 0.010; };
  server.prefill_s = [](uint64_t prompt) { return 0.001 * static_cast<double>(prompt); };
  server.max_batch = 8;
  server.step_token_budget = 100;
  ServingLoad load;
  load.rate_per_s = 1000;
  load.requests = 2;
  load.arrivals = ArrivalProcess::fixed;
  load.prompt_tokens = TokenLengths::fixed(50);
  load.output_tokens = TokenLengths::fixed(2);
  ServingResult r = simulate_serving(server, load);
  REQUIRE(r.latency);
  CHECK(r.latency->ttft_s.mean == doctest::Approx(0.0795));
  CHECK(r.latency->itl_s.mean == doctest::Approx(0.035));
  CHECK(r.latency->sojourn_s.max == doctest::Approx(0.119));
  CHECK(r.span_s == doctest::Approx(0.121));
  // Without the budget request 1's prefill is a step of its own, and prefill comes first: it runs
  // at 51-101 ms (TTFT 99 ms), then one iteration decodes both at 101-111 ms (E2EL 110 and 109 ms).
  server.step_token_budget.reset();
  r = simulate_serving(server, load);
  REQUIRE(r.latency);
  CHECK(r.latency->ttft_s.mean == doctest::Approx((0.050 + 0.099) / 2));
  CHECK(r.latency->sojourn_s.mean == doctest::Approx((0.110 + 0.109) / 2));
  // The front end: 20 ms more on every TTFT and end-to-end latency, none between tokens.
  server.step_token_budget = 100;
  server.first_token_s = 0.020;
  r = simulate_serving(server, load);
  REQUIRE(r.latency);
  CHECK(r.latency->ttft_s.mean == doctest::Approx(0.0995));
  CHECK(r.latency->itl_s.mean == doctest::Approx(0.035));
  CHECK(r.latency->sojourn_s.max == doctest::Approx(0.139));
}

TEST_CASE("a plan without an engine is served with the one its weights are made for") {
  auto chosen = [](const std::string& model, const std::string& weights, const std::string& hw) {
    const ModelSpec spec = load_model(model);
    return default_engine(spec, plan_weights(spec, weights, std::nullopt), load_hw_profile(hw)).first;
  };
  CHECK(chosen("llama-2-7b", "Q4_0", "rtx-4090") == "llama.cpp");
  CHECK(chosen("llama-3.1-8b", "Q4_K_M", "h100-sxm") == "llama.cpp");
  CHECK(chosen("llama-3.1-8b", "BF16", "h100-sxm") == "vllm");
  CHECK(chosen("llama-3.1-8b", "FP8", "h100-sxm") == "vllm");
  CHECK(chosen("gpt-oss-20b", "MXFP4_EXPERTS", "h100-sxm") == "vllm");
  CHECK(chosen("llama-3.1-8b", "BF16", "m2-max-96gb") == "llama.cpp");  // vLLM serves no Apple device

  // What resolve_plan then predicts with: never the bare ceiling where data exist, and it says so.
  Plan p;
  p.model = "llama-2-7b";
  p.weights = "Q4_0";
  p.hw = "rtx-4090";
  ResolvedPlan rp = resolve_plan(p);
  CHECK(rp.engine == "llama.cpp");
  CHECK(rp.roofline->rates().basis == "calibrated");
  CHECK(rp.roofline->rates().step_source.find("chosen") != std::string::npos);
  CHECK(rp.fit.engine_assumption.find("no engine") != std::string::npos);  // a chosen engine counts no memory
  p.model = "llama-3.1-8b";
  p.weights = "BF16";
  p.hw = "h100-sxm";
  rp = resolve_plan(p);
  CHECK(rp.engine == "vllm");
  CHECK(rp.roofline->rates().basis == "calibrated");  // the fit has h100-sxm's runs
  CHECK(rp.server.step_token_budget == 8192u);
  p.hw = "h200";
  CHECK(resolve_plan(p).roofline->rates().basis == "transferred");
  p.engine = "none";
  rp = resolve_plan(p);
  CHECK(rp.roofline->rates().basis == "ceiling");
  CHECK(!rp.server.step_token_budget);
  const StepCost c = rp.roofline->decode_step(1, 1024);
  CHECK(c.time_s == doctest::Approx(c.ceiling_s));
}

TEST_CASE("a served step costs its fixed time, its sequences and its reads") {
  // The vLLM fit on an H100: a decode step of b sequences = fixed + per_sequence x b + reads /
  // read efficiency (8B dense, no all-reduce), by hand from the stored terms and the ceiling's reads.
  Plan p;
  p.model = "llama-3.1-8b";
  p.hw = "h100-sxm";
  p.engine = "vllm";
  const ResolvedPlan rp = resolve_plan(p);
  const StepCalibration& c = *rp.hw.calibration;
  for (uint64_t b : {1, 16, 128}) {
    CAPTURE(b);
    const StepCost s = rp.roofline->decode_step(b, 1024);
    const double by_hand = c.decode.fixed_s + c.decode.per_sequence_s * static_cast<double>(b) +
                           s.memory_s / c.decode.read_efficiency;
    CHECK(s.time_s == doctest::Approx(std::max(by_hand, s.ceiling_s)));
  }
  // TTFT carries the front end: prefill + first_token_s
  const LatencyEstimate e = estimate_latency(*rp.roofline, 1, 1024, 128);
  CHECK(e.ttft_s == doctest::Approx(e.prefill.time_s + c.first_token_s));
  // Under TP 4 each of the 2 x 80 all-reduce calls of Llama-3.1-70B takes the fitted time in place
  // of the link's latency; the bytes over the link are the ceiling's.
  p.model = "llama-3.1-70b";
  p.tp = 4;
  const ResolvedPlan tp = resolve_plan(p);
  REQUIRE(tp.hw.calibration->decode.all_reduce_call_s);
  p.engine = "none";
  const ResolvedPlan bare = resolve_plan(p);
  const double calls = 2.0 * 80;
  CHECK(tp.roofline->decode_step(8, 1024).comm_s ==
        doctest::Approx(bare.roofline->decode_step(8, 1024).comm_s +
                        calls * (*tp.hw.calibration->decode.all_reduce_call_s - bare.roofline->rates().all_reduce_latency_s)));
}

TEST_CASE("--loo model: each model's runs are predicted by the fit of the other models' runs") {
  // Two models of one study (vLLM 0.8.5 on an H100 PCIe at 1-16 req/s): holding out Llama-3.1-8B
  // leaves Qwen2.5-7B's runs, so each Llama run's held-out figures are what the fit of the Qwen
  // runs alone predicts (one study: its front end is that fit's own).
  std::vector<ServedRun> runs;
  for (const ServedRun& r : builtin_served_runs("vllm"))
    if (r.excluded.empty() && r.hw == "h100-pcie" && r.tp == 1 && r.rate_per_s && *r.rate_per_s <= 16 &&
        (r.model == "llama-3.1-8b" || r.model == "qwen2.5-7b"))
      runs.push_back(r);
  REQUIRE(runs.size() >= 8);
  const std::optional<ServingFit> by_model = fit_served_runs(runs, "vllm", ServedHoldOut::model);
  REQUIRE(by_model);
  CHECK(by_model->held_out == ServedHoldOut::model);
  std::vector<ServedRun> qwen;
  for (const ServedRun& r : runs)
    if (r.model == "qwen2.5-7b") qwen.push_back(r);
  const std::optional<ServingFit> qwen_only = fit_served_runs(qwen, "vllm", ServedHoldOut::none);
  REQUIRE(qwen_only);
  size_t checked = 0;
  for (const ServedFitPoint& p : by_model->points) {
    if (!p.fitted || p.run.model != "llama-3.1-8b") continue;
    CAPTURE(p.run.label());
    const std::optional<ServedPrediction> direct = predict_served_run(p.run, qwen_only->calibration);
    REQUIRE(direct);
    CHECK(p.held_itl_s == doctest::Approx(direct->itl_s).epsilon(1e-9));
    CHECK(p.held_ttft_s == doctest::Approx(direct->ttft_s).epsilon(1e-9));
    ++checked;
  }
  CHECK(checked >= 4);
}
