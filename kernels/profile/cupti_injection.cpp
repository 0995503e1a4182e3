// The injection library a profiled program runs with: the CUDA driver loads
// it (CUDA_INJECTION64_PATH) and calls InitializeInjection during cuInit. It
// turns on CUPTI's activity records for kernels, copies (peer to peer too),
// memsets and NVTX markers, and writes them to the trace file named by REDLINE_PROFILE_OUT
// (harness/profile/trace_file.hpp) as CUPTI hands back each buffer: when
// full, every kFlushPeriodMs (a thread of ours flushes the buffers whose
// records are all complete, so a program that dies without running atexit
// loses only the records since CUPTI last handed its buffers back), at
// exit, and on SIGINT/SIGTERM where the program leaves them to the default
// action. Only activity records touch the program's hot
// path: no API callbacks, so the overhead is CUPTI's record keeping alone.
//
// Nothing here may take the program down: every failure becomes a `problem`
// line in the trace, and the program runs on untraced.
#include <cupti.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness/profile/trace_file.hpp"
#include "kernels/profile/activity_records.hpp"

namespace redline::profile {
namespace {

// 8 MiB holds some 30,000 kernel records; a bounded number outstanding
// bounds the host memory a profiled program loses to the profiler (256 MiB
// at worst, and calloc's pages cost nothing until CUPTI fills them). CUPTI
// keeps a buffer per thread that records activity, hence more than a few.
constexpr std::size_t kBufferBytes = std::size_t{8} << 20;
constexpr int kMaxOutstandingBuffers = 32;
// How long a signal waits for the flush before the default action ends the
// program anyway: a flush that cannot finish (the interrupted thread held a
// lock it needs) must not turn Ctrl-C into a hang.
constexpr int kSignalFlushTimeoutMs = 10000;
// How often completed records are flushed while the program runs.
constexpr int kFlushPeriodMs = 1000;

// Filled from the program's threads and CUPTI's worker. Never destroyed:
// CUPTI may hand a buffer back while the process exits, after statics die.
struct Injection {
  std::mutex mutex;  // the file and the reader
  int fd = -1;       // the trace; -1 once closed (or never opened)
  RecordReader reader;
  std::vector<Activity> converted;  // one buffer's records, reused
  pid_t pid = 0;                    // a forked child must not write into its parent's trace
  std::atomic<int> outstanding{0};  // buffers handed to CUPTI and not yet back
  std::atomic<bool> finished{false};  // the final flush is under way (it runs once)
  // Set once the drops before the final flush are counted: from here on
  // buffers are declined, so every buffer still out after the forced flush
  // is one CUPTI never gave back, and the records declined are the program's
  // threads' at exit, said apart from the run's losses.
  std::atomic<bool> closing{false};
  std::int64_t dropped_while_closing = 0;
  std::atomic<bool> closed{false};  // the trace is closed
  // Held by a periodic flush and by the final one: the final flush must not
  // close the trace while a periodic one still holds buffers it took.
  std::mutex flush_mutex;
  int request_pipe[2] = {-1, -1};  // signal handler -> flusher thread
  std::atomic<bool> flusher_running{false};
};

Injection& injection() {
  static Injection* const instance = new Injection;
  return *instance;
}

bool in_traced_process() { return injection().pid == getpid(); }

// write(2) straight to the file, no stdio buffer: a line is on disk (in the
// page cache) as soon as it is written, so a killed program leaves it.
void write_locked(const std::string& text) {
  Injection& s = injection();
  std::size_t done = 0;
  while (s.fd >= 0 && done < text.size()) {
    const ssize_t n = ::write(s.fd, text.data() + done, text.size() - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
    } else if (n < 0 && errno != EINTR) {
      return;  // a full disk: nothing else to report it to
    }
  }
}

void note_problem(const std::string& text) {
  const std::lock_guard lock(injection().mutex);
  write_locked(problem_line(text));
}

std::string cupti_failure(const std::string& call, CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) text = "unknown CUPTI error";
  return call + ": " + text;
}

// True on success; a failure is noted in the trace.
bool cupti_ok(const std::string& call, CUptiResult result) {
  if (result == CUPTI_SUCCESS) return true;
  note_problem(cupti_failure(call, result));
  return false;
}

// CUPTI's dropped count reads (and resets) the global queue's tally.
void write_dropped_locked() {
  std::size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) != CUPTI_SUCCESS || dropped == 0) return;
  if (injection().closing.load())
    injection().dropped_while_closing += static_cast<std::int64_t>(dropped);
  else
    write_locked(dropped_line(static_cast<std::int64_t>(dropped)));
}

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *buffer = nullptr;  // declining makes CUPTI drop records, and count them
  *size = 0;
  *max_records = 0;  // as many as fit
  Injection& s = injection();
  if (s.closing.load()) return;
  if (s.outstanding.fetch_add(1) >= kMaxOutstandingBuffers) {
    s.outstanding.fetch_sub(1);
    return;
  }
  // Zeroed, as CUPTI was told (ZEROED_OUT_ACTIVITY_BUFFER), so it does not
  // clear 8 MiB on the program's thread. calloc's alignment (16) covers
  // the 8 bytes CUPTI needs.
  void* memory = std::calloc(1, kBufferBytes);
  if (memory == nullptr) {
    s.outstanding.fetch_sub(1);
    return;
  }
  *buffer = static_cast<std::uint8_t*>(memory);
  *size = kBufferBytes;
}

