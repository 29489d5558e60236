#include "apps/report_table.hpp"

#include <fmt/format.h>

#include <cmath>

namespace infer_plan::apps {

double Row::error() const {
  return predicted != 0 ? (measured - predicted) / predicted : (measured == 0 ? 0 : INFINITY);
}

bool Row::holds() const {
  if (rule) return *rule;
  return !bound || std::abs(error()) <= *bound + 1e-12;
}

std::string format_value(double v, const std::string& unit) {
  if (unit == "B") return fmt::format("{:.0f}", v);
  return fmt::format("{:.4g}", v);
}

std::string table(const std::vector<Row>& rows, bool markdown) {
  std::string out;
  if (markdown) out += "| figure | unit | predicted | measured | error | bound | verdict | note |\n|---|---|---:|---:|---:|---:|---|---|\n";
  else out += fmt::format("  {:<30} {:>14} {:>14} {:>9} {:>10}  {}\n", "figure", "predicted", "measured", "error", "bound", "");
  for (const Row& r : rows) {
    const std::string err = std::isfinite(r.error()) ? fmt::format("{:+.1f}%", 100 * r.error()) : "-";
    const std::string bound = r.rule ? r.rule_name : !r.bound ? "" : *r.bound == 0 ? "exact" : fmt::format("{:.0f}%", 100 * *r.bound);
    const std::string verdict = !r.bounded() ? "" : r.holds() ? "ok" : "FAILS";
    const std::string note =
        !r.band ? r.note
                : fmt::format("{}{}band {}-{}: measured {}", r.note, r.note.empty() ? "" : "; ", format_value(r.band->first, r.unit),
                              format_value(r.band->second, r.unit), r.inside_band() ? "inside" : "OUTSIDE");
    if (markdown)
      out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", r.figure, r.unit, format_value(r.predicted, r.unit),
                         format_value(r.measured, r.unit), err, bound, verdict, note);
    else
      out += fmt::format("  {:<30} {:>14} {:>14} {:>9} {:>10}  {}{}\n", r.figure + (r.unit.empty() ? "" : " (" + r.unit + ")"),
                         format_value(r.predicted, r.unit), format_value(r.measured, r.unit), err, bound, verdict,
                         note.empty() ? "" : "  " + note);
  }
  return out;
}

}  // namespace infer_plan::apps
