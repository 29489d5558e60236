// The calibrated step model: llama-bench's four formats, the fit recovering terms it was given
// (and ignoring one outlier), the roofline adding the terms by hand, and the published data
// (hwprofiles/calibrations) predicted with each point left out better than the ceiling does.
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <fmt/format.h>

#include "planner/calibration/calibration.hpp"
#include "planner/calibration/step_prior.hpp"
#include "planner/catalog/catalog.hpp"
#include "planner/catalog/embedded_data.hpp"
#include "planner/core/json_fields.hpp"
#include "planner/core/input_error.hpp"
#include "planner/calibration/llama_bench.hpp"
#include "planner/model/model_scale.hpp"
#include "planner/cost/roofline.hpp"
#include "planner/weights/weights_size.hpp"

using namespace infer_plan;

TEST_CASE("llama-bench's markdown table, with its build line") {
  const char* md =
      "| model                          |       size |     params | backend    | ngl |          test |                  t/s |\n"
      "| ------------------------------ | ---------: | ---------: | ---------- | --: | ------------: | -------------------: |\n"
      "| llama 7B Q4_0                  |   3.56 GiB |     6.74 B | CUDA       |  99 |         pp512 |      4956.03 ± 19.49 |\n"
      "| llama 7B Q4_0                  |   3.56 GiB |     6.74 B | CUDA       |  99 |         tg128 |        154.69 ± 0.27 |\n"
      "| llama 7B Q4_0                  |   3.56 GiB |     6.74 B | CUDA       |  99 |  tg128 @ d512 |        150.00 ± 0.30 |\n"
      "\n"
      "build: 8e672efe (2095)\n";
  const std::vector<BenchRow> rows = parse_bench_text(md, "t.md");
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].model_type == "llama 7B Q4_0");
  CHECK(rows[0].model_bytes == uint64_t(3.56 * 1024 * 1024 * 1024));  // 3822520893 B
  CHECK(*rows[0].params == doctest::Approx(6.74e9));
  CHECK(rows[0].is_prefill());
  CHECK(rows[0].n_prompt == 512);
  CHECK(rows[0].measured_s() == doctest::Approx(512 / 4956.03));
  CHECK(rows[1].is_decode());
  CHECK(rows[1].n_gen == 128);
  CHECK(rows[1].tokens_per_s == 154.69);
  CHECK(*rows[1].stddev_tokens_per_s == 0.27);
  CHECK(rows[1].measured_s() == doctest::Approx(1 / 154.69));
  CHECK(rows[1].build == "8e672efe (2095)");
  CHECK(rows[1].origin == "t.md:4");
  CHECK(rows[2].n_depth == 512);
  CHECK(rows[2].test_name() == "tg128 @ d512");
}

TEST_CASE("llama-bench -o json, jsonl and csv give the same row") {
  const char* json =
      R"([{"build_commit": "abc", "model_type": "llama 8B Q8_0", "model_size": 8540770304, "model_n_params": 8030261248,
          "n_prompt": 0, "n_gen": 128, "type_k": "q8_0", "type_v": "f16", "avg_ts": 90.5, "stddev_ts": 0.5,
          "gpu_info": "NVIDIA GeForce RTX 4090", "backends": "CUDA"}])";
  const char* jsonl =
      R"({"build_commit": "abc", "model_type": "llama 8B Q8_0", "model_size": 8540770304, "model_n_params": 8030261248, "n_prompt": 0, "n_gen": 128, "type_k": "q8_0", "type_v": "f16", "avg_ts": 90.5, "stddev_ts": 0.5})"
      "\n";
  const char* csv =
      "build_commit,model_type,model_size,model_n_params,n_prompt,n_gen,type_k,type_v,avg_ts,stddev_ts\n"
      "\"abc\",\"llama 8B Q8_0\",\"8540770304\",\"8030261248\",\"0\",\"128\",\"q8_0\",\"f16\",\"90.5\",\"0.5\"\n";
  for (const auto& format : {std::pair{json, "json"}, std::pair{jsonl, "jsonl"}, std::pair{csv, "csv"}}) {
    const std::string name = format.second;
    CAPTURE(name);
    const std::vector<BenchRow> rows = parse_bench_text(format.first, name);
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].model_type == "llama 8B Q8_0");
    CHECK(*rows[0].model_bytes == 8540770304u);
    CHECK(*rows[0].params == 8030261248.0);
    CHECK(rows[0].is_decode());
    CHECK(rows[0].tokens_per_s == 90.5);
    CHECK(rows[0].kv_k == "q8_0");
    CHECK(rows[0].build == "abc");
  }
}

TEST_CASE("llama-bench's n_ubatch, in each format; a bad one is named") {
  const char* md =
      "| model         |     size |   params | backend | ngl | n_ubatch |   test |            t/s |\n"
      "| ------------- | -------: | -------: | ------- | --: | -------: | -----: | -------------: |\n"
      "| llama 7B Q4_0 | 3.56 GiB |   6.74 B | ROCm    |  99 |       64 | pp2048 | 1526.87 ± 2.00 |\n";
  const char* json = R"([{"model_type": "llama 7B Q4_0", "n_prompt": 2048, "n_gen": 0, "n_ubatch": 64, "avg_ts": 1526.87}])";
  const char* csv = "model_type,n_prompt,n_gen,n_ubatch,avg_ts\n\"llama 7B Q4_0\",\"2048\",\"0\",\"64\",\"1526.87\"\n";
  for (const auto& format : {std::pair{md, "md"}, std::pair{json, "json"}, std::pair{csv, "csv"}}) {
    const std::string name = format.second;
    CAPTURE(name);
    const std::vector<BenchRow> rows = parse_bench_text(format.first, name);
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].n_ubatch == 64);
    CHECK(rows[0].n_prompt == 2048);
  }
  CHECK(parse_bench_text(R"([{"model_type": "llama 7B Q4_0", "n_prompt": 512, "avg_ts": 9}])", "j")[0].n_ubatch == 0);
  CHECK_THROWS_WITH_AS(parse_bench_text("model_type,n_prompt,n_ubatch,avg_ts\nllama 7B Q4_0,512,-64,9\n", "b.csv"),
                       doctest::Contains("n_ubatch"), InputError);
  CHECK_THROWS_WITH_AS(parse_bench_text(R"([{"model_type": "llama 7B Q4_0", "n_prompt": 512, "n_ubatch": 9223372036854775808,
                                            "avg_ts": 9}])", "big.json"),
                       doctest::Contains("big.json: result 1: field 'n_ubatch' is 9223372036854775808"), InputError);
}

