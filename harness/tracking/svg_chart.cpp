// Line charts as inline SVG, sized in pixels and laid out by hand: title,
// legend, plot area with grid and ticks, series, marked points. The output is
// an <svg> element meant to sit inside an HTML page, so it carries no xmlns
// (which would be the page's only URL).
#include "harness/tracking/svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/report/console_table.hpp"
#include "harness/core/units.hpp"

namespace redline {
namespace {

// Tableau 10: distinct for the common kinds of colour blindness, and none of
// them is used by the report's own styling (its rendering test looks for the
// first one in the screenshot).
constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr int kPaletteSize = static_cast<int>(sizeof kPalette / sizeof kPalette[0]);

constexpr double kFontSize = 12;
constexpr double kCharWidth = 6.6;  // average glyph advance of a 12px sans-serif font, for layout


// Coordinates with one decimal: enough for a pixel grid, short output.
std::string px(double v) { return format_number(std::abs(v) < 0.05 ? 0.0 : v, 1); }

// 1, 2, 2.5 or 5 times a power of ten, about range/target.
double nice_step(double range, int target) {
  const double raw = range / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / magnitude;
  const double nice = f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10;
  return nice * magnitude;
}

// Decimals needed to print multiples of `step` exactly.
int step_decimals(double step) {
  for (int d = 0; d < 8; ++d) {
    const double scaled = step * std::pow(10.0, d);
    if (std::abs(scaled - std::round(scaled)) < 1e-6 * std::max(1.0, scaled)) return d;
  }
  return 8;
}

// A linear tick: plain digits up to a million, then decimal k/M/G/T suffixes
// (throughput in the millions reads better as 2.5M than 2500000).
std::string linear_tick_label(double value, double step) {
  const double mag = std::abs(value);
  if (mag >= 1e6 && mag < 1e15) {
    static constexpr const char* kSuffix[] = {"M", "G", "T"};
    int unit = 0;
    double scale = 1e6;
    while (unit < 2 && mag >= scale * 1000) {
      scale *= 1000;
      ++unit;
    }
    return format_number(value / scale, step_decimals(step / scale)) + kSuffix[unit];
  }
  if (mag != 0 && (mag < 1e-4 || mag >= 1e15)) return human_number(value);
  return format_number(value, step_decimals(step));
}

// A log2 tick at 2^exponent: a size (1K, 64M) from 1 up, a plain number below.
std::string log_tick_label(int exponent) {
  if (exponent >= 0 && exponent < 63) return format_size(std::uint64_t{1} << exponent);
  return human_number(std::ldexp(1.0, exponent));
}

struct Tick {
  double value;
  std::string label;
};

// One axis: the range it shows, how a value maps onto [0, 1], its ticks.
struct Axis {
  bool log = false;
  double lo = 0, hi = 1;  // in axis units (log2 of the value for a log axis)
  std::vector<Tick> ticks;

