// The step model that transfers: pooled fits over the built-in devices, leave-one-device-out, and
// the calibration resolve_plan gives a device without measurements of its own.
#include <doctest/doctest.h>
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <set>

#include "planner/calibration/calibration.hpp"
#include "planner/calibration/step_prior.hpp"
#include "planner/catalog/catalog.hpp"
#include "planner/model/device_arch.hpp"

using namespace infer_plan;

TEST_CASE("fit_step_line recovers a line and a bandwidth covariate from exact samples") {
  // time = 2 ms + 1.25 x term + 0.30 x term x ln(bw / 1 TB/s), three devices at ln(bw) = -0.5, 0,
  // 0.7, terms 2..40 ms: a covariate's delta is shrunk toward 0 by the ridge, by less than 2% here.
  std::vector<StepSample> xs;
  for (double log_bw : {-0.5, 0.0, 0.7})
    for (double term_ms : {2.0, 5.0, 10.0, 20.0, 40.0}) {
      const double term = term_ms / 1e3;
      StepSample x{term, {{"~bandwidth", term * log_bw}}, 0.002 + 1.25 * term + 0.30 * term * log_bw,
                   fmt::format("{} {}", log_bw, term_ms)};
      xs.push_back(x);
    }
  const StepLine line = fit_step_line(xs);
  CHECK(line.fixed_s == doctest::Approx(0.002).epsilon(0.03).scale(0));
  CHECK(line.slope == doctest::Approx(1.25).epsilon(0.02).scale(0));
  CHECK(line.delta.at("~bandwidth") == doctest::Approx(0.30).epsilon(0.03).scale(0));
  // held at the time the samples were made with, the fixed time stays and the rest is fitted as well
  const StepLine held = fit_step_line(xs, 0.002);
  CHECK(held.fixed_s == 0.002);
  CHECK(held.slope == doctest::Approx(1.25).epsilon(0.02).scale(0));
  // held elsewhere, the read cost takes up the difference
  CHECK(fit_step_line(xs, 0.0).slope > line.slope);
}

TEST_CASE("every built-in calibration file fits on its built-in profile, which states its arch") {
  const std::vector<std::string> profiles = builtin_hw_names();
  const std::vector<DeviceCalibration>& fits = builtin_device_calibrations("llama.cpp");
  for (const std::string& device : builtin_calibration_names()) {
    CAPTURE(device);
    REQUIRE(std::find(profiles.begin(), profiles.end(), device) != profiles.end());
    const HwProfile hw = load_hw_profile(device);
    CHECK(find_device_arch(hw.arch));
    const std::optional<CalibrationResult> r = builtin_calibration_result(hw, "llama.cpp");
    REQUIRE(r);
    CHECK(std::count_if(r->points.begin(), r->points.end(), [](const CalibrationPoint& p) { return p.decode; }) >= 2);
    CHECK(std::any_of(fits.begin(), fits.end(), [&](const DeviceCalibration& d) { return d.device == device; }));
  }
  CHECK(fits.size() == builtin_calibration_names().size());
}

TEST_CASE("predict_point is the fit's own prediction (above the ceiling)") {
  for (const DeviceCalibration& d : builtin_device_calibrations("llama.cpp")) {
    CAPTURE(d.device);
    for (const CalibrationPoint& p : d.fit.points) {
      if (!p.decode || p.fitted_s < p.ceiling_s) continue;
      CHECK(predict_point(d.fit.calibration, p) == doctest::Approx(p.fitted_s).epsilon(1e-6));
    }
  }
}

