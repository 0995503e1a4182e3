// trace_kernels through CUPTI's activity API: CUPTI asks for buffers and hands
// them back full through two process-global C callbacks, so the records are
// collected in one static collector, and one trace runs at a time.
#include "kernels/kernel_trace.cuh"

#include <algorithm>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#if defined(REDLINE_HAVE_CUPTI)
#include <cupti.h>

#include "kernels/demangled_name.hpp"

#include <cstdint>
#include <cstdlib>
#include <mutex>
#endif

namespace redline {

#if defined(REDLINE_HAVE_CUPTI)

namespace {

struct TracedKernel {
  std::uint32_t correlation_id = 0;  // increases with launch order across streams
  LaunchedKernel kernel;
};

// Filled from CUPTI's threads (and from inside cuptiActivityFlushAll), read
// by trace_kernels. Never destroyed: CUPTI may deliver a buffer while the
// process exits, after function-local statics are gone.
struct Collector {
  std::mutex mutex;
  std::vector<TracedKernel> kernels;
  std::size_t dropped = 0;  // records CUPTI could not store
  bool lost_buffer = false; // a callback could not record (or read) all it got
};
Collector& collector() {
  static Collector* const instance = new Collector;
  return *instance;
}

// Serializes traces. Separate from the collector's mutex: the buffer callback
// runs inside cuptiActivityFlushAll, which trace_kernels calls with this held.
std::mutex& trace_mutex() {
  static std::mutex* const instance = new std::mutex;
  return *instance;
}

// CUPTI records are 8-byte aligned within the buffer, so the buffer must be.
constexpr std::size_t kBufferBytes = std::size_t{1} << 20;
constexpr std::size_t kBufferAlignment = 8;

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(kBufferAlignment, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

// A C callback: nothing may propagate out of it.
void CUPTIAPI buffer_completed(CUcontext context, std::uint32_t stream_id, std::uint8_t* buffer, std::size_t /*size*/,
                               std::size_t valid_size) {
  try {
    std::vector<TracedKernel> found;
    CUpti_Activity* record = nullptr;
    CUptiResult status = CUPTI_SUCCESS;
    while ((status = cuptiActivityGetNextRecord(buffer, valid_size, &record)) == CUPTI_SUCCESS) {
      if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL)
        continue;
      // CUDA 13's record for both kinds; the fields read here sit at the same
      // offsets in every earlier version.
      const auto* kernel = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      TracedKernel traced;
      traced.correlation_id = kernel->correlationId;
      traced.kernel.name = demangled_name(kernel->name);
      traced.kernel.grid_x = static_cast<unsigned>(kernel->gridX);
      traced.kernel.grid_y = static_cast<unsigned>(kernel->gridY);
      traced.kernel.grid_z = static_cast<unsigned>(kernel->gridZ);
      traced.kernel.duration_ns = static_cast<double>(kernel->end - kernel->start);
      traced.kernel.block_x = static_cast<unsigned>(kernel->blockX);
      traced.kernel.block_y = static_cast<unsigned>(kernel->blockY);
      traced.kernel.block_z = static_cast<unsigned>(kernel->blockZ);
      found.push_back(std::move(traced));
    }
    // Only MAX_LIMIT_REACHED means "end of buffer". Any other error (e.g.
    // INVALID_KIND for an incomplete or invalid record) ends the walk early:
    // the records after it are lost, so the trace must not pass as whole.
    const bool read_all = status == CUPTI_ERROR_MAX_LIMIT_REACHED;
    std::size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) != CUPTI_SUCCESS) dropped = 0;
    Collector& c = collector();
    const std::lock_guard lock(c.mutex);
    c.kernels.insert(c.kernels.end(), std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
    c.dropped += dropped;
    if (!read_all) c.lost_buffer = true;
  } catch (...) {
    Collector& c = collector();
    const std::lock_guard lock(c.mutex);
    c.lost_buffer = true;
  }
  std::free(buffer);
}

std::string cupti_failure(const char* call, CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) text = "unknown CUPTI error";
  return std::string(call) + " failed: " + text + " (CUptiResult " + std::to_string(static_cast<int>(result)) + ")";
}

}  // namespace

KernelTrace trace_kernels(const std::function<void()>& work) {
  const std::lock_guard trace_lock(trace_mutex());
  KernelTrace trace;
  auto note = [&](std::string why) {
    if (!trace.unavailable) trace.unavailable = std::move(why);
  };
  {
    Collector& c = collector();
    const std::lock_guard lock(c.mutex);
    c.kernels.clear();
    c.dropped = 0;
    c.lost_buffer = false;
  }

  bool enabled = false;
  if (const CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed); r != CUPTI_SUCCESS) {
    note(cupti_failure("cuptiActivityRegisterCallbacks", r));
  } else if (const CUptiResult e = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL); e != CUPTI_SUCCESS) {
    // Typically another profiler (Nsight Systems, a second CUPTI client) owns it.
    note(cupti_failure("cuptiActivityEnable(CONCURRENT_KERNEL)", e));
  } else {
    enabled = true;
  }

  std::exception_ptr work_failed;
  try {
    work();
  } catch (...) {
    work_failed = std::current_exception();
  }

  if (enabled) {
    // Forced flush: every buffer, also those holding records CUPTI has not
    // marked complete yet. Again after disabling, so no record of this trace
    // arrives during the next one.
    if (const CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); r != CUPTI_SUCCESS)
      note(cupti_failure("cuptiActivityFlushAll", r));
    if (const CUptiResult r = cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL); r != CUPTI_SUCCESS)
      note(cupti_failure("cuptiActivityDisable(CONCURRENT_KERNEL)", r));
    if (const CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); r != CUPTI_SUCCESS)
      note(cupti_failure("cuptiActivityFlushAll", r));
  }
  if (work_failed) std::rethrow_exception(work_failed);

  if (enabled) {
    std::vector<TracedKernel> kernels;
    std::size_t dropped = 0;
    bool lost_buffer = false;
    {
      Collector& c = collector();
      const std::lock_guard lock(c.mutex);
      kernels.swap(c.kernels);
      dropped = c.dropped;
      lost_buffer = c.lost_buffer;
    }
    // Buffers may come back out of order; correlation ids are in launch order.
    std::stable_sort(kernels.begin(), kernels.end(),
                     [](const TracedKernel& a, const TracedKernel& b) { return a.correlation_id < b.correlation_id; });
    trace.kernels.reserve(kernels.size());
    for (auto& traced : kernels) trace.kernels.push_back(std::move(traced.kernel));
    // A partial list would read as the whole story.
    if (dropped > 0) note("CUPTI dropped " + std::to_string(dropped) + " activity records (buffers full)");
    if (lost_buffer) note("an activity buffer could not be read in full (out of host memory, or an invalid record)");
    // Tracing was on, yet nothing came: another CUPTI client (Nsight) took the
    // records, or none was valid. An empty list must not read as "the work
    // launched no kernel" (nor the caller's "the kernel name states no tile").
    if (trace.kernels.empty()) note("CUPTI delivered no kernel records (another profiler attached?)");
  }
  return trace;
}

#else  // !REDLINE_HAVE_CUPTI

KernelTrace trace_kernels(const std::function<void()>& work) {
  // The work still runs: callers rely on it having happened.
  work();
  KernelTrace trace;
  trace.unavailable = "built without CUPTI";
  return trace;
}

#endif  // REDLINE_HAVE_CUPTI

}  // namespace redline
