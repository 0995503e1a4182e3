#include "harness/measure/throughput_reading.hpp"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "harness/core/regex_text.hpp"
#include "harness/measure/stats.hpp"

namespace redline {
namespace {

// A number as trainers print it: 1234, 1,234.5, 2.5e-05.
const std::string kNumber = "([0-9][0-9,]*(?:\\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)";

LineFormat format(std::string name, const std::string& pattern, ReadingKind kind, double unit_seconds,
                  bool one_per_step, std::string exclude = "", std::string inverse_unit = "") {
  return {std::move(name),
          std::regex(pattern, std::regex::ECMAScript),
          kind,
          unit_seconds,
          one_per_step,
          std::move(exclude),
          std::move(inverse_unit)};
}

// Colour codes (torchtitan colours its log line) split what a pattern reads.
std::string without_ansi_codes(const std::string& line) {
  if (line.find('\x1b') == std::string::npos) return line;
  static const std::regex code("\x1b\\[[0-9;]*[A-Za-z]");
  return std::regex_replace(line, code, "");
}

}  // namespace

std::optional<double> printed_number(const std::string& text) {
  std::string digits;
  for (char c : text)
    if (c != ',' && c != '_') digits += c;  // "12,345.6" as printed by humans
  // Decimal notation only: strtod alone would also take "nan", "inf", hex
  // ("0x10" as 16) and leading spaces, none of which a trainer means as a
  // reading; a NaN would then reach the median's sort.
  static const std::regex decimal("[-+]?(?:[0-9]+\\.?[0-9]*|\\.[0-9]+)(?:[eE][-+]?[0-9]+)?");
  if (!std::regex_match(digits, decimal)) return std::nullopt;
  return std::strtod(digits.c_str(), nullptr);  // 1e400 reads inf: the caller refuses it as out of range
}

const std::vector<LineFormat>& trainer_line_formats() {
  using K = ReadingKind;
  static const std::vector<LineFormat> formats = {
      // {'train_runtime': 169.6, 'train_samples_per_second': 252.02, ...} at the end of train(), values
      // quoted in newer releases; log_metrics prints "  train_samples_per_second =     98.198".
      format("Hugging Face Trainer's train_samples_per_second",
             "train_samples_per_second['\"]?\\s*[:=]\\s*['\"]?" + kNumber, K::samples_per_s, 1, false),
      // [timer.py:260:stop] epoch=0/micro_step=199/global_step=199, RunningAvgSamplesPerSec=58.7,
      // CurrSamplesPerSec=61.3, MemAllocated=6.01GB, MaxMemAllocated=19.52GB
      format("DeepSpeed's CurrSamplesPerSec (samples/sec)", "CurrSamplesPerSec=" + kNumber, K::samples_per_s, 1, true),
      //  iteration  10/ 100 | consumed samples: 640 | elapsed time per iteration (ms): 1234.5 | ...
      format("Megatron-LM's elapsed time per iteration (ms)", "elapsed time per iteration \\(ms\\):\\s*" + kNumber,
             K::step_seconds, 1e-3, true),
      // step:  1  loss:  3.99615  grad_norm:  3.7530  memory: 11.36GiB(6.06%)  tps: 345  tflops: 0.19  mfu: 0.01%
      format("torchtitan's tps (tokens/s)", "(?:^|\\s)step:\\s*[0-9]+\\s.*\\stps:\\s*" + kNumber, K::tokens_per_s, 1,
             true, "validate step"),
      // iter 3: loss 4.1234, time 120.00ms, mfu 12.34%
      format("nanoGPT's iter N: ... time X ms", "\\biter [0-9]+: loss \\S+, time " + kNumber + " ?ms", K::step_seconds,
             1e-3, true),
      // Lightning draws one of two bars, rich's where rich is installed, else tqdm's. tqdm:
      // Epoch 0:   4%|▍         | 350/8000 [00:09<03:23, 37.56it/s, v_num=0] ("1.23s/it" when slow)
      format("Lightning's tqdm bar it/s", "\\bEpoch [0-9]+:.*[ ,]" + kNumber + "(it/s|s/it)", K::steps_per_s, 1, true,
             "", "s/it"),
      // rich: Epoch 0/-2 ━━━━━━━━━━━━ 20/20 0:00:00 • 0:00:00 444.53it/s train_loss: 2.35 (the epoch over
      // max_epochs - 1, or the epoch alone); always it/s, and "0.00it/s" before it has a speed, which is
      // not a reading. tests/captured/ holds both as the current release prints them.
      format("Lightning's rich bar it/s", "\\bEpoch [0-9]+(?:/-?[0-9]+)? .*\\s(?!0\\.00it/s)" + kNumber + "it/s",
             K::steps_per_s, 1, true),
  };
  return formats;
}

std::vector<std::string> output_lines(const std::string& output) {
  std::vector<std::string> lines;
  std::size_t begin = 0;
  while (begin < output.size()) {
    auto end = output.find_first_of("\r\n", begin);
    if (end == std::string::npos) end = output.size();
    if (end > begin) lines.push_back(without_ansi_codes(std::string(regex_safe_prefix(std::string_view(output).substr(begin, end - begin)))));
    begin = end + 1;
  }
  return lines;
}

std::vector<double> read_numbers(const std::vector<std::string>& lines, const LineFormat& format) {
  std::vector<double> numbers;
  for (const auto& line : lines) {
    if (!format.exclude.empty() && line.find(format.exclude) != std::string::npos) continue;
    for (auto it = std::sregex_iterator(line.begin(), line.end(), format.pattern); it != std::sregex_iterator(); ++it) {
      const auto number = printed_number((*it)[1].str());
      if (!number) throw std::invalid_argument((*it)[1].str());
      double value = *number;
      const bool inverse = !format.inverse_unit.empty() && it->size() > 2 && (*it)[2].str() == format.inverse_unit;
      if (inverse) value = value > 0 ? 1.0 / value : 0;
      numbers.push_back(value * format.unit_seconds);
    }
  }
  return numbers;
}

std::optional<ThroughputReading> summarize_readings(const std::vector<double>& numbers, int skip, ReadingKind kind,
                                                    std::string source) {
  if (numbers.empty()) return std::nullopt;
  const int dropped = std::min<int>(std::max(skip, 0), static_cast<int>(numbers.size()) - 1);
  const std::vector<double> kept(numbers.begin() + dropped, numbers.end());
  ThroughputReading reading;
  reading.kind = kind;
  reading.value = summarize(kept).median;
  reading.source = std::move(source);
  reading.readings = static_cast<int>(numbers.size());
  reading.skipped = dropped;
  return reading;
}

std::optional<ThroughputReading> read_trainer_throughput(const std::vector<std::string>& lines, int skip) {
  for (const LineFormat& format : trainer_line_formats()) {
    const std::vector<double> numbers = read_numbers(lines, format);
    if (numbers.empty()) continue;
    return summarize_readings(numbers, format.one_per_step ? skip : 0, format.kind, format.name);
  }
  return std::nullopt;
}

std::optional<double> samples_per_second(const ThroughputReading& reading, std::int64_t batch,
                                         std::optional<double> tokens_per_sample) {
  const double b = static_cast<double>(batch);
  switch (reading.kind) {
    case ReadingKind::samples_per_s: return reading.value;
    case ReadingKind::steps_per_s: return reading.value * b;
    case ReadingKind::step_seconds: return reading.value > 0 ? b / reading.value : 0.0;
    case ReadingKind::tokens_per_s:
      if (!tokens_per_sample) return std::nullopt;
      return reading.value / *tokens_per_sample;
  }
  return std::nullopt;
}

std::optional<double> step_time_unit_seconds(const std::string& unit) {
  if (unit == "s") return 1.0;
  if (unit == "ms") return 1e-3;
  if (unit == "us") return 1e-6;
  return std::nullopt;
}

}  // namespace redline
