#include "kernels/profile/call_recorder.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "harness/profile/trace_file.hpp"
#include "kernels/profile/activity_records.hpp"

namespace redline::profile {
namespace {

thread_local int t_depth = 0;

// This library's recorder, for its exit handler (each recorder library has
// its own copy of this file, and one recorder).
CallRecorder* g_exit_recorder = nullptr;

void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n > 0)
      done += static_cast<std::size_t>(n);
    else if (n < 0 && errno != EINTR)
      return;
  }
}

// "%p" becomes the process id, as in REDLINE_PROFILE_OUT.
std::string file_path(const char* pattern) {
  std::string path;
  for (const char* c = pattern; *c != '\0'; ++c) {
    if (c[0] == '%' && c[1] == 'p')
      path += std::to_string(getpid()), ++c;
    else
      path += *c;
  }
  return path;
}

// Whether `file` (a path's last part) is `stem`'s library: "libcublas.so.13",
// or a copy a wheel renamed ("libcublas-3b81d170.so.13"), never another
// library that shares the stem ("libcublasLt.so.13"). A library whose name
// merely looks so ("libnccl-net.so", NCCL's network plugin) lacks the
// symbol, and is passed over.
bool names_library(const char* file, const char* stem) {
  const std::size_t n = std::strlen(stem);
  return std::strncmp(file, stem, n) == 0 && (std::strncmp(file + n, ".so", 3) == 0 || file[n] == '-');
}

struct Candidates {
  const char* stem;
  std::vector<std::string> paths;  // in load order
};

int collect_candidates(dl_phdr_info* info, std::size_t, void* data) {
  auto* wanted = static_cast<Candidates*>(data);
  const char* slash = info->dlpi_name != nullptr ? std::strrchr(info->dlpi_name, '/') : nullptr;
  if (slash != nullptr && names_library(slash + 1, wanted->stem)) wanted->paths.emplace_back(info->dlpi_name);
  return 0;
}

// A handle on the first library already loaded under `stem`'s name that
// exports `symbol`; never loads one. The handle is kept open: what is found
// in it is called for the rest of the run.
void* loaded_library_with(const char* stem, const char* symbol) {
  Candidates candidates{stem, {}};
  dl_iterate_phdr(collect_candidates, &candidates);
  for (const std::string& path : candidates.paths) {
    void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (library == nullptr) continue;
    if (dlsym(library, symbol) != nullptr) return library;
    dlclose(library);
  }
  return nullptr;
}

}  // namespace

CallDepth::CallDepth() { ++t_depth; }
CallDepth::~CallDepth() { --t_depth; }
bool CallDepth::outermost() { return t_depth == 0; }

bool CallRecorder::recording() {
  std::call_once(opened_, [this] { open_file(); });
  return fd_ >= 0 && pid_ == getpid();
}

void CallRecorder::write(const std::string& line) {
  const std::lock_guard lock(mutex_);
  if (fd_ >= 0) write_all(fd_, line);
}

void CallRecorder::open_file() {
  const char* pattern = std::getenv(config_.file_variable);
  if (pattern == nullptr || *pattern == '\0') return;
  const std::string path = file_path(pattern);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::fprintf(stderr, "redline profile: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
    return;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0 || ftruncate(fd, 0) != 0) {
    ::close(fd);
    return;
  }
  {
    const std::lock_guard lock(mutex_);
    fd_ = fd;
    pid_ = getpid();
    write_all(fd, trace_header());
  }
  g_exit_recorder = this;
  std::atexit([] { g_exit_recorder->say_if_cupti_never_found(); });
}

// The libcupti the injection library loaded, never a second copy: only
// that one traces. NVTX_INJECTION64_PATH names it (redline profile sets it).
bool CallRecorder::find_cupti() {
  const char* path = std::getenv("NVTX_INJECTION64_PATH");
  void* cupti = path != nullptr && *path != '\0' ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  if (cupti == nullptr)  // the variable named another path to it
    cupti = loaded_library_with("libcupti", "cuptiActivityPushExternalCorrelationId");
  if (cupti == nullptr) return false;
  const auto push = reinterpret_cast<PushFn>(dlsym(cupti, "cuptiActivityPushExternalCorrelationId"));
  const auto pop = reinterpret_cast<PopFn>(dlsym(cupti, "cuptiActivityPopExternalCorrelationId"));
  if (push == nullptr || pop == nullptr) return false;
  pop_.store(pop);
  push_.store(push);  // last: a push seen means its pop is there
  return true;
}

void CallRecorder::say_if_cupti_never_found() {
  if (push_.load() != nullptr || !recording()) return;
  const char* path = std::getenv("NVTX_INJECTION64_PATH");
  write(problem_line(std::string("no libcupti loaded from NVTX_INJECTION64_PATH (") +
                     (path && *path ? path : "unset") + "): " + config_.without_cupti));
}

std::int64_t CallRecorder::next_id() {
  return (static_cast<std::int64_t>(getpid()) << 32) | config_.id_tag | next_.fetch_add(1);
}

bool CallRecorder::push(std::int64_t id) {
  if (push_.load() == nullptr && !find_cupti()) return false;
  return push_.load()(kCallCorrelationKind, static_cast<std::uint64_t>(id)) == CUPTI_SUCCESS;
}

void CallRecorder::pop() { pop_.load()(kCallCorrelationKind, nullptr); }  // only after a push CUPTI took

// RTLD_NEXT finds the real entry point where its library is in the
// program's global scope; a library loaded with RTLD_LOCAL (a framework's
// extension module pulls cuBLAS and NCCL in so) is outside it, and is asked
// itself.
void* CallRecorder::real_symbol(const char* name, const char* library) {
  if (void* next = dlsym(RTLD_NEXT, name)) return next;
  void* loaded = loaded_library_with(library, name);
  return loaded != nullptr ? dlsym(loaded, name) : nullptr;
}

void CallRecorder::say_missing(const char* name, const char* library) {
  try {
    if (recording())
      write(problem_line(std::string(name) + " was not found in " + library +
                         " (or a renamed copy) among the loaded libraries: the program's calls to it fail"));
  } catch (...) {
  }
}

bool records_call(CallRecorder& recorder) {
  try {
    return CallDepth::outermost() && recorder.recording();
  } catch (...) {
    return false;  // the file could not be opened for want of memory: the program runs unrecorded
  }
}

}  // namespace redline::profile
