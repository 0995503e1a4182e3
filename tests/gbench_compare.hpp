// What Google Benchmark's tools/compare.py compares, so tests can check what
// it would read in redline's JSON without numpy and scipy. Its logic
// (tools/gbench/report.py, get_difference_report and calculate_change):
// - benchmarks are matched by name; the time unit is the first entry of that
//   name in the first run, and entries of another unit are dropped on both
//   sides; repetitions are paired by index;
// - the change is (new - old) / |old| for real_time and for cpu_time, 0 when
//   both are 0, and (new - old) / ((old + new) / 2) when only old is 0;
// - OVERALL_GEOMEAN compares the geometric means of every non-aggregate
//   benchmark's real_time and cpu_time in seconds (left out when one is 0).
#pragma once

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace redline::testing {

struct GbenchChange {
  std::string name;  // a benchmark's name, or OVERALL_GEOMEAN
  double time = 0, cpu = 0;
};

inline double gbench_change(double old_value, double new_value) {
  if (old_value == 0 && new_value == 0) return 0;
  if (old_value == 0) return (new_value - old_value) / ((old_value + new_value) / 2);
  return (new_value - old_value) / std::fabs(old_value);
}

// Geometric means of real_time and cpu_time in seconds; empty when one is 0.
inline std::optional<std::pair<double, double>> gbench_geomean(const nlohmann::json& run) {
  static const std::map<std::string, double> seconds = {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
  double log_real = 0, log_cpu = 0;
  std::size_t n = 0;
  for (const auto& b : run["benchmarks"]) {
    if (b.value("run_type", "") == "aggregate") continue;
    const double unit = seconds.at(b.value("time_unit", "s"));
    const double real = b["real_time"].get<double>() * unit, cpu = b["cpu_time"].get<double>() * unit;
    if (real == 0 || cpu == 0) return std::nullopt;
    log_real += std::log(real);
    log_cpu += std::log(cpu);
    ++n;
  }
  if (n == 0) return std::nullopt;
  return std::make_pair(std::exp(log_real / n), std::exp(log_cpu / n));
}

inline std::vector<GbenchChange> gbench_compare(const nlohmann::json& old_run, const nlohmann::json& new_run) {
  std::vector<std::string> names;
  std::set<std::string> seen, in_new;
  for (const auto& b : new_run["benchmarks"]) in_new.insert(b["name"].get<std::string>());
  for (const auto& b : old_run["benchmarks"]) {
    const std::string name = b["name"];
    if (in_new.count(name) && seen.insert(name).second) names.push_back(name);
  }
  std::vector<GbenchChange> changes;
  for (const auto& name : names) {
    std::optional<std::string> unit;
    for (const auto& b : old_run["benchmarks"])
      if (b["name"] == name && b.contains("time_unit") && b.contains("real_time") && b.contains("cpu_time")) {
        unit = b["time_unit"].get<std::string>();
        break;
      }
    if (!unit) continue;
    auto pick = [&](const nlohmann::json& run) {
      std::vector<nlohmann::json> out;
      for (const auto& b : run["benchmarks"])
        if (b["name"] == name && b["time_unit"] == *unit) out.push_back(b);
      return out;
    };
    const auto lhs = pick(old_run), rhs = pick(new_run);
    for (std::size_t i = 0; i < std::min(lhs.size(), rhs.size()); ++i)
      changes.push_back({name, gbench_change(lhs[i]["real_time"], rhs[i]["real_time"]),
                         gbench_change(lhs[i]["cpu_time"], rhs[i]["cpu_time"])});
  }
  const auto old_mean = gbench_geomean(old_run), new_mean = gbench_geomean(new_run);
  if (old_mean && new_mean)
    changes.push_back({"OVERALL_GEOMEAN", gbench_change(old_mean->first, new_mean->first),
                       gbench_change(old_mean->second, new_mean->second)});
  return changes;
}

}  // namespace redline::testing
