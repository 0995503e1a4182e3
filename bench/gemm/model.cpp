// gemm_bench model: every GEMM of one transformer training step (QKV,
// attention out, FFN up/gate/down, logits; forward and both backward GEMMs)
// timed, the step's GEMM time and TFLOPS, and measured padding advice for
// vocab, ffn and hidden.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "bench/gemm/gemm_rows.hpp"
#include "bench/gemm/session.hpp"
#include "bench/gemm/subcommands.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/gemm/transformer_gemms.hpp"

namespace redline::gemm {
namespace {

TransformerShape transformer_of(const ModelFlags& f) {
  TransformerShape shape;
  shape.hidden = parse_count_between("--hidden", f.hidden, 1, kMaxDim);
  shape.heads = parse_count_between("--heads", f.heads, 1, kMaxDim);
  if (!f.kv_heads.empty()) shape.kv_heads = parse_count_between("--kv-heads", f.kv_heads, 1, kMaxDim);
  shape.ffn = parse_count_between("--ffn", f.ffn, 1, kMaxDim);
  shape.vocab = parse_count_between("--vocab", f.vocab, 1, kMaxDim);
  shape.seq = parse_count_between("--seq", f.seq, 1, kMaxDim);
  shape.micro_batch = parse_count_between("--mbs", f.mbs, 1, kMaxDim);
  shape.tensor_parallel = parse_count_between("--tp", f.tp, 1, 4096);
  shape.layers = parse_count_between("--layers", f.layers, 1, 100000);
  shape.swiglu = f.swiglu;
  if (shape.tokens() > kMaxDim)
    throw UsageError("--seq/--mbs", f.seq + "/" + f.mbs,
                     "make " + std::to_string(shape.tokens()) + " tokens, a GEMM dimension; at most " +
                         std::to_string(kMaxDim));
  validate_transformer_shape(shape);
  return shape;
}

// The row that stands for each measured shape.
using ShapeKey = std::tuple<std::int64_t, std::int64_t, std::int64_t>;
using ShapeTimes = std::map<ShapeKey, const Row*>;

// With --benchmark_repetitions a shape has several rows: a wrong one stands
// for it; else the one with the median time among those that ran ok; else
// the first.
ShapeTimes index_by_shape(const std::vector<Row>& rows) {
  std::map<ShapeKey, std::vector<const Row*>> by_shape;
  for (const auto& row : rows) {
    const GemmSize s = size_of(row);
    by_shape[{s.m, s.n, s.k}].push_back(&row);
  }
  ShapeTimes times;
  for (auto& [key, group] : by_shape) {
    // A wrong repetition speaks for the shape: it must reach the report and
    // the exit status, not hide behind the median of the others.
    const auto wrong = std::find_if(group.begin(), group.end(), [](const Row* r) { return r->status == RowStatus::wrong; });
    if (wrong != group.end()) {
      times[key] = *wrong;
      continue;
    }
    std::vector<const Row*> ok;
    for (const Row* row : group)
      if (is_ok_gemm_row(*row) && row->metric_value("time_us")) ok.push_back(row);
    if (ok.empty()) {
      times[key] = group.front();
      continue;
    }
    std::sort(ok.begin(), ok.end(),
              [](const Row* a, const Row* b) { return *a->metric_value("time_us") < *b->metric_value("time_us"); });
    times[key] = ok[(ok.size() - 1) / 2];
  }
  return times;
}

// The step's GEMM shapes not yet in `already`, each once.
std::vector<GemmCaseSpec> unmeasured_specs(const std::vector<StepGemm>& gemms, GemmDtype dtype, GemmLayout layout,
                                           const ShapeTimes& already) {
  std::vector<GemmSize> sizes;
  for (const auto& g : gemms)
    if (!already.count({g.m, g.n, g.k})) sizes.push_back({g.m, g.n, g.k});
  return gemm_specs(unmeasured(sizes, {}), dtype, layout);
}

// Seconds of one step's GEMMs; nullopt when any of them did not run ok.
std::optional<double> step_seconds(const std::vector<StepGemm>& gemms, const ShapeTimes& times) {
  double total = 0;
  for (const auto& g : gemms) {
    const auto it = times.find({g.m, g.n, g.k});
    if (it == times.end() || !is_ok_gemm_row(*it->second)) return std::nullopt;
    total += *it->second->metric_value("time_us") * 1e-6 * static_cast<double>(g.count);
  }
  return total;
}

// Every shape measured for one dtype, the step's and its padded variants'
// in one pool, so a shape two variants share is timed once.
class MeasuredShapes {
 public:
  MeasuredShapes(Session& s, GemmDtype dtype) : s_(s), dtype_(dtype) {}

