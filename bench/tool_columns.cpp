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

// A room's columns with the case runner's after them: what a kernel
// microbenchmark's measured rows carry.
ColumnsDeclaration with_case_runner(ColumnsDeclaration columns) {
  add_columns(columns, case_runner_columns());
  return columns;
}

ColumnsDeclaration training_step_with_trials() {
  ColumnsDeclaration columns = training_step_columns();
  add_columns(columns, batch_trial_columns());  // sweep's trials; run's own columns come first
  return columns;
}

ColumnsDeclaration batch_sweep_with_profile() {
  ColumnsDeclaration columns = batch_sweep_columns();
  add_columns(columns, profiled_trial_columns());
  return columns;
}

ToolDeclaration named(std::string tool, std::string summary, ColumnsDeclaration columns) {
  for (ChartHints& chart : columns.chart) chart.tool = tool;
  for (HeadlineSpec& headline : columns.headlines) headline.tool = tool;
  return {std::move(tool), std::move(summary), std::move(columns)};
}

}  // namespace

std::vector<ToolDeclaration> tool_declarations() {
  return {
      named("batch_sweep", "any training command, swept over its batch size", batch_sweep_with_profile()),
      named("allreduce_bench", "collective bus bandwidth over message sizes, across ranks and nodes",
            collective_columns()),
      named("gemm_bench", "GEMM throughput, tile and wave quantization, MAMF per dtype",
            with_case_runner(gemm_columns())),
      named("attention_bench", "attention layouts (head size, heads, KV heads) predicted and measured",
            with_case_runner(attention_columns())),
      named("train_step_bench", "a real transformer training step: throughput, MFU, memory, recompute",
            training_step_with_trials()),
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
