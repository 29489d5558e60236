// The SVG charts are checked at the level of their text: well-formed tags, escaping, no "nan" or
// "inf" from bad values, bar heights in proportion to the values, and round ticks by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "apps/svg_plot.hpp"

using namespace infer_plan::apps;

namespace {

constexpr double nan_value = std::numeric_limits<double>::quiet_NaN();
constexpr double inf_value = std::numeric_limits<double>::infinity();

// Tags must nest: every <name ...> is closed by </name> in stack order, or closes itself with "/>".
// Returns "" when they do, else what went wrong first.
std::string tag_nesting_error(const std::string& svg) {
  std::vector<std::string> open;
  size_t pos = 0;
  while ((pos = svg.find('<', pos)) != std::string::npos) {
    const size_t end = svg.find('>', pos);
    if (end == std::string::npos) return "unterminated tag at " + std::to_string(pos);
    const std::string tag = svg.substr(pos + 1, end - pos - 1);
    pos = end + 1;
    const bool closing = !tag.empty() && tag[0] == '/';
    const std::string body = closing ? tag.substr(1) : tag;
    const std::string name = body.substr(0, body.find_first_of(" \n/"));
    if (closing) {
      if (open.empty() || open.back() != name) return "</" + name + "> does not close the innermost tag";
      open.pop_back();
    } else if (tag.empty() || tag.back() != '/') {
      open.push_back(name);
    }
  }
  if (!open.empty()) return "<" + open.back() + "> is never closed";
  return "";
}

// Openings of <name ...> less closings (</name> or a self-closing "/>"); -1 as soon as a closing
// comes before its opening.
int open_minus_closed(const std::string& svg, const std::string& name) {
  int depth = 0;
  for (size_t pos = svg.find('<'); pos != std::string::npos; pos = svg.find('<', pos + 1)) {
    const size_t end = svg.find('>', pos);
    if (svg.compare(pos, name.size() + 3, "</" + name + ">") == 0) {
      if (--depth < 0) return -1;
    } else if (svg.compare(pos + 1, name.size(), name) == 0 &&
               (svg[pos + 1 + name.size()] == ' ' || svg[pos + 1 + name.size()] == '>') && end != std::string::npos &&
               svg[end - 1] != '/') {
      ++depth;
    }
  }
  return depth;
}

size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos; pos = haystack.find(needle, pos + 1)) ++n;
  return n;
}

// The height="..." of every <rect class="<css_class>" ...>, in document order.
std::vector<double> bar_heights(const std::string& svg, const std::string& css_class) {
  std::vector<double> heights;
  const std::string open = "<rect class=\"" + css_class + "\"";
  for (size_t pos = svg.find(open); pos != std::string::npos; pos = svg.find(open, pos + 1)) {
    const size_t end = svg.find("/>", pos);
    const size_t h = svg.find(" height=\"", pos);
    REQUIRE(h < end);
    heights.push_back(std::stod(svg.substr(h + 9)));
  }
  return heights;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

void check_standalone_svg(const std::string& svg) {
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.size() >= 7);
  CHECK(svg.substr(svg.size() - 7) == "</svg>\n");
  CHECK(svg.find("xmlns=\"http://www.w3.org/2000/svg\"") != std::string::npos);
  CHECK(svg.find("viewBox=\"0 0 720 ") != std::string::npos);
  CHECK(tag_nesting_error(svg) == "");
  for (const char* name : {"g", "text", "rect", "polyline"}) {
    INFO("<", name, ">");
    CHECK(open_minus_closed(svg, name) == 0);
  }
}

// Ticks are k * step with one rounding each, so they sit within a few ulps of the hand values.
void check_ticks(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("tick ", i, ": got ", got[i], ", want ", want[i]);
    CHECK(std::abs(got[i] - want[i]) <= 1e-12 * std::max(1.0, std::abs(want[i])));
  }
}

}  // namespace

