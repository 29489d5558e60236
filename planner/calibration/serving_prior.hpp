// The step model of a batched datacenter engine (vLLM, SGLang, TensorRT-LLM), fitted from its
// published online-serving runs (hwprofiles/serving/<engine>.json: each run's source, engine
// version, GPU, TP, model, dtype, workload and the latencies the engine's benchmark printed).
//
// A served run gives mean inter-token latency I and mean TTFT T at a request throughput lambda
// (its arrival rate, or what a burst or a concurrency limit reached), not steps: the fit reads it
// through Little's law. Requests decoding at once: b = lambda I (out - 1);
// a decode step of b sequences at the mean context (in + out / 2) costs
//     step = fixed + per_sequence x b + reads / read_efficiency (+ the all-reduce under TP),
// and prefills take lambda x prefill(in) of every second, so the gaps between tokens are
//     I = step + I lambda x prefill_compute(in) / compute_efficiency.
// Linear in (fixed, per_sequence, 1 / read_efficiency, 1 / compute_efficiency): least squares on
// relative errors (Eigen), terms kept >= 0. The front end's time on the first token (HTTP,
// tokenization, scheduling) is then the median of what the serving simulation's TTFT leaves of
// each run's measured one. One pooled fit per engine: every device gets it, scaled by its own
// datasheet rates ("calibrated" where the device has runs, "transferred" where not); the bands
// are leave-one-device-out residuals of the simulation against the runs.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "planner/core/json_fields.hpp"
#include "planner/model/hw_profile.hpp"
#include "planner/model/step_model.hpp"

namespace infer_plan {

struct ServedRun {
  std::string engine, version, date, source, note;
  std::string hw, model, weights, kv, flags, dataset;
  uint64_t tp = 1;
  uint64_t num_prompts = 0;
  std::optional<double> rate_per_s;        // absent: all at once, or a concurrency limit
  std::optional<uint64_t> max_concurrency;
  double input_tokens = 0, output_tokens = 0;  // means per request
  // A random dataset's configured lengths (its longest: the benchmark draws up to them), where given.
  std::optional<double> input_len, output_len;
  // What the benchmark printed, in seconds (absent: not printed).
  std::optional<double> mean_ttft_s, median_ttft_s, mean_itl_s, median_itl_s, mean_tpot_s, median_tpot_s;
  std::optional<double> mean_e2el_s, median_e2el_s;
  std::optional<double> request_throughput;   // completed requests per second
  // Output tokens per second over all its devices (an offline throughput run prints only this:
  // trtllm-bench's; a file's output_throughput_per_gpu is multiplied by the run's gpus).
  std::optional<double> output_throughput;
  // The rate the simulation offers: the run's; with a concurrency limit, the throughput it
  // reached (a closed loop read as an open one); all at once: a burst (every request in 0.1 s).
  std::optional<double> offered_rate_per_s() const;
  std::string excluded;                    // the file's reason not to fit the run; empty: fitted
  std::string label() const;               // "vllm 0.6.0 a100-80gb llama-3.1-8b TP1 4 req/s"
  // The gap between tokens the fit reads, and which it is: mean ITL, else mean TPOT, else the
  // medians (TPOT first: a multi-step scheduler's median ITL is the gap between its bursts).
  enum class Gap { mean_itl, mean_tpot, median_tpot, median_itl };
  std::optional<std::pair<Gap, double>> inter_token() const;
  std::optional<double> inter_token_s() const;
  std::optional<double> ttft_s() const;    // mean, else median (as ttft_is_mean says)
  bool ttft_is_mean() const { return mean_ttft_s.has_value(); }
};

// A serving data file; InputError naming the file, point and field.
std::vector<ServedRun> served_runs_from_json(const Json& j, const std::string& where);
// The embedded hwprofiles/serving/<engine>.json (empty when there is none).
const std::vector<ServedRun>& builtin_served_runs(const std::string& engine);
std::vector<std::string> served_engines();  // engines with a built-in serving file

struct ServedFitPoint {
  ServedRun run;
  bool fitted = false;        // used by the fit (a finite rate, an inter-token latency, a TTFT)
  std::string why_not;        // when not fitted
  double predicted_itl_s = 0, predicted_ttft_s = 0;   // the simulation with every run's fit
  double held_itl_s = 0, held_ttft_s = 0;             // ... with the fit of the other devices' (models') runs
};

// What a held-out check leaves out in turn: nothing, each device's runs, or each model's.
enum class ServedHoldOut { none, device, model };

struct ServingFit {
  StepCalibration calibration;       // pooled over every fitted run; bands from the held-out runs
  ServedHoldOut held_out = ServedHoldOut::none;  // what the points' held_* figures left out
  std::vector<ServedFitPoint> points;
  std::vector<std::string> devices;  // with fitted runs
  // Each study's front end (its runs' source repository or site: the way its client reached the
  // server), which its runs were fitted and predicted with; the calibration's is their geometric mean.
  std::map<std::string, double> study_front_end_s;
};

// Fits `engine`'s runs; `hold_out` adds each device's (or model's) runs predicted without them (a
// refit per device or model) and the bands they give. nullopt when fewer than 4 runs can be
// fitted. Seconds: a fit simulates every run a few hundred times.
std::optional<ServingFit> fit_served_runs(const std::vector<ServedRun>& runs, const std::string& engine,
                                          ServedHoldOut hold_out);
// The fit of `engine`'s built-in runs, with each device's runs held out, computed (once per
// process; what `calibrate --loo device --engine E` prints and its stored fit's bands). Null
// without data.
const ServingFit* builtin_serving_fit(const std::string& engine);

// The fit as a data file, hwprofiles/serving/fits/<engine>.json: {"engine", "devices",
// "calibration"} (calibrate adds the command that wrote it); what every command reads, so that none fits at run time (the test
// test_serving_prior refits and compares). InputError naming `where` for a malformed one.
Json serving_fit_to_json(const ServingFit& fit);
ServingFit serving_fit_from_json(const Json& j, const std::string& where);
// The stored fit of `engine` (null without one), and the engines that have one.
const ServingFit* stored_serving_fit(const std::string& engine);
std::vector<std::string> served_fit_engines();

// The run's inter-token figure (the same statistic it printed) and TTFT (mean or median, as it
// printed) that the serving simulation predicts with `steps`, scheduled by the engine's defaults
// (planner/serving/engine_policy); nullopt when the run cannot be simulated (no rate, unknown
// model or profile).
struct ServedPrediction {
  double itl_s = 0, ttft_s = 0;
};
std::optional<ServedPrediction> predict_served_run(const ServedRun& run, const StepCalibration& steps);

// A run's output tokens per second, every request sent at once (an offline throughput run:
// trtllm-bench's), from the serving simulation with `steps` and the engine's defaults; nullopt
// when the run cannot be simulated (no lengths, unknown model, weights or profile).
std::optional<double> predict_served_throughput(const ServedRun& run, const StepCalibration& steps);

// The engine whose step model stands for `engine` when its published runs give no latencies to
// fit (TensorRT-LLM's are offline throughputs): vLLM, the fit of the most runs and devices. Empty
// for an engine with a fit of its own or without published runs.
std::string step_donor(const std::string& engine);

// `engine`'s served step model for `hw`, from its stored fit: calibrated where the fit has the
// device's runs, else transferred; for an engine without a fit, its step donor's, transferred.
// nullopt when neither has a stored fit.
std::optional<StepCalibration> served_step_calibration(const HwProfile& hw, const std::string& engine);

}  // namespace infer_plan