  // In halves, which are exact and cannot overflow: an axis from -1e308 to
  // 1e308 spans more than the largest double.
  double unit(double value) const {
    const double v = log ? std::log2(value) : value;
    return (v / 2 - lo / 2) / (hi / 2 - lo / 2);
  }
};

// More ticks than any target asks for: a bound on the tick loop, whatever
// rounding does to the step near the ends of the double range.
constexpr int kMaxTicks = 64;

Axis linear_axis(double min, double max, bool integers, int target_ticks) {
  Axis axis;
  constexpr double kLargest = std::numeric_limits<double>::max();
  if (min == max) {
    const double pad = min == 0 ? 1 : std::abs(min) * 0.1;
    min = std::max(min - pad, -kLargest);
    max = std::min(max + pad, kLargest);
  }
  // Values near 1e308 (finite, so drawable): the range, the step or a rounded
  // end can overflow to inf, which once made the tick loop endless. The range
  // is then taken from halves, and an end that does not round to a finite
  // multiple of the step stays at the data.
  double step = nice_step(max - min, target_ticks);
  if (!std::isfinite(step)) step = std::min(nice_step(max / 2 - min / 2, target_ticks) * 2, kLargest);
  // Run numbers and batch sizes: no fractional ticks (2.5 becomes 2).
  if (integers) step = std::max(1.0, step == std::floor(step) ? step : std::floor(step));
  axis.lo = std::floor(min / step + 1e-9) * step;
  axis.hi = std::ceil(max / step - 1e-9) * step;
  if (!std::isfinite(axis.lo)) axis.lo = min;
  if (!std::isfinite(axis.hi)) axis.hi = max;
  if (axis.hi <= axis.lo) axis.hi = std::min(axis.lo + step, kLargest);
  for (int i = 0; i < kMaxTicks; ++i) {
    double v = axis.lo + i * step;
    if (!std::isfinite(v) || v > axis.hi + step * 1e-6) break;
    if (std::abs(v) < step * 1e-9) v = 0;  // no "-0" from rounding
    axis.ticks.push_back({v, linear_tick_label(v, step)});
  }
  return axis;
}

Axis log2_axis(double min, double max) {
  Axis axis;
  axis.log = true;
  int lo = static_cast<int>(std::floor(std::log2(min) + 1e-9));
  int hi = static_cast<int>(std::ceil(std::log2(max) - 1e-9));
  if (hi <= lo) {
    --lo;
    ++hi;
  }
  axis.lo = lo;
  axis.hi = hi;
  // At most about ten labels: every power of two on a short axis, every
  // second or third one on a long sweep (8 bytes to 8G is 30 doublings).
  const int every = std::max(1, (hi - lo + 9) / 10);
  for (int e = lo; e <= hi; e += every) axis.ticks.push_back({std::ldexp(1.0, e), log_tick_label(e)});
  return axis;
}

bool usable(double x, double y, bool log_x) { return std::isfinite(x) && std::isfinite(y) && (!log_x || x > 0); }

double text_width(const std::string& text) { return static_cast<double>(text.size()) * kCharWidth; }

struct LegendItem {
  double x, y;
  const ChartSeries* series;
  const char* colour;
};

// Legend entries flow left to right under the title, wrapping into rows.
struct Legend {
  std::vector<LegendItem> items;
  double rows = 0;
};

Legend layout_legend(const ChartSpec& spec, double width) {
  constexpr double kLeft = 70, kRowHeight = 16;
  Legend legend;
  double x = kLeft;
  double row = 0;
  for (std::size_t i = 0; i < spec.series.size(); ++i) {
    const double item_width = 28 + text_width(spec.series[i].name) + 16;
    if (x + item_width > width - 10 && x > kLeft) {
      x = kLeft;
      ++row;
    }
    legend.items.push_back({x, 40 + row * kRowHeight, &spec.series[i], kPalette[i % kPaletteSize]});
    x += item_width;
  }
  legend.rows = spec.series.empty() ? 0 : row + 1;
  return legend;
}

// Where the data goes on the canvas, and the axes that map it there.
struct Plot {
  double left = 70, top = 0, width = 0, height = 0;
  Axis x_axis, y_axis;

