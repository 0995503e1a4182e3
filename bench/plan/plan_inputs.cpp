#include "bench/plan/plan_inputs.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "bench/plan/run_folder.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/measure/accumulation.hpp"
#include "harness/measure/young_daly.hpp"
#include "harness/plan/busbw_curve.hpp"
#include "harness/plan/run_readers.hpp"

namespace fs = std::filesystem;

namespace redline::plan {
namespace {

// A CSV given by its own flag, else found in --from; the flag names it in errors.
struct Source {
  std::optional<fs::path> path;
  std::string flag;
};

// Why a path cannot be read as a CSV file, or "" when it is a regular file
// (an empty or unreadable one: read_csv says so).
std::string not_a_file(const fs::path& path) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (status.type() == fs::file_type::not_found) return "no such file";
  if (error) return "cannot be read: " + error.message();
  if (fs::is_directory(status)) return "is a directory, not a CSV file";
  if (!fs::is_regular_file(status)) return "is not a regular file (a device, pipe or socket), not a CSV file";
  return "";
}

Source pick(const std::string& flag_value, const char* flag, const std::optional<fs::path>& found) {
  if (!flag_value.empty()) {
    if (const std::string problem = not_a_file(flag_value); !problem.empty())
      throw UsageError(flag, flag_value, problem);
    return {fs::path(flag_value), flag};
  }
  return {found, "--from"};
}

// The CSV, and the JSON beside it checked to be the same run's (the plan
// reads its summary).
CsvTable load(const Source& s) {
  CsvTable table;
  try {
    table = read_csv(*s.path);
  } catch (const std::runtime_error& e) {
    throw UsageError(s.flag, s.path->string(), e.what());
  }
  if (const std::string why = json_of_another_run(table, *s.path); !why.empty())
    throw UsageError(s.flag, s.path->string(), why);
  return table;
}

// A wall-time sweep's step time is the trial's wall time over its steps: the
// start-up is in it, so it says at most how long a step takes.
void mark_wall_time_step_times(const std::filesystem::path& sweep, std::map<std::int64_t, Figure>& step_time_ms) {
  if (!recorded_wall_time_throughput(sweep)) return;
  for (auto& [batch, figure] : step_time_ms)
    figure.source += "; the trial's wall time / --steps, start-up included: an upper bound";
}

// What a real run can have, in each flag's unit: wide enough for any, and
// narrow enough that every figure the plan prints stays finite and readable
// (1e-300 GB/s or 1e308 ms gave 60-digit totals and inf hours).
constexpr double kMaxStepTimeMs = 86'400'000;  // a micro-batch step of a day
constexpr double kMaxSamples = 1e15, kMaxTokens = 1e18, kMaxEpochs = 1e6;
constexpr double kMinSeq = 1, kMaxSeq = 1e9;               // a sample is at least a token
constexpr double kMaxGradBytes = 1e15, kMaxParams = 1e14;  // 1 PB; 100 trillion parameters
constexpr double kMinBusbw = 0.001, kMaxBusbw = 100'000;   // GB/s: 1 MB/s to 100 TB/s
constexpr double kMaxBucketMiB = 1'048'576;                // 1 TiB
constexpr double kMaxCheckpointS = 86'400;                 // a save, restore or persist of a day

// Greater than 0 and at most `max`.
Figure positive(const char* flag, const std::string& text, double max) {
  const double v = parse_number(flag, text);
  if (!(v > 0 && v <= max))
    throw UsageError(flag, text, "must be above 0 and at most " + format_general(max, 15));
  return {v, flag};
}

Figure between(const char* flag, const std::string& text, double lo, double hi) {
  const double v = parse_number(flag, text);
  require_in_range(flag, text, v, lo, hi);
  return {v, flag};
}

// A batch or rank count within the tools' caps (kMaxBatch, kMaxDataParallel),
// so no product of the plan can overflow.
std::int64_t whole(const char* flag, const std::string& text, std::int64_t max) {
  return parse_count_between(flag, text, 1, max);
}

double fraction(const char* flag, const std::string& text, bool zero_ok) {
  const double v = parse_number(flag, text);
  if (v > 1 || v < 0 || (!zero_ok && v == 0)) throw UsageError(flag, text, zero_ok ? "must be in 0..1" : "must be in (0, 1]");
  return v;
}

// MBS, its step time and the other measured step times; DP and GBS.
void resolve_batch(const PlanFlags& f, const Source& sweep, ResolvedInputs& r) {
  PlanInputs& in = r.plan;
  if (sweep.path) {
    in.step_time_ms = read_step_times(load(sweep), sweep.path->string(), sweep.flag);
    mark_wall_time_step_times(*sweep.path, in.step_time_ms);
  }
  std::optional<std::int64_t> rec;
  if (sweep.path) rec = recorded_recommended_batch(*sweep.path);
  const std::string rec_from = sweep.path ? sweep.path->stem().string() + ".json recommended_batch" : "";
  if (rec) r.knobs.recommended_mbs = {static_cast<double>(*rec), rec_from};
  if (!f.recommended_mbs.empty())
    r.knobs.recommended_mbs = {static_cast<double>(whole("--recommended-mbs", f.recommended_mbs, kMaxBatch)),
                               "--recommended-mbs"};
  std::string mbs_from = "--mbs", dp_from = "--dp", gbs_from = "--gbs";
  if (!f.mbs.empty()) in.micro_batch = whole("--mbs", f.mbs, kMaxBatch);
  else if (rec) in.micro_batch = *rec, mbs_from = rec_from;
  else throw UsageError("--mbs", "", "required (or a batch sweep with a recommended batch through --sweep or --from)");
  if (!f.step_time_ms.empty())
    in.step_time_ms[in.micro_batch] = positive("--step-time-ms", f.step_time_ms, kMaxStepTimeMs);
  if (!in.step_time_ms.count(in.micro_batch))
    throw UsageError("--step-time-ms", "", "required: no step time measured at MBS " + std::to_string(in.micro_batch));
  std::optional<std::pair<std::int64_t, std::int64_t>> gbs_dp;
  if (sweep.path) gbs_dp = recorded_gbs_dp(*sweep.path);
  const std::string recorded = sweep.path ? sweep.path->stem().string() + ".json gradient_accumulation" : "";
  if (!f.dp.empty()) in.data_parallel = whole("--dp", f.dp, kMaxDataParallel);
  else if (gbs_dp) in.data_parallel = gbs_dp->second, dp_from = recorded;
  else throw UsageError("--dp", "", "required (or a batch sweep run with --data-parallel)");
  if (!f.gbs.empty()) in.global_batch = whole("--gbs", f.gbs, kMaxBatch);
  else if (gbs_dp) in.global_batch = gbs_dp->first, gbs_from = recorded;
  else throw UsageError("--gbs", "", "required (or a batch sweep run with --global-batch)");
  if (in.global_batch % in.data_parallel)
    throw UsageError("--gbs", std::to_string(in.global_batch),
                     "(" + gbs_from + ") is not a multiple of --dp " + std::to_string(in.data_parallel) + " (" + dp_from +
                         "): every rank takes the same share");
  in.batch_source = "MBS " + std::to_string(in.micro_batch) + " (" + mbs_from + "), DP " +
                    std::to_string(in.data_parallel) + " (" + dp_from + "), GBS " + std::to_string(in.global_batch) +
                    " (" + gbs_from + ")";
}

// The run's size S in samples; refused when ceil(S / GBS) is past the
// projection's bound, naming the figures that make it.
void resolve_samples(const PlanFlags& f, PlanInputs& in) {
  const double epochs = positive("--epochs", f.epochs, kMaxEpochs).value;
  const std::string times = " x --epochs " + f.epochs;
  if (!f.samples.empty() && !f.tokens.empty()) throw UsageError("--samples/--tokens", f.samples + "/" + f.tokens, "give one");
  if (!f.seq.empty() && f.tokens.empty()) throw UsageError("--seq", f.seq, "only with --tokens (tokens per sample)");
  if (!f.samples.empty()) {
    in.samples = {positive("--samples", f.samples, kMaxSamples).value * epochs, "--samples" + times};
  } else if (!f.tokens.empty()) {
    if (f.seq.empty()) throw UsageError("--seq", "", "required with --tokens");
    in.samples = {
        positive("--tokens", f.tokens, kMaxTokens).value / between("--seq", f.seq, kMinSeq, kMaxSeq).value * epochs,
        "--tokens / --seq" + times};
  } else {
    throw UsageError("--samples", "", "required (or --tokens with --seq): the size of the run");
  }
  const double steps = in.samples.value / static_cast<double>(in.global_batch);
  if (steps > kMaxOptimizerSteps)
    throw UsageError(f.samples.empty() ? "--tokens" : "--samples", f.samples.empty() ? f.tokens : f.samples,
                     "the run takes " + format_general(steps, 4) + " optimizer steps (" + in.samples.source +
                         " / GBS " + std::to_string(in.global_batch) + "); a plan projects at most 10^12");
}

// Checks --grad-dtype whichever way the bytes are given: it also picks the
// all-reduce CSV's dtype.
void resolve_grad_bytes(const PlanFlags& f, PlanInputs& in) {
  if (f.grad_dtype != "bf16" && f.grad_dtype != "fp32")
    throw UsageError("--grad-dtype", f.grad_dtype, "use bf16 or fp32");
  if (!f.grad_bytes.empty() && !f.params.empty())
    throw UsageError("--grad-bytes/--params", f.grad_bytes + "/" + f.params, "give one");
  if (!f.grad_bytes.empty()) {
    in.grad_bytes = positive("--grad-bytes", f.grad_bytes, kMaxGradBytes);
  } else if (!f.params.empty()) {
    const double per = f.grad_dtype == "bf16" ? 2 : 4;
    in.grad_bytes = {positive("--params", f.params, kMaxParams).value * per,
                     "--params x " + format_number(per, 0) + " B (--grad-dtype " + f.grad_dtype + ")"};
  } else {
    throw UsageError("--grad-bytes", "", "required (or --params with --grad-dtype)");
  }
}

void resolve_network(const PlanFlags& f, const Source& ar, ResolvedInputs& r) {
  PlanInputs& in = r.plan;
  in.bucket_bytes = positive("--bucket-mb", f.bucket_mb, kMaxBucketMiB).value * 1024 * 1024;
  in.overlap = fraction("--overlap", f.overlap, true);
  if (!f.backward_share.empty()) in.backward_share = fraction("--backward-share", f.backward_share, false);
  if (!f.expect_busbw.empty())
    r.knobs.pass_busbw_GBps = between("--expect-busbw", f.expect_busbw, kMinBusbw, kMaxBusbw);
  if (!f.busbw.empty()) {
    in.busbw_GBps = between("--busbw", f.busbw, kMinBusbw, kMaxBusbw);
    return;
  }
  if (!ar.path) throw UsageError("--busbw", "", "required (or an all-reduce sweep through --allreduce or --from)");
  const BusbwCurve curve = read_busbw_curve(load(ar), ar.path->string(), ar.flag, f.grad_dtype == "fp32" ? "float" : "bfloat16");
  in.busbw_GBps = busbw_at(curve, std::min(in.bucket_bytes, in.grad_bytes.value), "--bucket-mb", f.bucket_mb);
  const auto ranks = recorded_ranks(*ar.path);
  in.busbw_GBps.source += ranks ? "; measured at " + std::to_string(*ranks) + " ranks" : "; rank count unknown (no JSON report beside it)";
  if (ranks && *ranks != in.data_parallel)
    in.busbw_GBps.source += ", applied at DP " + std::to_string(in.data_parallel) + ": busbw there can differ (other links, more hops)";
}

void resolve_checkpoint(const PlanFlags& f, const Source& ck, PlanInputs& in) {
  CheckpointCosts c;
  if (ck.path) c = read_checkpoint_costs(load(ck), ck.path->string(), ck.flag);
  if (!f.ckpt_stall.empty()) c.stall_s = positive("--ckpt-stall", f.ckpt_stall, kMaxCheckpointS);
  if (!f.restore.empty()) c.restore_s = between("--restore", f.restore, 0, kMaxCheckpointS);
  if (!f.mtbf.empty()) c.mtbf_s = {between("--mtbf", f.mtbf, kMinMtbfHours, kMaxMtbfHours).value * 3600, "--mtbf"};
  if (!f.async_snapshot.empty()) c.snapshot_s = positive("--async-snapshot", f.async_snapshot, kMaxCheckpointS);
  if (!f.async_persist.empty()) c.persist_s = positive("--async-persist", f.async_persist, kMaxCheckpointS);
  // An async figure counts as a checkpoint figure: given alone it would be ignored.
  const bool async_given = !f.async_snapshot.empty() || !f.async_persist.empty();
  if (!c.stall_s.known() && !c.restore_s.known() && !c.mtbf_s.known() && !async_given) return;
  if (!c.stall_s.known()) throw UsageError("--ckpt-stall", "", "required with the other checkpoint figures");
  if (!c.restore_s.known()) throw UsageError("--restore", "", "required with the other checkpoint figures");
  if (!c.mtbf_s.known()) throw UsageError("--mtbf", "", "required with the other checkpoint figures (the job's MTBF, hours)");
  if (async_given && !c.snapshot_s.known()) throw UsageError("--async-snapshot", "", "required with --async-persist");
  if (async_given && !c.persist_s.known()) throw UsageError("--async-persist", "", "required with --async-snapshot");
  in.checkpoint = c;
}

}  // namespace

ResolvedInputs resolve_inputs(const PlanFlags& f) {
  const RunFiles run = f.from.empty() ? RunFiles{} : find_run_files(f.from);
  ResolvedInputs r;
  const auto note_read = [&r](const Source& s) {
    if (!s.path) return s;
    r.files.push_back({s.flag, *s.path});
    r.files.push_back({s.flag + " (its JSON)", fs::path(*s.path).replace_extension(".json")});
    return s;
  };
  resolve_batch(f, note_read(pick(f.sweep_csv, "--sweep", run.sweep)), r);
  resolve_samples(f, r.plan);
  resolve_grad_bytes(f, r.plan);
  resolve_network(f, note_read(pick(f.allreduce_csv, "--allreduce", run.allreduce)), r);
  resolve_checkpoint(f, note_read(pick(f.checkpoint_csv, "--checkpoint", run.checkpoint)), r.plan);
  return r;
}

}  // namespace redline::plan
