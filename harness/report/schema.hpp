// What results/SCHEMA.md says about each metric: its unit, whether higher or
// lower is better, and whether nightly comparison tracks it. Tools that judge
// results (compare, history, report) read directions from here, never from
// the user.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace redline {

enum class Better { higher, lower };

struct MetricSpec {
  std::string name;  // exact name, or a pattern "*_per_s" (a leading * matches any prefix)
  std::string unit;
  Better better = Better::higher;
  bool tracked = true;  // compared by default (false: informational, e.g. wall time with start-up)
};

class Schema {
 public:
  // Parses the "## Metrics" table of SCHEMA.md (columns: metric | unit |
  // better | tracked | tools | meaning). Throws std::runtime_error naming the
  // file and line for a malformed row.
  static Schema load(const std::filesystem::path& schema_md);
  static Schema parse(const std::string& markdown, const std::string& source);

  // Exact names first, then patterns; nullopt for a metric the schema lacks.
  std::optional<MetricSpec> find(const std::string& metric) const;
  const std::vector<MetricSpec>& metrics() const { return metrics_; }

 private:
  std::vector<MetricSpec> metrics_;
};

// $REDLINE_SCHEMA, else the source tree's results/SCHEMA.md (baked in at build time).
std::filesystem::path default_schema_path();

}  // namespace redline
