// train_step_bench without a GPU: the presets' parameter counts, the memory
// each recompute mode keeps, the FLOP conventions, the recompute verdict,
// and `memory` end to end (the real binary, TRAIN_STEP_BENCH_BIN).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>

#include "harness/batch/batch_trials.hpp"
#include "harness/core/child_process.hpp"
#include "harness/report/csv_reader.hpp"
#include "harness/train/activation_memory.hpp"
#include "harness/train/model_config.hpp"
#include "harness/train/recompute_verdict.hpp"
#include "harness/train/step_flops.hpp"
#include "harness/train/sweep_report.hpp"
#include "harness/train/trial_figures.hpp"
#include "support.hpp"

using namespace redline;
namespace fs = std::filesystem;

namespace {

ModelConfig llama3_8b() { return *model_preset("llama3-8b"); }

ModelConfig tiny() {
  ModelConfig c;
  c.name = "tiny", c.hidden = 64, c.heads = 4, c.kv_heads = 2, c.ffn = 96, c.layers = 2, c.vocab = 50;
  return c;
}

}  // namespace

TEST(ModelConfig, Llama3_8bHas8_03e9Parameters) {
  const ParameterCounts p = parameter_counts(llama3_8b());
  // Embedding and logits 128256 x 4096 each; per layer q, o 4096^2, k, v
  // 4096 x 1024, MLP 3 x 4096 x 14336, norms 2 x 4096; final norm 4096.
  EXPECT_EQ(p.embedding, 128256LL * 4096);
  EXPECT_EQ(p.per_layer(), 2LL * 4096 * 4096 + 2LL * 4096 * 1024 + 3LL * 4096 * 14336 + 2 * 4096);
  EXPECT_EQ(p.total(), 8030261248LL);
  EXPECT_NEAR(static_cast<double>(p.total()) / 1e9, 8.03, 0.005);
  EXPECT_EQ(p.matmul(), p.total() - p.embedding - 32 * 2 * 4096 - 4096);
  EXPECT_NEAR(parameter_counts(*model_preset("llama2-7b")).total() / 1e9, 6.74, 0.005);  // the published 6.74e9
  EXPECT_NEAR(parameter_counts(*model_preset("llama3-70b")).total() / 1e9, 70.55, 0.01);
}

TEST(ModelConfig, ValidateNamesTheField) {
  ModelConfig c = tiny();
  c.kv_heads = 3;
  EXPECT_THROW(validate(c), std::invalid_argument);
  c = tiny();
  c.heads = 5;  // 64 / 5 is not whole
  EXPECT_THROW(validate(c), std::invalid_argument);
  c = tiny();
  c.heads = 16;  // d = 4: not a multiple of 8
  EXPECT_THROW(validate(c), std::invalid_argument);
  EXPECT_FALSE(model_preset("gpt5"));
  EXPECT_EQ(model_preset_names().size(), 4u);
}

TEST(ActivationMemory, NoneKeepsMoreThanSelectiveMoreThanFull) {
  const ModelConfig c = llama3_8b();
  const auto none = predict_memory(c, 1, 4096, Recompute::none);
  const auto selective = predict_memory(c, 1, 4096, Recompute::selective);
  const auto full = predict_memory(c, 1, 4096, Recompute::full);
  EXPECT_GT(none.activation_bytes, selective.activation_bytes);
  EXPECT_GT(selective.activation_bytes, full.activation_bytes);
  // Per token per layer, none: 2 bytes x (x, n1, q, o, h1, n2: 6h; k, v: 2 x 1024; gate, up, act: 3 x 14336)
  // + 4 bytes x (rstd1, rstd2, 32 heads' LSE).
  const std::int64_t tokens = 4096;
  EXPECT_EQ(none.activation_bytes_per_layer, tokens * (2 * (6 * 4096 + 2 * 1024 + 3 * 14336) + 4 * (2 + 32)));
  // selective drops n1, n2 and act; full keeps x alone.
  EXPECT_EQ(none.activation_bytes_per_layer - selective.activation_bytes_per_layer, tokens * 2 * (2 * 4096 + 14336));
  EXPECT_EQ(full.activation_bytes_per_layer, tokens * 2 * 4096);
  // The state: 18 bytes per parameter.
  EXPECT_EQ(none.state.total(), 18 * none.parameters);
  // One AdamW step moves 30: master, m, v read and written (24), gradient read (4), bf16 weight written (2).
  EXPECT_EQ(none.state.adamw_traffic(), 30 * none.parameters);
  // Korthikanti: s b h (34 + 5 a s / h).
  EXPECT_DOUBLE_EQ(none.korthikanti_per_layer, 4096.0 * 4096 * (34 + 5.0 * 32 * 4096 / 4096));
  // What a mode drops comes back, for one layer, in the backward's working set.
  EXPECT_GT(full.working_bytes, selective.working_bytes);
  EXPECT_GT(selective.working_bytes, none.working_bytes);
  EXPECT_EQ(none.peak(), none.state.total() + none.activation_bytes + none.working_bytes + none.workspace);
}

