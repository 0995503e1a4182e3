// Reads a trial's throughput from what it printed: the user's
// --metric-regex or --step-time-regex, or else one of the lines common
// trainers already print (Hugging Face Trainer, DeepSpeed, Megatron-LM,
// torchtitan, nanoGPT, Lightning), so no wrapper script is needed.
#pragma once

#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace redline {

// What a printed number is: a rate of samples, tokens or steps, or the time
// of one step (seconds, once its unit is applied).
enum class ReadingKind { samples_per_s, tokens_per_s, steps_per_s, step_seconds };

// A line that carries a throughput, and who prints it.
struct LineFormat {
  std::string name;    // "nanoGPT's `iter N: ... time X ms`"
  std::regex pattern;  // the first group is the number (1,234.5 reads as 1234.5)
  ReadingKind kind = ReadingKind::samples_per_s;
  double unit_seconds = 1;   // step times: seconds per printed unit
  bool one_per_step = true;  // each line is one step: --skip-steps applies
  std::string exclude;       // a line holding this is not a reading (validation)
  // When set, a second group equal to this means the number is seconds per
  // step, not steps per second (tqdm switches from "it/s" to "s/it").
  std::string inverse_unit;
};

// The trainers' lines, in the order they are tried.
const std::vector<LineFormat>& trainer_line_formats();

struct ThroughputReading {
  ReadingKind kind = ReadingKind::samples_per_s;
  double value = 0;    // the median of the readings kept (--metric-regex: the last match)
  std::string source;  // "--metric-regex", "--step-time-regex" or a LineFormat's name
  int readings = 0;    // lines read
  int skipped = 0;     // of which dropped by --skip-steps
};

// Each line of output (\r ends a line too, for progress bars; ANSI colour
// codes removed), cut to 4096 characters: std::regex recurses per character
// matched, so an unbounded line could overflow the stack.
std::vector<std::string> output_lines(const std::string& output);

// "12,345.6" -> 12345.6 (commas and underscores as humans print them);
// nullopt when the text is not a decimal number ("nan", "inf", "0x10", " 5").
std::optional<double> printed_number(const std::string& text);

// The numbers a format finds in these lines (in seconds for step times,
// per second for rates); throws std::invalid_argument naming the text when
// a match is not a number.
std::vector<double> read_numbers(const std::vector<std::string>& lines, const LineFormat& format);

// The median of `numbers` after dropping the first `skip` (warm-up and
// compilation), keeping at least the last one; nullopt when there are none.
std::optional<ThroughputReading> summarize_readings(const std::vector<double>& numbers, int skip, ReadingKind kind,
                                                    std::string source);

// The first trainer format that matches any line, read with --skip-steps.
std::optional<ThroughputReading> read_trainer_throughput(const std::vector<std::string>& lines, int skip);

// Samples per second at this batch size; nullopt for tokens without
// --tokens-per-sample.
std::optional<double> samples_per_second(const ThroughputReading& reading, std::int64_t batch,
                                         std::optional<double> tokens_per_sample);

// "iter 3: loss 4.1, time 120.00ms" -> the unit's seconds: s 1, ms 1e-3, us 1e-6.
std::optional<double> step_time_unit_seconds(const std::string& unit);

}  // namespace redline
