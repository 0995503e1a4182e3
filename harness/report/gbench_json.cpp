#include "harness/report/gbench_json.hpp"

#include <cmath>
#include <map>
#include <regex>
#include <set>

#include "harness/report/json_writer.hpp"

namespace redline {
namespace {

void write_environment(JsonWriter& json, const Environment& env) {
  json.begin_object();
  json.key("redline_version").value(env.redline_version);
  json.key("git_sha").value(env.git_sha);
  json.key("timestamp_utc").value(env.timestamp_utc);
  json.key("host").value(env.host);
  json.key("cpu_model").value(env.cpu_model);
  json.key("cpu_count").value(env.cpu_count);
  json.key("os").value(env.os);
  json.key("driver_version").value(env.driver_version);
  json.key("cuda_driver_version").value(env.cuda_driver_version);
  json.key("cuda_runtime_version").value(env.cuda_runtime_version);
  json.key("cublas_version").value(env.cublas_version);
  json.key("nccl_version").value(env.nccl_version);
  json.key("mpi_library").value(env.mpi_library);
  json.key("gpu_source").value(env.gpu_source);
  json.key("gpus").begin_array();
  for (const auto& gpu : env.gpus) {
    json.begin_object();
    json.key("index").value(gpu.index);
    json.key("name").value(gpu.name);
    json.key("uuid").value(gpu.uuid);
    json.key("compute_capability").value(gpu.compute_capability);
    // 0 means unknown for these (NVML reports neither SMs nor L2): null.
    auto known = [&](const char* name, std::uint64_t value) {
      json.key(name);
      if (value) json.value(static_cast<std::int64_t>(value)); else json.null();
    };
    known("sm_count", static_cast<std::uint64_t>(gpu.sm_count));
    known("memory_bytes", gpu.memory_bytes);
    known("l2_bytes", gpu.l2_bytes);
    // Unknown readings are null, never a guess.
    auto optional = [&](const char* name, const auto& reading) {
      json.key(name);
      if (reading) json.value(static_cast<double>(*reading)); else json.null();
    };
    optional("sm_clock_mhz", gpu.sm_clock_mhz);
    optional("max_sm_clock_mhz", gpu.max_sm_clock_mhz);
    optional("temperature_c", gpu.temperature_c);
    optional("power_w", gpu.power_w);
    optional("throttle_reasons", gpu.throttle_reasons);
    json.end_object();
  }
  json.end_array();
  json.key("variables").begin_object();
  for (const auto& [name, value] : env.variables) json.key(name).value(value);
  json.end_object();
  json.end_object();
}

// context.redline.charts: each chart's axes, its series' points as [x, y]
// pairs, the saturation markers and findings (harness/report/chart.hpp).
void write_charts(JsonWriter& json, const std::vector<SweepChart>& charts) {
  json.begin_array();
  for (const SweepChart& chart : charts) {
    json.begin_object();
    json.key("title").value(chart.title);
    json.key("x").begin_object();
    json.key("parameter").value(chart.x);
    json.key("scale").value(chart.log_x ? "log2" : "linear");
    json.key("label").value(chart.x_label);
    json.end_object();
    json.key("y").begin_object();
    json.key("metric").value(chart.metric);
    json.key("unit").value(chart.unit);
    json.key("label").value(chart.y_label);
    json.end_object();
    json.key("series").begin_array();
    for (const ChartSeries& series : chart.series) {
      json.begin_object();
      json.key("name").value(series.name);
      json.key("prediction").value(series.dashed);
      json.key("points").begin_array();
      for (const auto& [x, y] : series.points) json.begin_array().value(x).value(y).end_array();
      json.end_array();
      json.end_object();
    }
    json.end_array();
    json.key("markers").begin_array();
    for (const ChartMarker& marker : chart.markers)
      json.begin_object().key("x").value(marker.x).key("y").value(marker.y).key("label").value(marker.label).end_object();
    json.end_array();
    json.key("findings").begin_array();
    for (const auto& finding : chart.findings) json.value(finding);
    json.end_array();
    json.end_object();
  }
  json.end_array();
}

// A parameter or metric named like one of Google Benchmark's own fields would
// make a duplicate key; it gets a prefix instead.
std::string field_name(const std::string& prefix, const std::string& name) {
  static const std::set<std::string> reserved = {
      "name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
      "repetition_index", "threads", "iterations", "real_time", "cpu_time", "time_unit",
      "error_occurred", "error_message", "case_key", "status", "note", "aggregate_name"};
  return reserved.count(name) ? prefix + name : name;
}

struct GbenchTime {
  double value = 0;  // 0 where nothing was measured (NaN, a skipped row)
  std::string unit = "ns";
};

// real_time and cpu_time of one row: the report's time metric (a time as it
// is, a rate as the time per item it implies), else the row's first time
// metric. Every row of a report gets the same unit from a declared metric,
// failed rows too, as compare.py pairs a benchmark's runs by name and unit.
GbenchTime row_time(const Row& row, const std::string& time_metric) {
  static const std::regex time_name(R"(time_(ns|us|ms|s)$)");
  std::smatch m;
  if (time_metric.ends_with("_per_s")) {
    const double rate = row.metric_value(time_metric).value_or(0);
    return {std::isfinite(rate) && rate > 0 ? 1e6 / rate : 0, "us"};
  }
  if (std::regex_search(time_metric, m, time_name)) {
    const double time = row.metric_value(time_metric).value_or(0);
    return {std::isfinite(time) ? time : 0, m[1]};
  }
  for (const auto& [metric, value] : row.metrics)
    if (std::isfinite(value) && std::regex_search(metric, m, time_name)) return {value, m[1]};
  return {};
}

}  // namespace

std::string environment_json(const Environment& env) {
  JsonWriter json;
  write_environment(json, env);
  return json.str();
}

std::string to_gbench_json(const Report& report) {
  JsonWriter json;
  json.begin_object();
  json.key("context").begin_object();
  json.key("date").value(report.env.timestamp_utc);
  json.key("host_name").value(report.env.host);
  json.key("executable").value(report.tool);
  json.key("num_cpus").value(report.env.cpu_count);
  json.key("mhz_per_cpu").value(0);
  json.key("cpu_scaling_enabled").value(false);
  json.key("caches").begin_array().end_array();
  json.key("library_build_type").value("release");
  json.key("redline").begin_object();
  json.key("tool").value(report.tool);
  json.key("run_id").value(report.run_id);
  if (!report.time_metric.empty()) json.key("time_metric").value(report.time_metric);
  json.key("environment");
  write_environment(json, report.env);
  json.key("summary").begin_object();
  for (const auto& [name, value] : report.summary) json.key(name).value(value);
  json.end_object();
  if (report.charts) write_charts(json.key("charts"), *report.charts);
  json.end_object();
  json.end_object();

  std::map<std::string, int> repetitions;  // per case key
  for (const Row& row : report.rows) ++repetitions[row.case_key()];

  json.key("benchmarks").begin_array();
  for (std::size_t i = 0; i < report.rows.size(); ++i) {
    const Row& row = report.rows[i];
    std::string name = report.tool;
    for (const auto& [k, v] : row.params) name += "/" + k + "=" + v;
    const auto [real_time, unit] = row_time(row, report.time_metric);
    json.begin_object();
    json.key("name").value(name);
    json.key("family_index").value(0);
    json.key("per_family_instance_index").value(static_cast<std::int64_t>(i));
    json.key("run_name").value(name);
    json.key("run_type").value("iteration");
    json.key("repetitions").value(repetitions[row.case_key()]);
    json.key("repetition_index").value(row.repetition);
    json.key("threads").value(1);
    json.key("iterations").value(1);
    json.key("real_time").value(real_time);
    json.key("cpu_time").value(real_time);
    json.key("time_unit").value(unit);
    if (row.status != RowStatus::ok) {
      json.key("error_occurred").value(true);
      json.key("error_message").value(to_string(row.status) + (row.note.empty() ? "" : ": " + row.note));
    }
    json.key("case_key").value(row.case_key());
    json.key("status").value(status_name(row.status));
    json.key("note").value(row.note);
    for (const auto& [k, v] : row.params) json.key(field_name("param_", k)).value(v);
    for (const auto& [k, v] : row.metrics) json.key(field_name("metric_", k)).value(v);
    json.end_object();
  }
  json.end_array();
  json.end_object();
  return json.str();
}

}  // namespace redline
