// The trainers' own lines, read from real examples of what each prints (and,
// for Lightning's two bars and Hugging Face's Trainer, from output captured
// from the current release: tests/captured/), and the conversions to samples
// per second.
#include "harness/measure/throughput_reading.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace redline {
namespace {

std::optional<ThroughputReading> read(const std::string& output, int skip = 1) {
  return read_trainer_throughput(output_lines(output), skip);
}

// The reading is there, from this trainer's line, of this kind and value.
void expect_reading(const std::optional<ThroughputReading>& r, const std::string& source, ReadingKind kind,
                    double value) {
  ASSERT_TRUE(r.has_value()) << source;
  EXPECT_EQ(r->source, source);
  EXPECT_EQ(r->kind, kind) << source;
  EXPECT_NEAR(r->value, value, 1e-9 * value) << source;
}

// A file of tests/captured/, byte for byte; empty (and a failure) when it cannot be read.
std::string captured(const std::string& name) {
  std::ifstream in(std::string(SOURCE_DIR) + "/tests/captured/" + name, std::ios::binary);
  EXPECT_TRUE(in) << "cannot read tests/captured/" << name;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(TrainerLines, HuggingFaceTrainer) {
  // The dict train() logs at its end (older and newer value spellings) and log_metrics' table.
  auto r = read(
      "{'train_runtime': 169.649, 'train_samples_per_second': 252.02, 'train_steps_per_second': 15.768, "
      "'total_flos': 229537542078168.0, 'train_loss': 0.27181456521292713, 'epoch': 5.0}\n");
  expect_reading(r, "Hugging Face Trainer's train_samples_per_second", ReadingKind::samples_per_s, 252.02);
  EXPECT_EQ(r->skipped, 0) << "one figure for the whole run: nothing to skip";
  r = read("{'train_runtime': '211', 'train_samples_per_second': '0.948',\n 'train_steps_per_second': '0.237'}\n");
  ASSERT_TRUE(r.has_value());
  EXPECT_DOUBLE_EQ(r->value, 0.948);
  r = read("***** train metrics *****\n  epoch                    =        3.0\n  train_loss               =     1.5841\n"
           "  train_runtime            = 0:08:09.32\n  train_samples_per_second =     98.198\n"
           "  train_steps_per_second   =      12.28\n");
  ASSERT_TRUE(r.has_value());
  EXPECT_DOUBLE_EQ(r->value, 98.198);
}

TEST(TrainerLines, HuggingFaceTrainerAsTransformers5Prints) {
  // transformers 5.24: the values quoted, the dict after tqdm's \r redraws on the same line.
  const auto r = read(captured("hf_trainer.txt"));
  expect_reading(r, "Hugging Face Trainer's train_samples_per_second", ReadingKind::samples_per_s, 71.92);
  EXPECT_EQ(r->readings, 1);
}

TEST(TrainerLines, LightningProgressBar) {
  // tqdm redraws the bar with \r; each redraw is a reading.
  auto r = read(
      "Epoch 0:   4%|\xe2\x96\x8d         | 350/8000 [00:09<03:23, 37.56it/s, v_num=0]\r"
      "Epoch 0:   5%|\xe2\x96\x8d         | 400/8000 [00:10<03:22, 38.10it/s, v_num=0]\r"
      "Epoch 0:   6%|\xe2\x96\x8d         | 450/8000 [00:11<03:21, 38.50it/s, v_num=0]\n");
  expect_reading(r, "Lightning's tqdm bar it/s", ReadingKind::steps_per_s, (38.10 + 38.50) / 2);
  EXPECT_EQ(r->readings, 3);
  // Slower than a step a second, tqdm prints seconds per step.
  r = read("Epoch 1: 100%|##########| 4836/4836 [2:20:18<00:00,  2.50s/it, v_num=3, train_loss=0.027]\n", 0);
  ASSERT_TRUE(r.has_value());
  EXPECT_DOUBLE_EQ(r->value, 0.4);
  // Validation and testing bars are not training steps.
  EXPECT_FALSE(read("Testing DataLoader 0: 100%|##########| 133/133 [00:07<00:00, 17.44it/s]\n").has_value());
}

TEST(TrainerLines, LightningTqdmBarAsLightning26Prints) {
  // Lightning 2.6.6 without rich: every redraw with a rate is a reading ("?it/s" before it has one is
  // not): each of the 20 steps drawn before and after its train_loss, and two last redraws at 100%.
  const auto r = read(captured("lightning_tqdm.txt"));
  expect_reading(r, "Lightning's tqdm bar it/s", ReadingKind::steps_per_s, 64.55);
  EXPECT_EQ(r->readings, 42);
  EXPECT_EQ(r->skipped, 1);
}

TEST(TrainerLines, LightningRichBar) {
  // Lightning's default bar where rich is installed: the epoch over max_epochs - 1, the rate always in it/s.
  auto r = read("Epoch 0/-2 \xe2\x94\x81\xe2\x94\x81\xe2\x94\x81 20/20 0:00:00 \xe2\x80\xa2 0:00:00 444.53it/s\n");
  expect_reading(r, "Lightning's rich bar it/s", ReadingKind::steps_per_s, 444.53);
  // Without max_epochs the epoch alone, padded to the width of "Validation".
  r = read("Epoch 3    \xe2\x94\x81\xe2\x94\x81 10/50 0:00:01 \xe2\x80\xa2 0:00:04 9.50it/s v_num: 0\n");
  expect_reading(r, "Lightning's rich bar it/s", ReadingKind::steps_per_s, 9.5);
  // "0.00it/s" is rich before it has a speed; validation is not training.
  EXPECT_FALSE(read("Epoch 0/-2 \xe2\x94\x81 0/300 0:00:00 \xe2\x80\xa2 -:--:-- 0.00it/s\n").has_value());
  EXPECT_FALSE(read("Validation \xe2\x94\x81\xe2\x94\x81 8/8 0:00:00 \xe2\x80\xa2 0:00:00 120.00it/s\n").has_value());
}

TEST(TrainerLines, LightningRichBarAsLightning26Prints) {
  // Not a terminal: rich prints the bar once, at the epoch's end, at 80 columns.
  expect_reading(read(captured("lightning_rich.txt")), "Lightning's rich bar it/s", ReadingKind::steps_per_s, 72.65);
  // A cell too wide for 80 columns wraps to the next line; the rate stays on the Epoch line.
  expect_reading(read(captured("lightning_rich_wrapped.txt")), "Lightning's rich bar it/s", ReadingKind::steps_per_s,
                 124.26);
}

TEST(TrainerLines, LightningRichBarOnATerminal) {
  // On a terminal rich redraws the bar (\r, colour codes, "0.00it/s" until it has a speed): the first
  // six and last six redraws of 300 steps. Three of the first have a speed, all six of the last.
  const auto r = read(captured("lightning_rich_terminal.txt"));
  expect_reading(r, "Lightning's rich bar it/s", ReadingKind::steps_per_s, (100.13 + 100.27) / 2);
  EXPECT_EQ(r->readings, 9);
}

TEST(TrainerLines, MegatronLM) {
  const std::string line =
      " [2025-08-01 07:19:37] iteration        %d/    5000 | consumed samples:          128 | elapsed time per "
      "iteration (ms): %s | throughput per GPU (TFLOP/s/GPU): 80.2 | learning rate: 6.976744E-08 | global batch "
      "size:   128 | lm loss: 1.043863E+01 | loss scale: 1.0 | grad norm: 26.203 | number of skipped iterations:   0 |";
  std::string output;
  for (const auto& [i, ms] : std::vector<std::pair<int, std::string>>{{1, "19138.8"}, {2, "13105.3"}, {3, "13200.1"}}) {
    char buf[1024];
    std::snprintf(buf, sizeof buf, line.c_str(), i, ms.c_str());
    output += std::string(buf) + "\n";
  }
  const auto r = read(output);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->source, "Megatron-LM's elapsed time per iteration (ms)");
  EXPECT_EQ(r->kind, ReadingKind::step_seconds);
  EXPECT_NEAR(r->value, (13.1053 + 13.2001) / 2, 1e-9);  // the first iteration skipped
  EXPECT_EQ(r->skipped, 1);
}

TEST(TrainerLines, Torchtitan) {
  const auto r = read(
      "[titan] 2026-05-04 14:35:16,843 - root - INFO - step:  1  loss:  3.99615  grad_norm:  3.7530  memory: "
      "11.36GiB(6.06%)  tps: 345  tflops: 0.19  mfu: 0.01%\n"
      // Coloured, as on a terminal, with thousands separated.
      "[titan] 2026-05-04 14:35:17,175 - root - INFO - \x1b[31mstep:  2  \x1b[32mloss:  3.05336  \x1b[33mmemory: "
      "11.36GiB(6.06%)  \x1b[34mtps: 12,345  \x1b[36mtflops: 6.81  \x1b[35mmfu: 0.69%\x1b[39m\n"
      "[titan] 2026-05-04 14:35:18,000 - root - INFO - validate step:  2  loss:  3.1  memory: 11.36GiB(6.06%)  "
      "tps: 99,999\n");
  expect_reading(r, "torchtitan's tps (tokens/s)", ReadingKind::tokens_per_s, 12345);
  EXPECT_EQ(r->readings, 2) << "the validation line is not a training step";
}

TEST(TrainerLines, DeepSpeed) {
  const auto r = read(
      "[2023-10-31 08:58:31,526] [INFO] [timer.py:260:stop] epoch=0/micro_step=13990/global_step=13990, "
      "RunningAvgSamplesPerSec=1412.9, CurrSamplesPerSec=1390.0, MemAllocated=0.0GB, MaxMemAllocated=0.0GB\n"
      "[2023-10-31 08:58:33,237] [INFO] [timer.py:260:stop] epoch=0/micro_step=14000/global_step=14000, "
      "RunningAvgSamplesPerSec=1412.7627800125174, CurrSamplesPerSec=1322.8113222423717, MemAllocated=0.0GB, "
      "MaxMemAllocated=0.0GB\n",
      0);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->source, "DeepSpeed's CurrSamplesPerSec (samples/sec)");
  EXPECT_DOUBLE_EQ(r->value, (1390.0 + 1322.8113222423717) / 2);
}

