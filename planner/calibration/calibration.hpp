// Fits the step model's terms (planner/model/step_model) to an engine's measurements on one device:
// each llama-bench row is mapped to a model (--model, else the built-in with its architecture
// and parameter count), its weights (the file type in model_type, rescaled to the printed file
// size) and its KV types, and the uncalibrated roofline counts what its step moves. Then
//   decode:  1 / (t/s)        = fixed + memory_s / read_efficiency (+ each weight type's own
//                               read cost, shrunk toward the shared one)
//   prefill: n_prompt / (t/s) = fixed + compute_s / compute_efficiency
// by least squares on relative residuals (a 4 ms and a 40 ms step weigh alike), with Huber
// weights so that one outlier does not pull the line, and fixed >= 0. Every point is predicted
// again with itself left out; those residuals give the error band.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/model/hw_profile.hpp"
#include "planner/calibration/llama_bench.hpp"
#include "planner/model/step_model.hpp"

namespace infer_plan {

struct CalibrationPoint {
  BenchRow row;
  std::string model;         // the infer-plan model it maps to ("llama-2-7b")
  std::string weights;       // the file type ("Q4_K_M")
  std::string size_note;     // the printed file size against the recipe's, when they differ
  std::string group;         // one model file in one run (model, weights, build, source, device,
                             // batch): left out together
  bool decode = true;        // else prefill
  double measured_s = 0;     // a decode step, or a whole prompt
  double term_s = 0;         // what the fit scales: memory_s (decode), compute_s (prefill)
  double kv_term_s = 0;      // decode: the KV cache's share of term_s
  double moe_layers = 0;     // decode: the model's layers with experts, in ModelSpec::moe_layer_units
  double layers = 1;         // decode: the model's layers, each paying the fixed time (DecodeTerms::layer_s)
  double attention_term_s = 0;  // prefill: attention's share of term_s (StepCost::attention_s)
  double expert_tile_s = 0;     // prefill: the expert products' tiles (StepCost::expert_tile_s)
  double micro_batches = 1;  // prefill: the prompt's micro-batches (n_ubatch), each costing the fixed time
  std::map<std::string, double> type_terms_s;  // decode: each GGML type's share of term_s
  double ceiling_s = 0;      // the uncalibrated roofline
  double known_s = 0;        // the probe's launch overhead, added to the fit, not fitted
  double fitted_s = 0;       // the calibrated model fitted on every point
  double loo_s = 0;          // ... fitted without this point's model file in its run (its tg512
                             // and tg4096 go together); NaN when no other file is left to fit
  double weight = 1;         // the robust fit's final weight (< 1: down-weighted as an outlier)
  double residual() const { return measured_s / fitted_s - 1; }
  double loo_residual() const { return measured_s / loo_s - 1; }
  double ceiling_residual() const { return measured_s / ceiling_s - 1; }
};

struct SkippedRow {
  BenchRow row;
  std::string reason;
};

struct CalibrationOptions {
  std::string engine;          // empty: the rows' engine (llama-bench: llama.cpp)
  std::string model;           // a model name or config.json for every row; empty: by the row
  std::string source;          // what the fitted profile says it came from
  // The decode terms a device of this one's architecture would get without data (step_prior's
  // transferred terms, the device itself left out): the fit borrows their weight types' and KV
  // cache's read costs relative to the shared one, and their fixed time, where its own points
  // cannot tell (a type it has no point for, one model size); absent: the shared rate, fixed 0.
  std::optional<StepCalibration> prior;
  bool leave_one_out = true;   // false: no point refitted without its file (loo_s NaN, no error band)
};

struct CalibrationResult {
  std::vector<CalibrationPoint> points;
  std::vector<SkippedRow> skipped;
  StepCalibration calibration;
  std::vector<std::string> notes;  // fallbacks taken (one model size, too few prefill points)
};

// The points of `mapped` (a calibrate_step_model result of `device`) fitted again under `o` (a
// prior), without mapping the rows again; its engine kept.
CalibrationResult refit_step_model(CalibrationResult mapped, const std::string& device, const CalibrationOptions& o);

// The engine the rows ran on: `given`, else theirs (llama-bench's: llama.cpp); InputError when they mix.
std::string rows_engine(const std::vector<BenchRow>& rows, const std::string& given);

// InputError when fewer than two decode rows map to a model and weights.
CalibrationResult calibrate_step_model(const std::vector<BenchRow>& rows, const HwProfile& hw,
                                       const CalibrationOptions& options);

// One robust fit of time = fixed + slope x term + sum of deltas x type terms, as a device's own fit
// runs (relative residuals, Huber weights, each type's delta shrunk toward 0, read rates held
// physical); names starting with '~' are covariates (always fitted, never held at a rate's bound).
// For pooling several devices' points (planner/calibration/step_prior).
// The decode fits' covariate for the KV cache's read time: attention at long contexts reads it
// slower than a matrix-vector product reads weights (kv_read_efficiency).
inline constexpr std::string_view kKvCovariate = "~kv";
// ... and for the time of the layers with experts: the covariate is their units
// (ModelSpec::moe_layer_units) x kMoeLayerUnit, its fitted delta x kMoeLayerUnit the time per unit
// per step (DecodeTerms::moe_layer_s).
inline constexpr std::string_view kMoeCovariate = "~moe";
inline constexpr double kMoeLayerUnit = 1e-4;  // 0.1 ms: the covariate in the units of a step's terms
// The prefill fits' covariate for attention's products (PrefillTerms::attention_efficiency).
inline constexpr std::string_view kAttentionCovariate = "~attention";
// The prefill's expert products' least cost (PrefillTerms::expert_tile_factor): its delta is the factor.
inline constexpr std::string_view kExpertTileCovariate = "~expert_tiles";
// A prompt long enough to spend this share of its compute on attention tells attention's cost
// from the GEMMs' (8192 tokens of an 8B model: about 13%).
inline constexpr double kLongPromptShare = 0.05;
struct StepSample {
  double term_s = 0;
  std::map<std::string, double> type_terms_s;
  double measured_s = 0;
  std::string group;  // left out together
  double fixed_count = 1;  // times the fixed time is paid (a prompt's micro-batches)
};
struct StepLine {
  double fixed_s = 0;
  double slope = 1;
  std::map<std::string, double> delta;
};
// `held_fixed`: the fixed time held rather than fitted (samples that cannot tell it apart).
StepLine fit_step_line(const std::vector<StepSample>& samples, std::optional<double> held_fixed = std::nullopt);

// Median of |x|, and the band [min(0, lo), max(0, hi)] of relative residuals: the extremes
// below 10 points, the `tail` and 1 - `tail` quantiles from 10 on (the 10th and 90th by default).
double median_abs(std::vector<double> xs);
ErrorBand error_band(const std::vector<double>& residuals, double tail = 0.1);

// The built-in calibration of a device for an engine, fitted from the embedded data file
// hwprofiles/calibrations/<hw.name>.json when it exists and names that engine.
std::optional<StepCalibration> builtin_calibration(const HwProfile& hw, const std::string& engine);
// ... with its points (residuals, leave-one-out).
std::optional<CalibrationResult> builtin_calibration_result(const HwProfile& hw, const std::string& engine,
                                                            const std::optional<StepCalibration>& prior = std::nullopt,
                                                            bool leave_one_out = true);
std::vector<std::string> builtin_calibration_names();  // devices with a data file

}  // namespace infer_plan