TEST_CASE("a device without data gets its architecture's devices pooled, else its vendor's, else all") {
  // rtx-4090 left out of its own pool: the other ada devices
  const std::optional<StepCalibration> ada = transferred_calibration("llama.cpp", load_hw_profile("rtx-4090"), "rtx-4090");
  REQUIRE(ada);
  CHECK(ada->basis == "transferred");
  CHECK(ada->basis_note.find("ada device") != std::string::npos);
  CHECK(ada->basis_note.find("rtx-4090") == std::string::npos);
  CHECK(ada->basis_note.find("rtx-4080") != std::string::npos);
  CHECK(ada->decode.error.points > 0);  // the engine's leave-one-device-out band
  // the h200 has no data of its own: resolve_plan's calibration is the hopper pool
  const std::optional<StepCalibration> h200 = engine_step_calibration(load_hw_profile("h200"), "llama.cpp");
  REQUIRE(h200);
  CHECK(h200->basis == "transferred");
  CHECK(h200->basis_note.find("hopper") != std::string::npos);
  // a chip of an architecture nobody measured: its vendor's devices (an MI300X: the RX 7900 XTX)
  HwProfile m4 = load_hw_profile("m2-ultra");
  m4.name = "cdna3-test";
  m4.arch = "cdna3";
  const std::optional<StepCalibration> amd = engine_step_calibration(m4, "llama.cpp");
  REQUIRE(amd);
  CHECK(amd->basis_note.find("no cdna3 device has measurements") != std::string::npos);
  CHECK(amd->basis_note.find("rx-7900-xtx") != std::string::npos);
  CHECK(amd->basis_note.find("rtx-") == std::string::npos);
  // no arch stated: every device
  m4.arch.clear();
  CHECK(engine_step_calibration(m4, "llama.cpp")->basis_note.find("states no arch") != std::string::npos);
  // a device's own data wins
  CHECK(engine_step_calibration(load_hw_profile("rtx-3090"), "llama.cpp")->basis == "calibrated");
  // an engine whose published tables are throughputs only (TensorRT-LLM): vLLM's step model stands for it
  const std::optional<StepCalibration> trt = engine_step_calibration(load_hw_profile("h200"), "trtllm");
  REQUIRE(trt);
  CHECK(trt->basis == "transferred");
  CHECK(trt->engine == "trtllm");
  CHECK(trt->basis_note.find("vllm's step model stands for trtllm") != std::string::npos);
  CHECK(trt->decode.fixed_s == engine_step_calibration(load_hw_profile("h200"), "vllm")->decode.fixed_s);
  // vLLM's published serving runs, pooled over their devices: the H200 has none of its own
  CHECK(engine_step_calibration(load_hw_profile("h200"), "vllm")->basis == "transferred");
}

TEST_CASE("leave one device out: every device predicted from the others, at the level it would get") {
  const std::vector<DeviceOutPoint> out = leave_one_device_out("llama.cpp");
  std::set<std::string> devices;
  std::vector<double> decode;
  for (const DeviceOutPoint& p : out) {
    devices.insert(p.device);
    CHECK((p.level == p.arch || p.level == "nvidia" || p.level == "apple" || p.level == "engine"));
    if (p.point.decode) {
      REQUIRE(std::isfinite(p.predicted_s));
      CHECK(p.predicted_s >= p.point.ceiling_s * (1 - 1e-9));  // never below the speed of light
      decode.push_back(p.residual());
    }
  }
  CHECK(devices.size() == builtin_device_calibrations("llama.cpp").size());
  MESSAGE(fmt::format("leave-one-device-out: {} decode points on {} devices, median |error| {:.1f}%", decode.size(),
                      devices.size(), median_abs(decode) * 100));
}

TEST_CASE("each device's own fit, pulled toward the others' terms, predicts its left-out files better") {
  // Leave-one-file-out over the built-in decode points: the device's fit alone against the same
  // fit with its prior (the other devices' pooled terms), which should be within 5% at the median.
  std::vector<double> alone, with_prior;
  for (const DeviceCalibration& d : builtin_device_calibrations("llama.cpp")) {
    const CalibrationResult& own = own_calibration("llama.cpp", d.device);
    const CalibrationResult fit = *builtin_calibration_result(load_hw_profile(d.device), "llama.cpp");
    REQUIRE(fit.points.size() == own.points.size());
    for (size_t i = 0; i < own.points.size(); ++i) {
      const CalibrationPoint& p = own.points[i];
      if (!p.decode || !std::isfinite(p.loo_s) || !std::isfinite(fit.points[i].loo_s)) continue;
      alone.push_back(fit.points[i].loo_residual());
      with_prior.push_back(p.loo_residual());
    }
  }
  REQUIRE(with_prior.size() >= 150);
  MESSAGE(fmt::format("leave-one-file-out: {} decode points, median |error| {:.1f}% alone, {:.1f}% with the prior",
                      with_prior.size(), median_abs(alone) * 100, median_abs(with_prior) * 100));
  CHECK(median_abs(with_prior) < median_abs(alone));
  CHECK(median_abs(with_prior) <= 0.05);
  // the calibration a built-in device gets is that fit
  const HwProfile rtx3090 = load_hw_profile("rtx-3090");
  const std::optional<StepCalibration> c = engine_step_calibration(rtx3090, "llama.cpp");
  REQUIRE(c);
  const CalibrationResult& own = own_calibration("llama.cpp", "rtx-3090");
  CHECK(c->decode.read_efficiency == doctest::Approx(own.calibration.decode.read_efficiency));
  CHECK(c->decode.fixed_s == doctest::Approx(own.calibration.decode.fixed_s));
}

