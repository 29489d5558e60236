// SVG built by appending text: one <g> per bar group or series, shapes as self-closing elements.
// Coordinates are SVG user units (pixels at 100% zoom) on a canvas 720 wide (420 high for line
// charts; bar charts grow a row of panels at a time); y grows downward.
#include "apps/svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <limits>
#include <tuple>

namespace infer_plan::apps {
namespace {

constexpr int canvas_width = 720;
constexpr double legend_y = 46;  // baseline of the first legend row, under the title
constexpr double legend_row = 18;

// Bar chart: a grid of panels, at most four to a row, each with its own axis.
constexpr int panels_per_row = 4;
constexpr double grid_left = 16, grid_top = 62;
constexpr double panel_width = (canvas_width - 2 * grid_left) / panels_per_row;
constexpr double panel_height = 236;
constexpr double panel_plot_top = 26, panel_plot_height = 150;  // from the panel's top
constexpr double panel_axis_gutter = 46;                         // tick labels left of the axis

// Line chart: the plot area; the left margin holds the y tick labels, the bottom the x labels.
constexpr int line_canvas_height = 420;
constexpr double plot_left = 80, plot_right = 690, plot_top_base = 62, plot_bottom = 350;

constexpr const char* predicted_colour = "#4C72B0";
constexpr const char* predicted_second_colour = "#1F3A66";  // a second predicted series, dashed
constexpr const char* measured_colour = "#DD8452";
// The rest of seaborn's "deep" palette, for series named neither "predicted" nor "measured".
constexpr const char* other_colours[] = {"#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C"};
constexpr size_t other_colour_count = sizeof(other_colours) / sizeof(other_colours[0]);

// "+ 0.0" turns -0.0 into 0.0, so a zero never prints as "-0".
std::string coord(double v) { return fmt::format("{:.1f}", v + 0.0); }
std::string value_text(double v) { return fmt::format("{:.4g}", v + 0.0); }

// `content` cut (with "...") to fit `max_width` at `font_size`.
std::string fit_text(std::string content, double font_size, double max_width) {
  if (svg_text_width(content, font_size) <= max_width) return content;
  while (!content.empty() && svg_text_width(content + "...", font_size) > max_width) {
    content.pop_back();
    while (!content.empty() && (static_cast<unsigned char>(content.back()) & 0xC0) == 0x80) content.pop_back();
  }
  return content.empty() ? std::string() : content + "...";
}

void text(std::string& out, double x, double y, const char* anchor, std::string_view content, double font_size,
          std::string_view extra_attributes = "") {
  if (content.empty()) return;
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"{}\" font-size=\"{}\"{}>{}</text>\n", coord(x), coord(y),
                     anchor, font_size, extra_attributes, xml_escape(content));
}

void line(std::string& out, double x1, double y1, double x2, double y2, const char* colour) {
  out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"1\"/>\n", coord(x1),
                     coord(y1), coord(x2), coord(y2), colour);
}

void open_svg(std::string& out, const std::string& title, double height) {
  out += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n",
      canvas_width, height);
  out += "<title>" + xml_escape(title) + "</title>\n";
  out += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#FFFFFF\"/>\n", canvas_width, height);
  text(out, canvas_width / 2.0, 24, "middle", fit_text(title, 16, canvas_width - 20), 16, " font-weight=\"bold\"");
}

std::string close_with_no_data(std::string& out, double height) {
  text(out, canvas_width / 2.0, height / 2.0, "middle", "no data", 14, " fill=\"#888888\"");
  return out + "</svg>\n";
}

struct LegendEntry {
  std::string name;
  const char* colour;
};

// Swatches left to right from x, wrapping to a new row at the canvas's edge; returns the rows used.
int legend(std::string& out, const std::vector<LegendEntry>& entries, double left) {
  out += "<g>\n";
  double x = left;
  int row = 0;
  for (const LegendEntry& e : entries) {
    const std::string name = fit_text(e.name, 12, canvas_width - left - 40);
    const double width = 16 + svg_text_width(name, 12);
    if (x > left && x + width > canvas_width - 10) {
      x = left;
      ++row;
    }
    const double y = legend_y + row * legend_row;
    out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"10\" fill=\"{}\"/>\n", coord(x), coord(y - 9),
                       e.colour);
    text(out, x + 16, y, "start", name, 12);
    x += width + 20;
  }
  out += "</g>\n";
  return row + 1;
}