  double sx(double x) const { return left + x_axis.unit(x) * width; }
  double sy(double y) const { return top + height - y_axis.unit(y) * height; }
  double bottom() const { return top + height; }
};

// The range of every usable point and marker; nullopt when there is none.
struct DataRange {
  double x_min, x_max, y_min, y_max;
  bool x_integers;
};

std::optional<DataRange> data_range(const ChartSpec& spec) {
  DataRange r{std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
              std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(), true};
  auto include = [&](double x, double y) {
    r.x_min = std::min(r.x_min, x);
    r.x_max = std::max(r.x_max, x);
    r.y_min = std::min(r.y_min, y);
    r.y_max = std::max(r.y_max, y);
    r.x_integers = r.x_integers && x == std::floor(x);
  };
  for (const auto& series : spec.series)
    for (const auto& [x, y] : series.points)
      if (usable(x, y, spec.log_x)) include(x, y);
  for (const auto& m : spec.markers)
    if (usable(m.x, m.y, spec.log_x)) include(m.x, m.y);
  if (!std::isfinite(r.x_min)) return std::nullopt;
  return r;
}

std::string svg_header(const ChartSpec& spec, double width, double height) {
  std::string svg = "<svg class=\"chart\" width=\"" + px(width) + "\" height=\"" + px(height) + "\" viewBox=\"0 0 " +
                    px(width) + " " + px(height) + "\" role=\"img\" font-family=\"sans-serif\" font-size=\"" +
                    px(kFontSize) + "\">\n";
  svg += "<title>" + escape_xml(spec.title) + "</title>\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  svg += "<text class=\"chart-title\" x=\"" + px(width / 2) +
         "\" y=\"20\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">" + escape_xml(spec.title) +
         "</text>\n";
  return svg;
}

// Frame of the plot area, drawn with or without data.
std::string frame_svg(const Plot& plot) {
  return "<rect class=\"plot-area\" x=\"" + px(plot.left) + "\" y=\"" + px(plot.top) + "\" width=\"" +
         px(plot.width) + "\" height=\"" + px(plot.height) + "\" fill=\"none\" stroke=\"#888888\" stroke-width=\"1\"/>\n";
}

std::string no_data_svg(const Plot& plot) {
  return frame_svg(plot) + "<text class=\"no-data\" x=\"" + px(plot.left + plot.width / 2) + "\" y=\"" +
         px(plot.top + plot.height / 2) + "\" text-anchor=\"middle\" fill=\"#666666\">no data</text>\n";
}

// Grid lines, the frame, tick labels and the axis labels.
std::string axes_svg(const Plot& plot, const ChartSpec& spec) {
  std::string svg = "<g class=\"grid\" stroke=\"#e4e4e4\" stroke-width=\"1\">\n";
  for (const auto& t : plot.y_axis.ticks)
    svg += "<line x1=\"" + px(plot.left) + "\" x2=\"" + px(plot.left + plot.width) + "\" y1=\"" + px(plot.sy(t.value)) +
           "\" y2=\"" + px(plot.sy(t.value)) + "\"/>\n";
  for (const auto& t : plot.x_axis.ticks)
    svg += "<line x1=\"" + px(plot.sx(t.value)) + "\" x2=\"" + px(plot.sx(t.value)) + "\" y1=\"" + px(plot.top) +
           "\" y2=\"" + px(plot.bottom()) + "\"/>\n";
  svg += "</g>\n";
  svg += frame_svg(plot);
  svg += "<g class=\"x-axis\" fill=\"#333333\" text-anchor=\"middle\">\n";
  for (const auto& t : plot.x_axis.ticks)
    svg += "<text x=\"" + px(plot.sx(t.value)) + "\" y=\"" + px(plot.bottom() + 16) + "\">" + escape_xml(t.label) +
           "</text>\n";
  svg += "</g>\n";
  svg += "<g class=\"y-axis\" fill=\"#333333\" text-anchor=\"end\">\n";
  for (const auto& t : plot.y_axis.ticks)
    svg += "<text x=\"" + px(plot.left - 6) + "\" y=\"" + px(plot.sy(t.value) + 4) + "\">" + escape_xml(t.label) +
           "</text>\n";
  svg += "</g>\n";
  svg += "<text class=\"x-label\" x=\"" + px(plot.left + plot.width / 2) + "\" y=\"" + px(plot.bottom() + 38) +
         "\" text-anchor=\"middle\">" + escape_xml(spec.x_label) + "</text>\n";
  svg += "<text class=\"y-label\" transform=\"translate(16 " + px(plot.top + plot.height / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + escape_xml(spec.y_label) + "</text>\n";
  return svg;
}

// A series: a line through the points in x order, a dot on each.
std::string series_svg(const Plot& plot, const ChartSeries& series, const char* colour, bool log_x) {
  std::vector<std::pair<double, double>> points;
  for (const auto& [x, y] : series.points)
    if (usable(x, y, log_x)) points.emplace_back(x, y);
  std::stable_sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string svg = "<g class=\"series-group\">\n";
  if (!points.empty()) {
    std::string d;
    for (std::size_t p = 0; p < points.size(); ++p)
      d += (p == 0 ? "M" : " L") + px(plot.sx(points[p].first)) + " " + px(plot.sy(points[p].second));
    svg += "<path class=\"series\" d=\"" + d + "\" fill=\"none\" stroke=\"" + colour +
           "\" stroke-width=\"2.5\" stroke-linejoin=\"round\"" + (series.dashed ? " stroke-dasharray=\"7 5\"" : "") +
           "><title>" + escape_xml(series.name) + "</title></path>\n";
  }
  for (const auto& [x, y] : points)
    svg += "<circle class=\"point\" cx=\"" + px(plot.sx(x)) + "\" cy=\"" + px(plot.sy(y)) + "\" r=\"" +
           (series.dashed ? "2.5" : "3.5") + "\" fill=\"" + (series.dashed ? "#ffffff" : colour) + "\" stroke=\"" +
           colour + "\" stroke-width=\"1.5\"/>\n";
  return svg + "</g>\n";
}

// A marker: a black-edged diamond with a guide line down to the x axis and a
// label; the label of a later marker (index) sits higher so that neighbours
// stay legible.
std::string marker_svg(const Plot& plot, const ChartMarker& m, std::size_t index) {
  const double mx = plot.sx(m.x), my = plot.sy(m.y);
  // Throughput curves rise from the lower left, so the space above and to
  // the left of a point is usually free; labels go there when they fit.
  const bool on_left = mx - 9 - text_width(m.label) * 11 / kFontSize >= plot.left + 4;
  const double label_y = std::max(plot.top + 12, my - 12 - 16 * static_cast<double>(index));
  std::string svg = "<g class=\"marker\">\n";
  svg += "<line x1=\"" + px(mx) + "\" x2=\"" + px(mx) + "\" y1=\"" + px(my) + "\" y2=\"" + px(plot.bottom()) +
         "\" stroke=\"#555555\" stroke-width=\"1\" stroke-dasharray=\"2 3\"/>\n";
  svg += "<path d=\"M" + px(mx) + " " + px(my - 7) + " L" + px(mx + 7) + " " + px(my) + " L" + px(mx) + " " +
         px(my + 7) + " L" + px(mx - 7) + " " + px(my) + " Z\" fill=\"#ffd700\" stroke=\"#000000\" stroke-width=\"1.5\"/>\n";
  svg += "<text x=\"" + px(on_left ? mx - 9 : mx + 9) + "\" y=\"" + px(label_y) + "\" text-anchor=\"" +
         (on_left ? "end" : "start") +
         "\" font-size=\"11\" fill=\"#000000\" stroke=\"#ffffff\" stroke-width=\"3\" paint-order=\"stroke\">" +
         escape_xml(m.label) + "</text>\n";
  return svg + "</g>\n";
}

// Legend: a short line in each series' style, then its name.
std::string legend_svg(const Legend& legend) {
  if (legend.items.empty()) return "";
  std::string svg = "<g class=\"legend\">\n";
  for (const auto& item : legend.items) {
    svg += "<line x1=\"" + px(item.x) + "\" x2=\"" + px(item.x + 22) + "\" y1=\"" + px(item.y - 4) + "\" y2=\"" +
           px(item.y - 4) + "\" stroke=\"" + item.colour + "\" stroke-width=\"2.5\"" +
           (item.series->dashed ? " stroke-dasharray=\"5 3\"" : "") + "/>\n";
    svg += "<text x=\"" + px(item.x + 28) + "\" y=\"" + px(item.y) + "\">" + escape_xml(item.series->name) + "</text>\n";
  }
  return svg + "</g>\n";
}

}  // namespace

std::string escape_xml(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string render_svg_chart(const ChartSpec& spec) {
  const double width = std::max(spec.width, 200);
  const double height = std::max(spec.height, 150);
  const Legend legend = layout_legend(spec, width);
  constexpr double kRight = 24, kBottom = 52;
  Plot plot;
  plot.top = 34 + legend.rows * 16 + 10;
  plot.width = width - plot.left - kRight;
  plot.height = std::max(40.0, height - plot.top - kBottom);

  std::string svg = svg_header(spec, width, height);
  const auto range = data_range(spec);
  if (!range) return svg + no_data_svg(plot) + "</svg>\n";
  plot.x_axis = spec.log_x ? log2_axis(range->x_min, range->x_max)
                           : linear_axis(range->x_min, range->x_max, range->x_integers, 8);
  // Throughput-like charts read best from zero, so a positive range starts there.
  plot.y_axis = linear_axis(std::min(0.0, range->y_min), std::max(0.0, range->y_max), false, 6);

  svg += axes_svg(plot, spec);
  for (std::size_t i = 0; i < spec.series.size(); ++i)
    svg += series_svg(plot, spec.series[i], kPalette[i % kPaletteSize], spec.log_x);
  for (std::size_t i = 0; i < spec.markers.size(); ++i)
    if (usable(spec.markers[i].x, spec.markers[i].y, spec.log_x)) svg += marker_svg(plot, spec.markers[i], i);
  return svg + legend_svg(legend) + "</svg>\n";
}

}  // namespace redline