TEST(ActivationMemory, LargestFittingMicroBatch) {
  ModelConfig c = llama3_8b();
  c.layers = 2;
  const std::int64_t gib80 = std::int64_t{80} << 30;
  for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
    const std::int64_t fits = max_fitting_mbs(c, 4096, mode, gib80);
    ASSERT_GT(fits, 0) << recompute_name(mode);
    EXPECT_LE(predict_memory(c, fits, 4096, mode).peak(), gib80);
    EXPECT_GT(predict_memory(c, fits + 1, 4096, mode).peak(), gib80);
  }
  EXPECT_GT(max_fitting_mbs(c, 4096, Recompute::full, gib80), max_fitting_mbs(c, 4096, Recompute::none, gib80));
  EXPECT_EQ(max_fitting_mbs(llama3_8b(), 4096, Recompute::full, gib80), 0);  // 18 bytes x 8e9 > 80 GiB
  EXPECT_EQ(parse_recompute("selective"), Recompute::selective);
  EXPECT_FALSE(parse_recompute("some"));
}

// largest_tensor is what the int64 counts are checked against, so it must
// bound every tensor the model lists, on either attention path.
TEST(ActivationMemory, TheLargestTensorBoundsEveryListedOne) {
  ModelConfig wide_ffn = tiny();
  wide_ffn.ffn = 4096;  // gate past the logits
  for (const ModelConfig& c : {llama3_8b(), tiny(), wide_ffn})
    for (AttentionChoice attention : {AttentionChoice::cudnn, AttentionChoice::unfused})
      for (std::int64_t seq : {16, 4096}) {
        const TensorSize largest = largest_tensor(c, 2, seq, attention);
        // Every tensor `none` keeps comes back in full's working set.
        std::vector<SavedTensor> listed = saved_outside_layers(c, 2, seq);
        for (const auto& more :
             {backward_working_set(c, 2, seq, Recompute::none), backward_working_set(c, 2, seq, Recompute::full)})
          listed.insert(listed.end(), more.begin(), more.end());
        if (attention == AttentionChoice::unfused) {
          const auto buffers = unfused_attention_buffers(c, 2, seq);
          listed.insert(listed.end(), buffers.begin(), buffers.end());
        }
        for (const SavedTensor& t : listed)
          EXPECT_LE(static_cast<double>(t.bytes()), largest.bytes) << c.name << " " << t.name << " seq " << seq;
      }
  EXPECT_EQ(largest_tensor(llama3_8b(), 2, 4096).name, "logits");
  EXPECT_DOUBLE_EQ(largest_tensor(llama3_8b(), 2, 4096).bytes, 2.0 * 4096 * 128256 * 2);
  EXPECT_EQ(largest_tensor(wide_ffn, 2, 16).name, "gate");
  EXPECT_EQ(largest_tensor(llama3_8b(), 2, 4096, AttentionChoice::unfused).name, "scores");
  EXPECT_DOUBLE_EQ(largest_tensor(llama3_8b(), 2, 4096, AttentionChoice::unfused).bytes, 2.0 * 32 * 4096 * 4096 * 2);
}

// Each flag within its range, the product past int64: the fuzzer's case
// gave negative bytes. The model refuses it instead of wrapping.
TEST(ActivationMemory, AMicroBatchPastItsCountIsRefusedNotWrapped) {
  const ModelConfig c = llama3_8b();
  EXPECT_FALSE(memory_countable(c, std::int64_t{1} << 20, std::int64_t{1} << 22));
  EXPECT_THROW(predict_memory(c, std::int64_t{1} << 20, std::int64_t{1} << 22, Recompute::selective),
               std::invalid_argument);
  EXPECT_TRUE(memory_countable(c, 1, std::int64_t{1} << 22));
  EXPECT_FALSE(memory_countable(c, 1, std::int64_t{1} << 22, AttentionChoice::unfused));  // 2^44 scores x 32 heads
  // A huge hidden size with tiny ffn, vocab and scores: the tokens x hidden
  // tensors (8 PiB each here) are the largest, unfused as with cuDNN.
  ModelConfig wide = c;
  wide.hidden = std::int64_t{1} << 20, wide.heads = 1, wide.kv_heads = 1, wide.ffn = 1, wide.vocab = 1;
  for (AttentionChoice attention : {AttentionChoice::cudnn, AttentionChoice::unfused})
    EXPECT_FALSE(memory_countable(wide, std::int64_t{1} << 20, 4096, attention)) << attention_choice_name(attention);
}