TEST_CASE("bad llama-bench input names the line and what was expected") {
  CHECK_THROWS_WITH_AS(parse_bench_text("hello\nworld\n", "x.txt"),
                       doctest::Contains("not llama-bench output"), InputError);
  CHECK_THROWS_WITH_AS(parse_bench_text("| model | test | t/s |\n|---|---|---|\n| llama 7B Q4_0 | tg128 | fast |\n", "x.md"),
                       doctest::Contains("x.md:3: t/s: 'fast' is not a number"), InputError);
  CHECK_THROWS_WITH_AS(parse_bench_text("| model | test | t/s |\n|---|---|---|\n| llama 7B Q4_0 | xx128 | 5 |\n", "x.md"),
                       doctest::Contains("not a llama-bench test"), InputError);
  CHECK_THROWS_WITH_AS(parse_bench_text(R"([{"model_type": "llama 7B Q4_0", "n_gen": 128}])", "x.json"),
                       doctest::Contains("avg_ts"), InputError);
  CHECK_THROWS_WITH_AS(parse_bench_text(R"([{"model_type": "llama 7B Q4_0", "n_gen": 128, "avg_ts": 0}])", "x.json"),
                       doctest::Contains("tokens/s > 0"), InputError);
}

TEST_CASE("model_type names map to llama.cpp file types") {
  auto ftype = [](const char* t) { return parse_bench_model_type(t, "t").file_type; };
  CHECK(ftype("llama 7B Q4_0") == "Q4_0");
  CHECK(ftype("llama 7B mostly Q4_0") == "Q4_0");
  CHECK(ftype("llama 7B Q4_K - Medium") == "Q4_K_M");
  CHECK(ftype("llama 7B Q3_K - Large") == "Q3_K_L");
  CHECK(ftype("llama 7B Q2_K - Medium") == "Q2_K");  // llama.cpp prints Q2_K so
  CHECK(ftype("llama 7B Q2_K - Small") == "Q2_K_S");
  CHECK(ftype("llama 7B all F32") == "F32");
  CHECK(ftype("llama 7B IQ2_XXS - 2.0625 bpw") == "IQ2_XXS");
  CHECK(ftype("gpt-oss 20B MXFP4 MoE") == "MXFP4_MOE");  // llama.cpp's name of LLAMA_FTYPE_MOSTLY_MXFP4_MOE
  CHECK(parse_bench_model_type("qwen2 7B Q8_0", "t").arch == "qwen2");
  CHECK(parse_bench_model_type("qwen2 7B Q8_0", "t").size_label == "7B");
  CHECK_THROWS_AS(parse_bench_model_type("llama", "t"), InputError);
}

namespace {

// Rows as an engine with exactly these terms would print them: t/s = 1 / (fixed per layer x layers +
// memory / e).
std::vector<BenchRow> synthetic_rows(const HwProfile& hw, double layer_s, double efficiency) {
  struct Case { const char* model; const char* weights; double params; };
  const Case cases[] = {{"llama-2-7b", "F16", 6.74e9}, {"llama-2-7b", "Q8_0", 6.74e9},
                        {"llama-2-7b", "Q4_0", 6.74e9}, {"llama-2-13b", "Q4_0", 13.0e9},
                        {"llama-2-13b", "F16", 13.0e9}, {"llama-2-70b", "Q4_0", 69.0e9}};
  std::vector<BenchRow> rows;
  for (const Case& c : cases) {
    const ModelSpec spec = load_model(c.model);
    const PlanWeights w = plan_weights(spec, c.weights, std::nullopt);
    const Roofline rl(spec, w.layout, {GgmlType::F16, GgmlType::F16}, hw);
    BenchRow r;
    r.model_type = fmt::format("llama 7B {}", c.weights);
    r.model = c.model;
    r.n_gen = 128;
    r.tokens_per_s = 1.0 / (layer_s * static_cast<double>(spec.layers) + rl.decode_step(1, 64).memory_s / efficiency);
    r.origin = fmt::format("{} {}", c.model, c.weights);
    rows.push_back(r);
  }
  return rows;
}

// A llama.cpp calibration with decode reads at 0.8 of the rate and the prefill terms given.
StepCalibration prefill_calibration(double fixed_s, double efficiency, double expert_tile_factor = 0) {
  StepCalibration c;
  c.engine = "llama.cpp";
  c.decode.read_efficiency = 0.8;
  c.prefill.emplace();
  c.prefill->fixed_s = fixed_s;
  c.prefill->compute_efficiency = efficiency;
  c.prefill->expert_tile_factor = expert_tile_factor;
  return c;
}

}  // namespace

TEST_CASE("the fit recovers the terms the measurements were made with, and ignores one outlier") {
  const HwProfile hw = load_hw_profile("rtx-4090");
  std::vector<BenchRow> rows = synthetic_rows(hw, 60e-6, 0.8);  // 60 us per layer: 1.92 ms for 32 layers, 4.8 ms for 80
  const CalibrationResult clean = calibrate_step_model(rows, hw, {});
  CHECK(clean.points.size() == 6);
  CHECK(clean.calibration.decode.fixed_s == 0);
  CHECK(clean.calibration.decode.layer_s == doctest::Approx(60e-6).scale(0).epsilon(1e-6).scale(0));
  CHECK(clean.calibration.decode.read_efficiency == doctest::Approx(0.8).epsilon(1e-6));
  for (const auto& entry : clean.calibration.decode.read_efficiency_by_type) {
    const std::string type = entry.first;
    CAPTURE(type);
    CHECK(entry.second == doctest::Approx(0.8).epsilon(1e-6));  // no type departs from the shared rate
  }
  for (const CalibrationPoint& p : clean.points) CHECK(std::abs(p.loo_residual()) < 1e-6);
  CHECK(clean.calibration.decode.error.points == 6);

  rows[3].tokens_per_s /= 1.5;  // one run 50% slow (a throttled GPU, a busy machine)
  const CalibrationResult dirty = calibrate_step_model(rows, hw, {});
  CHECK(dirty.calibration.decode.layer_s == doctest::Approx(60e-6).scale(0).epsilon(0.03).scale(0));
  CHECK(dirty.calibration.decode.read_efficiency == doctest::Approx(0.8).epsilon(0.03).scale(0));
  CHECK(dirty.points[3].weight < 0.2);  // the outlier is down-weighted, not the others
  CHECK(dirty.points[0].weight == 1.0);
}

