// Line charts as inline SVG: linear or log2 x axis, several series, and
// marked points (e.g. a saturation point). Pure text generation.
#pragma once

#include <string>
#include <vector>

#include "harness/report/chart.hpp"

namespace redline {

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