// Reads the records under the lock: marker halves pair across buffers.
void convert_and_write_locked(std::uint8_t* buffer, std::size_t valid_size) {
  Injection& s = injection();
  s.converted.clear();
  CUpti_Activity* record = nullptr;
  CUptiResult status = CUPTI_SUCCESS;
  while ((status = cuptiActivityGetNextRecord(buffer, valid_size, &record)) == CUPTI_SUCCESS)
    s.reader.read(*record, s.converted);
  std::string text;
  for (const Activity& a : s.converted) text += trace_line(a);
  RecordReader::Correlations& links = s.reader.correlations();
  for (const ExternalCorrelation& e : links.external) text += external_correlation_line(e.correlation_id, e.external_id);
  for (const KernelCorrelation& k : links.kernels) text += kernel_correlation_line(k);
  links.external.clear();
  links.kernels.clear();
  // Only MAX_LIMIT_REACHED is the end of the buffer; any other status cut the
  // walk short, so the records after it are lost and the trace must say so.
  if (status != CUPTI_ERROR_MAX_LIMIT_REACHED)
    text += problem_line(cupti_failure("cuptiActivityGetNextRecord", status) + " (rest of a buffer lost)");
  write_locked(text);
  write_dropped_locked();
}

// A C callback: nothing may propagate out of it.
void CUPTIAPI buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t, std::size_t valid_size) {
  Injection& s = injection();
  if (in_traced_process()) {
    try {
      const std::lock_guard lock(s.mutex);
      convert_and_write_locked(buffer, valid_size);
    } catch (...) {
      // Out of memory while converting: the buffer's records are lost.
    }
  }
  std::free(buffer);
  s.outstanding.fetch_sub(1);
}

// What was lost, in the trace. Records without timestamps before the final
// flush are ones CUPTI's device buffers had no room for; in the final
// (forced) flush they are work still running when the program ended.
// `untimed_before_final` is the reader's count when that flush began.
void write_losses_locked(std::int64_t untimed_before_final) {
  Injection& s = injection();
  const RecordReader& reader = s.reader;
  const std::int64_t in_flight = reader.untimed() - untimed_before_final;
  if (reader.untimed() > 0) write_locked(dropped_line(reader.untimed()));
  if (untimed_before_final > 0)
    write_locked(problem_line(std::to_string(untimed_before_final) +
                              " activity records had no timestamps (CUPTI's device buffers were full), counted "
                              "as dropped"));
  if (in_flight > 0)
    write_locked(problem_line(std::to_string(in_flight) +
                              " activity records were still incomplete at the end (work in flight when the program "
                              "ended), counted as dropped"));
  if (reader.open_ranges() > 0)
    write_locked(problem_line(std::to_string(reader.open_ranges()) + " NVTX ranges still open at the end, left out"));
  if (s.dropped_while_closing > 0)
    write_locked(problem_line(std::to_string(s.dropped_while_closing) +
                              " activity records made while the trace closed (the program's threads at exit) "
                              "were not kept"));
  if (const int missing = s.outstanding.load(); missing > 0)
    write_locked(problem_line(std::to_string(missing) +
                              " activity buffers never came back from CUPTI, their records lost: another CUPTI "
                              "client in the program (torch.profiler, Nsight Systems) may have taken its activity "
                              "API over"));
}