// Ticks for [lo, hi]; whole numbers only when `whole` (a tick step below 1 becomes 1).
std::vector<double> axis_ticks(double lo, double hi, int target_count, bool whole) {
  std::vector<double> ticks = nice_ticks(lo, hi, target_count);
  if (whole && ticks.size() >= 2 && ticks[1] - ticks[0] < 1) {
    ticks.clear();
    for (double t = std::floor(lo); t <= std::ceil(hi) + 0.5; ++t) ticks.push_back(t);
    if (ticks.size() < 2) ticks.push_back(ticks.empty() ? 1 : ticks.back() + 1);
  }
  return ticks;
}

const char* series_colour(const std::string& name, size_t& predicted_used, size_t& others_used) {
  if (name.starts_with("predicted")) return predicted_used++ == 0 ? predicted_colour : predicted_second_colour;
  if (name.starts_with("measured")) return measured_colour;
  return other_colours[others_used++ % other_colour_count];
}

// One panel of the bar chart: the figure's own axis from 0, its two bars, three lines of text under it.
void bar_panel(std::string& out, const BarGroup& g, double left, double top) {
  const double axis_x = left + panel_axis_gutter, right = left + panel_width - 8;
  const double plot_top = top + panel_plot_top, base_y = plot_top + panel_plot_height;
  std::string label = g.unit.empty() ? g.label : fmt::format("{} ({})", g.label, g.unit);
  text(out, left + panel_width / 2, top + 14, "middle", fit_text(label, 12, panel_width - 8), 12,
       " font-weight=\"bold\"");
  double top_value = 0;
  for (double v : {g.predicted, g.measured})
    if (std::isfinite(v)) top_value = std::max(top_value, v);
  const std::vector<double> ticks = nice_ticks(0, top_value > 0 ? top_value : 1, 4);
  const double axis_top = ticks.size() >= 2 && ticks.back() > 0 ? ticks.back() : 1;
  auto map_y = [&](double v) { return base_y - v / axis_top * panel_plot_height; };
  for (double t : ticks) {
    line(out, axis_x - 4, map_y(t), axis_x, map_y(t), "#000000");
    line(out, axis_x, map_y(t), right, map_y(t), "#EEEEEE");
    text(out, axis_x - 6, map_y(t) + 3.5, "end", fit_text(value_text(t), 10, panel_axis_gutter - 8), 10);
  }
  line(out, axis_x, plot_top, axis_x, base_y, "#000000");
  line(out, axis_x, base_y, right, base_y, "#000000");
  const double slot = (right - axis_x) / 2, bar_width = std::min(36.0, slot * 0.6);
  auto bar = [&](double value, int k, const char* css_class, const char* colour) {
    if (!std::isfinite(value)) return;
    const double height = value > 0 ? base_y - map_y(value) : 0;
    const double centre = axis_x + slot * (k + 0.5);
    out += fmt::format("<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>\n", css_class,
                       coord(centre - bar_width / 2), coord(base_y - height), coord(bar_width), coord(height), colour);
  };
  bar(g.predicted, 0, "predicted", predicted_colour);
  bar(g.measured, 1, "measured", measured_colour);
  const double text_width = panel_width - 12;
  const double lines_x = left + 6;
  if (std::isfinite(g.predicted))
    text(out, lines_x, base_y + 16, "start", fit_text("predicted " + value_text(g.predicted), 10, text_width), 10,
         fmt::format(" fill=\"{}\"", predicted_colour));
  if (std::isfinite(g.measured))
    text(out, lines_x, base_y + 30, "start", fit_text("measured " + value_text(g.measured), 10, text_width), 10,
         fmt::format(" fill=\"{}\"", measured_colour));
  if (std::isfinite(g.predicted) && std::isfinite(g.measured) && g.predicted != 0) {
    const double error_percent = (g.measured - g.predicted) / g.predicted * 100;  // as report's table
    text(out, lines_x, base_y + 44, "start", fit_text(fmt::format("error {:+.1f}%", error_percent + 0.0), 10, text_width),
         10, " fill=\"#555555\"");
  }
}

}  // namespace