// At the edge of what the model counts, with the largest shapes the flags
// allow (hidden 2^20, ffn 2^22, vocab 2^24, 4096 layers), every figure is
// exact: long double holds these sums without rounding.
TEST(ActivationMemory, TheLargestCountableShapesAreCountedExactly) {
  ModelConfig c;
  c.name = "widest", c.hidden = 1 << 20, c.heads = 1 << 14, c.kv_heads = 1 << 14, c.ffn = 1 << 22;
  c.layers = 4096, c.vocab = 1 << 24;
  const std::int64_t seq = 2048, mbs = 1024;  // 2^21 tokens: logits of exactly 2^46 bytes
  ASSERT_TRUE(memory_countable(c, mbs, seq));
  EXPECT_FALSE(memory_countable(c, mbs + 1, seq));
  const MemoryPrediction p = predict_memory(c, mbs, seq, Recompute::none);
  const long double tokens = static_cast<long double>(mbs * seq), h = c.hidden, f = c.ffn, a = c.heads;
  const long double per_layer = tokens * (2 * (6 * h + 2 * h + 3 * f) + 4 * (2 + a));  // k = h here
  const long double outside = tokens * (2 * 2 * h + 2.0L * c.vocab + 4 * 4);
  EXPECT_EQ(static_cast<long double>(p.activation_bytes_per_layer), per_layer);
  EXPECT_EQ(static_cast<long double>(p.activation_bytes), per_layer * c.layers + outside);
  const long double state = 18.0L * static_cast<long double>(p.parameters);
  EXPECT_EQ(static_cast<long double>(p.state.total()), state);
  EXPECT_GT(p.peak(), p.activation_bytes);
  EXPECT_EQ(static_cast<long double>(p.peak()), state + static_cast<long double>(p.activation_bytes) +
                                                    static_cast<long double>(p.working_bytes) +
                                                    static_cast<long double>(p.workspace));
}

// The search over micro-batches never asks the model for one it cannot
// count: with 64 TiB it stops where the tensors do, not at a wrapped peak.
TEST(ActivationMemory, LargestFitSearchStaysWithinWhatTheModelCounts) {
  for (AttentionChoice attention : {AttentionChoice::cudnn, AttentionChoice::unfused})
    for (const ModelConfig& c : {tiny(), llama3_8b()})
      for (std::int64_t seq : {std::int64_t{64}, std::int64_t{1} << 16, std::int64_t{1} << 22}) {
        const std::int64_t fits = max_fitting_mbs(c, seq, Recompute::full, kMostTensorBytes, attention);
        if (fits == 0) {
          EXPECT_TRUE(!memory_countable(c, 1, seq, attention) ||
                      predict_memory(c, 1, seq, Recompute::full, attention).peak() > kMostTensorBytes);
          continue;
        }
        EXPECT_LE(predict_memory(c, fits, seq, Recompute::full, attention).peak(), kMostTensorBytes);
        EXPECT_TRUE(!memory_countable(c, fits + 1, seq, attention) ||
                    predict_memory(c, fits + 1, seq, Recompute::full, attention).peak() > kMostTensorBytes)
            << c.name << " seq " << seq;
      }
  EXPECT_GT(max_fitting_mbs(tiny(), 64, Recompute::full, kMostTensorBytes), std::int64_t{1} << 28);  // a deep search
  // With more memory than the model counts, the search ends where it stops
  // counting, never at a wrapped (negative) peak that seems to fit.
  const std::int64_t most = std::numeric_limits<std::int64_t>::max();
  const std::int64_t edge = max_fitting_mbs(llama3_8b(), std::int64_t{1} << 22, Recompute::full, most);
  EXPECT_TRUE(memory_countable(llama3_8b(), edge, std::int64_t{1} << 22));
  EXPECT_FALSE(memory_countable(llama3_8b(), edge + 1, std::int64_t{1} << 22));
  EXPECT_GT(predict_memory(llama3_8b(), edge, std::int64_t{1} << 22, Recompute::full).peak(), 0);
}