// The final counts and the end line, then the file closed; later buffers
// find it closed.
void close_trace(std::int64_t untimed_before_final) {
  Injection& s = injection();
  const std::lock_guard lock(s.mutex);
  write_dropped_locked();
  write_losses_locked(untimed_before_final);
  write_locked(end_line());
  if (s.fd >= 0) ::close(s.fd);
  s.fd = -1;
  s.closed = true;
}

// SIGINT and SIGTERM held off this thread while it is in scope: a signal
// then goes to another thread (whose handler waits for the trace to close)
// or waits until the flush is done, rather than interrupting the flush to
// wait for itself.
class SignalsHeld {
 public:
  SignalsHeld() {
    sigset_t held;
    sigemptyset(&held);
    sigaddset(&held, SIGINT);
    sigaddset(&held, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &held, &before_);
  }
  ~SignalsHeld() { pthread_sigmask(SIG_SETMASK, &before_, nullptr); }
  SignalsHeld(const SignalsHeld&) = delete;
  SignalsHeld& operator=(const SignalsHeld&) = delete;

 private:
  sigset_t before_;
};

// Every buffer back (forced: also those with records CUPTI has not
// completed), then the trace closed. Once only, and only in the process
// that opened it; false where it did not run it.
bool finish() {
  Injection& s = injection();
  const SignalsHeld held;
  if (!in_traced_process() || s.finished.exchange(true)) return false;
  try {
    const std::lock_guard flushing(s.flush_mutex);
    std::int64_t untimed_before_final = 0;
    {
      const std::lock_guard lock(s.mutex);
      write_dropped_locked();
      untimed_before_final = s.reader.untimed();
      s.closing = true;
    }
    cupti_ok("cuptiActivityFlushAll", cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    close_trace(untimed_before_final);
  } catch (...) {
  }
  s.closed = true;  // also when closing failed: a signal must not wait for it
  return true;
}

// Until the trace is closed, at most kSignalFlushTimeoutMs. Async-signal-safe.
void wait_until_closed() {
  for (int waited = 0; waited < kSignalFlushTimeoutMs && !injection().closed.load(); waited += 100)
    ::poll(nullptr, 0, 100);
}

// The buffers whose records are all complete handed back while the program
// runs (CUPTI's own flush returns only full buffers), so that an exit that
// skips atexit (_exit, SIGKILL, a crash) loses only those still incomplete.
void flush_completed() {
  Injection& s = injection();
  const std::lock_guard flushing(s.flush_mutex);
  if (!s.finished.load()) cuptiActivityFlushAll(0);  // a failure here is retried next period, and at exit
}

// A signal's flush may be under way on our thread as the program exits:
// exit must not tear CUPTI down under it.
void finish_at_exit() {
  if (!finish() && in_traced_process()) wait_until_closed();
}

// --- Signals ---------------------------------------------------------------
// A signal whose default action ends the program would skip atexit and lose
// every buffer CUPTI still holds. The flush cannot run in the handler itself
// (the interrupted thread may hold the lock it needs), so a thread of ours
// runs it while the handler waits, at most kSignalFlushTimeoutMs. The same
// thread flushes the completed records every kFlushPeriodMs.

struct SignalSlot {
  int signo;
  struct sigaction previous;
  bool installed;
};
SignalSlot g_signals[] = {{SIGINT, {}, false}, {SIGTERM, {}, false}};

void flusher_loop() {
  Injection& s = injection();
  while (!s.closed.load()) {
    pollfd request{s.request_pipe[0], POLLIN, 0};
    const int ready = ::poll(&request, 1, kFlushPeriodMs);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) {
      s.flusher_running = false;  // a signal then ends the trace at the last flushed buffer
      return;
    }
    if (ready == 0) {
      flush_completed();
      continue;
    }
    char byte = 0;
    if (::read(s.request_pipe[0], &byte, 1) == 1) (void)finish();
  }
}

