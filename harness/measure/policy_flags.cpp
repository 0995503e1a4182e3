#include "harness/measure/policy_flags.hpp"

#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"

namespace redline {

double positive_seconds(const char* flag, const std::string& text) {
  const double value = parse_number(flag, text);
  if (!(value >= 0) || value > 3600) throw UsageError(flag, text, "must be between 0 and 3600 seconds");
  return value;
}

void add_policy_flags(CLI::App& app, PolicyFlags& f, const std::string& unit) {
  app.add_option("--warmup", f.warmup, "Warm-up seconds per " + unit + " (default 0.2)")->type_name("S");
  app.add_option("--min-time", f.min_time,
                 "Sample each " + unit +
                     " at least this long before the noise stop may end it (default 0.25; --max-time and --max-reps "
                     "still end it): a power-capped GPU's clock swings over tens of ms, and a shorter window can "
                     "time a burst")
      ->type_name("S");
  app.add_option("--max-time", f.max_time, "Cap on the timed samples per " + unit + ", seconds (default 2; 0: no time cap, --max-reps alone ends them)")
      ->type_name("S");
  app.add_option("--target-cv", f.target_cv, "Stop sampling a " + unit + " once the CV is below this (default 0.01)")
      ->type_name("X");
  app.add_option("--min-reps", f.min_reps, "Timed samples per " + unit + ", at least (default 10)")->type_name("N");
  app.add_option("--max-reps", f.max_reps, "Timed samples per " + unit + ", at most (default 500)")->type_name("N");
}

MeasurementPolicy policy_of(const PolicyFlags& f) {
  MeasurementPolicy policy;
  policy.warmup_iterations = 2;
  policy.warmup_seconds = positive_seconds("--warmup", f.warmup);
  policy.max_seconds = positive_seconds("--max-time", f.max_time);
  // Beyond --max-time it is not refused: the cap ends the samples (a check run's --max-time 0.3 works).
  policy.min_seconds = positive_seconds("--min-time", f.min_time);
  policy.target_cv = parse_number("--target-cv", f.target_cv);
  if (!(policy.target_cv >= 0) || policy.target_cv >= 1)
    throw UsageError("--target-cv", f.target_cv, "must be at least 0 and below 1 (0: no noise stop)");
  policy.min_repetitions = static_cast<int>(parse_count_between("--min-reps", f.min_reps, 1, 1000000));
  policy.max_repetitions = static_cast<int>(parse_count_between("--max-reps", f.max_reps, 1, 1000000));
  if (policy.max_repetitions < policy.min_repetitions)
    throw UsageError("--max-reps", f.max_reps, "must be at least --min-reps (" + f.min_reps + ")");
  return policy;
}

}  // namespace redline