// A prompt evaluated n_ubatch tokens at a time pays the fixed time once per micro-batch: rows of
// one prompt at -ub 64, 128, 256 and 512 (8, 4, 2, 1 micro-batches) made with 20 ms per
// micro-batch and compute at 40% give both back; one fixed time per prompt cannot fit them.
TEST_CASE("a prefill's fixed time is per micro-batch: rows at several -ub give it back") {
  const HwProfile hw = load_hw_profile("rtx-4090");
  const ModelSpec spec = load_model("llama-2-7b");
  const PlanWeights w = plan_weights(spec, "Q4_0", std::nullopt);
  const Roofline rl(spec, w.layout, {GgmlType::F16, GgmlType::F16}, hw);
  const double compute_s = rl.prefill(512).compute_s;  // the same FLOPs whatever the micro-batch
  std::vector<BenchRow> rows;  // the prefill rows, then decode rows (a fit needs both)
  for (const uint64_t ub : {64u, 128u, 256u, 512u}) {
    BenchRow r;
    r.model_type = "llama 7B Q4_0";
    r.model = "llama-2-7b";
    r.n_prompt = 512;
    r.n_ubatch = ub;
    r.tokens_per_s = 512 / (0.020 * static_cast<double>(512 / ub) + compute_s / 0.4);
    r.origin = fmt::format("ub {}", ub);
    rows.push_back(r);
  }
  for (const BenchRow& r : synthetic_rows(hw, 0.002, 0.8)) rows.push_back(r);
  const CalibrationResult fit = calibrate_step_model(rows, hw, {});
  REQUIRE(fit.calibration.prefill);
  CHECK(fit.calibration.prefill->fixed_s == doctest::Approx(0.020).epsilon(1e-6));
  CHECK(fit.calibration.prefill->compute_efficiency == doctest::Approx(0.4).epsilon(1e-6));
  int prefills = 0;
  for (const CalibrationPoint& p : fit.points)
    if (!p.decode) {
      CHECK(p.micro_batches == static_cast<double>(512 / p.row.n_ubatch));
      ++prefills;
    }
  CHECK(prefills == 4);
  // a row that does not state -ub ran at llama-bench's 512
  rows[0].n_ubatch = 0;
  rows[0].n_prompt = 2048;
  for (const CalibrationPoint& p : calibrate_step_model(rows, hw, {}).points)
    if (p.row.n_prompt == 2048) CHECK(p.micro_batches == 4);
}

TEST_CASE("a prompt in micro-batches reads the weights once each and pays the fixed time each") {
  const HwProfile hw = load_hw_profile("rtx-4090");
  const ModelSpec spec = load_model("llama-2-7b");
  const PlanWeights w = plan_weights(spec, "Q4_0", std::nullopt);
  Roofline rl(spec, w.layout, {GgmlType::F16, GgmlType::F16}, hw);
  const StepCost whole = rl.prefill(2048);
  rl.set_prefill_micro_batch(512);
  const StepCost four = rl.prefill(2048);
  CHECK(whole.micro_batches == 1);
  CHECK(four.micro_batches == 4);
  // the dense weights four times (the token embeddings' rows once per token either way)
  CHECK(four.weight_bytes - whole.weight_bytes == doctest::Approx(3 * rl.prefill(1).weight_bytes).epsilon(0.01));
  CHECK(four.compute_s == doctest::Approx(whole.compute_s));
  CHECK(four.kv_bytes == doctest::Approx(whole.kv_bytes));
  rl.set_prefill_micro_batch(500);
  CHECK(rl.prefill(2048).micro_batches == 5);  // ceil(2048 / 500)
  // calibrated: 20 ms per micro-batch
  HwProfile cal_hw = hw;
  cal_hw.calibration = prefill_calibration(0.020, 0.5);
  Roofline calibrated(spec, w.layout, {GgmlType::F16, GgmlType::F16}, cal_hw);
  calibrated.set_prefill_micro_batch(512);
  const StepCost p = calibrated.prefill(2048);
  CHECK(p.fixed_s == doctest::Approx(0.080));
  CHECK(p.time_s == doctest::Approx(0.080 + p.overhead_s + std::max(p.compute_s / 0.5, p.memory_s / 0.8)));
}

