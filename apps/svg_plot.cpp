// SVG built by appending text: one <g> per bar group or series, shapes as self-closing elements.
// Coordinates are SVG user units (pixels at 100% zoom) on a fixed 720x420 canvas; y grows downward.
#include "apps/svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>

namespace infer_plan::apps {
namespace {

constexpr int canvas_width = 720;
constexpr int canvas_height = 420;
constexpr double legend_y = 46;  // baseline of the legend row, under the title
constexpr double char_width = 7;  // rough advance of a 12px sans-serif glyph, to space legend entries

// Bar chart: bars stand on bar_base_y; the tallest bar of a group is bar_max_height tall, which
// leaves room above it for the value text and below the base for the label and the error line.
constexpr double bar_left = 40, bar_right = 680;
constexpr double bar_base_y = 340, bar_max_height = 240;
constexpr double bar_width_max = 60;

// Line chart: the plot area; the left margin holds the y tick labels, the bottom the x labels.
constexpr double plot_left = 80, plot_right = 690, plot_top = 60, plot_bottom = 350;

constexpr const char* predicted_colour = "#4C72B0";
constexpr const char* measured_colour = "#DD8452";
// The rest of seaborn's "deep" palette, for series named neither "predicted" nor "measured".
constexpr const char* other_colours[] = {"#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C"};
constexpr size_t other_colour_count = sizeof(other_colours) / sizeof(other_colours[0]);

// "+ 0.0" turns -0.0 into 0.0, so a zero never prints as "-0".
std::string coord(double v) { return fmt::format("{:.1f}", v + 0.0); }
std::string value_text(double v) { return fmt::format("{:.4g}", v + 0.0); }

void text(std::string& out, double x, double y, const char* anchor, std::string_view content,
          std::string_view extra_attributes = "") {
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"{}\"{}>{}</text>\n", coord(x), coord(y), anchor,
                     extra_attributes, xml_escape(content));
}

void line(std::string& out, double x1, double y1, double x2, double y2, const char* colour) {
  out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"1\"/>\n", coord(x1),
                     coord(y1), coord(x2), coord(y2), colour);
}

void open_svg(std::string& out, const std::string& title) {
  out += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n",
      canvas_width, canvas_height);
  out += "<title>" + xml_escape(title) + "</title>\n";
  out += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#FFFFFF\"/>\n", canvas_width,
                     canvas_height);
  text(out, canvas_width / 2.0, 24, "middle", title, " font-size=\"16\" font-weight=\"bold\"");
}

std::string close_with_no_data(std::string& out) {
  text(out, canvas_width / 2.0, canvas_height / 2.0, "middle", "no data", " font-size=\"14\" fill=\"#888888\"");
  return out + "</svg>\n";
}

struct LegendEntry {
  std::string name;
  const char* colour;
};

// A row of swatches, left to right from x.
void legend(std::string& out, const std::vector<LegendEntry>& entries, double x) {
  out += "<g>\n";
  for (const LegendEntry& e : entries) {
    out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"10\" fill=\"{}\"/>\n", coord(x),
                       coord(legend_y - 9), e.colour);
    text(out, x + 16, legend_y, "start", e.name);
    x += 16 + char_width * static_cast<double>(e.name.size()) + 20;
  }
  out += "</g>\n";
}

// One bar standing on the base line with its value and unit above; nothing for a NaN/inf value. Values
// <= 0 (or a group whose largest value is <= 0) draw a zero-height bar but still print the value.
void bar(std::string& out, double centre, double width, double value, double group_max, const std::string& unit,
         const char* css_class, const char* colour) {
  if (!std::isfinite(value)) return;
  const double height = (group_max > 0 && value > 0) ? value / group_max * bar_max_height : 0;
  out += fmt::format("<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>\n", css_class,
                     coord(centre - width / 2), coord(bar_base_y - height), coord(width), coord(height), colour);
  // The unit goes on its own line under the value: side by side, "4.33 GiB" is wider than a bar
  // and runs into its neighbour's label when the two bars are of equal height.
  const double unit_height = unit.empty() ? 0 : 12;
  text(out, centre, bar_base_y - height - 4 - unit_height, "middle", value_text(value), " font-size=\"11\"");
  if (!unit.empty()) text(out, centre, bar_base_y - height - 4, "middle", unit, " font-size=\"10\" fill=\"#555555\"");
}

const char* series_colour(const std::string& name, size_t& others_used) {
  if (name == "predicted") return predicted_colour;
  if (name == "measured") return measured_colour;
  return other_colours[others_used++ % other_colour_count];
}

}  // namespace

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t' || c == '\n') out += c;
    }
  }
  return out;
}

std::vector<double> nice_ticks(double lo, double hi, int target_count) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) return {};
  if (hi < lo) std::swap(lo, hi);
  if (hi == lo) {
    const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  const double range = hi - lo;
  if (!std::isfinite(range)) return {};
  const double raw_step = range / std::max(target_count, 1);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw_step)));
  double step = 10 * magnitude;
  for (double m : {1.0, 2.0, 5.0}) {
    // The 1e-9 keeps a raw step that is already round (2 from 10/5) from being pushed to the next
    // round number by the rounding of log10 and pow.
    if (m * magnitude >= raw_step * (1 - 1e-9)) {
      step = m * magnitude;
      break;
    }
  }
  // The same slack on the ends: 0.3 / 0.1 is 2.9999999999999996 in binary, and must count as 3.
  const double first = std::floor(lo / step + 1e-9);
  const double last = std::ceil(hi / step - 1e-9);
  const double intervals = std::max(last - first, 1.0);
  std::vector<double> ticks;
  for (double i = 0; i <= intervals; ++i) {
    const double t = (first + i) * step;  // a multiple of step, not a running sum: no drift
    if (!std::isfinite(t)) return {};
    ticks.push_back(t);
  }
  return ticks;
}