TEST_CASE("build_era reads a build number, else the latest year the build names") {
  CHECK(build_era("b828e18c7 (7948)") == BuildEra::from_2025);
  CHECK(build_era("4426e298 (2824)") == BuildEra::before_2025);  // b2824: May 2024
  CHECK(build_era("PR #16834 master column, 2025-10-29") == BuildEra::from_2025);
  CHECK(build_era("5cca2542a (PR #16715 base column, 2025-10-26)") == BuildEra::from_2025);
  CHECK(build_era("8e672ef (2023-11-21: the table's reference build per the copy)") == BuildEra::before_2025);
  CHECK(build_era("PR #4766 master column (llama.cpp master, Jan 2024; commit not given)") == BuildEra::before_2025);
  CHECK(build_era("") == BuildEra::before_2025);
}

TEST_CASE("a type a pool never read is priced from its vendor's devices of the same builds' era") {
  // Left out, the rtx-3090's ampere neighbours read no Q2_K: its 2023-24 points borrow the Q2_K
  // cost of the other NVIDIA devices' 2023-24 builds, where the K-quants were read slower than
  // Q4_0, as the 3090 itself measured them (the same model file size ratio both ways).
  const DeviceOutPoint* q2k = nullptr;
  const DeviceOutPoint* q40 = nullptr;
  const std::vector<DeviceOutPoint> out = leave_one_device_out("llama.cpp");
  for (const DeviceOutPoint& p : out)
    if (p.device == "rtx-3090" && p.point.decode && p.point.model == "llama-2-7b") {
      if (p.point.weights == "Q2_K") q2k = &p;
      if (p.point.weights == "Q4_0") q40 = &p;
    }
  REQUIRE(q2k);
  REQUIRE(q40);
  const double measured = (q2k->point.measured_s / q2k->point.term_s) / (q40->point.measured_s / q40->point.term_s);
  const double predicted = (q2k->predicted_s / q2k->point.term_s) / (q40->predicted_s / q40->point.term_s);
  CHECK(measured > 1.3);
  CHECK(predicted > 1.3);
  // a user's device of an architecture measured only on old builds' Q4_K: an M4 reads Q4_K as the
  // 2025-26 Apple builds do, and the basis says so
  HwProfile m4 = load_hw_profile("m4-max");
  m4.name = "m4-test";
  const std::optional<StepCalibration> c = engine_step_calibration(m4, "llama.cpp");
  REQUIRE(c);
  CHECK(c->basis == "transferred");
  CHECK(c->decode.read_efficiency_by_type.contains("Q4_K"));
  CHECK(c->basis_note.find("priced from apple devices' 2025-26 builds") != std::string::npos);
}