TEST(StepFlops, SixNPlusAttentionAndWhatRecomputeAdds) {
  const ModelConfig c = tiny();
  const ParameterCounts p = parameter_counts(c);
  const double tokens = 2 * 16;
  // One layer's attention forward, causal: 4 x b x a_q x d x s(s+1)/2.
  const double attention_forward = 4.0 * 2 * 4 * 16 * (16 * 17 / 2);
  const StepFlops none = step_flops(c, 2, 16, Recompute::none);
  EXPECT_DOUBLE_EQ(none.model, 6 * static_cast<double>(p.matmul()) * tokens + 3 * attention_forward * 2);
  EXPECT_DOUBLE_EQ(none.hardware, none.model + 0.5 * attention_forward * 2);
  EXPECT_DOUBLE_EQ(step_flops(c, 2, 16, Recompute::selective).hardware, none.hardware);
  const StepFlops full = step_flops(c, 2, 16, Recompute::full);
  EXPECT_DOUBLE_EQ(full.model, none.model);  // MFU never counts recompute
  // Full recompute reruns the forward without the down projection (gate and up: 2 h x ffn of the MLP's 3).
  const double recomputed = static_cast<double>(p.layer_attention) + 2.0 * c.hidden * c.ffn;
  EXPECT_DOUBLE_EQ(full.hardware, none.hardware + (2 * recomputed * tokens + attention_forward) * 2);
}

// A recompute mode that wins at a batch none ran too did not win through the
// memory it frees: the verdict does not say it did.
TEST(RecomputeVerdict, AWinAtABatchNoneRanIsNotCreditedToFreedMemory) {
  ModeSweep none{Recompute::none, {{1, 100}, {2, 150}, {4, 160}}, {}, {}, 4, 2};
  ModeSweep selective{Recompute::selective, {{2, 170}}, {}, {}, 2, 2};
  const auto lines = recompute_verdict({none, selective});
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back().first, "best");
  EXPECT_CONTAINS(lines.back().second, "selective at micro-batch 2: 170 tokens/s");
  EXPECT_CONTAINS(lines.back().second, "at a batch none ran too, so not through the memory it frees");
  EXPECT_NOT_CONTAINS(lines.back().second, "buys a batch");
}

TEST(RecomputeVerdict, SlowdownMemoryLargestAndBest) {
  ModeSweep none{Recompute::none, {{1, 1000}, {2, 1800}, {4, 2000}}, {{1, 10e9}, {2, 20e9}}, {{1, 11e9}, {2, 21e9}}, 4, 2};
  ModeSweep full{Recompute::full, {{1, 700}, {2, 1300}, {4, 1600}, {8, 2400}, {16, 2500}}, {{2, 12e9}}, {{2, 13e9}}, 16, 8};
  const auto lines = recompute_verdict({none, full});
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].first, "slowdown");
  EXPECT_CONTAINS(lines[0].second, "at micro-batch 4: full 25.0% slower than none");
  EXPECT_EQ(lines[1].first, "memory freed");
  EXPECT_EQ(lines[2].second, "none 4 (saturates at 2); full 16 (saturates at 8)");
  EXPECT_CONTAINS(lines[3].second, "full at micro-batch 16: 2500 tokens/s, 25.0% more than none's best (2000 at 4)");

  // Recompute that never wins its cost back is said to not pay.
  full.tokens_per_s = {{1, 700}, {2, 1300}, {4, 1600}};
  EXPECT_CONTAINS(recompute_verdict({none, full}).back().second, "recompute does not pay");
  EXPECT_EQ(recompute_verdict({ModeSweep{}}).front().second, "no recompute mode ran a micro-batch");
}

// The sweep's rows as train_step_bench sweep gets them back from the batch
// sweep: only ok rows with a throughput count, with their memory figures.
TEST(RecomputeVerdict, ModeSweepReadsTheOkRowsAndTheirMemory) {
  const auto row = [](const char* batch, const char* status, double tokens) {
    Row r;
    r.param("batch_size", batch).metric("tokens_per_s", tokens);
    r.metric("measured_peak_bytes", 2e9 * tokens).metric("predicted_peak_bytes", std::nan(""));
    r.status = *parse_row_status(status);
    return r;
  };
  const std::vector<Row> rows = {row("1", "ok", 1000), row("2", "ok", 1800), row("4", "ok", 2000),
                                 row("8", "ok", 2050), row("16", "oom", std::nan("")), row("12", "ok", std::nan(""))};
  const ModeSweep m = mode_sweep(Recompute::selective, rows, 11);
  EXPECT_EQ(m.mode, Recompute::selective);
  EXPECT_EQ(m.tokens_per_s, (std::map<std::int64_t, double>{{1, 1000}, {2, 1800}, {4, 2000}, {8, 2050}}));
  EXPECT_EQ(m.measured_peak_bytes.size(), 4u);
  EXPECT_DOUBLE_EQ(m.measured_peak_bytes.at(2), 3.6e12);
  EXPECT_TRUE(m.predicted_peak_bytes.empty());  // not measured: NaN
  EXPECT_EQ(m.largest_fit, std::optional<std::int64_t>(11));
  EXPECT_EQ(m.saturation, std::optional<std::int64_t>(4));  // 8 gains 2.5%, under the harness's 5%
  EXPECT_CONTAINS(recompute_verdict({m}).back().second, "selective at micro-batch 8: 2050 tokens/s");
}

