// CUPTI activity records turned into the profile's Activities
// (harness/profile/activity.hpp): kernels, copies and memsets one for one,
// NVTX ranges from the pair of marker records CUPTI writes for each. Apart
// from the injection library's lifecycle so it is tested on hand-made
// records without a GPU; it calls no CUPTI function.
#pragma once

#include <cupti_activity.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "harness/profile/activity.hpp"

namespace redline::profile {

// The external-correlation kind the call recorders (call_recorder.hpp: the
// GEMM and NCCL ones) push their ids under. PyTorch's profiler (Kineto) pushes CUSTOM0 and
// CUSTOM1 for its own ops and annotations, so this is the one left free.
constexpr CUpti_ExternalCorrelationKind kCallCorrelationKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;

class RecordReader {
 public:
  // Appends what `record` stands for to `out`: a kernel, copy or memset at
  // once; a range when the second of its two markers arrives (they may come
  // in different buffers, in either order). Other kinds add nothing.
  void read(const CUpti_Activity& record, std::vector<Activity>& out);

  // With recorded calls (their CUPTI external ids, kCallCorrelationKind) to
  // tie to kernels: each kernel's correlation id, start and end, and CUPTI's
  // external correlations of that kind, collected apart as they come. They
  // come in different buffers in either order (an API call's buffer is its
  // thread's, a kernel's the device's), so the join waits for the whole
  // trace (harness/profile/call_kernels.hpp).
  void keep_correlations(bool on) { keep_correlations_ = on; }
  struct Correlations {
    std::vector<ExternalCorrelation> external;
    std::vector<KernelCorrelation> kernels;
  };
  Correlations& correlations() { return correlations_; }

  // Records left out because CUPTI could not time them (its device buffer
  // was full): they are lost as surely as dropped ones.
  std::int64_t untimed() const { return untimed_; }
  // Ranges whose end never came (still open when the trace ended).
  std::int64_t open_ranges() const;

 private:
  void read_kernel(const CUpti_ActivityKernel10& kernel, std::vector<Activity>& out);
  // CUpti_ActivityMemcpy6, or CUpti_ActivityMemcpyPtoP4 (a copy between two GPUs)
  template <typename CopyRecord>
  void read_memcpy(const CopyRecord& copy, std::vector<Activity>& out);
  void read_memset(const CUpti_ActivityMemset4& memset, std::vector<Activity>& out);
  void read_marker(const CUpti_ActivityMarker2& marker, std::vector<Activity>& out);
  void read_external(const CUpti_ActivityExternalCorrelation& record);
  bool timed(std::uint64_t start, std::uint64_t end);
  const std::string& kernel_name(const char* symbol);

  struct HalfRange {
    std::int64_t start_ns = 0, end_ns = 0;
    bool started = false, ended = false;
    std::string name;
  };
  std::unordered_map<std::uint32_t, HalfRange> half_ranges_;  // by marker id
  std::unordered_map<std::string, std::string> kernel_names_;  // symbol -> demangled
  std::int64_t untimed_ = 0;
  bool keep_correlations_ = false;
  Correlations correlations_;
};

// CUPTI's copy kinds in the profile's four.
CopyKind copy_kind(std::uint8_t cupti_copy_kind);

}  // namespace redline::profile