TEST_CASE("nice_ticks: round steps of 1, 2 or 5 times a power of ten, covering the range") {
  // 37 / 5 = 7.4 per interval; the next round step is 10; 0 .. 37 widens to 0 .. 40.
  check_ticks(nice_ticks(0, 37, 5), {0, 10, 20, 30, 40});
  // 1 / 5 = 0.2 is round already; it must not be pushed to 0.5 by the rounding of log10.
  check_ticks(nice_ticks(0, 1, 5), {0, 0.2, 0.4, 0.6, 0.8, 1.0});
  // 76 / 4 = 19 -> 20; 12 rounds down to 0 and 88 up to 100.
  check_ticks(nice_ticks(12, 88, 4), {0, 20, 40, 60, 80, 100});
  // 10 / 5 = 2; -3 rounds down to -4 and 7 up to 8.
  check_ticks(nice_ticks(-3, 7, 5), {-4, -2, 0, 2, 4, 6, 8});
  // 0.4 / 4 = 0.1; 0.3 / 0.1 is 2.999... in binary and must still start the ticks at 0.3.
  check_ticks(nice_ticks(0.3, 0.7, 4), {0.3, 0.4, 0.5, 0.6, 0.7});
  // 2400 / 6 = 400 -> 500.
  check_ticks(nice_ticks(100, 2500, 6), {0, 500, 1000, 1500, 2000, 2500});
  // A single value: 0 widens to -1 .. 1 (2 / 5 = 0.4 -> 0.5); 50 widens by 10% to 45 .. 55 (2).
  check_ticks(nice_ticks(0, 0, 5), {-1, -0.5, 0, 0.5, 1});
  check_ticks(nice_ticks(50, 50, 5), {44, 46, 48, 50, 52, 54, 56});
  // Reversed bounds are the same range; a target of 0 is taken as 1 interval (37 -> 50).
  check_ticks(nice_ticks(37, 0, 5), {0, 10, 20, 30, 40});
  check_ticks(nice_ticks(0, 37, 0), {0, 50});
  CHECK(nice_ticks(nan_value, 1, 5).empty());
  CHECK(nice_ticks(0, inf_value, 5).empty());
}

TEST_CASE("xml_escape: the five special characters and control bytes") {
  CHECK(xml_escape("a<b & c") == "a&lt;b &amp; c");
  CHECK(xml_escape("\"x\" > 'y'") == "&quot;x&quot; &gt; &apos;y&apos;");
  CHECK(xml_escape(std::string("bell\a!")) == "bell!");
}

TEST_CASE("bars: standalone SVG, one panel per figure on its own axis, values and error under it") {
  // Group 1: predicted 10, measured 5. Group 2, another unit: predicted 1000, measured 2000.
  const std::string svg = svg_predicted_vs_measured(
      "decode", {{"tokens/s", "tok/s", 10, 5}, {"weights", "MiB", 1000, 2000}});
  check_standalone_svg(svg);
  const std::vector<double> predicted = bar_heights(svg, "predicted");
  const std::vector<double> measured = bar_heights(svg, "measured");
  REQUIRE(predicted.size() == 2);
  REQUIRE(measured.size() == 2);
  // Heights print with one decimal (error <= 0.05 each), so the ratio holds to 0.05 + 0.05 / 2.
  CHECK(predicted[0] > 100);  // the group's largest bar is full height, not a sliver
  CHECK(std::abs(measured[0] - predicted[0] / 2) <= 0.075);
  CHECK(std::abs(predicted[1] - measured[1] / 2) <= 0.075);
  // Each panel's axis runs from 0 to a round tick at or above its largest value: 10 and 2000
  // are both round (ticks 0, 5, 10 and 0, 500, ..., 2000), so both draw the full height.
  CHECK(std::abs(predicted[0] - measured[1]) <= 0.1);
  for (const char* tick : {">5</text>", ">500</text>", ">1500</text>"}) CHECK(svg.find(tick) != std::string::npos);
  // Values with {:.4g} under the panel; the unit in the panel's title.
  for (const char* label : {">predicted 10</text>", ">measured 5</text>", ">predicted 1000</text>", ">measured 2000</text>",
                            ">tokens/s (tok/s)</text>", ">weights (MiB)</text>"})
    CHECK(svg.find(label) != std::string::npos);
  // (5 - 10) / 10 = -50%; (2000 - 1000) / 1000 = +100%.
  CHECK(svg.find(">error -50.0%</text>") != std::string::npos);
  CHECK(svg.find(">error +100.0%</text>") != std::string::npos);
  CHECK(svg.find("#4C72B0") != std::string::npos);
  CHECK(svg.find("#DD8452") != std::string::npos);
  CHECK(svg == svg_predicted_vs_measured("decode", {{"tokens/s", "tok/s", 10, 5}, {"weights", "MiB", 1000, 2000}}));
}