// A model with experts prefills each micro-batch as one product per expert it routes to, each
// costing at least a tile of tokens. Qwen3-30B-A3B at a 512-token micro-batch: its 48 layers route
// to all 128 experts (128 (1 - (1 - 8/128)^512) = 128 - 6e-13), 6144 products of gate, up and down
// (3 x 2048 x 768), 64 tokens each: 6144 x 2 x 3 x 2048 x 768 x 64 = 3.711e12 FLOPs.
TEST_CASE("a prefill of a model with experts pays a tile per expert product, fitted as a factor") {
  const HwProfile hw = load_hw_profile("rtx-4090");
  const auto roofline = [&](const char* model, const char* weights, const HwProfile& h) {
    const ModelSpec spec = load_model(model);
    const PlanWeights w = plan_weights(spec, weights, std::nullopt);
    Roofline rl(spec, w.layout, {GgmlType::F16, GgmlType::F16}, h);
    rl.set_prefill_micro_batch(512);
    return rl;
  };
  const double rate = roofline("qwen3-30b-a3b", "Q8_0", hw).rates().compute_ops_per_s;
  CHECK(roofline("qwen3-30b-a3b", "Q8_0", hw).prefill(512).expert_tile_s == doctest::Approx(3.711e12 / rate).epsilon(1e-3).scale(0));
  CHECK(roofline("qwen3-30b-a3b", "Q8_0", hw).prefill(2048).expert_tile_s ==
        doctest::Approx(4 * 3.711e12 / rate).epsilon(1e-3).scale(0));  // four micro-batches
  CHECK(roofline("llama-2-7b", "Q4_0", hw).prefill(512).expert_tile_s == 0);

  // rows made with 20 ms per micro-batch, the products at 40% of the rate and 3 x the tiles: two
  // dense sizes and two models with experts (gpt-oss-20b: 24 layers of 32 experts, 2880 wide)
  std::vector<BenchRow> rows;
  const struct { const char* model; const char* type; const char* weights; } cases[] = {
      {"llama-2-7b", "llama 7B Q4_0", "Q4_0"}, {"llama-2-13b", "llama 13B Q4_0", "Q4_0"},
      {"qwen3-30b-a3b", "qwen3moe 30B.A3B Q8_0", "Q8_0"}, {"gpt-oss-20b", "gpt-oss 20B MXFP4 MoE", "MXFP4_MOE"}};
  for (const auto& k : cases)
    for (const uint64_t n : {512u, 2048u}) {
      const StepCost c = roofline(k.model, k.weights, hw).prefill(n);
      BenchRow r;
      r.model_type = k.type;
      r.model = k.model;
      r.n_prompt = n;
      r.tokens_per_s = static_cast<double>(n) / (0.020 * c.micro_batches + c.compute_s / 0.4 + 3.0 * c.expert_tile_s);
      r.origin = fmt::format("{} pp{}", k.model, n);
      rows.push_back(r);
    }
  for (const BenchRow& r : synthetic_rows(hw, 60e-6, 0.8)) rows.push_back(r);
  const CalibrationResult fit = calibrate_step_model(rows, hw, {});
  REQUIRE(fit.calibration.prefill);
  const PrefillTerms& t = *fit.calibration.prefill;
  CHECK(t.expert_tile_factor == doctest::Approx(3.0).epsilon(0.1).scale(0));  // within the ridge's pull
  CHECK(t.compute_efficiency == doctest::Approx(0.4).epsilon(0.05).scale(0));
  for (const CalibrationPoint& p : fit.points)
    if (!p.decode) CHECK(std::abs(p.fitted_s / p.measured_s - 1) < 0.05);
  // the roofline adds the tiles at the calibration's factor
  HwProfile cal_hw = hw;
  const StepCalibration c = prefill_calibration(0.020, 0.4, 3.0);
  cal_hw.calibration = c;
  const StepCost p = roofline("qwen3-30b-a3b", "Q8_0", cal_hw).prefill(2048);
  CHECK(p.time_s == doctest::Approx(0.080 + p.overhead_s + std::max(p.compute_s / 0.4 + 3.0 * p.expert_tile_s, p.memory_s / 0.8)));
  // a device whose prompts ran no model with experts takes its prior's factor, scaled by its own
  // compute cost against the prior's (here both 0.4: the factor itself)
  std::vector<BenchRow> dense;
  for (const BenchRow& r : rows)
    if (r.model.starts_with("llama")) dense.push_back(r);
  CalibrationOptions o;
  o.prior = c;
  const CalibrationResult borrowed = calibrate_step_model(dense, hw, o);
  REQUIRE(borrowed.calibration.prefill);
  CHECK(borrowed.calibration.prefill->compute_efficiency == doctest::Approx(0.4).epsilon(0.02).scale(0));
  CHECK(borrowed.calibration.prefill->expert_tile_factor == doctest::Approx(3.0).epsilon(0.02).scale(0));
  CHECK(calibrate_step_model(dense, hw, {}).calibration.prefill->expert_tile_factor == 0);  // no prior: none
  // and the factor survives the profile's JSON
  CHECK(step_calibration_from_json(step_calibration_to_json(fit.calibration), "t").prefill->expert_tile_factor ==
        doctest::Approx(t.expert_tile_factor).scale(0));
}

// Attention's products over a long prompt at their own fraction: rows of llama-2-7b and
// llama-2-13b Q4_0 at pp512..8192 (two sizes, so the fixed time per micro-batch is told from the
// rate, as the published rows of 8B and 70B models tell it) made with 20 ms per micro-batch, the
// GEMMs at 40% and attention at 10% of the profile's rate. Attention is 1-11% of the compute
// there; the fit gives the terms back within the pull of its ridge (kAttentionRidgeShare), which
// holds attention's cost somewhat toward the GEMMs'.
TEST_CASE("a prefill's attention at long prompts has its own efficiency, fitted where prompts are long") {
  const HwProfile hw = load_hw_profile("rtx-4090");
  std::vector<BenchRow> rows;
  for (const char* model : {"llama-2-7b", "llama-2-13b"}) {
    const ModelSpec spec = load_model(model);
    const PlanWeights w = plan_weights(spec, "Q4_0", std::nullopt);
    Roofline rl(spec, w.layout, {GgmlType::F16, GgmlType::F16}, hw);
    rl.set_prefill_micro_batch(512);
    for (const uint64_t n : {512u, 1024u, 2048u, 4096u, 8192u}) {
      const StepCost c = rl.prefill(n);
      CHECK(c.attention_s > 0);
      CHECK(c.attention_s < c.compute_s);
      BenchRow r;
      r.model_type = std::string(model) == "llama-2-7b" ? "llama 7B Q4_0" : "llama 13B Q4_0";
      r.model = model;
      r.n_prompt = n;
      r.tokens_per_s = static_cast<double>(n) /
                       (0.020 * c.micro_batches + (c.compute_s - c.attention_s) / 0.4 + c.attention_s / 0.1);
      r.origin = fmt::format("{} pp{}", model, n);
      rows.push_back(r);
    }
  }
  for (const BenchRow& r : synthetic_rows(hw, 60e-6, 0.8)) rows.push_back(r);
  const CalibrationResult fit = calibrate_step_model(rows, hw, {});
  REQUIRE(fit.calibration.prefill);
  REQUIRE(fit.calibration.prefill->attention_efficiency);
  const PrefillTerms& t = *fit.calibration.prefill;
  // (fitted: attention 0.119, GEMMs 0.374, 18.6 ms; pp512 +2..+4%, pp8192 -5..-6%)
  CHECK(*t.attention_efficiency == doctest::Approx(0.1).epsilon(0.25).scale(0));
  CHECK(t.compute_efficiency == doctest::Approx(0.4).epsilon(0.1).scale(0));
  CHECK(*t.attention_efficiency < 0.5 * t.compute_efficiency);
  for (const CalibrationPoint& p : fit.points)
    if (!p.decode) CHECK(std::abs(p.fitted_s / p.measured_s - 1) < 0.07);
  // the roofline prices attention's share at its own rate
  HwProfile cal_hw = hw;
  cal_hw.calibration = fit.calibration;
  const ModelSpec spec = load_model("llama-2-7b");
  const PlanWeights w = plan_weights(spec, "Q4_0", std::nullopt);
  Roofline calibrated(spec, w.layout, {GgmlType::F16, GgmlType::F16}, cal_hw);
  calibrated.set_prefill_micro_batch(512);
  const StepCost p = calibrated.prefill(8192);
  CHECK(p.time_s == doctest::Approx(p.fixed_s + p.overhead_s + (p.compute_s - p.attention_s) / t.compute_efficiency +
                                    p.attention_s / *t.attention_efficiency));
  // prompts of 512 tokens alone cannot tell attention apart: no covariate, one efficiency
  std::vector<BenchRow> short_rows;
  for (const BenchRow& r : rows)
    if (r.n_prompt == 0 || r.n_prompt == 512) short_rows.push_back(r);
  const CalibrationResult short_only = calibrate_step_model(short_rows, hw, {});
  REQUIRE(short_only.calibration.prefill);
  CHECK_FALSE(short_only.calibration.prefill->attention_efficiency);
}