TEST(TrialFigures, SweepRowsCarryTheTimedStepNotTheTrialsWallTime) {
  Row ok;
  ok.param("batch_size", "2").metric("tokens_per_s", 8192).metric("step_time_ms", 900);
  train::set_timed_step(ok, 4096);
  EXPECT_EQ(ok.metric_value("step_time_ms"), 1000.0);  // 2 x 4096 tokens at 8192 tokens/s
  EXPECT_EQ(ok.metrics.size(), 2u);
  Row oom = ok;
  oom.status = RowStatus::oom;
  oom.metrics = {{"tokens_per_s", std::nan("")}, {"step_time_ms", std::nan("")}};
  train::set_timed_step(oom, 4096);
  EXPECT_TRUE(std::isnan(*oom.metric_value("step_time_ms")));
}

// What train_step_bench sweep does with each mode's batch sweep: the verdict
// sees the mode's rows (read before they move), and the report gets them
// tagged with the mode, with the timed step and the prefixed summary.
TEST(SweepReport, AModesRowsReachBothTheVerdictAndTheReport) {
  Report report;
  std::vector<Row> rows(2);
  rows[0].param("batch_size", "2").metric("tokens_per_s", 8192).metric("step_time_ms", 900);
  rows[1].param("batch_size", "4").metric("tokens_per_s", 8192).metric("step_time_ms", 1500);
  const ModeSweep figures =
      add_mode_to_report(report, Recompute::full, std::move(rows), {{"saturation_batch", "2"}}, 4, 4096);
  EXPECT_EQ(figures.tokens_per_s.size(), 2u);
  EXPECT_EQ(figures.largest_fit, std::optional<std::int64_t>(4));
  EXPECT_NE(recompute_verdict({figures}).back().second, "no recompute mode ran a micro-batch");
  ASSERT_EQ(report.rows.size(), 2u);
  EXPECT_EQ(report.rows[1].params.front(), (std::pair<std::string, std::string>{"recompute", "full"}));
  EXPECT_EQ(report.rows[1].metric_value("step_time_ms"), 2000.0);  // 4 x 4096 tokens at 8192 tokens/s
  ASSERT_EQ(report.summary.size(), 1u);
  EXPECT_EQ(report.summary[0].first, "full saturation_batch");
}

// ---- the real binary ----

class TrainStepBench : public redline::testing::ToolTest {
 protected:
  const char* binary() const override { return TRAIN_STEP_BENCH_BIN; }
};

// What a `run` trial prints, `sweep` reads back exactly, through the
// batch-sweep engine's own reader: small and large, negative exponents,
// byte counts past 2^32, each figure from its own line only.
TEST(TrialFigures, EveryPrintedFigureReadsBackExactly) {
  const std::vector<double> values = {12345.678, 1e-05, 1.2e+07, 8e10, 81604378624.0, 0.5, 3.0};
  for (double value : values) {
    std::string output = "warming up\nstep 3: loss 10.4\n";
    double other = 7.25;
    for (const char* name : redline::train::kTrialFigures)
      output += redline::train::trial_figure_line(name, name == std::string("mfu_pct") ? value : other++);
    output += "hfu_pct: 99\n";
    const auto read = redline::last_printed_number(output, redline::train::trial_figure_pattern("mfu_pct"));
    ASSERT_TRUE(read.has_value()) << output;
    EXPECT_EQ(*read, value) << output;
  }
  const std::string line = redline::train::trial_figure_line("measured_peak_bytes", 81604378624.0);
  EXPECT_EQ(line, "measured_peak_bytes: 81604378624\n");
  EXPECT_EQ(redline::last_printed_number(line, redline::train::trial_figure_pattern("predicted_peak_bytes")),
            std::nullopt);
}