TEST_CASE("bars: text is escaped, NaN and inf draw nothing, no groups give a note") {
  const std::string svg = svg_predicted_vs_measured(
      "a<b & c", {{"x \"y\"", "<unit>", nan_value, inf_value}, {"ok", "", 3, nan_value}});
  check_standalone_svg(svg);
  CHECK(svg.find("a&lt;b &amp; c") != std::string::npos);
  CHECK(svg.find("a<b") == std::string::npos);
  CHECK(svg.find("x &quot;y&quot;") != std::string::npos);
  CHECK(lower(svg).find("nan") == std::string::npos);
  CHECK(lower(svg).find("inf") == std::string::npos);
  CHECK(bar_heights(svg, "predicted").size() == 1);  // only the 3
  CHECK(count(svg, ">predicted ") == 1);             // and only its value line
  CHECK(count(svg, ">measured ") == 0);
  CHECK(bar_heights(svg, "measured").empty());
  CHECK(svg.find(">error") == std::string::npos);  // no pair of finite values

  for (const std::string& empty : {svg_predicted_vs_measured("empty", {}),
                                   svg_predicted_vs_measured("all bad", {{"x", "s", nan_value, nan_value}})}) {
    check_standalone_svg(empty);
    CHECK(empty.find(">no data</text>") != std::string::npos);
    CHECK(empty.find("<rect class=") == std::string::npos);
  }
}

TEST_CASE("lines: axes with round ticks, one polyline per run, markers, legend colours") {
  const std::vector<Series> series = {
      {"predicted", {1, 2, 4, 8}, {10, 19, 30, 37}, false},
      {"measured", {1, 2, 4, 8}, {9, 20, 28, 35}, true},
      {"other", {1, 2, 4, 8}, {5, 6, 7, 8}, false},
  };
  const std::string svg = svg_line_chart("throughput", "batch", "tok/s", series);
  check_standalone_svg(svg);
  // y covers 0 .. 37 -> ticks 0, 10, 20, 30, 40; x covers 1 .. 8 (7 / 6 -> 2) -> 0 .. 8 by 2.
  for (const char* label : {">0</text>", ">10</text>", ">20</text>", ">30</text>", ">40</text>", ">8</text>"})
    CHECK(svg.find(label) != std::string::npos);
  CHECK(svg.find(">50</text>") == std::string::npos);
  CHECK(count(svg, "<polyline ") == 2);  // the markers-only series draws none
  CHECK(count(svg, "<circle ") == 12);
  CHECK(svg.find("stroke=\"#4C72B0\"") != std::string::npos);
  CHECK(svg.find("fill=\"#DD8452\"") != std::string::npos);
  CHECK(svg.find("stroke=\"#55A868\"") != std::string::npos);  // first of the palette
  CHECK(svg.find(">batch</text>") != std::string::npos);
  CHECK(svg.find(">tok/s</text>") != std::string::npos);
  CHECK(svg.find(">predicted</text>") != std::string::npos);
  CHECK(svg == svg_line_chart("throughput", "batch", "tok/s", series));
}