std::string svg_predicted_vs_measured(const std::string& title, const std::vector<BarGroup>& groups) {
  std::string out;
  open_svg(out, title);
  bool any_value = false;
  for (const BarGroup& g : groups) any_value = any_value || std::isfinite(g.predicted) || std::isfinite(g.measured);
  if (!any_value) return close_with_no_data(out);

  legend(out, {{"predicted", predicted_colour}, {"measured", measured_colour}}, bar_left);
  line(out, bar_left, bar_base_y, bar_right, bar_base_y, "#000000");
  const double slot = (bar_right - bar_left) / static_cast<double>(groups.size());
  const double bar_width = std::min(slot * 0.3, bar_width_max);
  for (size_t i = 0; i < groups.size(); ++i) {
    const BarGroup& g = groups[i];
    const double centre = bar_left + slot * (static_cast<double>(i) + 0.5);
    double group_max = 0;
    for (double v : {g.predicted, g.measured})
      if (std::isfinite(v)) group_max = std::max(group_max, v);
    out += "<g>\n";
    bar(out, centre - bar_width * 0.55, bar_width, g.predicted, group_max, g.unit, "predicted", predicted_colour);
    bar(out, centre + bar_width * 0.55, bar_width, g.measured, group_max, g.unit, "measured", measured_colour);
    text(out, centre, bar_base_y + 16, "middle", g.label);
    if (std::isfinite(g.predicted) && std::isfinite(g.measured) && g.predicted != 0) {
      const double error_percent = (g.measured - g.predicted) / g.predicted * 100;  // as report's table
      text(out, centre, bar_base_y + 32, "middle", fmt::format("error {:+.1f}%", error_percent + 0.0),
           " font-size=\"11\" fill=\"#555555\"");
    }
    out += "</g>\n";
  }
  return out + "</svg>\n";
}

std::string svg_line_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                           const std::vector<Series>& series) {
  std::string out;
  open_svg(out, title);
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
  double y_lo = 0, y_hi = 0;  // 0 is always on the y axis (see the header)
  for (const Series& s : series) {
    for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      x_lo = std::min(x_lo, s.x[i]);
      x_hi = std::max(x_hi, s.x[i]);
      y_lo = std::min(y_lo, s.y[i]);
      y_hi = std::max(y_hi, s.y[i]);
    }
  }
  if (x_lo > x_hi) return close_with_no_data(out);
  const std::vector<double> x_ticks = nice_ticks(x_lo, x_hi, 6);
  const std::vector<double> y_ticks = nice_ticks(y_lo, y_hi, 5);
  // Ranges near the limits of double can leave no usable axis; say so rather than print "inf".
  if (x_ticks.size() < 2 || y_ticks.size() < 2 || !(x_ticks.back() > x_ticks.front()) ||
      !(y_ticks.back() > y_ticks.front()))
    return close_with_no_data(out);
  const double x0 = x_ticks.front(), x_span = x_ticks.back() - x0;
  const double y0 = y_ticks.front(), y_span = y_ticks.back() - y0;
  auto map_x = [&](double x) { return plot_left + (x - x0) / x_span * (plot_right - plot_left); };
  auto map_y = [&](double y) { return plot_bottom - (y - y0) / y_span * (plot_bottom - plot_top); };

  out += "<g>\n";
  for (double t : y_ticks) {
    line(out, plot_left, map_y(t), plot_right, map_y(t), "#E5E5E5");
    text(out, plot_left - 6, map_y(t) + 4, "end", value_text(t));
  }
  for (double t : x_ticks) {
    line(out, map_x(t), plot_bottom, map_x(t), plot_bottom + 5, "#000000");
    text(out, map_x(t), plot_bottom + 18, "middle", value_text(t));
  }
  line(out, plot_left, plot_bottom, plot_right, plot_bottom, "#000000");
  line(out, plot_left, plot_top, plot_left, plot_bottom, "#000000");
  text(out, (plot_left + plot_right) / 2, plot_bottom + 40, "middle", x_label);
  const double y_label_x = 18, y_label_y = (plot_top + plot_bottom) / 2;
  text(out, y_label_x, y_label_y, "middle", y_label,
       fmt::format(" transform=\"rotate(-90 {} {})\"", coord(y_label_x), coord(y_label_y)));
  out += "</g>\n";

  std::vector<LegendEntry> entries;
  size_t others_used = 0;
  for (const Series& s : series) entries.push_back({s.name, series_colour(s.name, others_used)});
  legend(out, entries, plot_left);

  for (size_t k = 0; k < series.size(); ++k) {
    const Series& s = series[k];
    const char* colour = entries[k].colour;
    out += "<g>\n";
    // Lines first, markers on top. A skipped point ends a run; a run of one point is a marker only.
    std::string run;
    size_t run_points = 0;
    auto flush_run = [&] {
      if (!s.markers_only && run_points >= 2)
        out += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", run, colour);
      run.clear();
      run_points = 0;
    };
    std::string markers;
    for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) {
        flush_run();
        continue;
      }
      const std::string px = coord(map_x(s.x[i])), py = coord(map_y(s.y[i]));
      run += (run_points++ ? " " : "") + px + "," + py;
      markers += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"{}\"/>\n", px, py, colour);
    }
    flush_run();
    out += markers + "</g>\n";
  }
  return out + "</svg>\n";
}

}  // namespace infer_plan::apps
