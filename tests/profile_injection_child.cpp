// A profiled program for the injection library's tests: it loads the
// stand-in libcupti (so the library binds to it by soname), loads the
// injection library and calls InitializeInjection as the CUDA driver would,
// lets the stand-in hand back a buffer, then ends as MODE says.
//   profile_injection_child MODE FAKE_CUPTI INJECTION_LIBRARY
// MODE: exit, sigterm, sigint_handled (the program's own SIGINT handler),
// sigterm_ignored, fork (a child that exits and one killed by SIGTERM),
// exit_without_atexit (runs on for 1.5 s, past a periodic flush, then _exit).
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

volatile sig_atomic_t g_handled = 0;
void on_sigint(int) { g_handled = 1; }

void* load(const char* path) {
  void* handle = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    std::fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
    std::exit(3);
  }
  return handle;
}

// Children that inherit the library, its atexit and its handlers: neither
// may write into the parent's trace.
void fork_children() {
  for (const bool by_signal : {false, true}) {
    const pid_t child = fork();
    if (child == 0) {
      if (by_signal) raise(SIGTERM);
      std::exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    std::printf("child %s\n", WIFSIGNALED(status) ? "killed by a signal" : "exited");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  const std::string mode = argv[1];
  if (mode == "sigint_handled") signal(SIGINT, on_sigint);
  if (mode == "sigterm_ignored") signal(SIGTERM, SIG_IGN);
  void* cupti = load(argv[2]);
  void* injection = load(argv[3]);
  auto initialize = reinterpret_cast<int (*)()>(dlsym(injection, "InitializeInjection"));
  auto emit = reinterpret_cast<void (*)()>(dlsym(cupti, "fake_emit"));
  if (initialize == nullptr || emit == nullptr) return 3;
  std::printf("InitializeInjection %d\n", initialize());
  std::printf("again %d\n", initialize());  // the driver calls it once; a second call must do nothing
  std::fflush(stdout);
  emit();
  if (mode == "sigterm" || mode == "sigterm_ignored") raise(SIGTERM);
  if (mode == "sigint_handled") {
    raise(SIGINT);
    std::printf("handled %d\n", static_cast<int>(g_handled));
  }
  if (mode == "fork") fork_children();
  if (mode == "exit_without_atexit") {
    usleep(1500 * 1000);
    _exit(0);
  }
  return 0;
}
