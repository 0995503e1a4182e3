// A stand-in for libcupti, with its soname, so the injection library's own
// part (start, buffers, the trace, exit, signals, forks) runs without a GPU.
// It implements only the calls the library makes: enabling succeeds (except
// a kind, or TIMESTAMP_CALLBACK, named in FAKE_CUPTI_REFUSE), and
// fake_emit() plays CUPTI handing back one full buffer of hand-made records
// while it keeps a second, partly filled, which a flush returns. With FAKE_CUPTI_IN_FLIGHT set the second
// also holds a kernel still running (no timestamps yet), so that only the
// forced flush returns it, as CUPTI's unforced flush returns only buffers
// whose records are all complete.
#include <cupti.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace {

CUpti_BuffersCallbackRequestFunc g_request = nullptr;
CUpti_BuffersCallbackCompleteFunc g_complete = nullptr;
std::uint8_t* g_held = nullptr;
std::size_t g_held_size = 0;
int g_dropped_queries = 0;
int g_pushed = 0, g_popped = 0;  // external correlation ids (the GEMM recorder's)
CUpti_TimestampCallbackFunc g_clock = nullptr;

// Records sit in fixed slots; the real layout is CUPTI's business.
constexpr std::size_t kSlot = 512;

template <typename Record>
Record& slot(std::uint8_t* buffer, std::size_t& used) {
  auto* record = reinterpret_cast<Record*>(buffer + used);
  used += kSlot;
  return *record;
}

CUpti_ActivityMarker2& marker(std::uint8_t* buffer, std::size_t& used, CUpti_ActivityFlag flag, std::uint32_t id,
                              std::uint64_t at, const char* name, const char* domain = nullptr) {
  auto& m = slot<CUpti_ActivityMarker2>(buffer, used);
  m.kind = CUPTI_ACTIVITY_KIND_MARKER;
  m.flags = flag;
  m.id = id;
  m.timestamp = at;
  m.name = name;
  m.domain = domain;
  return m;
}

CUpti_ActivityKernel10& kernel(std::uint8_t* buffer, std::size_t& used, std::uint64_t start, std::uint64_t end,
                               const char* name) {
  auto& k = slot<CUpti_ActivityKernel10>(buffer, used);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start;
  k.end = end;
  k.streamId = 7;
  k.name = name;
  return k;
}

// The first buffer: kernels (one untimed), a copy, a memset, a range's start
// whose end comes in the held buffer, another range's end before its start,
// a range that never ends and an instantaneous mark.
std::size_t fill_first(std::uint8_t* b) {
  std::size_t used = 0;
  kernel(b, used, 1000, 2000, "_Z6squarePfi").correlationId = 21;
  kernel(b, used, 0, 0, "_Z6squarePfi");
  kernel(b, used, 2100, 2500, "ncclDevKernel_AllReduce_Sum_f32_RING_LL").deviceId = 1;
  auto& copy = slot<CUpti_ActivityMemcpy6>(b, used);
  copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  copy.bytes = 4096;
  copy.start = 500;
  copy.end = 900;
  copy.streamId = 7;
  auto& set = slot<CUpti_ActivityMemset4>(b, used);
  set.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  set.bytes = 64;
  set.start = 950;
  set.end = 960;
  set.streamId = 7;
  marker(b, used, CUPTI_ACTIVITY_FLAG_MARKER_START, 1, 400, "step\t1");
  marker(b, used, CUPTI_ACTIVITY_FLAG_MARKER_END, 2, 3000, nullptr);
  marker(b, used, CUPTI_ACTIVITY_FLAG_MARKER_START, 3, 3100, "never ends");
  marker(b, used, CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 4, 3100, "a mark");
  return used;
}

bool held_in_flight() { return std::getenv("FAKE_CUPTI_IN_FLIGHT") != nullptr; }

