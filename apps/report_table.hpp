// The report's rows: a figure predicted and measured, the relative error, and the bound it must
// stay within (or a rule of its own, such as "the predicted best block is within 5% of the
// measured best"), printed as text or markdown.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace infer_plan::apps {

struct Row {
  Row(std::string figure_, std::string unit_, double predicted_, double measured_, std::optional<double> bound_,
      std::string note_ = "")
      : figure(std::move(figure_)), unit(std::move(unit_)), predicted(predicted_), measured(measured_), bound(bound_),
        note(std::move(note_)) {}
  std::string figure, unit;
  double predicted = 0, measured = 0;
  std::optional<double> bound;  // relative; 0 = must be equal
  std::string note;
  // A calibrated profile's leave-one-out band around `predicted` (lo, hi), shown with whether
  // the measurement fell inside it; not a verdict.
  std::optional<std::pair<double, double>> band;
  bool inside_band() const { return band && measured >= band->first && measured <= band->second; }
  std::optional<bool> rule;     // a verdict by a rule other than the relative bound
  std::string rule_name;        // shown in the bound column: "5% of best"
  // A law the runtime's own accounting must obey whatever the machine's speed (Little's law over
  // measured figures); exact rows (bound 0) are speed-independent too.
  bool law = false;
  double error() const;
  bool bounded() const { return bound || rule; }
  bool holds() const;
  // Bytes, counts and laws: a failure is a bug on any machine. The rest are timing bounds, whose
  // verdict depends on how steady the machine was (--check-exact leaves them out of the exit).
  bool speed_independent() const { return law || (bound && *bound == 0); }
};

std::string format_value(double v, const std::string& unit);
std::string table(const std::vector<Row>& rows, bool markdown);

}  // namespace infer_plan::apps
