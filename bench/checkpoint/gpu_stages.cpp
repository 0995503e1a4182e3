#include "bench/checkpoint/gpu_stages.hpp"

#include <stdexcept>
#include <string>
#include <utility>

#include "harness/core/units.hpp"
#ifdef REDLINE_HAVE_CHECKPOINT_GPU
#include "kernels/checkpoint_copy.cuh"
#include "kernels/gemm_load.cuh"
#endif

namespace redline {

namespace {

// A copy of the whole state in one go: bytes per call is the state's size.
Row gpu_copy_row(const std::string& stage, std::uint64_t bytes, bool fsync, const std::string& memory, int streams,
                 double seconds) {
  Row row = checkpoint_stage_row(stage, bytes, 1, bytes, fsync, seconds);
  row.param("memory", memory).param("streams", std::to_string(streams));
  return row;
}

// A row with no figures: its status and the reason say why.
Row without_figures(Row row, RowStatus status, const std::string& why) {
  row.metrics.clear();
  row.status = status;
  row.note = why;
  return row;
}

}  // namespace

std::optional<std::string> gpu_unavailable() {
#ifdef REDLINE_HAVE_CHECKPOINT_GPU
  return checkpoint_gpu_unavailable_reason();
#else
  return std::string("built without CUDA");
#endif
}

std::optional<RowStatus> gpu_failure_status([[maybe_unused]] const std::exception& e) {
#ifdef REDLINE_HAVE_CHECKPOINT_GPU
  if (is_gpu_out_of_memory(e)) return RowStatus::oom;
  if (dynamic_cast<const GemmLoadWrong*>(&e) || dynamic_cast<const GpuCopyWrong*>(&e)) return RowStatus::wrong;
#endif
  return std::nullopt;
}

std::optional<double> add_gpu_copy_rows(const CheckpointConfig& cfg, const std::optional<std::string>& no_gpu,
                                        Report& report) {
  if (no_gpu) {
    for (const auto& [stage, memory] : {std::pair{"gpu.d2h", "pageable"}, {"gpu.d2h", "pinned"},
                                        {"gpu.d2h_ceiling", "pinned"}, {"gpu.h2d", "pinned"}})
      report.rows.push_back(
          without_figures(gpu_copy_row(stage, cfg.bytes, cfg.fsync, memory, 1, 0), RowStatus::skipped, *no_gpu));
    return std::nullopt;
  }
#ifdef REDLINE_HAVE_CHECKPOINT_GPU
  double ceiling = 0, best_pinned = 0;
  for (const auto& t : measure_checkpoint_copies(cfg.bytes)) {
    Row row = gpu_copy_row("gpu." + t.stage, cfg.bytes, cfg.fsync, t.memory, t.streams, t.seconds);
    row.note = t.note;
    if (!t.wrong.empty()) {
      report.rows.push_back(without_figures(row, RowStatus::wrong, t.wrong));
      continue;
    }
    if (t.stage == "d2h_ceiling") ceiling = t.seconds;
    if (t.stage == "d2h" && t.memory == "pinned" && (best_pinned == 0 || t.seconds < best_pinned)) best_pinned = t.seconds;
    report.rows.push_back(row);
  }
  if (ceiling > 0 && best_pinned > 0)
    report.summary.push_back({"GPU->host pinned", format_number(100.0 * ceiling / best_pinned, 1) +
                                                      "% of the cudaMemcpy ceiling"});
  if (best_pinned > 0) return best_pinned;
#endif
  return std::nullopt;
}

AsyncResults run_gpu_async_save([[maybe_unused]] const CheckpointConfig& cfg, [[maybe_unused]] Report& report) {
#ifdef REDLINE_HAVE_CHECKPOINT_GPU
  // The load first: its 8192^3 GEMM buffers must fit, and a snapshot as large
  // as the state allocated first could starve them.
  const GemmLoad gemm_load;
  GpuSnapshot gpu(cfg.bytes);
  const std::string what = gemm_load.description() + " (gemm_bench's GEMM) stand in for the training step";
  const TrainingLoad load{
      what, [&](double seconds, const std::function<bool()>& stop) { return gemm_load.rate(seconds, stop); }};
  // One host thread issues the copy; the copy engine does it.
  return run_async_save(cfg, {[&] { return gpu.snapshot(); }, gpu.host(), "pinned host memory (GPU)", 1}, load, report);
#else
  throw std::logic_error("the async save from a GPU needs a build with CUDA");
#endif
}

std::optional<double> add_restore_to_gpu_row(const AlignedBuffer& restored, const CheckpointConfig& cfg,
                                             const std::optional<std::string>& no_gpu, Report& report) {
  if (no_gpu) {
    report.rows.push_back(without_figures(gpu_copy_row("restore.h2d", restored.size(), cfg.fsync, "pageable", 1, 0),
                                          RowStatus::skipped, *no_gpu));
    return std::nullopt;
  }
#ifdef REDLINE_HAVE_CHECKPOINT_GPU
  const double seconds = restore_to_gpu(restored.data(), restored.size());
  Row row = gpu_copy_row("restore.h2d", restored.size(), cfg.fsync, "pageable", 1, seconds);
  row.note = "restored state -> GPU, checked by copying it back";
  report.rows.push_back(row);
  return seconds;
#else
  return std::nullopt;
#endif
}

}  // namespace redline