double svg_text_width(std::string_view text, double font_size) {
  size_t characters = 0;
  for (char c : text) characters += (static_cast<unsigned char>(c) & 0xC0) != 0x80;  // UTF-8 lead bytes
  return 0.65 * font_size * static_cast<double>(characters);
}

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
  const size_t rows = std::max<size_t>(1, (groups.size() + panels_per_row - 1) / panels_per_row);
  const double height = grid_top + static_cast<double>(rows) * panel_height + 8;
  open_svg(out, title, height);
  bool any_value = false;
  for (const BarGroup& g : groups) any_value = any_value || std::isfinite(g.predicted) || std::isfinite(g.measured);
  if (!any_value) return close_with_no_data(out, height);
  legend(out, {{"predicted", predicted_colour}, {"measured", measured_colour}}, grid_left + 6);
  for (size_t i = 0; i < groups.size(); ++i) {
    out += "<g>\n";
    bar_panel(out, groups[i], grid_left + static_cast<double>(i % panels_per_row) * panel_width,
              grid_top + static_cast<double>(i / panels_per_row) * panel_height);
    out += "</g>\n";
  }
  return out + "</svg>\n";
}

namespace {

// A text's box as the layout reserves it: from the font size above the baseline to a quarter below.
struct TextBox {
  double x0, y0, x1, y1;
  bool meets(const TextBox& o) const { return !(x1 <= o.x0 || o.x1 <= x0 || y1 <= o.y0 || o.y1 <= y0); }
};
TextBox text_box(double x, double y, const char* anchor, std::string_view content, double font_size) {
  const double w = svg_text_width(content, font_size);
  const double left = anchor[0] == 'm' ? x - w / 2 : anchor[0] == 'e' ? x - w : x;
  return {left, y - font_size, left + w, y + 0.25 * font_size};
}

constexpr double panel_stride = 370;  // one panel's plot, its x labels and notes, and a gap
constexpr const char* guide_colour = "#222222";

// One chart's axes, guides, series and labels, `shift` below the first panel's place; returns
// false when it has no usable axis (then nothing was drawn).
bool line_panel(std::string& out, const LinePanel& p, const std::vector<LegendEntry>& colours, double plot_top,
                double shift) {
  const double bottom = plot_bottom + shift;
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
  double y_lo = 0, y_hi = 0, predicted_top = 0;  // 0 is always on the y axis (see the header)
  bool whole_x = true;
  std::vector<double> measured_y;
  for (const Series& s : p.series) {
    for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      x_lo = std::min(x_lo, s.x[i]);
      x_hi = std::max(x_hi, s.x[i]);
      y_lo = std::min(y_lo, s.y[i]);
      y_hi = std::max(y_hi, s.y[i]);
      whole_x = whole_x && s.x[i] == std::round(s.x[i]);
      if (s.name.starts_with("predicted"))
        predicted_top = std::max(predicted_top, s.y[i]);
      else
        measured_y.push_back(s.y[i]);
      for (const std::vector<double>* end : {&s.lo, &s.hi})
        if (i < end->size() && std::isfinite((*end)[i])) {
          y_lo = std::min(y_lo, (*end)[i]);
          y_hi = std::max(y_hi, (*end)[i]);
          if (s.name.starts_with("predicted")) predicted_top = std::max(predicted_top, (*end)[i]);
        }
    }
  }
  if (x_lo > x_hi) return false;
  double guide_top = 0;
  for (const Guide& g : p.guides)
    if (std::isfinite(g.y)) guide_top = std::max(guide_top, g.y);
  // Outliers: the axis ends at 1.25 x max(the predictions' top, the measured points' 90th
  // percentile, the guides), and always reaches the highest guide.
  double y_cap = std::max(y_hi, guide_top);
  if (!measured_y.empty()) {
    std::sort(measured_y.begin(), measured_y.end());
    const auto k = static_cast<size_t>(std::ceil(0.9 * static_cast<double>(measured_y.size())));
    const double q90 = measured_y[std::clamp<size_t>(k, 1, measured_y.size()) - 1];
    const double cap = 1.25 * std::max({predicted_top, q90, guide_top});
    if (cap > 0 && y_cap > cap) y_cap = cap;
  }