TEST(TrainerLines, NanoGPT) {
  const auto r = read(
      "iter 0: loss 10.9876, time 3051.20ms, mfu -100.00%\n"
      "iter 1: loss 4.1234, time 120.00ms, mfu 12.34%\n"
      "step 2: train loss 4.0000, val loss 4.1000\n"
      "iter 2: loss 4.0987, time 118.00ms, mfu 12.40%\n"
      "iter 3: loss 4.0500, time 121.00ms, mfu 12.38%, tokens 98,304\n");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->source, "nanoGPT's iter N: ... time X ms");
  EXPECT_DOUBLE_EQ(r->value, 0.120);
  EXPECT_EQ(r->readings, 4);
  EXPECT_EQ(r->skipped, 1);
}

TEST(TrainerLines, NothingRecognised) {
  EXPECT_FALSE(read("").has_value());
  EXPECT_FALSE(read("loss 2.3\nthroughput: 1234 samples/s\ndone\n").has_value());
}

TEST(TrainerLines, TheFirstFormatInOrderWins) {
  // Hugging Face's final figure before its own progress bar's rate.
  const auto r = read("Epoch 0: 100%|##| 10/10 [00:01<00:00,  9.00it/s]\n{'train_samples_per_second': 72.5}\n");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->source, "Hugging Face Trainer's train_samples_per_second");
}