// Hierarchical calibration: a device with one model size (the fixed time cannot be told from the
// rate) and no Q4_0 point of its own beside F16. Its prior (the terms its architecture's other
// devices give it) says: 62.5 us fixed per layer (2 ms for Llama 2 7B's 32), Q4_0 read at 0.375
// where the shared rate is 0.5, i.e. a third slower (0.5 / 0.375 - 1). The rows were made with
// 2 ms fixed, F16 and the rest at 0.8 and
// Q4_0 a third slower (0.6), so the fit with the prior must give back 0.8 and borrow 0.6 for Q4_0;
// the Q4_0 file left out is then predicted exactly, where the fit without a prior misses it.
TEST_CASE("a device's fit borrows its prior's fixed time and a weight type's relative cost") {
  const HwProfile hw = load_hw_profile("rtx-4090");
  std::vector<BenchRow> rows;
  for (const char* weights : {"F16", "Q4_0"})
    for (const uint64_t n_gen : {128, 1024}) {
      const ModelSpec spec = load_model("llama-2-7b");
      const PlanWeights w = plan_weights(spec, weights, std::nullopt);
      const Roofline rl(spec, w.layout, {GgmlType::F16, GgmlType::F16}, hw);
      double t = 0.002 + rl.decode_step(1, n_gen / 2).memory_s / 0.8;
      if (rl.weight_read_s_of_type("Q4_0", 1) > 0) t += rl.weight_read_s_of_type("Q4_0", 1) * (1 / 0.6 - 1 / 0.8);
      BenchRow r;
      r.model_type = fmt::format("llama 7B {}", weights);
      r.model = "llama-2-7b";
      r.n_gen = n_gen;
      r.tokens_per_s = 1 / t;
      r.origin = fmt::format("{} tg{}", weights, n_gen);
      rows.push_back(r);
    }
  std::vector<BenchRow> f16(rows.begin(), rows.begin() + 2);
  CalibrationOptions o;
  o.prior.emplace();
  o.prior->decode.layer_s = 62.5e-6;
  o.prior->decode.read_efficiency = 0.5;
  o.prior->decode.read_efficiency_by_type["Q4_0"] = 0.375;
  const DecodeTerms d = calibrate_step_model(f16, hw, o).calibration.decode;
  CHECK(d.layer_s == doctest::Approx(62.5e-6).scale(0));  // held: one model size
  CHECK(d.read_efficiency == doctest::Approx(0.8).epsilon(1e-3));
  CHECK(d.read_efficiency_by_type.at("Q4_0") == doctest::Approx(0.6).epsilon(1e-3));
  const CalibrationResult with = calibrate_step_model(rows, hw, o);
  const CalibrationResult without = calibrate_step_model(rows, hw, {});
  for (size_t i = 2; i < rows.size(); ++i) {  // the Q4_0 file's points, fitted on the F16 file
    CAPTURE(rows[i].origin);
    CHECK(std::abs(with.points[i].loo_residual()) < 0.005);
    CHECK(std::abs(without.points[i].loo_residual()) > 0.1);
  }
}

// An old build's pattern (llama.cpp 2023 on an RTX 3090): Q4_0 read at the bound of what the
// profile's rate allows, the K-quants at half the rate of F16. A free fit trades the K-quants'
// slowness against the fixed time and lands Q4_0 faster than the bound; holding Q4_0 at the bound
// and fitting again must give back the fixed time the rows were made with.
TEST_CASE("a type read at the bound is held there and the fixed time stays what the rows were made with") {
  const HwProfile hw = load_hw_profile("rtx-3090");
  const double layer_s = 0.003 / 32;  // 3 ms for Llama 2 7B's 32 layers, 3.75 ms for 13B's 40
  std::vector<BenchRow> rows;
  for (const char* weights : {"F16", "Q4_0", "Q2_K", "Q3_K_S"})
    for (const char* model : {"llama-2-7b", "llama-2-13b"}) {
      const ModelSpec spec = load_model(model);
      const PlanWeights w = plan_weights(spec, weights, std::nullopt);
      const Roofline rl(spec, w.layout, {GgmlType::F16, GgmlType::F16}, hw);
      // per type: F16 at 0.8 of the rate, Q4_0 at the bound 1.1, every K type at 0.4; the rest
      // (norms, the KV cache) at 0.8
      double t = layer_s * static_cast<double>(spec.layers) + rl.decode_step(1, 64).memory_s / 0.8;
      for (const std::string& type : rl.weight_types()) {
        const double e = type == "Q4_0" ? 1.1 : type.ends_with("_K") ? 0.4 : 0.8;
        t += rl.weight_read_s_of_type(type, 1) * (1 / e - 1 / 0.8);
      }
      BenchRow r;
      r.model_type = fmt::format("llama 7B {}", weights);
      r.model = model;
      r.n_gen = 128;
      r.tokens_per_s = 1 / t;
      r.origin = fmt::format("{} {}", model, weights);
      rows.push_back(r);
    }
  const CalibrationResult r = calibrate_step_model(rows, hw, {});
  const DecodeTerms& d = r.calibration.decode;
  // within 8%: the ridge pulls the K types toward the shared rate, and the fixed time takes up the
  // rest (6% here; a per-step fixed time gave back 3.17 ms for 3, the same 6%)
  CHECK(d.layer_s == doctest::Approx(layer_s).epsilon(0.08).scale(0));
  CHECK(d.read_efficiency_by_type.at("Q4_0") == doctest::Approx(1.1));
  CHECK(d.read_efficiency_by_type.at("F16") == doctest::Approx(0.8).epsilon(0.05));
  CHECK(d.read_efficiency_by_type.at("Q2_K") == doctest::Approx(0.4).epsilon(0.1));
  CHECK(d.error.loo_median_abs < 0.05);  // the ridge pulls a type toward the shared rate
}