TEST_CASE("lines: NaN and inf points are skipped and break the line; no points give a note") {
  const std::vector<Series> series = {
      {"predicted", {1, 2, 3, 4, 5, 6}, {1, 2, nan_value, 4, 5, inf_value}, false},
      {"x<y", {nan_value, 2}, {1, 2, 3}, false},  // x and y of different lengths: 2 points, 1 finite
  };
  const std::string svg = svg_line_chart("a<b & c", "x & y", "<y>", series);
  check_standalone_svg(svg);
  CHECK(lower(svg).find("nan") == std::string::npos);
  CHECK(lower(svg).find("inf") == std::string::npos);
  CHECK(count(svg, "<polyline ") == 2);  // (1,1)-(2,2) and (4,4)-(5,5); a lone point is a marker only
  CHECK(count(svg, "<circle ") == 5);
  CHECK(svg.find("a&lt;b &amp; c") != std::string::npos);
  CHECK(svg.find(">x &amp; y</text>") != std::string::npos);
  CHECK(svg.find(">&lt;y&gt;</text>") != std::string::npos);
  CHECK(svg.find(">x&lt;y</text>") != std::string::npos);

  for (const std::string& empty : {svg_line_chart("empty", "x", "y", {}),
                                   svg_line_chart("no points", "x", "y", {{"predicted", {}, {}, false}}),
                                   svg_line_chart("all bad", "x", "y", {{"s", {nan_value}, {1}, false}})}) {
    check_standalone_svg(empty);
    CHECK(empty.find(">no data</text>") != std::string::npos);
    CHECK(empty.find("<polyline") == std::string::npos);
  }
  // A single point: both axes widen around it instead of dividing by a zero span.
  const std::string one = svg_line_chart("one", "x", "y", {{"measured", {3}, {7}, true}});
  check_standalone_svg(one);
  CHECK(count(one, "<circle ") == 1);
  CHECK(lower(one).find("nan") == std::string::npos);
}

namespace {

// A text element's box, from its x, y, anchor, font size and rotation, at the layout's advance
// (svg_text_width); the box's height is the font size, from the baseline up.
struct Box {
  double x0, y0, x1, y1;
  std::string content;
};

std::string attribute(const std::string& tag, const std::string& name) {
  const size_t at = tag.find(" " + name + "=\"");
  if (at == std::string::npos) return "";
  const size_t from = at + name.size() + 3;
  return tag.substr(from, tag.find('"', from) - from);
}

std::vector<Box> text_boxes(const std::string& svg) {
  std::vector<Box> boxes;
  for (size_t pos = svg.find("<text "); pos != std::string::npos; pos = svg.find("<text ", pos + 1)) {
    const size_t close = svg.find('>', pos);
    const std::string tag = svg.substr(pos, close - pos);
    const std::string content = svg.substr(close + 1, svg.find("</text>", close) - close - 1);
    const double x = std::stod(attribute(tag, "x")), y = std::stod(attribute(tag, "y"));
    const std::string size_text = attribute(tag, "font-size");
    const double size = size_text.empty() ? 12 : std::stod(size_text);
    std::string plain = content;  // entities count as one character
    for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"})
      for (size_t k = plain.find(e); k != std::string::npos; k = plain.find(e)) plain.replace(k, std::string(e).size(), "x");
    const double w = svg_text_width(plain, size);
    const std::string anchor = attribute(tag, "text-anchor");
    const double left = anchor == "middle" ? x - w / 2 : anchor == "end" ? x - w : x;
    Box b{left, y - size, left + w, y + 0.25 * size, content};
    if (attribute(tag, "transform").starts_with("rotate(-90")) {  // about (x, y): the box turns on its side
      b = Box{x - size, y - (left + w - x), x + 0.25 * size, y + (x - left), content};
    }
    boxes.push_back(b);
  }
  return boxes;
}

// Every pair of texts apart, and every text inside the canvas.
void check_no_overlap(const std::string& svg) {
  const std::vector<Box> boxes = text_boxes(svg);
  const size_t width_at = svg.find("width=\"");
  const double canvas_width = std::stod(svg.substr(width_at + 7));
  const double canvas_height = std::stod(svg.substr(svg.find("height=\"", width_at) + 8));
  for (size_t i = 0; i < boxes.size(); ++i) {
    const Box& a = boxes[i];
    INFO("text '", a.content, "' at [", a.x0, ", ", a.y0, "] - [", a.x1, ", ", a.y1, "]");
    CHECK(a.x0 >= 0);
    CHECK(a.y0 >= 0);
    CHECK(a.x1 <= canvas_width);
    CHECK(a.y1 <= canvas_height);
    for (size_t j = i + 1; j < boxes.size(); ++j) {
      const Box& b = boxes[j];
      const bool apart = a.x1 <= b.x0 || b.x1 <= a.x0 || a.y1 <= b.y0 || b.y1 <= a.y0;
      INFO("meets '", b.content, "' at [", b.x0, ", ", b.y0, "] - [", b.x1, ", ", b.y1, "]");
      CHECK(apart);
    }
  }
}

}  // namespace