  // x ticks: as many as fit with their labels apart.
  std::vector<double> x_ticks;
  for (int target = 8; target >= 1; --target) {
    x_ticks = axis_ticks(x_lo, x_hi, target, whole_x);
    if (x_ticks.size() < 2) break;
    double widest = 0;
    for (double t : x_ticks) widest = std::max(widest, svg_text_width(value_text(t), 11));
    if ((plot_right - plot_left) / static_cast<double>(x_ticks.size() - 1) >= widest + 10) break;
  }
  const std::vector<double> y_ticks = nice_ticks(y_lo, y_cap, 5);
  // Ranges near the limits of double can leave no usable axis; say so rather than print "inf".
  if (x_ticks.size() < 2 || y_ticks.size() < 2 || !(x_ticks.back() > x_ticks.front()) ||
      !(y_ticks.back() > y_ticks.front()))
    return false;
  const double x0 = x_ticks.front(), x_span = x_ticks.back() - x0;
  const double y0 = y_ticks.front(), y_span = y_ticks.back() - y0;
  auto map_x = [&](double x) { return plot_left + (x - x0) / x_span * (plot_right - plot_left); };
  auto map_y = [&](double y) { return bottom - (y - y0) / y_span * (bottom - plot_top); };

  out += "<g>\n";
  for (double t : y_ticks) {
    line(out, plot_left, map_y(t), plot_right, map_y(t), "#E5E5E5");
    text(out, plot_left - 6, map_y(t) + 4, "end", fit_text(value_text(t), 11, plot_left - 36), 11);
  }
  for (double t : x_ticks) {
    line(out, map_x(t), bottom, map_x(t), bottom + 5, "#000000");
    text(out, map_x(t), bottom + 18, "middle", value_text(t), 11);
  }
  line(out, plot_left, bottom, plot_right, bottom, "#000000");
  line(out, plot_left, plot_top, plot_left, bottom, "#000000");
  text(out, (plot_left + plot_right) / 2, bottom + 38, "middle", fit_text(p.x_label, 12, plot_right - plot_left), 12);
  const double y_label_x = 18, y_label_y = (plot_top + bottom) / 2;
  text(out, y_label_x, y_label_y, "middle", fit_text(p.y_label, 12, bottom - plot_top), 12,
       fmt::format(" transform=\"rotate(-90 {} {})\"", coord(y_label_x), coord(y_label_y)));
  out += "</g>\n";