TEST_CASE("a calibrated roofline adds the fixed time and the achieved reads, and keeps the ceiling") {
  HwProfile hw = load_hw_profile("rtx-4090");
  const ModelSpec spec = load_model("llama-2-7b");
  const PlanWeights w = plan_weights(spec, "Q4_0", std::nullopt);
  const StepCost plain = Roofline(spec, w.layout, {}, hw).decode_step(1, 512);
  CHECK_FALSE(plain.calibrated);
  CHECK(plain.time_s == plain.ceiling_s);

  hw.calibration = step_calibration_from_json(
      Json::parse(R"({"engine": "llama.cpp", "decode": {"fixed_ms": 2.0, "read_efficiency": 0.5,
                      "error": [-0.1, 0.2], "extra_token_ms_per_gb": {"Q4_0": 1.0}}})"), "test");
  const Roofline rl(spec, w.layout, {}, hw);
  const StepCost c = rl.decode_step(1, 512);
  CHECK(c.calibrated);
  CHECK(c.ceiling_s == plain.ceiling_s);
  CHECK(c.fixed_s == 0.002);
  CHECK(c.read_s == doctest::Approx(plain.memory_s / 0.5));
  CHECK(c.time_s == doctest::Approx(0.002 + plain.memory_s * 2));
  CHECK(c.time_lo_s == doctest::Approx(c.time_s * 0.9));
  CHECK(c.time_hi_s == doctest::Approx(c.time_s * 1.2));
  CHECK(c.extra_tokens_s == 0);  // one token: nothing beyond the first
  // 4 sequences: 3 extra tokens x 1 ms/GB x the Q4_0 matrices one token multiplies (all but the
  // Q6_K head and the F32 norms; the embedding is a lookup)
  double q4_bytes = 0;
  for (const TensorPlacement& p : w.layout.tensors)
    if (p.type == GgmlType::Q4_0 && p.tensor.role != TensorRole::token_embd) q4_bytes += static_cast<double>(p.bytes);
  const StepCost b4 = rl.decode_step(4, 512);
  CHECK(b4.extra_tokens_s == doctest::Approx(3 * q4_bytes * 1e-12));

  // a calibration that would beat the speed of light is held at the ceiling
  hw.calibration->decode = DecodeTerms{};
  hw.calibration->decode.read_efficiency = 2.0;
  const StepCost fast = Roofline(spec, w.layout, {}, hw).decode_step(1, 512);
  CHECK(fast.time_s == fast.ceiling_s);
}

TEST_CASE("the calibration block round-trips through JSON and refuses nonsense") {
  StepCalibration c;
  c.engine = "llama.cpp";
  c.decode.fixed_s = 0.0025;
  c.decode.read_efficiency = 0.85;
  c.decode.read_efficiency_by_type["Q4_K"] = 0.7;
  c.decode.extra_token_s_per_byte["Q8_0"] = {{2, 2e-12}, {8, 9e-12}};
  c.decode.error = {-0.05, 0.08, 7, 0.03};
  c.prefill = PrefillTerms{0.01, 0.6, {}, 0.3, {-0.2, 0.1, 5, 0.1}, 0.15};
  c.decode.per_sequence_s = 4e-5;         // a batched server's terms
  c.decode.moe_read_efficiency = 0.55;
  c.first_token_s = 0.025;
  const StepCalibration back = step_calibration_from_json(step_calibration_to_json(c), "t");
  CHECK(back.decode.per_sequence_s == doctest::Approx(4e-5).scale(0));
  CHECK(back.decode.moe_read_efficiency == 0.55);
  CHECK(back.prefill->moe_compute_efficiency == 0.3);
  CHECK(back.prefill->attention_efficiency == 0.15);
  CHECK(back.first_token_s == doctest::Approx(0.025));
  CHECK(back.decode.fixed_s == doctest::Approx(0.0025));
  CHECK(back.decode.read_efficiency == 0.85);
  CHECK(back.decode.read_efficiency_by_type.at("Q4_K") == 0.7);
  REQUIRE(back.decode.extra_token_s_per_byte.at("Q8_0").size() == 2);
  CHECK(back.decode.extra_token_s_per_byte.at("Q8_0")[1].first == 8);
  CHECK(back.decode.extra_token_s_per_byte.at("Q8_0")[1].second == doctest::Approx(9e-12).scale(0));
  CHECK(back.decode.error.lo == -0.05);
  CHECK(back.decode.error.points == 7);
  CHECK(back.prefill->compute_efficiency == 0.6);
  CHECK_THROWS_WITH_AS(step_calibration_from_json(Json::parse(R"({"decode": {"read_efficiency": 0}})"), "p"),
                       doctest::Contains("read_efficiency"), InputError);
  CHECK_THROWS_WITH_AS(step_calibration_from_json(Json::parse(R"({"decode": {"error": [0.1, 0.2]}})"), "p"),
                       doctest::Contains("lo <= 0 <= hi"), InputError);
  CHECK_THROWS_WITH_AS(step_calibration_from_json(Json::parse(R"({"decode": {"fixed": 1}})"), "p"),
                       doctest::Contains("unknown field 'fixed'"), InputError);
}

// Published llama.cpp runs (hwprofiles/calibrations, each point with its source URL): every
// point predicted by a fit on the others (pulled toward the other devices' terms, as the
// calibration a device gets is), against the uncalibrated datasheet ceiling.
TEST_CASE("published llama.cpp decode runs: each left out, the calibrated model beats the ceiling") {
  const std::vector<std::string> devices = builtin_calibration_names();
  CHECK(devices.size() >= 6);
  for (const std::string& device : devices) {
    CAPTURE(device);
    const HwProfile hw = load_hw_profile(device);
    const std::optional<StepCalibration> cal = engine_step_calibration(hw, "llama.cpp");
    REQUIRE(cal);
    std::vector<double> ceiling;
    const std::optional<CalibrationResult> own = device_calibration_result(hw, "llama.cpp");
    REQUIRE(own);
    const CalibrationResult& r = *own;
    std::set<std::string> files;  // model files in runs: a file's tg512 and tg4096 are not independent
    std::set<std::string> sources;  // pages the points were published on
    for (const CalibrationPoint& p : r.points)
      if (p.decode) ceiling.push_back(p.ceiling_residual()), files.insert(p.group), sources.insert(p.row.source.substr(0, p.row.source.find('#')));
    const ErrorBand& e = r.calibration.decode.error;
    MESSAGE(fmt::format("{}: {} decode points from {} model files, leave-one-out median |error| {:.1f}% (band {:+.1f}%..{:+.1f}%), "
                        "ceiling {:.1f}%", device, e.points, files.size(), e.loo_median_abs * 100, e.lo * 100, e.hi * 100,
                        median_abs(ceiling) * 100));
    CHECK(e.points >= 2);  // two files each predicted from the other, with the prior's fixed time
    CHECK(e.loo_median_abs < median_abs(ceiling) / 2);  // at least twice as close as the ceiling
    // held-out published runs of one source: within 10% median (two sources of one device, as the
    // M1 Max's and M3 Max's notebooks and discussion rows, disagree by more: 10.7% and 14.9%)
    if (files.size() >= 4 && sources.size() == 1) CHECK(e.loo_median_abs < 0.10);
    CHECK(cal->decode.fixed_s == doctest::Approx(r.calibration.decode.fixed_s));
  }
}