// In the handler: only async-signal-safe calls (write, poll, getpid). It
// waits for the final flush whoever runs it (atexit, or this signal's
// request); the thread running it holds the signals off (SignalsHeld).
void flush_from_signal() {
  Injection& s = injection();
  if (!s.flusher_running || !in_traced_process()) return;
  if (!s.finished.load()) {
    char byte = 1;
    if (::write(s.request_pipe[1], &byte, 1) != 1) return;
  }
  wait_until_closed();
}

void on_signal(int signo, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  for (SignalSlot& slot : g_signals) {
    if (slot.signo != signo || !slot.installed) continue;
    const struct sigaction& previous = slot.previous;
    if ((previous.sa_flags & SA_SIGINFO) != 0) {
      // The program handles it (and may well run on): its exit will flush.
      if (previous.sa_sigaction != nullptr) previous.sa_sigaction(signo, info, context);
    } else if (previous.sa_handler == SIG_DFL) {
      flush_from_signal();
      struct sigaction fallback = {};
      fallback.sa_handler = SIG_DFL;
      sigemptyset(&fallback.sa_mask);
      sigaction(signo, &fallback, nullptr);
      raise(signo);  // blocked while this handler runs; ends the program on return
    } else if (previous.sa_handler != SIG_IGN) {
      previous.sa_handler(signo);
    }
  }
  errno = saved_errno;
}

// The flusher thread takes no signal: SIGINT/SIGTERM's handler would wait
// on the thread it interrupted, and the program's own handlers (SIGALRM,
// SIGCHLD, ...) belong on its threads, not ours, whose periodic poll they
// would keep restarting. A new thread inherits the mask.
bool start_flusher() {
  Injection& s = injection();
  if (pipe2(s.request_pipe, O_CLOEXEC) != 0) return false;
  sigset_t blocked, before;
  sigfillset(&blocked);
  pthread_sigmask(SIG_BLOCK, &blocked, &before);
  bool started = true;
  try {
    std::thread(flusher_loop).detach();
  } catch (...) {
    started = false;
  }
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  s.flusher_running = started;
  return started;
}

void install_signal_handlers() {
  if (!start_flusher()) {
    note_problem("no thread to flush on SIGINT/SIGTERM: a signal ends the trace at the last full buffer");
    return;
  }
  for (SignalSlot& slot : g_signals) {
    struct sigaction ours = {};
    if (sigaction(slot.signo, nullptr, &slot.previous) != 0) continue;
    // An ignored signal ends nothing, so nothing is lost to it; and a
    // handler of ours would not be reset to ignored in what the program
    // execs (nohup, a background job's SIGINT).
    if ((slot.previous.sa_flags & SA_SIGINFO) == 0 && slot.previous.sa_handler == SIG_IGN) continue;
    ours.sa_sigaction = on_signal;
    // Keep the program's restart and alternate-stack choices for the
    // handler it installed before us.
    ours.sa_flags = SA_SIGINFO | (slot.previous.sa_flags & (SA_RESTART | SA_ONSTACK));
    sigemptyset(&ours.sa_mask);
    sigaddset(&ours.sa_mask, SIGINT);
    sigaddset(&ours.sa_mask, SIGTERM);
    slot.installed = true;  // before the handler can run
    if (sigaction(slot.signo, &ours, nullptr) != 0) slot.installed = false;
  }
}

