#include "harness/tracking/references.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <stdexcept>

#include "harness/core/units.hpp"
#include "harness/gpu/gpu_peaks.hpp"
#include "harness/tracking/headlines.hpp"
#include "harness/tracking/history.hpp"

#ifndef REDLINE_SOURCE_DIR
#define REDLINE_SOURCE_DIR ""
#endif

namespace redline {
namespace fs = std::filesystem;
namespace {

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

std::map<std::string, std::string> read_key_values(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error(file.string() + ": cannot read");
  std::map<std::string, std::string> values;
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    line = trimmed(line);
    if (line.empty() || line[0] == '#') continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos)
      throw std::runtime_error(file.string() + ":" + std::to_string(number) + ": expected 'key: value', got '" + line + "'");
    values[trimmed(line.substr(0, colon))] = trimmed(line.substr(colon + 1));
  }
  return values;
}

// Same model by the peaks table, else by the exact name.
std::string model_of(const std::string& gpu_name) {
  const auto peaks = lookup_gpu_peaks(gpu_name);
  return peaks ? peaks->model : gpu_name;
}

// What the reference line says about where the figure came from.
std::string provenance(const Reference& r, const HistoryPoint& point) {
  std::string text = point.timestamp_utc.substr(0, 10);
  if (!r.driver.empty()) text += ", driver " + r.driver;
  if (!r.power_cap.empty()) text += ", " + r.power_cap + " cap";
  // Transcribed rows (entered from docs/validation.md) carry it in their run id.
  if (point.run_id.rfind("transcribed", 0) == 0) text += ", transcribed";
  return text;
}

std::string figure_line(const HeadlineChart& chart, const HistorySeries& line, double value, double reference,
                        const Reference& r, const HistoryPoint& point, const Schema& schema) {
  const auto spec = schema.find(line.metric);
  const std::string unit = spec ? " " + spec->unit : "";
  std::string text = chart.figure + (line.case_key.empty() ? "" : " " + line.case_key) + " " +
                     format_general(value, 4) + unit + ": ";
  const double change = reference != 0 ? value / reference - 1 : 0;
  if (std::abs(change) < 0.0005)
    text += "level with";
  else
    text += format_percent(std::abs(change)) + (change < 0 ? " below" : " above");
  return text + " the reference " + r.folder.filename().string() + " (" + format_general(reference, 4) + ", " +
         provenance(r, point) + ")";
}

const HistorySeries* same_line(const std::vector<HeadlineChart>& charts, const HeadlineChart& chart,
                               const HistorySeries& line) {
  for (const auto& c : charts) {
    if (tool_of_entry(c.tool) != tool_of_entry(chart.tool) || c.figure != chart.figure) continue;
    for (const auto& l : c.lines)
      if (l.case_key == line.case_key && l.metric == line.metric && !l.points.empty()) return &l;
  }
  return nullptr;
}

}  // namespace

fs::path references_root() {
  if (const char* set = std::getenv("REDLINE_REFERENCES"); set && *set) return set;
  std::error_code no_proc;
  const fs::path exe = fs::read_symlink("/proc/self/exe", no_proc);
  // build/bench/<tool>: the repository is two folders up.
  if (!no_proc) {
    const fs::path beside = exe.parent_path().parent_path().parent_path() / "results" / "references";
    if (fs::is_directory(beside)) return beside;
  }
  return fs::path(REDLINE_SOURCE_DIR) / "results" / "references";
}

Reference load_reference(const fs::path& folder) {
  const fs::path about = folder / "reference.txt";
  auto values = read_key_values(about);
  if (values["gpu"].empty()) throw std::runtime_error(about.string() + ": no 'gpu: NAME' line");
  Reference r;
  r.folder = folder;
  r.gpu = values["gpu"];
  r.gpu_model = model_of(r.gpu);
  r.dates = values["dates"], r.source = values["source"], r.driver = values["driver"];
  r.power_cap = values["power_cap"], r.software = values["software"];
  r.results = load_results(folder);
  return r;
}

std::optional<Reference> find_reference(const fs::path& root, const std::string& gpu_name) {
  std::error_code missing;
  if (!fs::is_directory(root, missing)) return std::nullopt;
  const std::string model = model_of(gpu_name);
  for (const auto& entry : fs::directory_iterator(root)) {
    const fs::path about = entry.path() / "reference.txt";
    if (!fs::is_regular_file(about)) continue;
    if (model_of(read_key_values(about)["gpu"]) == model) return load_reference(entry.path());
  }
  return std::nullopt;
}

std::vector<std::string> reference_lines(const RunResults& run, const Reference& reference, const Schema& schema) {
  const std::vector<HeadlineChart> ours = headline_history(history_series(run), schema);
  const std::vector<HeadlineChart> theirs = headline_history(history_series(reference.results), schema);
  std::vector<std::string> lines;
  for (const auto& chart : ours)
    for (const auto& line : chart.lines) {
      const HistorySeries* match = same_line(theirs, chart, line);
      if (!match || line.points.empty()) continue;
      lines.push_back(figure_line(chart, line, line.points.back().value, match->points.back().value, reference,
                                  match->points.back(), schema));
    }
  return lines;
}

void add_reference_summary(Report& report) {
  if (report.env.gpus.empty()) return;  // a CPU run: no GPU model to compare with
  const std::string gpu = report.env.gpus.front().name;
  const fs::path root = references_root();
  try {
    const auto reference = find_reference(root, gpu);
    if (!reference) {
      report.summary.emplace_back("reference", "none for " + gpu + " in " + root.string() +
                                                   " (scripts/save-reference adds a GPU run's results)");
      return;
    }
    const auto lines = reference_lines(results_of(report), *reference, Schema::compiled_in());
    if (lines.empty())
      report.summary.emplace_back("reference", reference->folder.string() + " holds none of this run's cases");
    for (const auto& line : lines) report.summary.emplace_back("reference", line);
  } catch (const std::exception& e) {
    report.summary.emplace_back("reference", std::string("not compared: ") + e.what());
  }
}

}  // namespace redline