// The reader takes the llama-bench keys it knows and passes over the rest (a user's llama-bench JSON
// carries dozens), so a misspelt key in a built-in file ("exlude") would be dropped in silence.
TEST_CASE("the built-in llama.cpp data files use only the keys the reader takes or the files document") {
  const std::set<std::string> read{"model_type", "model_size", "model_n_params", "test", "n_prompt", "n_gen", "n_depth",
                                   "n_ubatch", "avg_ts", "stddev_ts", "type_k", "type_v", "backends", "gpu_info",
                                   "build_commit", "build_number", "source", "model", "exclude"};
  // kept as published, not read: where the row is from, and llama-bench's own columns
  const std::set<std::string> documented{"note", "date", "n_gpu_layers", "flash_attn", "use_mmap"};
  size_t files = 0, points = 0;
  for (const EmbeddedFile& f : embedded_files()) {
    if (!f.path.starts_with("hwprofiles/calibrations/")) continue;
    CAPTURE(f.path);
    const Json j = parse_json_text(f.content, f.path);
    for (const auto& item : j.items()) {
      const std::string key = item.key();  // a named copy: CAPTURE's lambda cannot capture a structured binding
      CAPTURE(key);
      CHECK(std::set<std::string>{"device", "engine", "description", "points"}.contains(key));
    }
    ++files;
    for (const Json& p : j.at("points")) {
      ++points;
      CHECK(p.contains("source"));  // every point says where it was published
      for (const auto& item : p.items()) {
        const std::string key = item.key();
        CAPTURE(key);
        CHECK((read.contains(key) || documented.contains(key)));
      }
    }
  }
  CHECK(files == builtin_calibration_names().size());
  CHECK(points > 600);
}

TEST_CASE("--engine without a calibration for the device is refused, naming the ones there are") {
  const HwProfile h200 = load_hw_profile("h200");
  CHECK_FALSE(builtin_calibration(h200, "llama.cpp"));
  CHECK_FALSE(builtin_calibration(load_hw_profile("rtx-4090"), "vllm"));
}

TEST_CASE("the extra-token curve: linear between measured points, the last slope beyond") {
  const ExtraTokenCurve curve{{2, 10.0}, {4, 25.0}, {8, 45.0}};
  CHECK(extra_token_s_per_byte(curve, 1) == 0);
  CHECK(extra_token_s_per_byte(curve, 1.5) == doctest::Approx(5.0));   // halfway from (1, 0) to (2, 10)
  CHECK(extra_token_s_per_byte(curve, 3) == doctest::Approx(17.5));    // halfway from (2, 10) to (4, 25)
  CHECK(extra_token_s_per_byte(curve, 8) == doctest::Approx(45.0));
  CHECK(extra_token_s_per_byte(curve, 12) == doctest::Approx(65.0));   // 45 + 4 x (45 - 25) / 4
  const ExtraTokenCurve per_token{{2, 3.0}};                            // one figure per extra token
  CHECK(extra_token_s_per_byte(per_token, 5) == doctest::Approx(12.0));  // 4 extra tokens x 3
  CHECK(extra_token_s_per_byte({}, 5) == 0);
}

TEST_CASE("a prefill multiplies the output head for one token per prompt, not for every prompt token") {
  HwProfile hw = load_hw_profile("rtx-4090");
  const ModelSpec spec = load_model("llama-2-7b");
  const PlanWeights w = plan_weights(spec, "Q4_0", std::nullopt);  // llama.cpp's Q4_0 recipe: the head in Q6_K
  double q6_bytes = 0, q6_head_bytes = 0;
  for (const TensorPlacement& p : w.layout.tensors)
    if (p.type == GgmlType::Q6_K) {
      q6_bytes += static_cast<double>(p.bytes);
      if (p.tensor.role == TensorRole::output) q6_head_bytes += static_cast<double>(p.bytes);
    }
  REQUIRE(q6_head_bytes > 0);
  hw.calibration = step_calibration_from_json(
      Json::parse(R"({"engine": "t", "decode": {"extra_token_ms_per_gb": {"Q6_K": 1.0}}})"), "test");
  const Roofline rl(spec, w.layout, {}, hw);
  // decode of 4 sequences: every token's logits, so 3 extra tokens x every Q6_K byte x 1 ms/GB
  CHECK(rl.decode_step(4, 64).extra_tokens_s == doctest::Approx(3 * q6_bytes * 1e-12));
  // a 32-token prompt: 31 extra tokens over the Q6_K matrices that are not the head, none for the head
  CHECK(rl.prefill(32).extra_tokens_s == doctest::Approx(31 * (q6_bytes - q6_head_bytes) * 1e-12));
}

TEST_CASE("a printed model size far from the named model's recipe is skipped with the reason, not rescaled") {
  // 512 PiB: absurd, yet inside the 1024 PiB every size must stay under (planner/core/limits).
  const char* md =
      "| model | size | params | backend | ngl | test | t/s |\n|---|--:|--:|---|--:|--:|--:|\n"
      "| llama 7B Q4_0 | 524288 TiB | 6.74 B | CUDA | 99 | tg128 | 100.00 |\n"
      "| llama 7B Q4_0 | 3.56 GiB | 6.74 B | CUDA | 99 | tg128 | 150.00 |\n"
      "| llama 7B F16 | 12.55 GiB | 6.74 B | CUDA | 99 | tg128 | 60.00 |\n";
  const CalibrationResult r = calibrate_step_model(parse_bench_text(md, "t.md"), load_hw_profile("rtx-4090"), {});
  CHECK(r.points.size() == 2);
  REQUIRE(r.skipped.size() == 1);
  CHECK(r.skipped[0].reason.find("not near llama-2-7b's Q4_0 recipe") != std::string::npos);
}

