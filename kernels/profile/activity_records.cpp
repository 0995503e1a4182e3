// CUPTI activity records turned into the profile's Activities.
#include "kernels/profile/activity_records.hpp"

#include <utility>

#include "kernels/demangled_name.hpp"

namespace redline::profile {

CopyKind copy_kind(std::uint8_t cupti_copy_kind) {
  switch (cupti_copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return CopyKind::h2d;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return CopyKind::d2h;
    // CUDA arrays live in the device's memory, so these move HBM bytes as a
    // device-to-device copy does.
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
      return CopyKind::d2d;
    // Peer copies cross NVLink or PCIe, host-to-host copies no GPU memory:
    // neither is bounded by this GPU's memory bandwidth.
    default:
      return CopyKind::other;
  }
}

void RecordReader::read(const CUpti_Activity& record, std::vector<Activity>& out) {
  // The casts follow the kind: CUDA 13's record for each, which CUPTI
  // writes for these kinds (kernel_trace.cpp reads kernels the same way).
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return read_kernel(reinterpret_cast<const CUpti_ActivityKernel10&>(record), out);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return read_memcpy(reinterpret_cast<const CUpti_ActivityMemcpy6&>(record), out);
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      return read_memcpy(reinterpret_cast<const CUpti_ActivityMemcpyPtoP4&>(record), out);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return read_memset(reinterpret_cast<const CUpti_ActivityMemset4&>(record), out);
    case CUPTI_ACTIVITY_KIND_MARKER:
      return read_marker(reinterpret_cast<const CUpti_ActivityMarker2&>(record), out);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return read_external(reinterpret_cast<const CUpti_ActivityExternalCorrelation&>(record));
    default:
      return;
  }
}

// A zero timestamp is CUPTI's "could not be collected"; such a record has no
// place on the timeline, and a guessed one would distort busy and idle time.
bool RecordReader::timed(std::uint64_t start, std::uint64_t end) {
  if (start != CUPTI_TIMESTAMP_UNKNOWN && end != CUPTI_TIMESTAMP_UNKNOWN && end >= start) return true;
  ++untimed_;
  return false;
}

// Demangling a long template name costs far more than a lookup, and a
// training step launches the same few hundred kernels thousands of times.
const std::string& RecordReader::kernel_name(const char* symbol) {
  const std::string key = symbol != nullptr ? symbol : "";
  auto found = kernel_names_.find(key);
  if (found == kernel_names_.end()) found = kernel_names_.emplace(key, demangled_name(symbol)).first;
  return found->second;
}

void RecordReader::read_kernel(const CUpti_ActivityKernel10& kernel, std::vector<Activity>& out) {
  if (!timed(kernel.start, kernel.end)) return;
  Activity a;
  a.kind = ActivityKind::kernel;
  a.start_ns = static_cast<std::int64_t>(kernel.start);
  a.end_ns = static_cast<std::int64_t>(kernel.end);
  a.device = static_cast<int>(kernel.deviceId);
  a.stream = kernel.streamId;
  a.name = kernel_name(kernel.name);
  if (keep_correlations_) correlations_.kernels.push_back({kernel.correlationId, a.start_ns, a.end_ns, a.device});
  out.push_back(std::move(a));
}

// Other kinds are other tools' ids; only kCallCorrelationKind is the call
// recorders'.
void RecordReader::read_external(const CUpti_ActivityExternalCorrelation& record) {
  if (!keep_correlations_ || record.externalKind != kCallCorrelationKind) return;
  correlations_.external.push_back({record.correlationId, static_cast<std::int64_t>(record.externalId)});
}

template <typename CopyRecord>
void RecordReader::read_memcpy(const CopyRecord& copy, std::vector<Activity>& out) {
  if (!timed(copy.start, copy.end)) return;
  Activity a;
  a.kind = ActivityKind::memcpy;
  a.start_ns = static_cast<std::int64_t>(copy.start);
  a.end_ns = static_cast<std::int64_t>(copy.end);
  a.device = static_cast<int>(copy.deviceId);
  a.stream = copy.streamId;
  a.copy = copy_kind(copy.copyKind);
  a.bytes = static_cast<std::int64_t>(copy.bytes);
  out.push_back(std::move(a));
}

void RecordReader::read_memset(const CUpti_ActivityMemset4& memset, std::vector<Activity>& out) {
  if (!timed(memset.start, memset.end)) return;
  Activity a;
  a.kind = ActivityKind::memset;
  a.start_ns = static_cast<std::int64_t>(memset.start);
  a.end_ns = static_cast<std::int64_t>(memset.end);
  a.device = static_cast<int>(memset.deviceId);
  a.stream = memset.streamId;
  a.bytes = static_cast<std::int64_t>(memset.bytes);
  out.push_back(std::move(a));
}

// CUPTI writes a start marker (with the message) and an end marker (without)
// sharing one id, for push/pop and start/end ranges alike. Per-thread
// buffers mean a range ended on another thread can arrive first.
void RecordReader::read_marker(const CUpti_ActivityMarker2& marker, std::vector<Activity>& out) {
  const auto flags = static_cast<unsigned>(marker.flags);
  const bool is_start = (flags & CUPTI_ACTIVITY_FLAG_MARKER_START) != 0;
  const bool is_end = (flags & CUPTI_ACTIVITY_FLAG_MARKER_END) != 0;
  if (is_start == is_end) return;  // instantaneous marks and sync events are no ranges
  if (!timed(marker.timestamp, marker.timestamp)) return;
  HalfRange& half = half_ranges_[marker.id];
  const auto at = static_cast<std::int64_t>(marker.timestamp);
  if (is_start) {
    half.started = true;
    half.start_ns = at;
    // A library's own domain (NCCL marks its calls in "NCCL") stays apart
    // from the program's ranges, which are in the default domain.
    half.name = marker.domain != nullptr ? std::string(marker.domain) + ": " : std::string();
    half.name += marker.name != nullptr ? marker.name : "";
  } else {
    half.ended = true;
    half.end_ns = at;
  }
  if (!half.started || !half.ended) return;
  Activity a;
  a.kind = ActivityKind::range;
  a.start_ns = half.start_ns;
  a.end_ns = half.end_ns;
  a.name = std::move(half.name);
  out.push_back(std::move(a));
  half_ranges_.erase(marker.id);
}

std::int64_t RecordReader::open_ranges() const {
  std::int64_t open = 0;
  for (const auto& [id, half] : half_ranges_) open += half.started && !half.ended ? 1 : 0;
  return open;
}

}  // namespace redline::profile
