// What the call recorders preloaded into a profiled program share
// (gemm_interposer.cpp: cuBLAS GEMMs; nccl_interposer.cpp: NCCL
// collectives): the file each writes its calls to (in the trace format), an
// external id per call, pushed to the libcupti the injection library loaded
// so CUPTI ties the kernels launched inside the call to it, a depth guard so
// a library's calls into its own entry points count once, and the real
// entry point a stand-in forwards to. Each recorder links its own copy
// (hidden), so two preloaded ones never share a file or an id counter.
//
// Nothing here may take the program down: a failure is a `problem` line in
// the file, and the call is forwarded untouched.
#pragma once

#include <sys/types.h>

#include <cupti_activity.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

namespace redline::profile {

// Calls made inside a recorded call are forwarded only: cuBLAS runs its
// GEMMs through cuBLASLt's exported entry points, and NCCL's broadcast may
// reach another of its own, which resolve to the recorder's.
class CallDepth {
 public:
  CallDepth();
  ~CallDepth();
  CallDepth(const CallDepth&) = delete;
  CallDepth& operator=(const CallDepth&) = delete;
  static bool outermost();
};

struct CallRecorderConfig {
  const char* file_variable;  // names the file ("%p": the process id), e.g. REDLINE_PROFILE_GEMMS
  std::uint32_t id_tag;       // or-ed into each id: two recorders' ids differ in it
  const char* without_cupti;  // what is lost without CUPTI, for the problem line
};

// Never destroyed: calls may still arrive while the process exits.
class CallRecorder {
 public:
  explicit CallRecorder(CallRecorderConfig config) : config_(config) {}

  // Whether this process records: the file is opened at the first call.
  // The first process to lock
  // the file records; the rest of a program's processes (ranks, workers)
  // would interleave theirs, unless "%p" gives each its own file. A forked
  // child records nothing into its parent's file.
  bool recording();
  void write(const std::string& line);

  // A new call's id: the process id in the high half, so ids from two
  // processes never meet in one join, even where their files were mixed up.
  std::int64_t next_id();
  // Runs `forward` inside the call's external-correlation id (0: none).
  template <typename Forward>
  auto correlated(std::int64_t id, Forward forward) {
    const bool pushed = id != 0 && push(id);
    auto result = forward();
    if (pushed) pop();
    return result;
  }
  bool push(std::int64_t id);
  void pop();
  // At exit: the problem line when CUPTI was never found.
  void say_if_cupti_never_found();

  // The real entry point, looked up once by its caller (kept in a static),
  // in the program's global scope or else in the loaded library `library`
  // names ("libcublas": libcublas.so.13, or a wheel's renamed copy). Not
  // found, the file says every call to it fails.
  template <typename Fn>
  Fn real(const char* name, const char* library) {
    void* found = real_symbol(name, library);
    if (found == nullptr) say_missing(name, library);
    return reinterpret_cast<Fn>(found);
  }

 private:
  void open_file();
  bool find_cupti();
  void say_missing(const char* name, const char* library);
  static void* real_symbol(const char* name, const char* library);

  using PushFn = CUptiResult (*)(CUpti_ExternalCorrelationKind, std::uint64_t);
  using PopFn = CUptiResult (*)(CUpti_ExternalCorrelationKind, std::uint64_t*);
  CallRecorderConfig config_;
  std::once_flag opened_;
  std::mutex mutex_;  // the file
  int fd_ = -1;
  pid_t pid_ = 0;
  std::atomic<std::uint32_t> next_{1};
  // Found at the first push after libcupti is loaded: a program may make
  // its first recorded call (an ncclGroupStart around its communicators'
  // creation) before cuInit loads the injection library, and with it CUPTI.
  std::atomic<PushFn> push_{nullptr};
  std::atomic<PopFn> pop_{nullptr};
};

// Whether a stand-in records this call: outermost, and the file is open.
bool records_call(CallRecorder& recorder);

}  // namespace redline::profile
