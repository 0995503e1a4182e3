// For the call recorders' test programs: the stand-in libcupti
// (fake_cupti.cpp) loaded first, as the injection library loads libcupti,
// and its count of the external-correlation ids a recorder pushed and
// popped, printed for the test to read.
#pragma once

#include <dlfcn.h>

#include <cstdio>

namespace redline::testing {

using FakeExternalIds = void (*)(int* pushed, int* popped);

// nullptr when the library cannot be loaded or lacks the counter.
inline FakeExternalIds load_fake_cupti(const char* path) {
  void* cupti = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  return cupti != nullptr ? reinterpret_cast<FakeExternalIds>(dlsym(cupti, "fake_external_ids")) : nullptr;
}

// "external ids pushed N popped M"
inline void print_external_ids(FakeExternalIds external_ids) {
  int pushed = 0, popped = 0;
  external_ids(&pushed, &popped);
  std::printf("external ids pushed %d popped %d\n", pushed, popped);
}

}  // namespace redline::testing