TEST_CASE("a pool that read short contexts only prices the KV cache from its vendor's devices") {
  // Left out, the m1-max-64gb's apple-m1 neighbours (m1-pro, m1-ultra, m1) ran tg128 only: their
  // KV caches are about 1% of their weights' bytes, too little to price. The KV cost comes from
  // the Apple devices that read long contexts, and it is dearer than the weights' (attention at
  // long contexts reads slower than a matrix-vector product).
  const std::optional<StepCalibration> m1 =
      transferred_calibration("llama.cpp", load_hw_profile("m1-max-64gb"), "m1-max-64gb");
  REQUIRE(m1);
  REQUIRE(m1->decode.kv_read_efficiency);
  CHECK(*m1->decode.kv_read_efficiency < m1->decode.read_efficiency);
  CHECK(m1->basis_note.find("the KV cache's read cost from apple devices' 2025-26 builds") != std::string::npos);
  // with the m1-max-64gb in it (tg512 to tg8192), the apple-m1 pool prices its own
  const std::optional<StepCalibration> pro = transferred_calibration("llama.cpp", load_hw_profile("m1-pro"), "m1-pro");
  REQUIRE(pro);
  CHECK(pro->basis_note.find("the KV cache's read cost") == std::string::npos);
  REQUIRE(pro->decode.kv_read_efficiency);
  CHECK(*pro->decode.kv_read_efficiency < pro->decode.read_efficiency);
}

TEST_CASE("a pool without a model with experts times their layers from its vendor's devices of the era") {
  // Left out, the rtx-4090's ada neighbours (rtx-4080, rtx-6000-ada) ran dense models only; the
  // time of a layer with experts comes from the other NVIDIA devices' 2025-26 builds (rtx-pro-6000,
  // dgx-spark: 9-11 us per layer of 4 experts in their own fits, beyond the 29-43 us every layer
  // pays), not 0.
  const std::optional<StepCalibration> ada = transferred_calibration("llama.cpp", load_hw_profile("rtx-4090"), "rtx-4090");
  REQUIRE(ada);
  CHECK(ada->decode.moe_layer_s > 1e-6);
  CHECK(ada->decode.moe_layer_s < 50e-6);
  CHECK(ada->basis_note.find("layers with experts timed from nvidia devices' 2025-26 builds") != std::string::npos);
  // its Qwen3-30B-A3B (48 layers with experts; measured 159-162 t/s in the data file) then lands
  // within 25% of the measurement: with 0 per layer it was 60% fast
  int seen = 0;
  for (const DeviceOutPoint& p : leave_one_device_out("llama.cpp"))
    if (p.device == "rtx-4090" && p.point.decode && p.point.model == "qwen3-30b-a3b") {
      ++seen;
      CHECK(std::abs(p.residual()) < 0.25);
    }
  CHECK(seen == 3);
  // a pool with its own points with experts keeps its own time (the blackwell pool of dgx-spark,
  // whose fit puts it in the time every layer pays: none beyond)
  const std::optional<StepCalibration> bw =
      transferred_calibration("llama.cpp", load_hw_profile("rtx-pro-6000-blackwell"), "rtx-pro-6000-blackwell");
  REQUIRE(bw);
  CHECK(bw->decode.layer_s > 0);
  CHECK(bw->basis_note.find("layers with experts timed from") == std::string::npos);
}

TEST_CASE("a pool of one model size per weight type holds its vendor's fixed time per layer") {
  // Left out, the m1-max-64gb's apple-m1 neighbours (m1, m1-pro, m1-ultra) ran Llama 2 7B alone:
  // fitted across their bandwidths, the M1 Ultra's low fraction of its datasheet became a fixed
  // time, and the M1 Max's Llama 3.1 70B (80 layers) came out 59-72% fast. Held at the other Apple
  // devices' (whose files span 0.6B to 70B), the 70B's five points land within 52%.
  const std::optional<StepCalibration> m1 = transferred_calibration("llama.cpp", load_hw_profile("m1-max-64gb"), "m1-max-64gb");
  REQUIRE(m1);
  CHECK(m1->basis_note.find("the fixed time per layer from apple devices'") != std::string::npos);
  CHECK(m1->decode.layer_s > 0);
  int seen = 0;
  for (const DeviceOutPoint& p : leave_one_device_out("llama.cpp"))
    if (p.device == "m1-max-64gb" && p.point.decode && p.point.model == "llama-3.1-70b") {
      ++seen;
      CHECK(p.residual() > 0);  // still slower than predicted: its K-quants' dequantization
      CHECK(p.residual() < 0.55);
    }
  CHECK(seen == 5);
  // a pool whose files span model sizes fits its own (the apple-m1 pool with the m1-max-64gb in it)
  const std::optional<StepCalibration> pro = transferred_calibration("llama.cpp", load_hw_profile("m1-pro"), "m1-pro");
  REQUIRE(pro);
  CHECK(pro->basis_note.find("the fixed time per layer from") == std::string::npos);
}