  // Guides, and the texts that point labels must keep clear of.
  std::vector<TextBox> placed;
  for (const Guide& g : p.guides) {
    if (!std::isfinite(g.y) || g.y > y_ticks.back() || g.y < y0) continue;
    const double y = map_y(g.y);
    out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"1.5\" "
                       "stroke-dasharray=\"5 4\"/>\n",
                       coord(plot_left), coord(y), coord(plot_right), coord(y), guide_colour);
    const std::string label = fit_text(g.label, 10, (plot_right - plot_left) / 2);
    const double ly = std::max(y - 4, plot_top + 10);
    const TextBox box = text_box(plot_right - 4, ly, "end", label, 10);
    if (std::none_of(placed.begin(), placed.end(), [&](const TextBox& b) { return b.meets(box); })) {
      text(out, plot_right - 4, ly, "end", label, 10, fmt::format(" fill=\"{}\"", guide_colour));
      placed.push_back(box);
    }
  }

  size_t above = 0, unlabelled = 0;
  double above_max = 0;
  for (size_t k = 0; k < p.series.size(); ++k) {
    const Series& s = p.series[k];
    const char* colour = colours.front().colour;
    for (const LegendEntry& e : colours)
      if (e.name == s.name) colour = e.colour;
    const bool dashed = colour == predicted_second_colour;
    out += "<g>\n";
    // Lines first, markers on top. A skipped point ends a run; a run of one point is a marker only.
    std::string run;
    size_t run_points = 0;
    auto flush_run = [&] {
      if (!s.markers_only && run_points >= 2)
        out += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{}/>\n", run, colour,
                           dashed ? " stroke-dasharray=\"6 4\"" : "");
      run.clear();
      run_points = 0;
    };
    std::string markers, labels;
    for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) {
        flush_run();
        continue;
      }
      const bool clipped = s.y[i] > y_ticks.back();
      const double cx = map_x(s.x[i]), cy = map_y(std::min(s.y[i], y_ticks.back()));
      const std::string px = coord(cx), py = coord(cy);
      run += (run_points++ ? " " : "") + px + "," + py;
      if (i < s.lo.size() && i < s.hi.size() && std::isfinite(s.lo[i]) && std::isfinite(s.hi[i])) {
        const double top = map_y(std::min(s.hi[i], y_ticks.back())), base = map_y(std::max(s.lo[i], y0));
        line(markers, cx, top, cx, base, colour);
        line(markers, cx - 3, top, cx + 3, top, colour);
        line(markers, cx - 3, base, cx + 3, base, colour);
      }
      if (clipped) {  // a triangle on the top edge, pointing up
        ++above;
        above_max = std::max(above_max, s.y[i]);
        markers += fmt::format("<polygon points=\"{},{} {},{} {},{}\" fill=\"{}\"/>\n", coord(cx - 4), coord(plot_top + 4),
                               coord(cx + 4), coord(plot_top + 4), coord(cx), coord(plot_top - 3), colour);
      } else {
        markers += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"{}\"/>\n", px, py, colour);
      }
      if (i >= s.labels.size() || s.labels[i].empty()) continue;
      // Right and above, right and below, left and above, left and below: the first that stays in
      // the plot and meets no text already placed.
      const std::string label = fit_text(s.labels[i], 10, (plot_right - plot_left) / 2);
      bool done = false;
      for (const auto& [dx, dy, anchor] : {std::tuple{6.0, -5.0, "start"}, std::tuple{6.0, 13.0, "start"},
                                           std::tuple{-6.0, -5.0, "end"}, std::tuple{-6.0, 13.0, "end"}}) {
        const double lx = cx + dx, ly = (clipped ? plot_top + 4 : cy) + dy;
        const TextBox box = text_box(lx, ly, anchor, label, 10);
        if (box.x0 < plot_left + 2 || box.x1 > plot_right || box.y0 < plot_top || box.y1 > bottom) continue;
        if (std::any_of(placed.begin(), placed.end(), [&](const TextBox& b) { return b.meets(box); })) continue;
        // On a white ground, so that a line it crosses does not cut through it.
        labels += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#FFFFFF\" fill-opacity=\"0.85\"/>\n",
                              coord(box.x0 - 1), coord(box.y0 + 1), coord(box.x1 - box.x0 + 2), coord(box.y1 - box.y0));
        text(labels, lx, ly, anchor, label, 10, " fill=\"#333333\"");
        placed.push_back(box);
        done = true;
        break;
      }
      unlabelled += !done;
    }
    flush_run();
    out += markers + labels + "</g>\n";
  }
  std::vector<std::string> notes;
  if (above > 0)
    notes.push_back(fmt::format("triangles: {} point{} above the axis, the largest {}", above, above == 1 ? "" : "s",
                                value_text(above_max)));
  if (unlabelled > 0)
    notes.push_back(fmt::format("{} label{} left out where {} would meet another", unlabelled,
                                unlabelled == 1 ? "" : "s", unlabelled == 1 ? "it" : "they"));
  if (!notes.empty())
    text(out, plot_left, bottom + 58, "start", fit_text(fmt::format("{}", fmt::join(notes, "; ")), 11, plot_right - plot_left),
         11, " fill=\"#555555\"");
  return true;
}

}  // namespace

std::string svg_line_panels(const std::string& title, const std::vector<LinePanel>& panels) {
  std::string out;
  const size_t count = std::max<size_t>(panels.size(), 1);
  const double height = line_canvas_height + static_cast<double>(count - 1) * panel_stride;
  open_svg(out, title, height);
  // A series keeps its colour in every panel: one legend entry per name, in order of appearance.
  std::vector<LegendEntry> entries;
  size_t predicted_used = 0, others_used = 0, points = 0;
  for (const LinePanel& p : panels)
    for (const Series& s : p.series) {
      for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) points += std::isfinite(s.x[i]) && std::isfinite(s.y[i]);
      if (std::none_of(entries.begin(), entries.end(), [&](const LegendEntry& e) { return e.name == s.name; }))
        entries.push_back({s.name, series_colour(s.name, predicted_used, others_used)});
    }
  if (points == 0) return close_with_no_data(out, height);
  const int legend_rows = legend(out, entries, plot_left);
  const double plot_top = plot_top_base + (legend_rows - 1) * legend_row;
  for (size_t k = 0; k < panels.size(); ++k) {
    const double shift = static_cast<double>(k) * panel_stride;
    if (line_panel(out, panels[k], entries, plot_top + (k == 0 ? 0 : shift - (legend_rows - 1) * legend_row), shift))
      continue;
    if (panels.size() == 1) {  // as before panels: the whole chart says it
      out.resize(out.find("<g>\n"));
      return close_with_no_data(out, height);
    }
    text(out, canvas_width / 2.0, shift + (plot_top_base + plot_bottom) / 2, "middle", "no data", 14,
         " fill=\"#888888\"");
  }
  return out + "</svg>\n";
}

