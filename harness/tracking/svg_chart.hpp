// Line charts as inline SVG: linear or log2 x axis, several series, and
// marked points (e.g. a saturation point). Pure text generation.
#pragma once

#include <string>
#include <vector>

namespace redline {

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), any order
  bool dashed = false;                            // e.g. a model's prediction
};

struct ChartMarker {
  double x = 0, y = 0;
  std::string label;
};

struct ChartSpec {
  std::string title, x_label, y_label;
  bool log_x = false;
  std::vector<ChartSeries> series;
  std::vector<ChartMarker> markers;
  int width = 640, height = 360;
};

std::string render_svg_chart(const ChartSpec& spec);

// Text safe inside XML/HTML elements and attribute values (& < > " ').
std::string escape_xml(const std::string& text);

}  // namespace redline
