// `infer-plan calibrate FILE... --hw PROFILE --out OUT.json`: fits the step model's terms to an
// engine's measurements on one device (planner/calibration/calibration), prints every point with its
// residual, its leave-one-out error and the uncalibrated ceiling's error, and writes the profile
// with a "calibration" block that `--hw OUT.json` then uses everywhere.
#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <map>
#include <memory>

#include "apps/format.hpp"
#include "apps/commands.hpp"
#include "apps/text_table.hpp"
#include "planner/calibration/calibration.hpp"
#include "planner/calibration/serving_prior.hpp"
#include "planner/calibration/step_prior.hpp"
#include "planner/catalog/catalog.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/units.hpp"

namespace infer_plan::apps {
namespace {

struct CalibrateArgs {
  std::vector<std::string> files;
  std::string hw, engine, model, out;
  std::string loo = "file";  // "device": also each device predicted from the others
  OutputOptions output;
};

std::string pct(double x) { return fmt::format("{:+.1f}%", x * 100); }
Json finite_or_null(double x) { return std::isfinite(x) ? Json(x) : Json(nullptr); }

std::string band(const ErrorBand& b) {
  return fmt::format("leave-one-out median |error| {:.1f}%, band {}..{} ({} points)", b.loo_median_abs * 100,
                     pct(b.lo), pct(b.hi), b.points);
}

std::string by_type(const std::map<std::string, double>& efficiency) {
  std::vector<std::string> parts;
  for (const auto& [type, e] : efficiency) parts.push_back(fmt::format("{} {:.3f}", type, e));
  return fmt::format("{}", fmt::join(parts, ", "));
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

// A datacenter engine's published serving runs: each run's mean ITL and TTFT as the serving
// simulation predicts them with the pooled fit, and with the fit of the other devices' (or
// models') runs.
void run_served_out(const CalibrateArgs& a, const ServingFit& fit) {
  const std::string left = fit.held_out == ServedHoldOut::model ? "model" : "device";
  std::vector<double> itl, ttft, itl_out, ttft_out;
  Json points = Json::array();
  TextTable t;
  t.headers = {"run", "in/out", "ITL ms", "fit", left + " out", "TTFT ms", "fit", left + " out"};
  t.right_aligned = {false, true, true, true, true, true, true, true};
  auto rel = [](double measured, double predicted) { return predicted > 0 ? measured / predicted - 1 : std::nan(""); };
  auto cell = [&](double measured, double predicted) {
    return predicted > 0 ? fmt::format("{:.4g} {}", predicted * 1e3, pct(rel(measured, predicted))) : std::string("-");
  };
  for (const ServedFitPoint& p : fit.points) {
    const std::optional<double> mi = p.run.inter_token_s(), mt = p.run.ttft_s();
    Json j{{"run", p.run.label()}, {"source", p.run.source}, {"fitted", p.fitted}, {"why_not", p.why_not},
           {"input_tokens", p.run.input_tokens}, {"output_tokens", p.run.output_tokens},
           {"itl_ms", mi ? Json(*mi * 1e3) : Json(nullptr)}, {"ttft_ms", mt ? Json(*mt * 1e3) : Json(nullptr)}};
    auto put = [&](const char* key, double predicted, double measured, std::vector<double>* into) {
      j[key] = predicted > 0 ? Json(predicted * 1e3) : Json(nullptr);
      if (predicted > 0 && measured > 0 && into) into->push_back(rel(measured, predicted));
    };
    put("itl_predicted_ms", p.predicted_itl_s, mi.value_or(0), p.fitted ? &itl : nullptr);
    put("ttft_predicted_ms", p.predicted_ttft_s, mt.value_or(0), p.fitted ? &ttft : nullptr);
    put(fmt::format("itl_{}_out_ms", left).c_str(), p.held_itl_s, mi.value_or(0), &itl_out);
    put(fmt::format("ttft_{}_out_ms", left).c_str(), p.held_ttft_s, mt.value_or(0), &ttft_out);
    points.push_back(j);
    if (!p.run.excluded.empty()) continue;
    t.rows.push_back({fmt::format("{}{}", p.run.label(), p.fitted ? "" : " *"), fmt::format("{:.0f}/{:.0f}", p.run.input_tokens, p.run.output_tokens),
                      mi ? fmt::format("{:.4g}", *mi * 1e3) : "-", cell(mi.value_or(0), p.predicted_itl_s),
                      cell(mi.value_or(0), p.held_itl_s), mt ? fmt::format("{:.4g}", *mt * 1e3) : "-",
                      cell(mt.value_or(0), p.predicted_ttft_s), cell(mt.value_or(0), p.held_ttft_s)});
  }
  const StepCalibration& c = fit.calibration;
  if (!a.out.empty()) {
    std::ofstream out(a.out);
    if (!out) throw InputError(fmt::format("--out {}: cannot write the file", a.out));
    Json j = serving_fit_to_json(fit);
    j["generated_by"] = fmt::format("infer-plan calibrate --loo device --engine {} --out {}", c.engine, a.out);
    out << j.dump(2) << "\n";
    if (!out) throw InputError(fmt::format("--out {}: write failed", a.out));
  }
  if (a.output.json()) {
    Json studies = Json::object();
    for (const auto& [study, front_s] : fit.study_front_end_s) studies[study] = front_s * 1e3;
    print_json(Json{{"engine", c.engine}, {"calibration", step_calibration_to_json(c)}, {"points", points},
                    {"study_front_end_ms", studies},
                    {"itl_median_abs_error", median_abs(itl)}, {"ttft_median_abs_error", median_abs(ttft)},
                    {fmt::format("itl_{}_out_median_abs_error", left), median_abs(itl_out)},
                    {fmt::format("ttft_{}_out_median_abs_error", left), median_abs(ttft_out)}});
    return;
  }
  fmt::print("calibrate --loo {}: {}'s published serving runs (hwprofiles/serving/{}.json), each run's mean "
             "inter-token latency and TTFT from the serving simulation with the pooled fit, and with the fit of the "
             "other {}s' runs\n", left, c.engine, c.engine, left);
  auto moe = [](const std::optional<double>& e) { return e ? fmt::format(" ({:.0f}% for MoE)", *e * 100) : std::string(); };
  fmt::print("  step: {:.3f} ms + {:.4f} ms per sequence + reads at {:.0f}%{} of the datasheet; prefill {:.2f} ms + compute "
             "at {:.0f}%{}; front end {:.1f} ms per request\n",
             c.decode.fixed_s * 1e3, c.decode.per_sequence_s * 1e3, c.decode.read_efficiency * 100,
             moe(c.decode.moe_read_efficiency), c.prefill->fixed_s * 1e3, c.prefill->compute_efficiency * 100,
             moe(c.prefill->moe_compute_efficiency), c.first_token_s * 1e3);
  std::vector<std::string> studies;
  for (const auto& [study, front_s] : fit.study_front_end_s) studies.push_back(fmt::format("{} {:.1f} ms", study, front_s * 1e3));
  fmt::print("  front end per study (the way its client reached the server; the geometric mean above is a plan's): {}\n",
             fmt::join(studies, ", "));
  fmt::print("{}", t.render("  "));
  fmt::print("  ITL: fit {:.1f}% ({} runs), {} out {:.1f}% ({}); TTFT: fit {:.1f}%, {} out {:.1f}% "
             "(median |measured / predicted - 1|)\n",
             median_abs(itl) * 100, itl.size(), left, median_abs(itl_out) * 100, itl_out.size(), median_abs(ttft) * 100,
             left, median_abs(ttft_out) * 100);
  size_t predicted = 0, excluded = 0;
  for (const ServedFitPoint& p : fit.points) {
    predicted += !p.fitted && p.run.excluded.empty() ? 1 : 0;
    excluded += p.run.excluded.empty() ? 0 : 1;
  }
  if (predicted) fmt::print("  * {} runs predicted, not fitted (all at once; --json says why)\n", predicted);
  if (excluded) fmt::print("  {} runs excluded by the data file (--json says why)\n", excluded);
}

// An engine whose published runs are offline throughputs (TensorRT-LLM's): each run's output
// tokens per second from the serving simulation with the step model that stands for it (its
// donor's, transferred; the engine's own scheduler and memory), against what was printed. Nothing
// of these runs is fitted: the table is the check of the transfer.
void run_throughput_check(const CalibrateArgs& a, const std::string& engine, const std::string& donor) {
  if (!a.out.empty())
    throw InputError(fmt::format("--out {}: {} fits nothing of its own ({}'s step model stands for it); nothing to write",
                                 a.out, engine, donor));
  const HwProfile any = load_hw_profile("h100-sxm");  // the donor's terms are the same for every device
  const std::optional<StepCalibration> steps = served_step_calibration(any, engine);
  if (!steps) throw InputError(fmt::format("--engine {}: {} has no stored serving fit to stand for it", engine, donor));
  std::vector<double> all;
  std::map<std::string, std::vector<double>> by_device, by_tp, by_build;
  Json points = Json::array();
  TextTable t;
  t.headers = {"run", "build", "in/out", "prompts", "tok/s", "predicted", "error"};
  t.right_aligned = {false, false, true, true, true, true, true};
  size_t unpredicted = 0;
  for (const ServedRun& run : builtin_served_runs(engine)) {
    const std::string build = run.version.substr(0, run.version.find(' '));
    Json j{{"run", run.label()}, {"source", run.source}, {"build", build}, {"input_tokens", run.input_tokens},
           {"output_tokens", run.output_tokens}, {"num_prompts", run.num_prompts},
           {"output_tok_s", run.output_throughput ? Json(*run.output_throughput) : Json(nullptr)}};
    std::optional<double> predicted;
    if (run.excluded.empty() && run.output_throughput) predicted = predict_served_throughput(run, *steps);
    const double measured = run.output_throughput.value_or(0), at = predicted.value_or(0);
    j["predicted_output_tok_s"] = at > 0 ? Json(at) : Json(nullptr);
    j["residual"] = at > 0 ? Json(measured / at - 1) : Json(nullptr);
    j["why_not"] = !run.excluded.empty()         ? run.excluded
                   : !run.output_throughput       ? std::string("no output throughput printed")
                   : !predicted                   ? std::string("cannot be simulated (its weights, model or profile)")
                                                  : std::string();
    points.push_back(j);
    if (!(at > 0)) {
      unpredicted += run.excluded.empty() ? 1 : 0;
      continue;
    }
    const double e = measured / at - 1;
    all.push_back(e);
    by_device[run.hw].push_back(e);
    by_tp[fmt::format("TP{}", run.tp)].push_back(e);
    by_build[build].push_back(e);
    t.rows.push_back({fmt::format("{} {} {} TP{}", run.hw, run.model, run.weights, run.tp), build,
                      fmt::format("{:.0f}/{:.0f}", run.input_tokens, run.output_tokens), fmt::format("{}", run.num_prompts),
                      fmt::format("{:.6g}", measured), fmt::format("{:.6g}", at), pct(e)});
  }
  auto medians = [](const std::map<std::string, std::vector<double>>& groups) {
    Json j = Json::object();
    for (const auto& [key, e] : groups) j[key] = Json{{"median_abs_error", median_abs(e)}, {"runs", e.size()}};
    return j;
  };
  auto text = [](const std::map<std::string, std::vector<double>>& groups) {
    std::vector<std::string> parts;
    for (const auto& [key, e] : groups) {
      std::vector<double> sorted = e;
      std::sort(sorted.begin(), sorted.end());
      parts.push_back(fmt::format("{} {:.1f}% ({:+.1f}%, {})", key, median_abs(e) * 100, sorted[sorted.size() / 2] * 100, e.size()));
    }
    return fmt::format("{}", fmt::join(parts, "; "));
  };
  if (a.output.json()) {
    print_json(Json{{"engine", engine}, {"step_model", donor}, {"calibration", step_calibration_to_json(*steps)},
                    {"points", points}, {"median_abs_error", median_abs(all)}, {"runs", all.size()},
                    {"by_device", medians(by_device)}, {"by_tp", medians(by_tp)}, {"by_build", medians(by_build)}});
    return;
  }
  fmt::print("calibrate --loo device: {}'s published runs (hwprofiles/serving/{}.json) are offline throughputs (every "
             "request at once, output tokens per second), with no latency to fit; each predicted by the serving simulation "
             "with {}'s fitted step model and {}'s own scheduler and memory (none of these runs fitted)\n",
             engine, engine, donor, engine);
  fmt::print("{}", t.render("  "));
  fmt::print("  output tok/s: median |measured / predicted - 1| {:.1f}% over {} runs\n", median_abs(all) * 100, all.size());
  fmt::print("  by device (median, signed median, runs): {}\n", text(by_device));
  fmt::print("  by TP: {}\n", text(by_tp));
  fmt::print("  by build: {}\n", text(by_build));
  if (unpredicted) fmt::print("  {} runs not simulated (--json says why)\n", unpredicted);
}

constexpr size_t kPromptLengthPoints = 5;  // a prompt length's points shown apart

// Leave-one-device-out over the engine's built-in data: each device's points predicted from the
// other devices' pooled terms (its architecture's, else all), beside its own fit's leave-one-out.
void run_device_out(const CalibrateArgs& a) {
  const std::string engine = a.engine.empty() ? "llama.cpp" : a.engine;
  if (const ServingFit* served = builtin_serving_fit(engine)) return run_served_out(a, *served);
  if (const std::string donor = step_donor(engine); !donor.empty()) return run_throughput_check(a, engine, donor);
  const std::vector<std::string> served = served_engines();
  if (std::find(served.begin(), served.end(), engine) != served.end())
    throw InputError(fmt::format("--engine {}: its published runs (hwprofiles/serving/{}.json) give no inter-token "
                                 "latency and TTFT at a known load to fit (at least 4 are needed)", engine, engine));
  const std::vector<DeviceCalibration>& devices = builtin_device_calibrations(engine);
  if (devices.empty())
    throw InputError(fmt::format("--engine {}: no built-in data files of that engine (hwprofiles/calibrations/: {})",
                                 engine, fmt::join(builtin_calibration_names(), ", ")));
  const std::vector<DeviceOutPoint> out = leave_one_device_out(engine);
  struct Row {
    std::vector<double> own_decode, out_decode, out_prefill;
    std::string level;
  };
  std::map<std::string, Row> by_device;
  std::vector<double> all_own, all_decode, all_prefill;
  std::map<uint64_t, std::vector<double>> prefill_by_prompt;  // the prompt's tokens -> device-out residuals
  for (const DeviceCalibration& d : devices)
    for (const CalibrationPoint& p : own_calibration(engine, d.device).points)
      if (p.decode && std::isfinite(p.loo_s)) by_device[d.device].own_decode.push_back(p.loo_residual()), all_own.push_back(p.loo_residual());
  Json points = Json::array();
  for (const DeviceOutPoint& p : out) {
    if (!std::isfinite(p.predicted_s)) continue;
    Row& r = by_device[p.device];
    r.level = p.level;
    (p.point.decode ? r.out_decode : r.out_prefill).push_back(p.residual());
    (p.point.decode ? all_decode : all_prefill).push_back(p.residual());
    if (!p.point.decode) prefill_by_prompt[p.point.row.n_prompt].push_back(p.residual());
    Json j = point_json(own_calibration(engine, p.device).points[p.index]);  // with its leave-one-file-out
    j["device"] = p.device;
    j["arch"] = p.arch;
    j["level"] = p.level;
    j["device_out_predicted_ms"] = p.predicted_s * 1e3;
    j["device_out_residual"] = p.residual();
    points.push_back(j);
  }
  auto worst = [](const std::vector<double>& xs) {
    double w = 0;
    for (double x : xs) w = std::abs(x) > std::abs(w) ? x : w;
    return w;
  };
  if (a.output.json()) {
    Json rows = Json::array();
    for (const DeviceCalibration& d : devices) {
      const Row& r = by_device[d.device];
      rows.push_back({{"device", d.device}, {"arch", d.arch}, {"level", r.level},
                      {"decode_points", r.out_decode.size()}, {"prefill_points", r.out_prefill.size()},
                      {"loo_file_median_abs_error", median_abs(r.own_decode)},
                      {"device_out_decode_median_abs_error", median_abs(r.out_decode)},
                      {"device_out_decode_worst_error", worst(r.out_decode)},
                      {"device_out_prefill_median_abs_error", median_abs(r.out_prefill)}});
    }
    print_json(Json{{"engine", engine}, {"devices", rows}, {"points", points},
                    {"loo_file_median_abs_error", median_abs(all_own)},
                    {"device_out_decode_median_abs_error", median_abs(all_decode)},
                    {"device_out_prefill_median_abs_error", median_abs(all_prefill)}});
    return;
  }
  fmt::print("calibrate --loo device: {}'s built-in data, each device predicted from the others (its arch's "
             "devices, else all), beside its own fit's leave-one-file-out\n", engine);
  TextTable t;
  t.headers = {"device", "arch", "from", "decode pts", "own LOO", "device out", "worst", "prefill pts", "device out"};
  t.right_aligned = {false, false, false, true, true, true, true, true, true};
  for (const DeviceCalibration& d : devices) {
    const Row& r = by_device[d.device];
    t.rows.push_back({d.device, d.arch.empty() ? "-" : d.arch, r.level.empty() ? "-" : r.level,
                      std::to_string(r.out_decode.size()), fmt::format("{:.1f}%", median_abs(r.own_decode) * 100),
                      fmt::format("{:.1f}%", median_abs(r.out_decode) * 100), pct(worst(r.out_decode)),
                      std::to_string(r.out_prefill.size()),
                      r.out_prefill.empty() ? "-" : fmt::format("{:.1f}%", median_abs(r.out_prefill) * 100)});
  }
  t.rows.push_back({"all", "", "", std::to_string(all_decode.size()), fmt::format("{:.1f}%", median_abs(all_own) * 100),
                    fmt::format("{:.1f}%", median_abs(all_decode) * 100), pct(worst(all_decode)),
                    std::to_string(all_prefill.size()), fmt::format("{:.1f}%", median_abs(all_prefill) * 100)});
  fmt::print("{}", t.render("  "));
  // A bias with the prompt's length shows here, not in the medians above (most prompts are 512)
  std::vector<std::string> lengths;
  for (const auto& [tokens, r] : prefill_by_prompt) {
    if (r.size() < kPromptLengthPoints) continue;
    std::vector<double> sorted = r;
    std::sort(sorted.begin(), sorted.end());
    const double signed_median = (sorted[(sorted.size() - 1) / 2] + sorted[sorted.size() / 2]) / 2;
    lengths.push_back(fmt::format("{} tokens {:.1f}% ({:+.1f}%, {} pts)", tokens, median_abs(r) * 100, signed_median * 100,
                                  r.size()));
  }
  if (!lengths.empty())
    fmt::print("  prefill device out by prompt length (median, signed median): {}\n", fmt::join(lengths, "; "));
  fmt::print("  (median |measured / predicted - 1|; 'own LOO': the device's own fit without the file, pulled toward the others' terms; 'device out': "
             "the device's points from the other devices' pooled terms, as a device with no data is predicted)\n");
}

void run(const CalibrateArgs& a) {
  if (a.loo != "file" && a.loo != "device" && a.loo != "model")
    throw InputError(fmt::format("--loo {}: expected file, device or model", a.loo));
  if (a.loo == "model") {  // a datacenter engine's published runs, each model's from the others'
    const std::vector<std::string> fitted = served_fit_engines();
    if (!a.files.empty() || std::find(fitted.begin(), fitted.end(), a.engine) == fitted.end())
      throw InputError(fmt::format("--loo model: each model's published serving runs predicted from the fit of the "
                                   "others' runs; it takes no FILE and --engine {} (engines with a fit of their own)",
                                   fmt::join(fitted, " or ")));
    if (!a.out.empty())
      throw InputError("--out with --loo model: a stored fit's bands are leave-one-device-out (--loo device)");
    const std::optional<ServingFit> fit = fit_served_runs(builtin_served_runs(a.engine), a.engine, ServedHoldOut::model);
    if (!fit) throw InputError(fmt::format("--engine {}: fewer than 4 of its published runs can be fitted", a.engine));
    return run_served_out(a, *fit);
  }
  if (a.files.empty()) {
    if (a.loo == "device") return run_device_out(a);
    throw InputError("calibrate: give the measurement FILE(s) and --hw, or --loo device to check the built-in data");
  }
  if (a.hw.empty()) throw InputError("calibrate: --hw is needed with FILE(s): the device the measurements ran on");
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
  // pulled toward what the engine's other devices give this one (a built-in of the same name left out)
  o.prior = transferred_calibration(rows_engine(rows, o.engine), hw, hw.name);
  const CalibrationResult r = calibrate_step_model(rows, hw, o);
  const StepCalibration& cal = r.calibration;
  // --loo device: these points as a device without them would be predicted, from the built-in
  // devices of the engine (this profile's name left out), by the profile's arch and bandwidth
  std::optional<StepCalibration> others;
  std::vector<double> out_decode, out_prefill;
  if (a.loo == "device") {
    others = transferred_calibration(cal.engine, hw, hw.name);
    if (!others)
      throw InputError(fmt::format("--loo device: no built-in {} data on other devices to predict {} from", cal.engine,
                                   hw.name));
    for (const CalibrationPoint& p : r.points)
      if (const double x = predict_point(*others, p); std::isfinite(x))
        (p.decode ? out_decode : out_prefill).push_back(p.measured_s / x - 1);
  }

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
    for (const CalibrationPoint& p : r.points) {
      points.push_back(point_json(p));
      if (!others) continue;
      const double x = predict_point(*others, p);
      points.back()["device_out_predicted_ms"] = finite_or_null(x * 1e3);
      points.back()["device_out_residual"] = finite_or_null(p.measured_s / x - 1);
    }
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
    if (others) {
      j["device_out_decode_median_abs_error"] = median_abs(out_decode);
      j["device_out_prefill_median_abs_error"] = finite_or_null(out_prefill.empty() ? std::nan("") : median_abs(out_prefill));
      j["device_out_basis_note"] = others->basis_note;
    }
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
  fmt::print("decode:  {:.4f} ms fixed per layer + bytes read / ({:.3f} x the profile's read rate)\n",
             cal.decode.layer_s * 1e3, cal.decode.read_efficiency);
  fmt::print("         {}; the ceiling's median |error| {:.1f}%\n", band(cal.decode.error), median_ceiling_error(r, true) * 100);
  if (!cal.decode.read_efficiency_by_type.empty() || cal.decode.kv_read_efficiency)
    fmt::print("         read efficiency by weight type: {}{}\n", by_type(cal.decode.read_efficiency_by_type),
               cal.decode.kv_read_efficiency ? fmt::format("; the KV cache {:.3f}", *cal.decode.kv_read_efficiency) : "");
  if (cal.prefill) {
    fmt::print("prefill: {:.3f} ms fixed + FLOPs / ({:.3f} x the profile's compute rate)\n", cal.prefill->fixed_s * 1e3,
               cal.prefill->compute_efficiency);
    fmt::print("         {}; the ceiling's median |error| {:.1f}%\n", band(cal.prefill->error), median_ceiling_error(r, false) * 100);
    if (!cal.prefill->compute_efficiency_by_type.empty())
      fmt::print("         compute efficiency by weight type: {}\n", by_type(cal.prefill->compute_efficiency_by_type));
    if (cal.prefill->expert_tile_factor > 0)
      fmt::print("         + {:.2f} x the expert products' tiles (each expert a micro-batch routes to costs at least 64 "
                 "tokens' products at the datasheet rate)\n", cal.prefill->expert_tile_factor);
  }
  if (others) {
    fmt::print("--loo device: without these points, {} would be predicted from {}:\n", hw.name, others->basis_note);
    fmt::print("         decode median |error| {:.1f}% over {} points", median_abs(out_decode) * 100, out_decode.size());
    if (!out_prefill.empty())
      fmt::print(", prefill {:.1f}% over {}", median_abs(out_prefill) * 100, out_prefill.size());
    fmt::print(" (--json: each point's)\n");
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
      "calibrate", "Fit the step model (fixed time per layer, achieved read rate, prefill efficiency) to measured runs");
  cmd->add_option("files", args->files,
                  "llama-bench output (-o json, -o jsonl, -o csv or its markdown table), a data file of "
                  "hwprofiles/calibrations/, `vllm bench serve --save-result` JSON (one decode point: the median "
                  "inter-token latency at the mean requests in flight), or infer-plan report --json (a point per "
                  "batch size the run held)")
      ->check(CLI::ExistingFile)
      ->type_name("FILE...");
  cmd->add_option("--hw", args->hw, "The device the measurements ran on: a built-in name or a profile JSON path")
      ->type_name("NAME|PATH");
  cmd->add_option("--loo", args->loo,
                  "What is left out to state the error: 'file' (each model file, the device's own fit; the default) or "
                  "'device' (with no FILE: every built-in device predicted from the others, as a device without "
                  "data is; with FILE and --hw: these points predicted from the built-in devices too) or 'model' "
                  "(with --engine vllm or sglang: each model's published serving runs from the fit of the others')")
      ->type_name("file|device|model");
  cmd->add_option("--engine", args->engine,
                  "The engine that measured (default: the files' own: llama.cpp for llama-bench, vllm for vllm bench "
                  "serve, 'infer-plan cpu' or 'infer-plan cuda' for report --json)")
      ->type_name("NAME");
  cmd->add_option("--model,-m", args->model,
                  "The model every row ran (a built-in name or a config.json); default: the built-in with the "
                  "row's architecture and parameter count")
      ->type_name("NAME|PATH");
  cmd->add_option("--out", args->out,
                  "Write the profile with its calibration block here; with --loo device and a datacenter engine "
                  "(vllm, sglang), the fit of its published serving runs (hwprofiles/serving/fits/ENGINE.json)")
      ->type_name("OUT.json");
  args->output.add_to(*cmd, false);
  cmd->footer("Examples (published RTX 3090 runs, shipped with infer-plan; then your own llama-bench output, any of its -o formats):\n"
              "  infer-plan calibrate hwprofiles/calibrations/rtx-3090.json --hw rtx-3090 --out rtx-3090-llama.json\n"
              "  infer-plan calibrate my-llama-bench.jsonl --hw rtx-4090 -o md\n"
              "  infer-plan calibrate --loo device          # how well a device without data is predicted\n"
              "  infer-plan calibrate --loo device --engine vllm   # vLLM's published serving runs, simulated (seconds)\n"
              "  infer-plan calibrate --loo device --engine trtllm # TensorRT-LLM's offline throughputs against vLLM's step model\n"
              "  infer-plan calibrate --loo model --engine vllm    # each model's runs from the others' fit (minutes)\n"
              "and predict with the profile it wrote:\n"
              "  infer-plan roofline --hw rtx-3090-llama.json --model llama-3.1-8b --weights Q4_K_M --batch 1 --ctx 512");
  cmd->callback([args] { run(*args); });
}

}  // namespace infer_plan::apps
