// Scenarios and predicted_figures(): cartesian sweeps, tolerance checks, line templates, and the figures
// sections a plan produces (including the serving simulation timed by the roofline).
#include <doctest/doctest.h>

#include "planner/core/input_error.hpp"
#include "planner/plan/predict.hpp"
#include "planner/plan/scenario.hpp"

using namespace infer_plan;

TEST_CASE("a sweep expands to the cartesian product and checks each point") {
  const Scenario s = scenario_from_json(
      Json::parse(R"({"name": "t", "cases": [{"name": "c", "plan": {"model": "qwen3-8b"},
        "sweep": {"kv": ["bf16", "q8_0"], "context": [1024, 2048]},
        "expect": [{"where": {"kv": "q8_0"}, "path": "fit.kv_bytes_per_token", "value": 78336},
                   {"path": "fit.kv_bytes_per_request", "value": 150994944, "rel_tolerance": 0.01,
                    "where": {"kv": "bf16", "context": 1024}}],
        "lines": ["{fit.kv_bytes_per_token@kv=q8_0,context=2048} B; {fit.kv_bytes_per_request/MiB@kv=bf16,context=1024:.0f} MiB; {fit.fits:yes|no}"]}]})"),
      "t.json");
  const ScenarioRun run = run_scenario(s);
  REQUIRE(run.points.size() == 4);  // 2 x 2
  CHECK(run.points[1].axes == Json{{"context", 1024}, {"kv", "q8_0"}});  // axes sort by name; the last is fastest
  size_t checks = 0;
  for (const auto& p : run.points) checks += p.checks.size();
  CHECK(checks == 3);  // q8_0 twice, bf16 x 1024 once
  CHECK(run.failures() == 0);
  // q8_0: 36 x 8 x 4 blocks x 34 B x 2 = 78,336 B/token; bf16 x 1024 tokens = 144 KiB x 1024 = 144 MiB
  REQUIRE(run.lines.size() == 1);
  CHECK(run.lines[0] == "78336 B; 144 MiB; yes");
}

TEST_CASE("tolerances and failures") {
  const Scenario s = scenario_from_json(
      Json::parse(R"({"name": "t", "cases": [{"name": "c", "plan": {"model": "qwen3-8b"},
        "expect": [{"path": "fit.kv_bytes_per_token", "value": 147000, "rel_tolerance": 0.01},
                   {"path": "fit.kv_bytes_per_token", "value": 147000, "tolerance": 100}]}]})"),
      "t.json");
  const ScenarioRun run = run_scenario(s);
  REQUIRE(run.points[0].checks.size() == 2);
  CHECK(run.points[0].checks[0].ok);        // |147456 - 147000| = 456 <= 1470
  CHECK_FALSE(run.points[0].checks[1].ok);  // 456 > 100
  CHECK(run.failures() == 1);
}

TEST_CASE("a path that names no figure is bad input, not a failed expectation") {
  // It used to fail as an expectation (exit 1), as if the planner's figure were wrong.
  const Scenario typo = scenario_from_json(
      Json::parse(R"({"name": "t", "cases": [{"name": "c", "plan": {"model": "qwen3-8b"},
        "expect": [{"path": "fit.kv_bytes_per_tokn", "value": 147456}]}]})"),
      "t.json");
  CHECK_THROWS_WITH_AS(run_scenario(typo),
                       doctest::Contains("t.json: case 'c': expectation path 'fit.kv_bytes_per_tokn' names no figure "
                                         "(beside it: fit.capacity_bytes, fit.context"),
                       InputError);
  // an axis through a section that is a string ("hw": "h200") cannot be written
  const Scenario axis = scenario_from_json(
      Json::parse(R"({"name": "t", "cases": [{"name": "c", "plan": {"model": "qwen3-8b", "hw": "h200"},
        "sweep": {"hw.memory.bandwidth": ["1 TB/s"]}}]})"),
      "t.json");
  CHECK_THROWS_WITH_AS(run_scenario(axis), doctest::Contains("axis 'hw.memory.bandwidth' cannot be written"), InputError);
}

TEST_CASE("bad scenario files name the field") {
  CHECK_THROWS_WITH_AS(scenario_from_json(Json::parse(R"({"cases": []})"), "s.json"),
                       doctest::Contains("s.json: field 'name' is missing"), InputError);
  CHECK_THROWS_WITH_AS(scenario_from_json(Json::parse(R"({"name": "x", "cases": []})"), "s.json"),
                       doctest::Contains("'cases' must be a non-empty array"), InputError);
  CHECK_THROWS_WITH_AS(scenario_from_json(Json::parse(R"({"name": "x", "cases": [{"name": "c", "sweep": {"kv": []}}]})"), "s.json"),
                       doctest::Contains("sweep.kv must be a non-empty array"), InputError);
  CHECK_THROWS_WITH_AS(scenario_from_json(Json::parse(R"({"name": "x", "cases": [{"name": "c", "expect": [{"path": "a"}]}]})"), "s.json"),
                       doctest::Contains("field 'value' is missing"), InputError);
  const Scenario bad_fmt = scenario_from_json(
      Json::parse(R"({"name": "x", "cases": [{"name": "c", "lines": ["{fit.kv_bytes:zz}"]}]})"), "s.json");
  CHECK_THROWS_WITH_AS(run_scenario(bad_fmt), doctest::Contains("not a number format"), InputError);
}

TEST_CASE("predict: Little's law and the serving simulation on the roofline") {
  Plan plan;
  plan.load = LoadPlan{};
  plan.load->rate_per_s = 4;
  plan.load->sojourn_s = 0.5;
  CHECK(predicted_figures(plan)["queue"]["mean_in_system"] == 2.0);  // SPEC 6: 4 req/s x 0.5 s

  plan.context = 1024;
  plan.output = 64;
  plan.load = LoadPlan{};
  plan.load->rate_per_s = 2;
  plan.load->simulate = true;
  plan.load->requests = 2000;
  const Json serving = predicted_figures(plan)["serving"];
  REQUIRE(serving["stable"] == true);
  CHECK(serving["completed"] == 2000);
  // Little's law on the simulated sample path: time-average in system = rate x mean sojourn
  CHECK(serving["mean_in_system"].get<double>() ==
        doctest::Approx(serving["littles_law_in_system"].get<double>()).epsilon(0.02));
  // a long output at a rate the H200 cannot serve: unstable, and no latency numbers at all
  plan.context = 8192;  // a 4096-token prompt and 4096 tokens out
  plan.output = 4096;
  plan.load->rate_per_s = 200;
  plan.load->max_batch = 8;
  const Json overload = predicted_figures(plan)["serving"];
  CHECK(overload["stable"] == false);
  CHECK(overload["ttft_ms"].is_null());
  CHECK(overload["e2el_ms"].is_null());
  // the prompt is context - output: an output as long as the context leaves no prompt
  plan.output = 8192;
  CHECK_THROWS_WITH_AS(predicted_figures(plan), doctest::Contains("less than context 8192"), InputError);
}