TEST_CASE("no two texts overlap, in any chart report draws, nor with hostile labels") {
  // report's eight figures, with the values the issue saw collide (+712.2% beside +577.5%,
  // 2.271 beside 2.236), then nine long-named ones (two rows of panels).
  const std::vector<BarGroup> report{{"decode", "ms", 2.271, 2.236},      {"prefill", "ms", 12.87, 104.6},
                                     {"sojourn", "s", 0.02388, 0.1942},   {"in system", "", 0.103, 0.8366},
                                     {"TTFT", "s", 0.01, 0.0812},         {"TPOT", "ms", 2.3, 18.66},
                                     {"tok/s", "tok/s", 1234.5, 987.6},   {"Little", "", 1, 1.04}};
  check_no_overlap(svg_predicted_vs_measured("qwen3-8b: predicted vs measured", report));
  std::vector<BarGroup> long_names;
  for (int i = 0; i < 9; ++i)
    long_names.push_back({"a very long figure name that no panel can hold " + std::to_string(i),
                          "requests per second", -1234567.0 * i, 1e-7 * i});
  check_no_overlap(svg_predicted_vs_measured(std::string(300, 'T'), long_names));

  std::vector<double> batch, step, predicted_step;
  for (int b = 1; b <= 4; ++b)
    for (int k = 0; k < 20; ++k) {
      batch.push_back(b);
      step.push_back(k == 7 ? 300.0 : 20.0 + b);  // one outlier per batch
    }
  for (int b = 1; b <= 4; ++b) predicted_step.push_back(19.5 + b);
  const std::string decode = svg_line_chart("decode iteration against batch", "batch (running requests)",
                                            "decode iteration (ms)",
                                            {{"predicted (roofline)", {1, 2, 3, 4}, predicted_step, false},
                                             {"measured", batch, step, true}});
  check_no_overlap(decode);
  check_no_overlap(svg_line_chart(std::string(200, 'L'), std::string(200, 'x'), std::string(200, 'y'),
                                  {{std::string(120, 'a'), {0, 1e9}, {0, 1e-9}, false},
                                   {std::string(80, 'b'), {0, 1e9}, {0, 2e-9}, false},
                                   {"predicted (per-position rates)", {0, 1e9}, {0, 3e-9}, false},
                                   {"measured", {5e8}, {1.2345678e-9}, true}}));
}

TEST_CASE("lines: whole-number x gets whole-number ticks; outliers are marked, not plotted to scale") {
  std::vector<double> batch, step;
  for (int b = 1; b <= 4; ++b)
    for (int k = 0; k < 20; ++k) {
      batch.push_back(b);
      step.push_back(k == 7 ? 300.0 : 20.0 + b);
    }
  const std::string svg = svg_line_chart("decode", "batch", "ms",
                                         {{"predicted (roofline)", {1, 2, 3, 4}, {20, 21, 22, 23}, false},
                                          {"measured", batch, step, true}});
  check_standalone_svg(svg);
  for (const char* tick : {">1</text>", ">2</text>", ">3</text>", ">4</text>"}) CHECK(svg.find(tick) != std::string::npos);
  for (const char* tick : {">1.5</text>", ">2.5</text>", ">3.5</text>", ">0.5</text>"}) CHECK(svg.find(tick) == std::string::npos);
  // The axis ends at 1.25 x max(23, the measured 90th percentile 24) = 30: ticks 0, 10, 20, 30.
  CHECK(svg.find(">30</text>") != std::string::npos);
  CHECK(svg.find(">300</text>") == std::string::npos);
  CHECK(count(svg, "<polygon ") == 4);  // the four 300 ms points, as triangles on the top edge
  CHECK(count(svg, "<circle ") == 80);  // 4 predicted and the 76 measured below the axis top
  CHECK(svg.find(">triangles: 4 points above the axis, the largest 300</text>") != std::string::npos);
  // One colour per series in every chart: predicted blue (a second predicted series dashed), measured orange.
  CHECK(svg.find("stroke=\"#4C72B0\"") != std::string::npos);
  const std::string spec = svg_line_chart("spec", "m", "ms/token",
                                          {{"predicted (i.i.d. rate)", {1, 2}, {3, 2}, false},
                                           {"predicted (per-position rates)", {1, 2}, {3, 2.5}, false},
                                           {"measured", {1, 2}, {3.1, 2.2}, true}});
  CHECK(spec.find("stroke=\"#4C72B0\"") != std::string::npos);
  CHECK(spec.find("stroke=\"#1F3A66\" stroke-width=\"2\" stroke-dasharray=\"6 4\"") != std::string::npos);
  CHECK(spec.find("fill=\"#DD8452\"") != std::string::npos);
  CHECK(spec.find("#55A868") == std::string::npos);
}

