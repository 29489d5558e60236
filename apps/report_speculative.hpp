// Speculative decoding in `infer-plan report`: the planner's table computed from the
// acceptance the runtime measured (i.i.d. and per position) and the roofline's pass times, beside
// the measured sweep over block lengths; the best block predicted vs measured.
#pragma once
#include <string>
#include <vector>

#include "apps/report_table.hpp"
#include "planner/core/json_fields.hpp"
#include "planner/plan/predict.hpp"
#include "planner/cost/speculative.hpp"
#include "runtime/speculative_sweep.hpp"

namespace infer_plan::apps {

// Issue 6's rule: the planner's best block from the measured per-position rates is the measured
// best, or its measured ms per token is within this fraction of the measured best's.
inline constexpr double kSpecBestBlockBound = 0.05;
// Acceptance counted as moderate, where the measured curve must have an interior minimum.
inline constexpr double kSpecModerateLow = 0.3, kSpecModerateHigh = 0.9;

struct SpecComparison {
  runtime::SpecSweepResult sweep;
  uint64_t context = 0;             // the mean context the roofline is evaluated at
  double plain_predicted_ms = 0;
  SpecResult per_pos, iid;          // the planner's tables from the measured rates
  std::vector<Row> rows;
};

SpecComparison compare_speculative(const ResolvedPlan& rp, runtime::SpecSweepResult sweep);
// m | tokens per round | verify ms | draft ms | ms per token (i.i.d., per position, measured).
std::string spec_sweep_table(const SpecComparison& c, bool markdown);
Json spec_comparison_json(const SpecComparison& c);
// ms per token against block length: both predictions and the measured points.
std::string spec_sweep_svg(const SpecComparison& c, const std::string& title);

}  // namespace infer_plan::apps
