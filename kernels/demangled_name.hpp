// A kernel's readable name from the (usually mangled) symbol CUPTI reports.
// Header-only, so the CUPTI users here (kernel tracing, the injection
// library, which links no CUDA library of its own) share one rule.
#pragma once

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace redline {

// Names that are not C++ symbols (extern "C" kernels, NCCL's) or that fail
// to demangle come back unchanged: a raw name is better than none.
inline std::string demangled_name(const char* name) {
  if (name == nullptr) return "(unnamed)";
  if (std::strncmp(name, "_Z", 2) != 0) return name;
  int status = 0;
  char* readable = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || readable == nullptr) return name;
  std::string text = readable;
  std::free(readable);
  return text;
}

}  // namespace redline