// --- Start -----------------------------------------------------------------

// "%p" in REDLINE_PROFILE_OUT becomes the process id: every CUDA process of
// a program that starts several (ranks, workers) inherits the variable, and
// each needs a file of its own.
std::string trace_path(const char* pattern) {
  std::string path;
  for (const char* c = pattern; *c != '\0'; ++c) {
    if (c[0] == '%' && c[1] == 'p') {
      path += std::to_string(getpid());
      ++c;
    } else {
      path += *c;
    }
  }
  return path;
}

// CUPTI sees NVTX only when NVTX loads it as the program's NVTX tool, and
// only the very libcupti loaded here has the MARKER kind enabled.
void check_nvtx_injection() {
  Dl_info info = {};
  const char* nvtx = std::getenv("NVTX_INJECTION64_PATH");
  const bool found = dladdr(reinterpret_cast<void*>(&cuptiActivityEnable), &info) != 0 && info.dli_fname != nullptr;
  const std::string cupti = found ? info.dli_fname : "libcupti.so";
  if (nvtx == nullptr || *nvtx == '\0') {
    note_problem("NVTX_INJECTION64_PATH is unset: NVTX ranges are not recorded (set it to " + cupti + ")");
    return;
  }
  struct stat named = {}, loaded = {};
  if (!found || std::strchr(nvtx, '/') == nullptr || ::stat(info.dli_fname, &loaded) != 0) return;
  if (::stat(nvtx, &named) != 0 || named.st_dev != loaded.st_dev || named.st_ino != loaded.st_ino)
    note_problem(std::string("NVTX_INJECTION64_PATH is ") + nvtx + ", not the libcupti in use (" + cupti +
                 "): NVTX ranges may not be recorded");
}

struct Kind {
  CUpti_ActivityKind kind;
  const char* name;
};
constexpr Kind kKinds[] = {{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL"},
                           {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY"},
                           {CUPTI_ACTIVITY_KIND_MEMCPY2, "MEMCPY2"},  // peer to peer, between GPUs
                           {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET"},
                           {CUPTI_ACTIVITY_KIND_MARKER, "MARKER"}};

std::int64_t monotonic_now_ns() {
  timespec now = {};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return std::int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
}

// CUPTI's own clock on Linux is CLOCK_REALTIME (cupti_activity.h), which
// NTP or an administrator may step while the program runs: every record
// after a step would move, and a gap or a step spanning it would grow or go
// negative. CLOCK_MONOTONIC never steps, and it is the launcher's clock
// (std::chrono::steady_clock). CUPTI asks for this before any kind is
// enabled; where it is refused the records stay on CUPTI's clock, and the
// clock line below still pairs the two.
std::uint64_t CUPTIAPI monotonic_timestamp() { return static_cast<std::uint64_t>(monotonic_now_ns()); }

// The activities' clock beside CLOCK_MONOTONIC, so host events the launcher
// times (a step's output line) can be placed among the GPU's records: the
// same clock, unless registering it failed. The midpoint of two monotonic
// reads halves the error of reading the clocks one after the other.
void write_clock() {
  std::uint64_t activity_ns = 0;
  const std::int64_t before = monotonic_now_ns();
  const CUptiResult read = cuptiGetTimestamp(&activity_ns);
  const std::int64_t after = monotonic_now_ns();
  if (!cupti_ok("cuptiGetTimestamp", read)) return;
  const std::lock_guard lock(injection().mutex);
  write_locked(clock_line(static_cast<std::int64_t>(activity_ns), before + (after - before) / 2));
}

// Under `redline profile --gemm-shapes` (`--nccl-sizes`) the GEMM (NCCL)
// recorder, preloaded, wraps each call in an external-correlation id, and
// the records tying those ids to launches' correlation ids are wanted.
// CUPTI attaches them to API records, and its own external-correlation
// sample enables the runtime API kind for them; cuBLAS and NCCL may launch
// through the driver API, so both are on (a record per CUDA call: the
// flags' cost). The API records themselves are not kept.
bool variable_set(const char* variable) {
  const char* value = std::getenv(variable);
  return value != nullptr && *value != '\0';
}

void enable_call_correlation() {
  if (!variable_set("REDLINE_PROFILE_GEMMS") && !variable_set("REDLINE_PROFILE_NCCL")) return;
  if (!cupti_ok("cuptiActivityEnable(EXTERNAL_CORRELATION)",
                cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION)))
    return;
  cupti_ok("cuptiActivityEnable(RUNTIME)", cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME));
  cupti_ok("cuptiActivityEnable(DRIVER)", cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER));
  const std::lock_guard lock(injection().mutex);
  injection().reader.keep_correlations(true);
}