TEST(OutputLines, SplitsOnReturnsAndNewlinesAndDropsColours) {
  EXPECT_EQ(output_lines("a\rb\n\nc\x1b[0m d\r\n"), (std::vector<std::string>{"a", "b", "c d"}));
  EXPECT_EQ(output_lines(std::string(5000, 'x'))[0].size(), 4096u);
}

TEST(Readings, SkipKeepsAtLeastTheLastOne) {
  auto r = summarize_readings({5, 1, 2, 3}, 1, ReadingKind::step_seconds, "s");
  EXPECT_DOUBLE_EQ(r->value, 2);
  EXPECT_EQ(r->skipped, 1);
  r = summarize_readings({5, 1}, 4, ReadingKind::step_seconds, "s");
  EXPECT_DOUBLE_EQ(r->value, 1);
  EXPECT_EQ(r->skipped, 1);
  EXPECT_FALSE(summarize_readings({}, 0, ReadingKind::step_seconds, "s").has_value());
}

TEST(Readings, SamplesPerSecond) {
  const auto of = [](ReadingKind kind, double value, std::optional<double> tokens = std::nullopt) {
    return samples_per_second({kind, value, "x", 1, 0}, 32, tokens);
  };
  EXPECT_DOUBLE_EQ(*of(ReadingKind::samples_per_s, 100), 100);
  EXPECT_DOUBLE_EQ(*of(ReadingKind::steps_per_s, 2.5), 80);
  EXPECT_DOUBLE_EQ(*of(ReadingKind::step_seconds, 0.1), 320);
  EXPECT_FALSE(of(ReadingKind::tokens_per_s, 4096).has_value());
  EXPECT_DOUBLE_EQ(*of(ReadingKind::tokens_per_s, 4096, 1024), 4);
}

TEST(Readings, PrintedNumbers) {
  EXPECT_DOUBLE_EQ(*printed_number("12,345.5"), 12345.5);
  EXPECT_DOUBLE_EQ(*printed_number("2.5e-05"), 2.5e-05);
  EXPECT_FALSE(printed_number("fast").has_value());
  EXPECT_FALSE(printed_number("").has_value());
  EXPECT_FALSE(printed_number("1.2.3").has_value());
  // strtod would take these; no trainer prints them as a reading, and a NaN
  // step time would reach the median's sort.
  EXPECT_FALSE(printed_number("nan").has_value());
  EXPECT_FALSE(printed_number("inf").has_value());
  EXPECT_FALSE(printed_number("0x10").has_value());
  EXPECT_FALSE(printed_number(" 5").has_value());
  EXPECT_DOUBLE_EQ(*printed_number("5."), 5.0);
  EXPECT_DOUBLE_EQ(*printed_number(".5"), 0.5);
  EXPECT_EQ(step_time_unit_seconds("ms"), 1e-3);
  EXPECT_FALSE(step_time_unit_seconds("min").has_value());
}

}  // namespace
}  // namespace redline
