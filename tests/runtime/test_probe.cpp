// The CPU probe's profile: its several-token curves become the profile's calibration block,
// which the planner reads back (hand-made ProbeResult: no timing in a unit test).
#include <doctest/doctest.h>

#include "planner/catalog/catalog.hpp"
#include "planner/model/hw_profile.hpp"
#include "planner/model/step_model.hpp"
#include "runtime/probe.hpp"

using namespace infer_plan;

TEST_CASE("the probe's several-token curves are the profile's step model") {
  runtime::ProbeResult r;
  r.device = "test CPU";
  r.threads = 2;
  r.memory_bytes = uint64_t{8} << 30;
  r.read_bytes_per_s = {20e9, 19e9, 21e9};
  r.copy_bytes_per_s = {10e9, 9e9, 11e9};
  r.copy_beside_compute_bytes_per_s = {6e9, 5e9, 7e9};
  r.matmul_ops_per_s["F32"] = {50e9, 45e9, 55e9};
  r.matvec_bytes_per_s["Q8_0"] = {18e9, 17e9, 19e9};
  r.projection_bytes_per_s["Q8_0"] = {13.5e9, 12e9, 15e9};  // the plan's projections read slower
  r.launch_overhead_s = 15e-6;
  // Q8_0: 2 tokens cost 36 ms per GB beyond one, 8 tokens 287 (this machine's order of size)
  r.extra_product_s_per_byte["Q8_0"] = {{2, 36e-12}, {8, 287e-12}};
  r.product_cols = 1024;
  r.product_bytes = uint64_t{128} << 20;
  r.last_level_cache_bytes = uint64_t{32} << 20;
  r.date = "2026-12-01";
  const Json j = runtime::probe_profile_json(r, "cpu-test");
  const HwProfile hw = hw_profile_from_json(j, "cpu-test", "test", [](const std::string& n) { return load_link(n); });
  REQUIRE(hw.calibration);
  CHECK(hw.calibration->engine == "infer-plan cpu");
  CHECK(hw.calibration->decode.fixed_s == 0);
  CHECK(hw.calibration->decode.read_efficiency == 1);
  CHECK(hw.calibration->decode.read_efficiency_by_type.at("Q8_0") == doctest::Approx(0.75));  // 13.5 / 18
  const ExtraTokenCurve& q8 = hw.calibration->decode.extra_token_s_per_byte.at("Q8_0");
  REQUIRE(q8.size() == 2);
  CHECK(q8[0].first == 2);
  CHECK(q8[0].second == doctest::Approx(36e-12).scale(0));
  CHECK(q8[1].first == 8);
  CHECK(q8[1].second == doctest::Approx(287e-12).scale(0));
  // at 5 tokens: between the points, 36 + (287 - 36) x 3 / 6 = 161.5 ms per GB
  CHECK(extra_token_s_per_byte(q8, 5) == doctest::Approx(161.5e-12).scale(0));
  CHECK(hw.measured->launch_overhead_s == doctest::Approx(15e-6).scale(0));
}