TEST_F(TrainStepBench, MemoryWritesOneRowPerMode) {
  const auto csv = dir_ / "memory.csv";
  const ChildResult child = run({"memory", "--preset", "llama3-8b", "--seq", "4096", "--mbs", "1", "--layers", "2",
                                 "--gpu-memory", "80", "--csv", csv.string()});
  ASSERT_EQ(child.exit_code, 0) << child.output;
  EXPECT_CONTAINS(child.output, "korthikanti:");
  const CsvTable t = read_csv(csv);
  ASSERT_EQ(t.rows.size(), 3u);
  for (const char* column : {"recompute", "params", "weight_bytes", "grad_bytes", "master_bytes", "optimizer_bytes",
                             "activation_bytes", "peak_bytes"})
    EXPECT_FALSE(t.value(0, column).empty()) << column;
  EXPECT_EQ(t.value(0, "recompute"), "none");
  EXPECT_EQ(t.value(2, "recompute"), "full");
  EXPECT_GT(std::stod(t.value(0, "activation_bytes")), std::stod(t.value(1, "activation_bytes")));
  EXPECT_GT(std::stod(t.value(1, "activation_bytes")), std::stod(t.value(2, "activation_bytes")));
  EXPECT_GT(std::stod(t.value(2, "max_mbs")), std::stod(t.value(0, "max_mbs")));
  EXPECT_EQ(t.value(0, "layers"), "2");
}

TEST_F(TrainStepBench, BadInputNamesTheFlag) {
  expect_usage_error({"memory", "--preset", "gpt5"}, "--preset 'gpt5'");
  expect_usage_error({"memory", "--preset", "llama3-8b", "--recompute", "some"}, "--recompute 'some'");
  expect_usage_error({"memory", "--preset", "llama3-8b", "--gpu-memory", "-1"}, "--gpu-memory '-1'");
  expect_usage_error({"memory", "--preset", "llama3-8b", "--seq", "0"}, "--seq '0'");
  expect_usage_error({"memory", "--hidden", "64"}, "give --preset NAME, or --heads");
  expect_usage_error({"memory", "--preset", "llama3-8b", "--kv-heads", "5"}, "kv_heads = 5 does not divide heads = 32");
  expect_usage_error({"run", "--preset", "llama3-8b", "--recompute", "all"}, "--recompute 'all'");
  expect_usage_error({"run", "--preset", "llama3-8b", "--attention", "flash"}, "--attention 'flash'");
  expect_usage_error({"sweep", "--preset", "llama3-8b", "--max-mbs", "0"}, "--max-mbs '0'");
  expect_usage_error({"run", "--preset", "llama3-8b", "--gpu", "V100"}, "--gpu 'V100'");
  expect_usage_error({"sweep", "--preset", "llama3-8b", "--gpu", "V100"}, "--gpu 'V100'");
}

// --seq and --mbs each within range, their product past what the memory
// model counts: refused, naming both (memory printed negative bytes).
TEST_F(TrainStepBench, AMicroBatchTooLargeToCountIsRefused) {
  const std::vector<std::string> huge = {"--preset", "llama3-8b", "--seq", "4194304"};
  auto with = [&](std::vector<std::string> head, std::vector<std::string> tail) {
    head.insert(head.end(), huge.begin(), huge.end());
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };
  expect_usage_error(with({"memory"}, {"--mbs", "1048576"}), "--seq/--mbs '4194304/1048576'");
  expect_usage_error(with({"memory"}, {"--mbs", "1048576"}), "logits");
  expect_usage_error(with({"run"}, {"--mbs", "1048576"}), "--seq/--mbs '4194304/1048576'");
  expect_usage_error(with({"run"}, {"--mbs", "1", "--attention", "unfused"}), "TiB scores tensor");
  expect_usage_error(with({"sweep"}, {"--max-mbs", "1048576"}), "--seq/--max-mbs '4194304/1048576'");
  // The largest that counts still runs, and fits nothing real.
  const auto csv = dir_ / "edge.csv";
  const ChildResult edge = run(with({"memory"}, {"--mbs", "64", "--recompute", "full", "--csv", csv.string()}));
  ASSERT_EQ(edge.exit_code, 0) << edge.output;
  EXPECT_GT(std::stod(read_csv(csv).value(0, "peak_bytes")), 0);
}

