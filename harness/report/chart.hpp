// A chart as data: what the tools compute from their rows (the sweep charts
// of harness/tracking/sweep_charts.hpp, planned from the schema's chart
// hints) and what every drawer draws: the HTML report's SVG, and
// scripts/plot from context.redline.charts of a tool's JSON.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace redline {

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), any order
  bool dashed = false;                            // a model's prediction
};

struct ChartMarker {
  double x = 0, y = 0;
  std::string label;
};

// One metric of one group of a tool's rows against the swept parameter.
struct SweepChart {
  std::string title;    // the tool and the parameters the group shares
  std::string x;        // the swept parameter
  bool log_x = false;   // a log2 axis, whose values read as sizes (1K, 64M)
  std::string x_label;  // "bytes (log2 scale)"
  std::string metric;
  std::string unit;     // of the metric, short ("GB/s")
  std::string y_label;  // "busbw_GBps (GB/s)"
  // The medians over repetitions, one series per value of the series
  // parameter; then the prediction, dashed.
  std::vector<ChartSeries> series;
  std::vector<ChartMarker> markers;   // the saturation points of the first series
  std::vector<std::string> findings;  // the saturation finding of each measured series, as text
};

}  // namespace redline
