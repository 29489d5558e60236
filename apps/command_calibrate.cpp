// `infer-plan calibrate FILE... --hw PROFILE --out OUT.json`: fits the step model's terms to an
// engine's measurements on one device (planner/calibration/calibration), prints every point with its
// residual, its leave-one-out error and the uncalibrated ceiling's error, and writes the profile
// with a "calibration" block that `--hw OUT.json` then uses everywhere.
#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>

#include "apps/format.hpp"
#include "apps/commands.hpp"
#include "apps/text_table.hpp"
#include "planner/calibration/calibration.hpp"
#include "planner/catalog/catalog.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/units.hpp"

namespace infer_plan::apps {
namespace {

struct CalibrateArgs {
  std::vector<std::string> files;
  std::string hw, engine, model, out;
  OutputOptions output;
};

std::string pct(double x) { return fmt::format("{:+.1f}%", x * 100); }
Json finite_or_null(double x) { return std::isfinite(x) ? Json(x) : Json(nullptr); }

std::string band(const ErrorBand& b) {
  return fmt::format("leave-one-out median |error| {:.1f}%, band {}..{} ({} points)", b.loo_median_abs * 100,
                     pct(b.lo), pct(b.hi), b.points);
}

double median_ceiling_error(const CalibrationResult& r, bool decode) {
  std::vector<double> e;
  for (const CalibrationPoint& p : r.points)
    if (p.decode == decode) e.push_back(p.ceiling_residual());
  return median_abs(e);
}

Json point_json(const CalibrationPoint& p) {
  return Json{{"origin", p.row.origin},       {"model_type", p.row.model_type},
              {"test", p.row.test_name()},    {"kind", p.decode ? "decode" : "prefill"},
              {"model", p.model},             {"weights", p.weights},
              {"gpu_info", p.row.gpu_info},   {"build", p.row.build},
              {"source", p.row.source},       {"measured_ms", p.measured_s * 1e3},
              {"predicted_ms", p.fitted_s * 1e3}, {"residual", p.residual()},
              {"loo_predicted_ms", finite_or_null(p.loo_s * 1e3)}, {"loo_residual", finite_or_null(p.loo_residual())},
              {"ceiling_ms", p.ceiling_s * 1e3},   {"ceiling_residual", p.ceiling_residual()},
              {"weight", p.weight}};
}

void run(const CalibrateArgs& a) {
  std::vector<BenchRow> rows;
  for (const std::string& f : a.files) {
    std::vector<BenchRow> r = read_bench_file(f);
    rows.insert(rows.end(), r.begin(), r.end());
  }
  const HwProfile hw = load_hw_profile(a.hw);
  CalibrationOptions o;
  o.engine = a.engine;
  o.model = a.model;
  o.source = fmt::format("calibrate {}", fmt::join(a.files, " "));
  const CalibrationResult r = calibrate_step_model(rows, hw, o);
  const StepCalibration& cal = r.calibration;

  if (!a.out.empty()) {
    Json profile = hw_profile_json(a.hw);
    std::string engine = cal.engine;  // "infer-plan cuda" -> "infer-plan-cuda"
    std::replace(engine.begin(), engine.end(), ' ', '-');
    profile["name"] = fmt::format("{}-{}", hw.name, engine);
    profile["calibration"] = step_calibration_to_json(cal);
    std::ofstream out(a.out);
    if (!out) throw InputError(fmt::format("--out {}: cannot write the file", a.out));
    out << json_text(profile) << "\n";
    if (!out) throw InputError(fmt::format("--out {}: write failed", a.out));
  }
  if (a.output.json()) {
    Json points = Json::array();
    for (const CalibrationPoint& p : r.points) points.push_back(point_json(p));
    Json skipped = Json::array();
    for (const SkippedRow& s : r.skipped) skipped.push_back({{"origin", s.row.origin}, {"reason", s.reason}});
    Json j{{"hw", hw.name},
           {"engine", cal.engine},
           {"points", points},
           {"skipped", skipped},
           {"terms", step_calibration_to_json(cal)},
           {"loo_median_abs_error", cal.decode.error.loo_median_abs},
           {"ceiling_median_abs_error", median_ceiling_error(r, true)},
           {"notes", r.notes}};
    if (!a.out.empty()) j["out"] = a.out;
    print_json(j);
    return;
  }
  fmt::print("calibrate: {} on {} ({}), {} point(s){}\n", cal.engine, hw.name, format_rate(hw.memory_bandwidth_bytes_per_s),
             r.points.size(), r.skipped.empty() ? "" : fmt::format(", {} skipped", r.skipped.size()));
  TextTable t;
  t.headers = {"point", "test", "model", "weights", "measured", "fitted", "resid", "left out", "resid", "ceiling", "error"};
  t.right_aligned = {false, false, false, false, true, true, true, true, true, true, true};
  for (const CalibrationPoint& p : r.points) {
    constexpr double unit = 1e3;  // ms, for decode steps and whole prompts alike
    t.rows.push_back({fmt::format("{}{}", p.row.origin, p.weight < 0.999 ? " (outlier)" : ""), p.row.test_name(), p.model,
                      p.weights, fmt::format("{:.2f} ms", p.measured_s * unit), fmt::format("{:.2f}", p.fitted_s * unit),
                      pct(p.residual()), std::isfinite(p.loo_s) ? fmt::format("{:.2f}", p.loo_s * unit) : "-",
                      std::isfinite(p.loo_s) ? pct(p.loo_residual()) : "-",
                      fmt::format("{:.2f}", p.ceiling_s * unit), pct(p.ceiling_residual())});
  }
  fmt::print("{}", t.render("  "));
  fmt::print("  (decode: ms per token = 1 / t/s; prefill: ms per prompt = n_prompt / t/s; resid = measured / "
             "predicted - 1; 'left out': fitted without that point's model file in its run)\n\n");
  fmt::print("decode:  {:.3f} ms fixed + bytes read / ({:.3f} x the profile's read rate)\n", cal.decode.fixed_s * 1e3,
             cal.decode.read_efficiency);
  fmt::print("         {}; the ceiling's median |error| {:.1f}%\n", band(cal.decode.error), median_ceiling_error(r, true) * 100);
  if (cal.prefill) {
    fmt::print("prefill: {:.3f} ms fixed + FLOPs / ({:.3f} x the profile's compute rate)\n", cal.prefill->fixed_s * 1e3,
               cal.prefill->compute_efficiency);
    fmt::print("         {}; the ceiling's median |error| {:.1f}%\n", band(cal.prefill->error), median_ceiling_error(r, false) * 100);
  }
  for (const std::string& n : r.notes) fmt::print("note: {}\n", n);
  for (const SkippedRow& s : r.skipped) fmt::print("skipped {}: {}\n", s.row.origin, s.reason);
  if (!a.out.empty())
    fmt::print("\nwrote {}: `--hw {}` predicts with these terms; the ceiling stays beside them\n", a.out, a.out);
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "Fit the step model (fixed time per step, achieved read rate, prefill efficiency) to measured runs");
  cmd->add_option("files", args->files,
                  "llama-bench output (-o json, -o jsonl, -o csv or its markdown table), a data file of "
                  "hwprofiles/calibrations/, `vllm bench serve --save-result` JSON (one decode point: the median "
                  "inter-token latency at the mean requests in flight), or infer-plan report --json (a point per "
                  "batch size the run held)")
      ->required()
      ->check(CLI::ExistingFile)
      ->type_name("FILE...");
  cmd->add_option("--hw", args->hw, "The device the measurements ran on: a built-in name or a profile JSON path")
      ->required()
      ->type_name("NAME|PATH");
  cmd->add_option("--engine", args->engine,
                  "The engine that measured (default: the files' own: llama.cpp for llama-bench, vllm for vllm bench "
                  "serve, 'infer-plan cpu' or 'infer-plan cuda' for report --json)")
      ->type_name("NAME");
  cmd->add_option("--model,-m", args->model,
                  "The model every row ran (a built-in name or a config.json); default: the built-in with the "
                  "row's architecture and parameter count")
      ->type_name("NAME|PATH");
  cmd->add_option("--out", args->out, "Write the profile with its calibration block here")->type_name("OUT.json");
  args->output.add_to(*cmd, false);
  cmd->footer("Examples (published RTX 3090 runs, shipped with infer-plan; then your own llama-bench output, any of its -o formats):\n"
              "  infer-plan calibrate hwprofiles/calibrations/rtx-3090.json --hw rtx-3090 --out rtx-3090-llama.json\n"
              "  infer-plan calibrate my-llama-bench.jsonl --hw rtx-4090 -o md\n"
              "and predict with the profile it wrote:\n"
              "  infer-plan roofline --hw rtx-3090-llama.json --model llama-3.1-8b --weights Q4_K_M --batch 1 --ctx 512");
  cmd->callback([args] { run(*args); });
}

}  // namespace infer_plan::apps
