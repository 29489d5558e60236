// The step model where a device has no measurements of its own: an engine's built-in data files,
// each mapped on its own device's profile (planner/calibration/calibration), then the points of the
// devices of the same architecture (else of its vendor, else all) fitted together as one device's
// are: a fixed time per layer, a read cost per datasheet byte and per weight type, plus two covariates: the
// KV cache's own read cost (attention at long contexts) and the read cost's change with the
// datasheet bandwidth (a faster memory is reached at a smaller fraction). A new device is then
// predicted from its own datasheet bandwidth. Its error band is leave-one-device-out: every device with data predicted from the others as if it
// had none, at the level it would get (its architecture's other devices, else all of them).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "planner/calibration/calibration.hpp"
#include "planner/model/hw_profile.hpp"

namespace infer_plan {

struct DeviceCalibration {
  std::string device;   // the built-in profile the data file is named after
  std::string arch;     // its profile's, or empty
  double bandwidth_bytes_per_s = 0;  // its profile's datasheet memory bandwidth
  double compute_ops_per_s = 0;      // its profile's compute rate the prefill is measured against (roofline_rates)
  std::optional<double> board_power_w;  // its profile's, if stated
  CalibrationResult fit;  // alone, without leave-one-out: the pool's input (its points, its prefill terms)
  std::vector<BuildEra> eras;  // each of fit.points' build era (build_era), read once
};

// Every built-in data file of `engine` whose device has a built-in profile, fitted alone; once per
// process (the fits are pure functions of the embedded data).
const std::vector<DeviceCalibration>& builtin_device_calibrations(const std::string& engine);

// A built-in device's data fitted again with the other devices' pooled terms as its prior
// (CalibrationOptions::prior), with leave-one-file-out: the calibration it gets. Once per process
// and device; InputError when `device` has no data of `engine`.
const CalibrationResult& own_calibration(const std::string& engine, const std::string& device);

// What a calibration predicts for a point of a fit: decode fixed + the reads at each type's rate,
// prefill fixed + compute / efficiency (the probe's known overhead added); NaN for a prefill point
// when the calibration has no prefill terms.
double predict_point(const StepCalibration& c, const CalibrationPoint& p);

// The pooled terms for `hw` (its arch, empty: not stated; its datasheet bandwidth) under `engine`,
// without `exclude` (leave-one-device-out); basis "transferred", its note naming the level and the
// devices. Its error bands are the engine's leave-one-device-out bands. nullopt when no device is left.
std::optional<StepCalibration> transferred_calibration(const std::string& engine, const HwProfile& hw,
                                                       const std::string& exclude = "");

struct DeviceOutPoint {
  std::string device, arch;
  size_t index = 0;           // the point's in its device's fit (and own_calibration)
  std::string level;          // what predicted it: an architecture's name, or "engine"
  CalibrationPoint point;     // as its own device's fit mapped it
  double predicted_s = 0;     // by the others' pooled terms
  double residual() const { return point.measured_s / predicted_s - 1; }
};

// Each device's points predicted from the other devices (leave-one-device-out), decode and prefill.
std::vector<DeviceOutPoint> leave_one_device_out(const std::string& engine);

// The device's built-in data fitted with the pooled terms of the others as its prior
// (CalibrationOptions::prior); nullopt when it has no data file for the engine.
std::optional<CalibrationResult> device_calibration_result(const HwProfile& hw, const std::string& engine);

// The calibration `resolve_plan` gives `hw` under `engine`: the device's own built-in data
// (basis "calibrated"), else the transferred terms; nullopt when the engine has no data at all.
std::optional<StepCalibration> engine_step_calibration(const HwProfile& hw, const std::string& engine);

}  // namespace infer_plan