TEST_CASE("a transferred prefill prices attention from the pooled devices whose prompts were long") {
  // the ada pool: rtx-6000-ada and rtx-4080 ran pp4096 and pp8192 (XiongjieDai's notebooks), the
  // rtx-4090's prompts are 512 tokens: its fit has no attention term and is not averaged in
  double log_ratio = 0;
  int long_prompts = 0;
  for (const DeviceCalibration& d : builtin_device_calibrations("llama.cpp")) {
    if (d.arch != "ada" || !d.fit.calibration.prefill) continue;
    const PrefillTerms& own = *d.fit.calibration.prefill;
    CAPTURE(d.device);
    if (d.device == "rtx-4090") CHECK_FALSE(own.attention_efficiency);
    if (own.attention_efficiency) {
      CHECK(*own.attention_efficiency < own.compute_efficiency);  // slower than the GEMMs, as measured
      log_ratio += std::log(*own.attention_efficiency / own.compute_efficiency), ++long_prompts;
    }
  }
  REQUIRE(long_prompts == 2);
  const std::optional<StepCalibration> l40s = transferred_calibration("llama.cpp", load_hw_profile("l40s"));
  REQUIRE(l40s->prefill);
  REQUIRE(l40s->prefill->attention_efficiency);
  CHECK(*l40s->prefill->attention_efficiency / l40s->prefill->compute_efficiency ==
        doctest::Approx(std::exp(log_ratio / long_prompts)));
}

TEST_CASE("a transferred prefill's compute efficiency goes as the square root of board power per FLOP") {
  // The L40S has no data: the ada pool, scaled by its board power over its fp16 rate.
  const HwProfile l40s = load_hw_profile("l40s");
  const std::optional<StepCalibration> base = transferred_calibration("llama.cpp", l40s);
  REQUIRE(base);
  REQUIRE(base->prefill);
  CHECK(base->basis_note.find("scaled by board power (350 W) from 3 devices") != std::string::npos);
  HwProfile half = l40s;
  half.name = "l40s-at-175w";
  half.board_power_w = 175;
  const std::optional<StepCalibration> capped = transferred_calibration("llama.cpp", half);
  REQUIRE(capped->prefill);
  // half the power: efficiency x sqrt(1/2); the decode terms do not move
  CHECK(capped->prefill->compute_efficiency / base->prefill->compute_efficiency == doctest::Approx(std::sqrt(0.5)));
  CHECK(capped->prefill->fixed_s == doctest::Approx(base->prefill->fixed_s));
  CHECK(capped->decode.read_efficiency == doctest::Approx(base->decode.read_efficiency));
  // doubling the compute rate at the same power: the achieved rate grows by sqrt(2), not 2
  HwProfile twice = l40s;
  twice.name = "l40s-twice-the-flops";
  for (auto& [precision, rate] : twice.compute_ops_per_s) rate *= 2;
  const std::optional<StepCalibration> fast = transferred_calibration("llama.cpp", twice);
  CHECK(2 * fast->prefill->compute_efficiency / base->prefill->compute_efficiency == doctest::Approx(std::sqrt(2.0)));
  // no power stated: the pool's plain geometric mean, and the note says nothing of power
  HwProfile unstated = l40s;
  unstated.name = "l40s-no-power";
  unstated.board_power_w.reset();
  const std::optional<StepCalibration> plain = transferred_calibration("llama.cpp", unstated);
  CHECK(plain->basis_note.find("board power") == std::string::npos);
  double log_sum = 0;
  int n = 0;
  for (const DeviceCalibration& d : builtin_device_calibrations("llama.cpp"))
    if (d.arch == "ada" && d.fit.calibration.prefill) log_sum += std::log(d.fit.calibration.prefill->compute_efficiency), ++n;
  REQUIRE(n == 3);
  CHECK(plain->prefill->compute_efficiency == doctest::Approx(std::exp(log_sum / n)));
}
