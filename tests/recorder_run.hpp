// For the call recorders' tests: a test program run with one recorder
// preloaded (LD_PRELOAD) writing to a fresh file, and that file read back.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "harness/core/child_process.hpp"
#include "harness/profile/trace_file.hpp"

namespace redline::testing {

struct Recorder {
  const char* program;        // the test program
  const char* library;        // the recorder, preloaded
  const char* file_variable;  // where it writes: REDLINE_PROFILE_GEMMS, REDLINE_PROFILE_NCCL
};

struct RecorderRun {
  ChildResult result;
  profile::Trace lines;  // what the recorder wrote
};

inline RecorderRun run_with_recorder(const Recorder& recorder, const std::string& name, std::vector<std::string> argv,
                                     std::vector<std::pair<std::string, std::string>> env) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / ("recorder_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  env.emplace_back("LD_PRELOAD", recorder.library);
  env.emplace_back(recorder.file_variable, (dir / "calls").string());
  ChildSpec spec;
  spec.argv = std::move(argv);
  spec.argv.insert(spec.argv.begin(), recorder.program);
  spec.extra_env = std::move(env);
  spec.timeout_seconds = 60;
  RecorderRun run;
  run.result = run_child(spec);
  if (fs::exists(dir / "calls")) run.lines = profile::read_trace(dir / "calls");
  return run;
}

}  // namespace redline::testing
