// Scenarios: named cases, each a base plan, sweep axes over plan fields (cartesian), expectations
// on the predicted figures (a path, a value, a tolerance) and report lines (templates that print
// figures in a seed's own words). `infer-plan sweep` runs them; `--check` turns them into tests.
#pragma once
#include <string>
#include <vector>

#include "planner/core/json_fields.hpp"

namespace infer_plan {

struct Expectation {
  Json where = Json::object();  // axis path -> value: the points this applies to (all if empty)
  std::string path;             // into the figures: "offload.round_ms", "spec.by_block.4.ms_per_token"
  Json value;                   // number, bool or string
  double abs_tolerance = 0;     // |got - value| <= abs + rel x |value|
  double rel_tolerance = 0;
  std::string source;           // where the expected value comes from ("SPEC 4")
};

struct SweepAxis {
  std::string path;             // into the plan: "offload.link", "kv"
  std::vector<Json> values;
};

struct ScenarioCase {
  std::string name;
  Json plan = Json::object();
  std::vector<SweepAxis> axes;
  std::vector<Expectation> expect;
  std::vector<std::string> lines;  // templates, see render_line
};

struct Scenario {
  std::string name;
  std::string description;
  std::string source;  // file path
  std::vector<ScenarioCase> cases;
};

struct CheckResult {
  std::string path;
  Json expected;
  Json got;        // null when the path is absent
  bool ok = false;
  std::string tolerance;  // "± 0.01", "± 0.5%", "exact"
  std::string source;
};

struct ScenarioPoint {
  std::string case_name;
  Json axes = Json::object();  // axis path -> value at this point
  Json figures;                // predicted_figures() of the point's plan
  std::string error;           // an InputError while predicting (the point then has no figures)
  std::vector<CheckResult> checks;
};

struct ScenarioRun {
  const Scenario* scenario = nullptr;
  std::vector<ScenarioPoint> points;
  std::vector<std::string> lines;  // every case's lines, rendered
  size_t failures() const;
};

Scenario load_scenario(const std::string& path);
Scenario scenario_from_json(const Json& j, const std::string& where);
ScenarioRun run_scenario(const Scenario& s);

// Renders a line template. Placeholders: {path}, {path:spec} (an fmt spec such as .2f),
// {path/DIV:spec} or {path*MUL:spec} (DIV, MUL: a number or KiB, MiB, GiB, GB), and a selector
// {path@axis=value,axis=value:spec} that picks the case's point with those axis values. A boolean
// spec "yes text|no text" picks one of two words.
std::string render_line(const std::string& text, const std::vector<const ScenarioPoint*>& points,
                        const std::string& where);

// A figure by dotted path ("spec.by_block.4.ms_per_token"); nullptr when absent.
const Json* figure_at(const Json& figures, const std::string& path);

}  // namespace infer_plan