// False when no kind could be enabled: nothing would ever arrive.
bool start_cupti() {
  std::uint8_t zeroed = 1;
  std::size_t size = sizeof(zeroed);
  cupti_ok("cuptiActivitySetAttribute(ZEROED_OUT_ACTIVITY_BUFFER)",
           cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &size, &zeroed));
  cupti_ok("cuptiActivityRegisterTimestampCallback(CLOCK_MONOTONIC)",
           cuptiActivityRegisterTimestampCallback(monotonic_timestamp));
  if (!cupti_ok("cuptiActivityRegisterCallbacks", cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed)))
    return false;
  bool any = false;
  for (const Kind& k : kKinds) {
    // Typically another CUPTI client (Nsight Systems, a framework's own
    // profiler) holds the kind.
    any |= cupti_ok(std::string("cuptiActivityEnable(") + k.name + ")", cuptiActivityEnable(k.kind));
  }
  if (any) enable_call_correlation();
  return any;
}

// Opens the trace; false (and a line on stderr, as there is no trace to
// say it in) when it cannot be. The lock keeps a second CUDA process of
// the same program (a rank, a worker) from truncating and interleaving a
// trace in use: without "%p" the first one holding it is traced, the rest
// are not. A trace left by a process that has ended is replaced.
bool open_trace(const char* pattern) {
  Injection& s = injection();
  const std::string path = trace_path(pattern);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::fprintf(stderr, "redline profile: cannot write the trace %s: %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    std::fprintf(stderr,
                 "redline profile: %s is another process's trace; process %d is not traced (a \"%%p\" in "
                 "REDLINE_PROFILE_OUT gives each process its own)\n",
                 path.c_str(), static_cast<int>(getpid()));
    ::close(fd);
    return false;
  }
  if (ftruncate(fd, 0) != 0) {
    std::fprintf(stderr, "redline profile: cannot write the trace %s: %s\n", path.c_str(), std::strerror(errno));
    ::close(fd);
    return false;
  }
  s.fd = fd;
  s.pid = getpid();
  const std::lock_guard lock(s.mutex);
  write_locked(trace_header() + process_line(s.pid));
  return true;
}

void start() {
  const char* out = std::getenv("REDLINE_PROFILE_OUT");
  if (out == nullptr || *out == '\0') return;  // not under the profiler: stay out of the way
  if (!open_trace(out)) return;
  check_nvtx_injection();
  if (!start_cupti()) {
    // Nothing will arrive: the trace says why and is complete as it is.
    injection().finished = true;
    close_trace(0);
    return;
  }
  write_clock();
  if (std::atexit(finish_at_exit) != 0) note_problem("atexit failed: records after the last full buffer are lost");
  install_signal_handlers();
}

}  // namespace
}  // namespace redline::profile

// The CUDA driver's entry point for CUDA_INJECTION64_PATH, called once per
// process during cuInit. Always 1 (success, as CUPTI's own injection sample
// returns): also when REDLINE_PROFILE_OUT is unset and it does nothing, or
// when tracing could not start, since the program must run either way.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static std::atomic<bool> started{false};
  if (started.exchange(true)) return 1;
  try {
    redline::profile::start();
  } catch (...) {
    // Out of memory this early: the program runs untraced.
  }
  return 1;
}