namespace {

// A `vllm bench serve --save-result` object for `concurrency` requests in flight, each of 512
// prompt and 256 output tokens, whose steps take `itl_ms`: request_throughput is set so that
// Little's law gives the concurrency back (throughput x (TTFT + TPOT x 255)).
Json vllm_result(double concurrency, double itl_ms) {
  const double ttft_ms = 40, e2e_ms = ttft_ms + itl_ms * 255;
  return Json{{"date", "20251101-120000"},        {"backend", "vllm"},
              {"model_id", "meta-llama/Llama-3.1-8B-Instruct"},
              {"completed", 100},                  {"total_input_tokens", 100 * 512},
              {"total_output_tokens", 100 * 256},  {"request_throughput", concurrency / (e2e_ms / 1e3)},
              {"mean_ttft_ms", ttft_ms},           {"mean_tpot_ms", itl_ms},
              {"median_itl_ms", itl_ms},           {"mean_itl_ms", itl_ms + 0.5}};
}

}  // namespace

TEST_CASE("vllm bench serve results: the median ITL at the requests in flight (Little) and the mean context") {
  const std::vector<BenchRow> rows = parse_bench_text(vllm_result(16, 7.5).dump(2), "serve.json");
  REQUIRE(rows.size() == 1);
  const BenchRow& r = rows[0];
  CHECK(r.engine == "vllm");
  CHECK(r.is_decode());
  CHECK(r.measured_s() == doctest::Approx(0.0075));  // median_itl_ms, not the mean
  CHECK(r.batch == 16);
  CHECK(r.context == 512 + 128);  // prompt + half the output
  CHECK(r.file_type == "BF16");
  CHECK(r.kv_k == "bf16");
  // one line per result (--append-result) reads the same
  const std::string lines = vllm_result(4, 6.0).dump() + "\n" + vllm_result(32, 9.0).dump() + "\n";
  const std::vector<BenchRow> appended = parse_bench_text(lines, "serve.jsonl");
  REQUIRE(appended.size() == 2);
  CHECK(appended[1].batch == 32);

  Json no_latency = vllm_result(4, 6.0);
  for (const char* k : {"median_itl_ms", "mean_itl_ms", "mean_tpot_ms"}) no_latency.erase(k);
  Json absurd = vllm_result(4, 6.0);
  absurd["request_throughput"] = 1e300;  // Little's law would put 1e302 requests in flight
  CHECK_THROWS_WITH_AS(parse_bench_text(absurd.dump(2), "s.json"), doctest::Contains("requests in flight"), InputError);
  no_latency["median_tpot_ms"] = 0.0;
  CHECK_THROWS_WITH_AS(parse_bench_text(no_latency.dump(2), "s.json"), doctest::Contains("s.json: no inter-token latency"),
                       InputError);
}

TEST_CASE("served runs fit the same terms: steps made with a fixed time and a read rate give them back") {
  const HwProfile hw = load_hw_profile("h100-sxm");
  const ModelSpec spec = load_model("llama-3.1-8b");
  const PlanWeights w = plan_weights(spec, "BF16", std::nullopt);
  const Roofline rl(spec, w.layout, {GgmlType::BF16, GgmlType::BF16}, hw);
  std::vector<BenchRow> rows;
  for (const double c : {1.0, 8.0, 32.0, 128.0}) {
    // 1.5 ms (46.875 us per layer of 32) + bytes / (0.75 x 3.35 TB/s) at c sequences of 640 tokens
    const double step_ms = (0.0015 + rl.decode_step(static_cast<uint64_t>(c), 640).memory_s / 0.75) * 1e3;
    for (const BenchRow& r : parse_bench_text(vllm_result(c, step_ms).dump(2), fmt::format("c{}.json", c))) rows.push_back(r);
  }
  const CalibrationResult r = calibrate_step_model(rows, hw, {});
  CHECK(r.calibration.engine == "vllm");
  CHECK(r.points.size() == 4);
  CHECK(r.calibration.decode.layer_s == doctest::Approx(46.875e-6).scale(0).epsilon(1e-3).scale(0));
  CHECK(r.calibration.decode.read_efficiency == doctest::Approx(0.75).epsilon(1e-3));

  // runs of two engines make two profiles, not one
  std::vector<BenchRow> mixed = rows;
  mixed.push_back(parse_bench_text("| model | size | params | backend | ngl | test | t/s |\n|-|-|-|-|-|-|-|\n"
                                   "| llama 8B F16 | 14.96 GiB | 8.03 B | CUDA | 99 | tg128 | 60.00 |\n", "b.md")[0]);
  CHECK_THROWS_WITH_AS(calibrate_step_model(mixed, hw, {}), doctest::Contains("2 engines (llama.cpp, vllm)"), InputError);
}

TEST_CASE("infer-plan's own report --json: a point per batch size held for 3 steps or more") {
  const Json report = Json::parse(R"({"measured": {}, "decode_steps": {"model": "qwen3-8b", "scale": 0.25,
      "weights": "Q8_0", "kv_k": "q8_0", "kv_v": "q8_0", "backend": "cpu", "threads": 2, "by_batch": [
        {"batch": 1, "count": 40, "context": 48, "p50_ms": 18.0},
        {"batch": 2, "count": 2, "context": 50, "p50_ms": 22.0},
        {"batch": 4, "count": 25, "context": 52, "p50_ms": 35.0}]}})");
  const std::vector<BenchRow> rows = parse_bench_text(report.dump(2), "report.json");
  REQUIRE(rows.size() == 2);  // batch 2 held for 2 steps only
  CHECK(rows[1].batch == 4);
  CHECK(rows[1].context == 52);
  CHECK(rows[1].measured_s() == doctest::Approx(0.035));
  CHECK(rows[1].engine == "infer-plan cpu");
  // mapped to the shrunk model the run executed: its weights are a quarter-size Qwen3-8B's
  const CalibrationResult r = calibrate_step_model(rows, load_hw_profile("h200"), {});
  REQUIRE(r.points.size() == 2);
  CHECK(r.points[0].model == "qwen3-8b");
  const ModelSpec shrunk = scale_model_spec(load_model("qwen3-8b"), 0.25, "t");
  const Roofline rl(shrunk, plan_weights(shrunk, "Q8_0", std::nullopt).layout, {GgmlType::Q8_0, GgmlType::Q8_0},
                    load_hw_profile("h200"));
  CHECK(r.points[1].term_s == doctest::Approx(rl.decode_step(4, 52).memory_s));

  // a report without its batches names the field, not an internal error
  CHECK_THROWS_WITH_AS(parse_bench_text(R"({"measured": {}, "decode_steps": {"model": "qwen3-8b"}})", "r.json"),
                       doctest::Contains("r.json:1: decode_steps: 'by_batch' must be an array"), InputError);
}