TEST_CASE("panels: one legend, a colour per series in every panel, guides reached, labels apart") {
  // The advise frontier's shape: cost on x, a latency on y, the SLO as a guide above every point.
  std::vector<double> cost, ttft, tpot;
  std::vector<std::string> names;
  for (int i = 0; i < 12; ++i) {  // twelve plans crowded together: not every label can be placed
    cost.push_back(1.0 + 0.01 * i);
    ttft.push_back(300 + i);
    tpot.push_back(20 + 0.1 * i);
    names.push_back("#" + std::to_string(i + 1) + " vllm h200 FP8 TP1");
  }
  const std::vector<LinePanel> panels{
      {"US dollars per million output tokens", "TTFT p99 (ms)",
       {{"other plans", {5, 6}, {100, 200}, true}, {"frontier", cost, ttft, false, names}},
       {{"SLO: TTFT p99 <= 2000 ms", 2000}}},
      {"US dollars per million output tokens", "TPOT p99 (ms)",
       {{"other plans", {5, 6}, {10, 12}, true}, {"frontier", cost, tpot, false, names}},
       {{"SLO: TPOT p99 <= 50 ms", 50}}}};
  const std::string svg = svg_line_panels("qwen3-8b: 5 req/s", panels);
  check_standalone_svg(svg);
  check_no_overlap(svg);
  // Two panels: the canvas is one chart's 420 plus one more panel's 370.
  CHECK(svg.find("height=\"790\"") != std::string::npos);
  // One legend entry per series, though each is drawn in both panels.
  CHECK(count(svg, ">frontier</text>") == 1);
  CHECK(count(svg, ">other plans</text>") == 1);
  CHECK(count(svg, "<polyline ") == 2);
  // Both polylines in the frontier's colour: the same series, the same colour.
  const size_t first = svg.find("<polyline "), second = svg.find("<polyline ", first + 1);
  CHECK(attribute(svg.substr(first, svg.find("/>", first) - first), "stroke") ==
        attribute(svg.substr(second, svg.find("/>", second) - second), "stroke"));
  // The guides are drawn though every point lies far below them (2000 ms against 311 ms at most).
  CHECK(count(svg, "stroke-dasharray=\"5 4\"") == 2);
  CHECK(svg.find(">SLO: TTFT p99 &lt;= 2000 ms</text>") != std::string::npos);
  CHECK(svg.find(">SLO: TPOT p99 &lt;= 50 ms</text>") != std::string::npos);
  // Some labels placed, the rest counted: twelve points 0.01 apart on an axis of about 5.
  const size_t placed = count(svg, " vllm h200 FP8 TP1</text>");
  CHECK(placed >= 2);
  CHECK(placed < 24);
  size_t left_out = 0;  // each panel's note counts its own
  for (size_t at = svg.find(" labels left out"); at != std::string::npos; at = svg.find(" labels left out", at + 1))
    left_out += std::stoul(svg.substr(svg.rfind('>', at) + 1));
  CHECK(left_out == 24 - placed);
  CHECK(svg.find(">#1 vllm h200 FP8 TP1</text>") != std::string::npos);

  // A panel without points says so while the other is drawn.
  const std::string half = svg_line_panels("half", {panels[0], LinePanel{"x", "y", {{"frontier", {}, {}, false}}}});
  check_standalone_svg(half);
  check_no_overlap(half);
  CHECK(count(half, ">no data</text>") == 1);
  CHECK(count(half, "<polyline ") == 1);
}