std::string svg_line_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                           const std::vector<Series>& series) {
  return svg_line_panels(title, {LinePanel{x_label, y_label, series}});
}

std::string svg_waterfall(const std::string& title, const std::string& unit, const std::vector<WaterfallStep>& steps) {
  constexpr double top = 62, row = 24, bar = 14, label_right = 316, bar_left = 326, bar_right = 606, value_left = 616;
  const double bottom = top + row * static_cast<double>(steps.size());
  const double height = bottom + 50;
  std::string out;
  open_svg(out, title, height);
  // Each row's bar as [from, to] along the axis.
  std::vector<std::pair<double, double>> spans;
  double running = 0, lo = 0, hi = 0;
  bool any = false;
  for (const WaterfallStep& st : steps) {
    if (!std::isfinite(st.value)) {
      spans.emplace_back(std::nan(""), std::nan(""));
      continue;
    }
    any = true;
    const double from = st.kind == WaterfallStep::Kind::total ? 0 : running;
    const double to = st.kind == WaterfallStep::Kind::total   ? st.value
                      : st.kind == WaterfallStep::Kind::minus ? running - st.value
                                                              : running + st.value;
    running = to;
    spans.emplace_back(from, to);
    lo = std::min({lo, from, to});
    hi = std::max({hi, from, to});
  }
  if (!any) return close_with_no_data(out, height);
  const std::vector<double> ticks = nice_ticks(lo, hi > lo ? hi : lo + 1, 5);
  if (ticks.size() < 2 || !(ticks.back() > ticks.front())) return close_with_no_data(out, height);
  auto map_x = [&](double v) { return bar_left + (v - ticks.front()) / (ticks.back() - ticks.front()) * (bar_right - bar_left); };
  out += "<g>\n";
  for (double t : ticks) {
    line(out, map_x(t), top - 4, map_x(t), bottom, "#E5E5E5");
    line(out, map_x(t), bottom, map_x(t), bottom + 5, "#000000");
    text(out, map_x(t), bottom + 18, "middle", value_text(t), 11);
  }
  line(out, bar_left, bottom, bar_right, bottom, "#000000");
  line(out, map_x(0), top - 4, map_x(0), bottom, "#000000");
  text(out, (bar_left + bar_right) / 2, bottom + 38, "middle", unit, 12);
  out += "</g>\n";
  for (size_t k = 0; k < steps.size(); ++k) {
    const WaterfallStep& st = steps[k];
    const double y = top + row * static_cast<double>(k);
    out += "<g>\n";
    text(out, 16, y + bar - 2, "start", fit_text(st.label, 12, label_right - 16), 12);
    const auto [from, to] = spans[k];
    if (std::isfinite(from)) {
      const char* colour = st.kind == WaterfallStep::Kind::minus ? measured_colour
                           : st.kind == WaterfallStep::Kind::plus ? other_colours[0]
                           : to < 0                               ? other_colours[1]
                                                                  : predicted_colour;
      const double x0 = map_x(std::min(from, to)), x1 = map_x(std::max(from, to));
      out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\">", coord(x0), coord(y),
                         coord(std::max(x1 - x0, 1.0)), coord(bar), colour);
      out += st.note.empty() ? std::string("</rect>\n") : "<title>" + xml_escape(st.note) + "</title></rect>\n";
      text(out, value_left, y + bar - 2, "start", fit_text(value_text(st.value) + " " + unit, 11, canvas_width - value_left - 6),
           11);
    }
    out += "</g>\n";
  }
  return out + "</svg>\n";
}

}  // namespace infer_plan::apps