std::size_t fill_held(std::uint8_t* b) {
  std::size_t used = 0;
  if (held_in_flight()) kernel(b, used, 0, 0, "still_running");
  marker(b, used, CUPTI_ACTIVITY_FLAG_MARKER_END, 1, 2600, nullptr);
  marker(b, used, CUPTI_ACTIVITY_FLAG_MARKER_START, 2, 2700, "ncclAllReduce", "NCCL");
  // The GEMM recorder's id for the first kernel's launch, after the kernel
  // (another thread's buffer), and another tool's id, to be left alone.
  for (const auto kind : {CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0}) {
    auto& e = slot<CUpti_ActivityExternalCorrelation>(b, used);
    e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    e.externalKind = kind;
    e.externalId = 77;
    e.correlationId = 21;
  }
  return used;
}

const char* kind_name(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return "CONCURRENT_KERNEL";
    case CUPTI_ACTIVITY_KIND_MEMCPY: return "MEMCPY";
    case CUPTI_ACTIVITY_KIND_MEMSET: return "MEMSET";
    case CUPTI_ACTIVITY_KIND_MARKER: return "MARKER";
    default: return "OTHER";
  }
}

bool refused(const char* call) {
  const char* named = std::getenv("FAKE_CUPTI_REFUSE");
  return named != nullptr && std::strcmp(named, call) == 0;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void fake_emit() {
  if (g_request == nullptr) return;  // tracing never started
  std::uint8_t* buffer = nullptr;
  std::size_t size = 0, max_records = 0;
  g_request(&buffer, &size, &max_records);
  if (buffer != nullptr) g_complete(nullptr, 0, buffer, size, fill_first(buffer));
  g_request(&g_held, &g_held_size, &max_records);
}

__attribute__((visibility("default"))) void fake_external_ids(int* pushed, int* popped) {
  *pushed = g_pushed;
  *popped = g_popped;
}

CUptiResult CUPTIAPI cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t) {
  if (kind != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2) return CUPTI_ERROR_INVALID_PARAMETER;
  ++g_pushed;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t*) {
  if (kind != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2 || g_popped == g_pushed) return CUPTI_ERROR_QUEUE_EMPTY;
  ++g_popped;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char** text) {
  *text = result == CUPTI_ERROR_NOT_COMPATIBLE ? "CUPTI_ERROR_NOT_COMPATIBLE" : "CUPTI_ERROR_UNKNOWN";
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivitySetAttribute(CUpti_ActivityAttribute, size_t*, void*) { return CUPTI_SUCCESS; }

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                    CUpti_BuffersCallbackCompleteFunc complete) {
  g_request = request;
  g_complete = complete;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  return refused(kind_name(kind)) ? CUPTI_ERROR_NOT_COMPATIBLE : CUPTI_SUCCESS;
}

// As CUPTI does, the registered clock replaces its own (here a fixed
// reading, far from any monotonic one), unless FAKE_CUPTI_REFUSE names
// TIMESTAMP_CALLBACK.
CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc clock) {
  if (refused("TIMESTAMP_CALLBACK")) return CUPTI_ERROR_NOT_COMPATIBLE;
  g_clock = clock;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t* timestamp) {
  *timestamp = g_clock != nullptr ? g_clock() : 123456789;
  return CUPTI_SUCCESS;
}

// Seven records dropped, reported once: CUPTI resets the count on reading.
CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  *dropped = ++g_dropped_queries == 1 ? 7 : 0;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  std::uint8_t* next = *record == nullptr ? buffer : reinterpret_cast<std::uint8_t*>(*record) + kSlot;
  if (next >= buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(next);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flags) {
  const bool forced = (flags & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0;
  if (g_held != nullptr && (forced || !held_in_flight())) {
    std::uint8_t* held = g_held;
    g_held = nullptr;
    g_complete(nullptr, 0, held, g_held_size, fill_held(held));
  }
  return CUPTI_SUCCESS;
}

}  // extern "C"
