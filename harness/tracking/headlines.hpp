// The headline figures of the history: what each tool's rows say run after
// run about the figures its row of the schema's headlines table names (best
// throughput, saturation batch, peak busbw per collective, MAMF per dtype),
// one chart per tool and figure, a line per case. The HTML report draws
// these instead of one chart per case and metric.
#pragma once

#include <string>
#include <vector>

#include "harness/report/schema.hpp"
#include "harness/tracking/history.hpp"

namespace redline {

struct HeadlineChart {
  std::string tool;     // as the history names it: the tool, or tool[entry]
  std::string figure;   // the schema's figure, or the metric of a tool without headlines
  std::string y_label;  // "samples_per_s (samples/s)"; the swept parameter for a saturation figure
  // A line per case, in case order (numbers by value): its case_key is the
  // case without the swept parameter (empty when nothing else is left), its
  // metric what the points hold (the metric, or the swept parameter), its
  // points one per run, oldest first.
  std::vector<HistorySeries> lines;
};

// `history` as load_history returns it (series per tool, case and metric).
std::vector<HeadlineChart> headline_history(const std::vector<HistorySeries>& history, const Schema& schema);

}  // namespace redline