// An empty value is refused, naming the flag and '': it read as "left out"
// (run and sweep went on to skip, memory to run on the preset's shape).
TEST_F(TrainStepBench, EmptyValuesAreRefusedNotReadAsLeftOut) {
  for (const char* sub : {"memory", "run", "sweep"})
    for (const char* flag : {"--preset", "--hidden", "--heads", "--kv-heads", "--ffn", "--layers", "--vocab"}) {
      std::vector<std::string> args = {sub, "--preset", "llama3-8b", flag, ""};
      if (flag == std::string("--preset")) args = {sub, flag, ""};
      expect_usage_error(args, std::string(flag) + " '': is empty");
    }
  expect_usage_error({"run", "--preset", "llama3-8b", "--gpu", ""}, "--gpu '': is empty");
  expect_usage_error({"sweep", "--preset", "llama3-8b", "--gpu", ""}, "--gpu '': is empty");
  expect_usage_error({"memory", "--preset", "llama3-8b", "--gpu-memory", ""}, "--gpu-memory '': is empty");
  expect_usage_error({"sweep", "--preset", "llama3-8b", "--gpu-memory", ""}, "--gpu-memory '': is empty");
  // A custom shape still names the first flag left out.
  expect_usage_error({"memory", "--hidden", "64", "--heads", "4"}, "give --preset NAME, or --ffn");
}

// --gpu-memory's range is in its message: 1e7 was refused as "not positive",
// 1e-300 taken as 0 bytes.
TEST_F(TrainStepBench, GpuMemoryStatesItsRange) {
  for (const char* sub : {"memory", "sweep"})
    for (const char* value : {"1e7", "65537", "1e-300", "0.0009", "0", "-1", "nan"})
      expect_usage_error({sub, "--preset", "llama3-8b", "--layers", "2", "--gpu-memory", value},
                         "--gpu-memory '" + std::string(value) + "'");
  expect_usage_error({"memory", "--preset", "llama3-8b", "--gpu-memory", "1e7"}, "must be between 0.001 and 65536 GiB");
  const auto csv = dir_ / "range.csv";
  for (const char* value : {"0.001", "65536"}) {
    const ChildResult child =
        run({"memory", "--preset", "llama3-8b", "--layers", "2", "--gpu-memory", value, "--csv", csv.string()});
    EXPECT_EQ(child.exit_code, 0) << value << ": " << child.output;
  }
  ModelConfig slice = llama3_8b();
  slice.layers = 2;
  EXPECT_EQ(std::stod(read_csv(csv).value(0, "max_mbs")),
            static_cast<double>(max_fitting_mbs(slice, 4096, Recompute::none, kMostTensorBytes)));
}

// sweep picks the micro-batch itself: --mbs is not in its help, and given,
// it is refused (it was ignored, and the sweep skipped with exit 77).
TEST_F(TrainStepBench, SweepRefusesMbs) {
  for (const char* value : {"0", "x", "4"})
    expect_usage_error({"sweep", "--preset", "llama3-8b", "--layers", "2", "--mbs", value},
                       "--mbs '" + std::string(value) + "': sweep picks the micro-batch itself");
  const ChildResult help = run({"sweep", "--help"});
  EXPECT_EQ(help.exit_code, 0) << help.output;
  EXPECT_CONTAINS(help.output, "--max-mbs");
  EXPECT_NOT_CONTAINS(help.output, "--mbs");
  EXPECT_CONTAINS(run({"run", "--help"}).output, "--mbs");
  EXPECT_CONTAINS(run({"memory", "--help"}).output, "--mbs");
}

TEST_F(TrainStepBench, RunAndSweepWithoutAGpuSkip) {
  for (const char* sub : {"run", "sweep"}) {
    const auto csv = dir_ / "none.csv";
    const ChildResult child = run({sub, "--preset", "llama3-8b", "--layers", "1", "--seq", "256", "--csv", csv.string()});
    if (child.exit_code == 0) GTEST_SKIP() << "this machine has a GPU: covered by scripts/gpu-check";
    EXPECT_EQ(child.exit_code, 77) << child.output;
    EXPECT_CONTAINS(child.output, "train_step_bench: skipped: ");
    EXPECT_FALSE(fs::exists(csv));
  }
}

// The RMSNorm weight gradients keep their chunks' column sums in cuBLASLt's
// workspace, which the memory model already counts: at Llama-3-8B's shapes
// (4k to 16k tokens, hidden 4096) 64 chunks, 1 MiB, and every preset's
// hidden fits 64 chunks in the 32 MiB.
TEST(ActivationMemory, TheNormGradientsPartialSumsFitCublasLtsWorkspace) {
  for (std::int64_t mbs : {1, 2, 4}) {
    const NormGradChunks c = norm_grad_chunks(mbs * 4096, 4096, cublaslt_workspace_bytes());
    EXPECT_EQ(c.chunks, 64);
    EXPECT_EQ(c.rows_per_chunk, mbs * 64);
    EXPECT_EQ(c.partial_bytes(4096), 1 << 20);
  }
  for (const std::string& name : model_preset_names()) {
    const std::int64_t hidden = model_preset(name)->hidden;
    const NormGradChunks c = norm_grad_chunks(8192, hidden, cublaslt_workspace_bytes());
    EXPECT_EQ(c.chunks, 64) << name;
    EXPECT_LE(c.partial_bytes(hidden), cublaslt_workspace_bytes()) << name;
  }
}

