// SVG charts for `infer-plan report`: predicted-vs-measured bars and x-y line charts, written as
// standalone SVG 1.1 text with nothing beyond fmt. The same input gives the same bytes (values
// printed with {:.4g}, coordinates with one decimal), so charts can be golden files.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace infer_plan::apps {

// One figure of the report: the planner's prediction and the runtime's measurement, in one unit.
struct BarGroup {
  std::string label;  // the figure's name, printed under its pair of bars
  std::string unit;   // printed after each value ("tok/s", "GiB"); may be empty
  double predicted;
  double measured;
};

// One panel per figure, two bars each (predicted, measured), in a grid. Figures of different
// units never share an axis: each panel has its own y axis from 0, with ticks and the unit. Under
// each panel, one line each: predicted, measured and the error as `report`'s table gives it,
// (measured - predicted) / predicted. NaN/inf values draw no bar. No two texts overlap (each
// text is kept to the width the layout gives it, by the advance of svg_text_width).
std::string svg_predicted_vs_measured(const std::string& title, const std::vector<BarGroup>& groups);

// One line (or set of markers) of an x-y chart. Points pair x[i] with y[i] up to the shorter of
// the two; a point with a NaN/inf coordinate is skipped and breaks the line there.
struct Series {
  std::string name;  // "predicted" and "measured" get the report's two fixed colours
  std::vector<double> x, y;
  bool markers_only = false;
  // Beside each point's marker, where it meets no other text (empty or missing: none): a plan's
  // name on a frontier. A label that cannot be placed is left out and counted in a note.
  std::vector<std::string> labels = {};
  // Each point's interval (empty or missing: none), a vertical bar with caps; the y axis reaches it.
  std::vector<double> lo = {}, hi = {};
};

// A horizontal line across the plot at y (a service level), dashed, its label at the right end.
// The y axis always reaches it.
struct Guide {
  std::string label;
  double y;
};

// One x-y chart of a figure of several, stacked one above the other on the same canvas width.
struct LinePanel {
  std::string x_label, y_label;
  std::vector<Series> series;
  std::vector<Guide> guides = {};
};

// Axes with round ticks, axis labels and a legend. The y axis always includes 0: the charts show
// rates and times, and a baseline above zero would exaggerate the gap between two series. When
// every x is a whole number (batch sizes, block lengths) the x ticks are whole numbers. Outliers
// do not flatten the rest: the y axis ends at 1.25 x the larger of the predicted series' top and
// the 90th percentile of the measured points, and a point above it is drawn as a triangle on the
// top edge, with a note of how many and the largest value. Series whose names start with
// "predicted" are blue (the second one dashed), "measured" orange, in every chart.
std::string svg_line_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                           const std::vector<Series>& series);
// Several such charts under one title and one legend (a series keeps its colour in every panel),
// each with its own axes; a panel with no points says so.
std::string svg_line_panels(const std::string& title, const std::vector<LinePanel>& panels);

// One row of a memory waterfall: a total (capacity, usable, headroom) drawn from 0, or an amount
// taken from the running total (weights, KV) or given back to it (offloaded to the host), drawn
// from where the row above ended.
struct WaterfallStep {
  enum class Kind { total, minus, plus };
  std::string label;
  double value;
  Kind kind;
  std::string note = {};  // the bar's tooltip (<title>)
};

// Horizontal bars, one row per step, on one axis in `unit` from 0 (or below, for a negative
// total, drawn red) to the largest total: totals blue, amounts taken orange, given back green;
// each row's label on the left and its value on the right.
std::string svg_waterfall(const std::string& title, const std::string& unit, const std::vector<WaterfallStep>& steps);

// Exposed for tests.
// Ticks at multiples of a round step (1, 2 or 5 times a power of ten): the smallest such step with
// (hi - lo) / step <= target_count. The first tick is <= lo, the last >= hi.
// lo == hi is widened (by 10% of |lo|, or by 1 around 0). Empty when lo or hi is not finite.
std::vector<double> nice_ticks(double lo, double hi, int target_count);
// The width the layout gives a text of `font_size` px: 0.65 em per character, wider than the
// digits and most letters of DejaVu Sans and Liberation Sans (tests/apps/test_svg_plot checks
// that no two texts' boxes meet at this width).
double svg_text_width(std::string_view text, double font_size);
// &, <, >, " and ' as entities; control bytes other than tab and newline dropped (XML 1.0 forbids them).
std::string xml_escape(std::string_view text);

}  // namespace infer_plan::apps