TEST_CASE("waterfall: totals from 0, amounts from the row above, a negative total red, labels apart") {
  using Kind = WaterfallStep::Kind;
  // capacity 24, weights 20 taken, 4 left, KV 5 taken: headroom -1 (the 70B on one 24 GB card).
  const std::string svg = svg_waterfall("does not fit", "GiB",
                                        {{"capacity", 24, Kind::total, "25769803776 B"},
                                         {"- weights", 20, Kind::minus},
                                         {"+ offloaded to host", 2, Kind::plus},
                                         {"= free after weights", 6, Kind::total},
                                         {"- KV cache", 7, Kind::minus},
                                         {"= headroom", -1, Kind::total}});
  check_standalone_svg(svg);
  check_no_overlap(svg);
  // Axis -5..25 (nice_ticks(-1, 24, 5): step 5) over the bars' 280 px: 9.333 px per GiB.
  std::vector<double> x, width;
  for (size_t pos = svg.find("<rect x=\""); pos != std::string::npos; pos = svg.find("<rect x=\"", pos + 1)) {
    const std::string tag = svg.substr(pos, svg.find('>', pos) - pos);
    if (attribute(tag, "height") != "14.0") continue;  // the bars, not the background
    x.push_back(std::stod(attribute(tag, "x")));
    width.push_back(std::stod(attribute(tag, "width")));
  }
  REQUIRE(x.size() == 6);
  const double per_gib = 280.0 / 30, zero = 326 + 5 * per_gib;
  CHECK(x[0] == doctest::Approx(zero).epsilon(0.001));            // capacity from 0
  CHECK(width[0] == doctest::Approx(24 * per_gib).epsilon(0.01));
  CHECK(x[1] == doctest::Approx(zero + 4 * per_gib).epsilon(0.01));  // weights: 24 down to 4
  CHECK(width[1] == doctest::Approx(20 * per_gib).epsilon(0.01));
  CHECK(x[2] == doctest::Approx(zero + 4 * per_gib).epsilon(0.01));  // given back: 4 up to 6
  CHECK(x[4] == doctest::Approx(zero - 1 * per_gib).epsilon(0.01));  // KV: 6 down to -1
  CHECK(x[5] == doctest::Approx(zero - 1 * per_gib).epsilon(0.01));  // headroom -1, leftwards
  CHECK(width[5] == doctest::Approx(per_gib).epsilon(0.01));
  CHECK(count(svg, "fill=\"#C44E52\"") == 1);  // only the negative total is red
  CHECK(svg.find("<title>25769803776 B</title>") != std::string::npos);
  CHECK(svg.find(">-1 GiB</text>") != std::string::npos);
  check_no_overlap(svg_waterfall(std::string(200, 'W'), "GiB",
                                 {{std::string(100, 'r'), 1e15, Kind::total}, {"nan", nan_value, Kind::minus}}));
  CHECK(svg_waterfall("none", "GiB", {{"nan", nan_value, Kind::total}}).find(">no data</text>") != std::string::npos);
}

TEST_CASE("lines: an interval is a bar with caps, and the axis reaches its top") {
  const std::string svg = svg_line_chart("step", "batch", "ms", {{"predicted (calibrated)", {1, 2}, {10, 20}, false, {}, {8, 16}, {40, 24}}});
  check_standalone_svg(svg);
  // 3 lines per interval, 2 intervals; the y axis runs to 40 (the top of the first bar), not 20.
  CHECK(svg.find(">40</text>") != std::string::npos);
  size_t bars = 0;
  for (size_t pos = svg.find("<line "); pos != std::string::npos; pos = svg.find("<line ", pos + 1))
    bars += svg.substr(pos, svg.find("/>", pos) - pos).find("#4C72B0") != std::string::npos;
  CHECK(bars == 6);
}