  // Measures the shapes of `gemms` not measured yet; returns their rows.
  const std::vector<Row>& measure(const std::vector<StepGemm>& gemms) {
    pools_.push_back(s_.run(unmeasured_specs(gemms, dtype_, s_.layout, times_)));
    for (const auto& [key, row] : index_by_shape(pools_.back())) times_[key] = row;
    return pools_.back();
  }
  const ShapeTimes& times() const { return times_; }

 private:
  Session& s_;
  GemmDtype dtype_;
  std::vector<std::vector<Row>> pools_;  // rows stay put: times_ points into them
  ShapeTimes times_;
};

// One row per GEMM of the step, with its share of the step's time.
void add_step_rows(Session& s, const std::vector<StepGemm>& gemms, const std::string& dtype_name,
                   const ShapeTimes& times, const std::optional<double>& base_seconds) {
  for (const auto& g : gemms) {
    Row row;
    row.param("dtype", dtype_name).param("layout", gemm_layout_name(s.layout));
    row.param("layer", g.layer).param("pass", gemm_pass_name(g.pass));
    row.param("m", std::to_string(g.m)).param("n", std::to_string(g.n)).param("k", std::to_string(g.k));
    const auto found = times.find({g.m, g.n, g.k});
    if (found == times.end()) {
      row.status = RowStatus::skipped;
      row.note = "not run (--benchmark_filter)";
      s.report.rows.push_back(std::move(row));
      continue;
    }
    const Row* measured_row = found->second;
    row.status = measured_row->status;
    row.note = measured_row->note;
    row.metric("calls_per_step", static_cast<double>(g.count));
    for (const char* metric : {"time_us", "tflops", "datasheet_pct", "predicted_efficiency", "wrong"})
      if (const auto v = measured_row->metric_value(metric)) row.metric(metric, *v);
    if (base_seconds && is_ok_gemm_row(*measured_row))
      row.metric("step_share_pct",
                 100 * *measured_row->metric_value("time_us") * 1e-6 * static_cast<double>(g.count) / *base_seconds);
    s.report.rows.push_back(std::move(row));
  }
}

void add_step_summary(Session& s, const TransformerShape& shape, const std::vector<StepGemm>& gemms,
                      const std::string& dtype_name, const std::optional<double>& base_seconds) {
  if (!base_seconds) {
    s.report.summary.emplace_back("step " + dtype_name, "not every GEMM ran ok; see the rows");
    return;
  }
  s.report.summary.emplace_back(
      "step " + dtype_name,
      format_number(*base_seconds * 1e3, 3) + " ms of GEMMs per step per rank (" + std::to_string(shape.layers) +
          " layers + logits), " + format_number(step_gemm_flop(gemms) / *base_seconds / 1e12, 1) + " TFLOPS");
}

// What timing the padded values of one dimension found.
struct PaddingOutcome {
  std::optional<double> best_gain;
  std::int64_t best_value = 0;
  std::optional<std::pair<std::int64_t, double>> first_that_runs;  // value, seconds
};

// Each candidate's changed GEMMs are timed and the step recomputed. The
// padded shapes are reported too: a wrong or failed one must not vanish into
// the advice.
PaddingOutcome time_padding(Session& s, MeasuredShapes& measured, const TransformerShape& shape, PaddedDim dim,
                            const std::optional<double>& base_seconds) {
  PaddingOutcome outcome;
  for (std::int64_t value : padding_candidates(shape, dim)) {
    const auto padded_gemms = transformer_step_gemms(with_dim(shape, dim, value));
    for (Row row : measured.measure(padded_gemms)) {
      row.param("variant", std::string(padded_dim_name(dim)) + "=" + std::to_string(value));
      s.report.rows.push_back(std::move(row));
    }
    const auto padded_seconds = step_seconds(padded_gemms, measured.times());
    if (!padded_seconds) continue;
    if (!outcome.first_that_runs) outcome.first_that_runs = {value, *padded_seconds};  // candidates come sorted
    if (!base_seconds) continue;
    const double gain = *base_seconds / *padded_seconds - 1;
    if (!outcome.best_gain || gain > *outcome.best_gain) outcome.best_gain = gain, outcome.best_value = value;
  }
  return outcome;
}

// Only a gain above the timing noise is advised. When the step itself cannot
// run (FP8 with an odd vocab), the advice is the smallest padding that lets
// it run.
void add_padding_advice(Session& s, const TransformerShape& shape, PaddedDim dim, const std::string& dtype_name,
                        const PaddingOutcome& o, bool step_runs) {
  const std::string name = padded_dim_name(dim);
  const std::string key = "advice " + dtype_name + " " + name, from = std::to_string(dim_value(shape, dim));
  if (!step_runs && o.first_that_runs)
    s.report.summary.emplace_back(key, "pad " + name + " " + from + " -> " + std::to_string(o.first_that_runs->first) +
                                           ": then every GEMM of the step runs (" +
                                           format_number(o.first_that_runs->second * 1e3, 3) + " ms, measured)");
  else if (o.best_gain && *o.best_gain > 0.01)
    s.report.summary.emplace_back(key, "pad " + name + " " + from + " -> " + std::to_string(o.best_value) +
                                           ": step GEMM time -" +
                                           format_number(100 * (1 - 1 / (1 + *o.best_gain)), 1) + "% (measured)");
  else if (o.best_gain)
    s.report.summary.emplace_back(key, "keep " + from + ": no padding tried gains more than 1% (best " +
                                           std::to_string(o.best_value) + ": " +
                                           format_number(100 * *o.best_gain, 1) + "%)");
}

void model_one_dtype(Session& s, const TransformerShape& shape, const std::vector<StepGemm>& gemms, GemmDtype dtype) {
  const std::string dtype_name = gemm_dtype_info(dtype).name;
  MeasuredShapes measured(s, dtype);
  measured.measure(gemms);
  const auto base_seconds = step_seconds(gemms, measured.times());
  add_step_rows(s, gemms, dtype_name, measured.times(), base_seconds);
  add_step_summary(s, shape, gemms, dtype_name, base_seconds);
  for (PaddedDim dim : {PaddedDim::vocab, PaddedDim::ffn, PaddedDim::hidden}) {
    if (interrupted()) break;
    if (padding_candidates(shape, dim).empty()) {  // said, so a missing advice line is not a mystery
      s.report.summary.emplace_back(std::string("advice ") + dtype_name + " " + padded_dim_name(dim),
                                    "no padding to try for " + std::to_string(dim_value(shape, dim)) +
                                        ": for each of 64, 128 and 256 (times --tp; for hidden, keeping a whole "
                                        "head size) it is already a multiple, or the next is more than 25% larger");
      continue;
    }
    const PaddingOutcome outcome = time_padding(s, measured, shape, dim, base_seconds);
    add_padding_advice(s, shape, dim, dtype_name, outcome, base_seconds.has_value());
  }
}

}  // namespace

int run_model(ModelFlags& f, const BenchmarkArgs& bench_args) {
  const TransformerShape shape = transformer_of(f);
  const auto gemms = transformer_step_gemms(shape);
  std::vector<GemmSize> shapes;
  for (const auto& g : gemms) shapes.push_back({g.m, g.n, g.k});
  Session s = start_session(f.measure, bench_args, shapes);
  for (GemmDtype dtype : s.dtypes) {
    if (interrupted()) break;
    model_one_dtype(s, shape, gemms, dtype);
  }
  return finish_session(s);
}

}  // namespace redline::gemm