// Chunks are whole multiples of the kernel's 8 row lanes and cover every row
// once; a small scratch takes fewer, longer chunks; none fitting throws.
TEST(ActivationMemory, NormGradChunksCoverEveryRowWithinTheScratch) {
  EXPECT_EQ(norm_grad_chunks(32, 64, 1 << 20).rows_per_chunk, 8);  // the GPU test's tiny stack: 4 chunks
  EXPECT_EQ(norm_grad_chunks(32, 64, 1 << 20).chunks, 4);
  EXPECT_EQ(norm_grad_chunks(33, 64, 1 << 20).chunks, 5);  // the last chunk has one row
  EXPECT_EQ(norm_grad_chunks(1, 64, 1 << 20).chunks, 1);
  for (std::int64_t rows : {1, 7, 8, 100, 4095, 4096, 16384, 100000})
    for (std::int64_t fitting : {1, 3, 64, 1000}) {
      const std::int64_t width = 4096, scratch = fitting * width * 4;
      const NormGradChunks c = norm_grad_chunks(rows, width, scratch);
      EXPECT_EQ(c.rows_per_chunk % 8, 0);
      EXPECT_GE(c.chunks * c.rows_per_chunk, rows);
      EXPECT_LT((c.chunks - 1) * c.rows_per_chunk, rows);  // no empty chunk
      EXPECT_LE(c.chunks, std::min<std::int64_t>(fitting, 64));
      EXPECT_LE(c.partial_bytes(width), scratch);
    }
  EXPECT_THROW(norm_grad_chunks(4096, 4096, 4096 * 4 - 1), std::invalid_argument);
  EXPECT_THROW(norm_grad_chunks(0, 4096, 1 << 20), std::invalid_argument);
}

TEST(ActivationMemory, TheUnfusedPathsBuffersCountWithTheWorkspaces) {
  ModelConfig c = llama3_8b();
  c.layers = 1;
  const auto fused = predict_memory(c, 1, 1024, Recompute::none, AttentionChoice::cudnn);
  const auto unfused = predict_memory(c, 1, 1024, Recompute::none, AttentionChoice::unfused);
  std::int64_t buffers = 0;
  for (const auto& t : unfused_attention_buffers(c, 1, 1024)) buffers += t.bytes();
  // Two b x a x s^2 bf16 score matrices are among them.
  EXPECT_GE(buffers, 2 * 2 * 32LL * 1024 * 1024);
  // No cuDNN workspace there: cuBLASLt's and the unfused buffers.
  EXPECT_EQ(unfused.workspace, cublaslt_workspace_bytes() + buffers);
  // cuDNN's: the fp32 dQ accumulator, the softmax sums and, as llama3-8b has
  // 8 KV heads for 32 query heads, dK and dV at 32 heads in bf16.
  EXPECT_EQ(fused.workspace,
            cublaslt_workspace_bytes() + 1024LL * 4096 * 4 + 32LL * 1024 * 4 + 2 * 1024LL * 4096 * 2);
  c.kv_heads = c.heads;  // MHA: no group sums, so no full-head dK and dV
  EXPECT_EQ(predict_memory(c, 1, 1024, Recompute::none, AttentionChoice::cudnn).workspace,
            cublaslt_workspace_bytes() + 1024LL * 4096 * 4 + 32LL * 1024 * 4);
  EXPECT_EQ(unfused.activation_bytes, fused.activation_bytes);
  EXPECT_EQ(parse_attention_choice("unfused"), AttentionChoice::unfused);
  EXPECT_FALSE(parse_attention_choice("flash"));
}

TEST(StepFlops, TheUnfusedPathComputesEveryScoreAndRerunsItsForward) {
  const ModelConfig c = tiny();
  const double per_score = 4.0 * 2 * 4 * 16;
  const StepFlops fused = step_flops(c, 2, 16, Recompute::none, AttentionChoice::cudnn);
  const StepFlops unfused = step_flops(c, 2, 16, Recompute::none, AttentionChoice::unfused);
  EXPECT_DOUBLE_EQ(unfused.model, fused.model);  // MFU counts the same work
  const double matmul = 6 * static_cast<double>(parameter_counts(c).matmul()) * 32;
  EXPECT_DOUBLE_EQ(unfused.hardware, matmul + 4 * per_score * 16 * 16 * 2);  // 3 passes + the rerun, all 16^2 scores
}
