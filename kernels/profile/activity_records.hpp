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

class RecordReader {
 public:
  // Appends what `record` stands for to `out`: a kernel, copy or memset at
  // once; a range when the second of its two markers arrives (they may come
  // in different buffers, in either order). Other kinds add nothing.
  void read(const CUpti_Activity& record, std::vector<Activity>& out);

  // Records left out because CUPTI could not time them (its device buffer
  // was full): they are lost as surely as dropped ones.
  std::int64_t untimed() const { return untimed_; }
  // Ranges whose end never came (still open when the trace ended).
  std::int64_t open_ranges() const;

 private:
  void read_kernel(const CUpti_ActivityKernel10& kernel, std::vector<Activity>& out);
  void read_memcpy(const CUpti_ActivityMemcpy6& copy, std::vector<Activity>& out);
  void read_memset(const CUpti_ActivityMemset4& memset, std::vector<Activity>& out);
  void read_marker(const CUpti_ActivityMarker2& marker, std::vector<Activity>& out);
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
};

// CUPTI's copy kinds in the profile's four.
CopyKind copy_kind(std::uint8_t cupti_copy_kind);

}  // namespace redline::profile
