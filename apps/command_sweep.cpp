// `infer-plan sweep FILE|DIR...`: runs scenario files (plans x sweep axes), prints the figures
// their expectations name, or their report lines (--lines: e.g. the worked example's block), as
// a table, CSV, Markdown, JSON or JSON Lines. With --check, exit 1 listing every expectation that fails.
#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <memory>

#include "apps/format.hpp"
#include "apps/commands.hpp"
#include "apps/exit_code.hpp"
#include "planner/core/input_error.hpp"
#include "planner/plan/scenario.hpp"

namespace infer_plan::apps {
namespace {

struct SweepArgs {
  std::vector<std::string> files;
  bool check = false;
  bool lines = false;
  std::string format;  // --format, the old name of -o (table = text)
  OutputOptions out;
};

std::vector<std::string> expand(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const std::string& a : args) {
    std::error_code ec;
    if (std::filesystem::is_directory(a, ec)) {
      std::vector<std::string> found;
      for (const auto& e : std::filesystem::directory_iterator(a))
        if (e.is_regular_file() && e.path().extension() == ".json") found.push_back(e.path().string());
      std::sort(found.begin(), found.end());
      if (found.empty()) throw InputError(fmt::format("{}: no scenario files (*.json) in this directory", a));
      out.insert(out.end(), found.begin(), found.end());
    } else {
      out.push_back(a);
    }
  }
  return out;
}

std::string value_text(const Json& v) {
  if (v.is_null()) return "(absent)";
  if (v.is_number_float()) return fmt::format("{:.6g}", v.get<double>());
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

std::string axes_text(const Json& axes) {
  std::string s;
  for (const auto& [k, v] : axes.items()) s += fmt::format("{}{}={}", s.empty() ? "" : " ", k, value_text(v));
  return s;
}

void run(const SweepArgs& a) {
  std::vector<Scenario> scenarios;
  for (const std::string& f : expand(a.files)) scenarios.push_back(load_scenario(f));
  std::vector<ScenarioRun> runs;
  for (const Scenario& s : scenarios) runs.push_back(run_scenario(s));

  if (!a.format.empty() && output_state().format != OutputFormat::text)
    throw InputError("--format and -o (or --json) both given: --format is the old name of -o; give one");
  const OutputFormat format = a.format.empty()    ? output_state().format
                              : a.format == "table" ? OutputFormat::text
                                                    : parse_output_format(a.format, "--format");
  if (format == OutputFormat::json) {
    Json out = Json::array();
    for (const ScenarioRun& r : runs) {
      Json points = Json::array();
      for (const ScenarioPoint& p : r.points) {
        Json checks = Json::array();
        for (const CheckResult& c : p.checks)
          checks.push_back({{"path", c.path}, {"expected", c.expected}, {"got", c.got}, {"ok", c.ok},
                            {"tolerance", c.tolerance}, {"source", c.source}});
        points.push_back({{"case", p.case_name}, {"axes", p.axes}, {"figures", p.figures}, {"checks", checks},
                          {"error", p.error.empty() ? Json(nullptr) : Json(p.error)}});
      }
      out.push_back({{"scenario", r.scenario->name}, {"file", r.scenario->source}, {"points", points},
                     {"lines", r.lines}, {"failures", r.failures()}});
    }
    print_json(Json{{"scenarios", out}});
  } else if (format == OutputFormat::md || format == OutputFormat::jsonl) {  // main prints one row per check
    for (const ScenarioRun& r : runs)
      for (const ScenarioPoint& p : r.points) {
        if (!p.error.empty())
          print_json({{"scenario", r.scenario->name}, {"case", p.case_name}, {"axes", axes_text(p.axes)},
                      {"path", "error: " + p.error}, {"ok", false}});
        for (const CheckResult& c : p.checks)
          print_json({{"scenario", r.scenario->name}, {"case", p.case_name}, {"axes", axes_text(p.axes)},
                      {"path", c.path}, {"expected", c.expected}, {"got", c.got}, {"ok", c.ok},
                      {"source", c.source}});
      }
  } else if (format == OutputFormat::csv) {
    fmt::print("scenario,case,axes,path,expected,got,ok\n");
    auto q = [](std::string s) {
      std::string o = "\"";
      for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
      return o + "\"";
    };
    for (const ScenarioRun& r : runs)
      for (const ScenarioPoint& p : r.points) {
        if (!p.error.empty())
          fmt::print("{},{},{},{},,,{}\n", q(r.scenario->name), q(p.case_name), q(axes_text(p.axes)), q("error: " + p.error), "false");
        for (const CheckResult& c : p.checks)
          fmt::print("{},{},{},{},{},{},{}\n", q(r.scenario->name), q(p.case_name), q(axes_text(p.axes)), q(c.path),
                     q(value_text(c.expected)), q(value_text(c.got)), c.ok ? "true" : "false");
      }
  } else if (a.lines) {
    for (const ScenarioRun& r : runs) {
      if (r.lines.empty()) continue;
      fmt::print("# {} ({})\n", r.scenario->name, r.scenario->source);
      for (const std::string& l : r.lines) fmt::print("{}\n", l);
    }
  } else {
    for (const ScenarioRun& r : runs) {
      fmt::print("{}: {} ({})\n", r.scenario->name, r.scenario->description, r.scenario->source);
      std::string last_case;
      for (const ScenarioPoint& p : r.points) {
        if (p.case_name != last_case) fmt::print("  case {}\n", p.case_name);
        last_case = p.case_name;
        if (!p.axes.empty()) fmt::print("    [{}]\n", axes_text(p.axes));
        if (!p.error.empty()) fmt::print("    ERROR {}\n", p.error);
        for (const CheckResult& c : p.checks)
          fmt::print("    {:<4} {} = {} (expected {} {}){}\n", c.ok ? "ok" : "FAIL", c.path, value_text(c.got),
                     value_text(c.expected), c.tolerance, c.source.empty() ? "" : "  [" + c.source + "]");
      }
      if (!r.lines.empty()) {
        fmt::print("  lines\n");
        for (const std::string& l : r.lines) fmt::print("    {}\n", l);
      }
    }
  }

  size_t failures = 0, checks = 0, errors = 0;
  for (const ScenarioRun& r : runs) {
    failures += r.failures();
    for (const ScenarioPoint& p : r.points) {
      checks += p.checks.size();
      errors += p.error.empty() ? 0 : 1;
    }
  }
  if (errors > 0) {  // a point whose plan is bad input: the scenario file needs fixing
    for (const ScenarioRun& r : runs)
      for (const ScenarioPoint& p : r.points)
        if (!p.error.empty())
          fmt::print(stderr, "infer-plan: error: {}{}\n", p.axes.empty() ? "" : "[" + axes_text(p.axes) + "] ", p.error);
    throw ExitCode{2};
  }
  if (a.check) {
    if (failures == 0) {
      fmt::print(stderr, "sweep --check: all {} expectations hold in {} scenario file(s)\n", checks, runs.size());
      return;
    }
    fmt::print(stderr, "sweep --check: {} of {} expectations FAIL:\n", failures, checks);
    for (const ScenarioRun& r : runs)
      for (const ScenarioPoint& p : r.points) {
        if (!p.error.empty()) fmt::print(stderr, "  {} / {} [{}]: error: {}\n", r.scenario->source, p.case_name, axes_text(p.axes), p.error);
        for (const CheckResult& c : p.checks)
          if (!c.ok)
            fmt::print(stderr, "  {} / {} [{}]: {}: expected {} {}, got {}\n", r.scenario->source, p.case_name,
                       axes_text(p.axes), c.path, value_text(c.expected), c.tolerance, value_text(c.got));
      }
    throw ExitCode{1};
  }
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto args = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand("sweep", "Run scenario files: plans x sweep axes, expectations, report lines");
  cmd->add_option("FILE", args->files, "Scenario files, or directories of them (e.g. scenarios/)")->required();
  cmd->add_flag("--check", args->check, "Exit 1, listing each failure (path, expected, got), when an expectation fails");
  cmd->add_flag("--lines", args->lines, "Print only the scenarios' report lines (e.g. the worked example in scenarios/s23-j23.json)");
  cmd->add_option("--format", args->format, "The old name of -o, kept for this release: table (= text), csv or json")
      ->check(CLI::IsMember({"table", "csv", "json"}))->type_name("FORMAT");
  args->out.add_to(*cmd, false);
  cmd->footer("Scenario format: see scenarios/s23-j23.json (cases: plan, sweep {plan.path: [values]},\n"
              "expect [{path, value, tolerance | rel_tolerance, where, source}], lines [templates]). Examples:\n"
              "  infer-plan sweep --check scenarios/              # every shipped expectation; exit 1 on a failure\n"
              "  infer-plan sweep --lines scenarios/s23-j23.json  # a worked example's lines, computed");
  cmd->callback([args] { run(*args); });
}

}  // namespace infer_plan::apps
