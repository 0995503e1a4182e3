#include "bench/tool_columns.hpp"

#include <stdexcept>

#include "collectives/sweep/collective_columns.hpp"
#include "harness/attention/attention_columns.hpp"
#include "harness/batch/batch_columns.hpp"
#include "harness/checkpoint/checkpoint_columns.hpp"
#include "harness/gemm/gemm_columns.hpp"
#include "harness/plan/plan_columns.hpp"
#include "harness/profile/profile_columns.hpp"
#include "harness/train/train_columns.hpp"
#include "kernels/runner/case_runner_columns.hpp"

namespace redline {
namespace {

// A tool's columns from several rooms, the first room's own words first
// where two declare one column: a kernel microbenchmark's and the case
// runner's, train_step_bench run's and its sweep's batch trials'.
ColumnsDeclaration joined(ColumnsDeclaration first, const ColumnsDeclaration& more) {
  add_columns(first, more);
  return first;
}

ToolDeclaration named(std::string tool, std::string summary, ColumnsDeclaration columns) {
  for (ChartHints& chart : columns.chart) chart.tool = tool;
  for (HeadlineSpec& headline : columns.headlines) headline.tool = tool;
  return {std::move(tool), std::move(summary), std::move(columns)};
}

}  // namespace

std::vector<ToolDeclaration> tool_declarations() {
  return {
      named("batch_sweep", "any training command, swept over its batch size", joined(batch_sweep_columns(), profiled_trial_columns())),
      named("allreduce_bench", "collective bus bandwidth over message sizes, across ranks and nodes",
            collective_columns()),
      named("gemm_bench", "GEMM throughput, tile and wave quantization, MAMF per dtype",
            joined(gemm_columns(), case_runner_columns())),
      named("attention_bench", "attention layouts (head size, heads, KV heads) predicted and measured",
            joined(attention_columns(), case_runner_columns())),
      named("train_step_bench", "a real transformer training step: throughput, MFU, memory, recompute",
            joined(training_step_columns(), batch_trial_columns())),
      named("checkpoint_bench", "what saving and restoring the model state costs", checkpoint_columns()),
      named("redline_plan", "how long a training run takes, from the suite's measured figures", plan_columns()),
      named("redline_profile", "where a program's training step spends its GPU time, against the measured ceilings",
            profile_columns()),
  };
}

const ToolDeclaration& tool_declaration(const std::string& tool) {
  static const std::vector<ToolDeclaration> all = tool_declarations();
  for (const ToolDeclaration& declaration : all)
    if (declaration.tool == tool) return declaration;
  throw std::out_of_range("no tool " + tool + " is declared (bench/tool_columns.cpp)");
}

}  // namespace redline
