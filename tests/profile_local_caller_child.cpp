// A program that links no cuBLAS itself, for the GEMM recorder's test. It
// loads CALLER (a library linked to cuBLAS) with RTLD_LOCAL, as Python loads
// a framework's extension module, so cuBLAS is outside the program's global
// scope and RTLD_NEXT cannot find it. Each LIBRARY named after CALLER is
// loaded first, RTLD_LOCAL too: a copy of cuBLAS under a wheel's renamed
// file name (its soname then answers CALLER's DT_NEEDED), or a library
// whose file name only looks like cuBLAS's.
//   profile_local_caller_child CALLER [LIBRARY...]
#include <dlfcn.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  for (int i = 2; i < argc; ++i) {
    if (dlopen(argv[i], RTLD_NOW | RTLD_LOCAL) == nullptr) {
      std::fprintf(stderr, "cannot load %s: %s\n", argv[i], dlerror());
      return 3;
    }
  }
  void* caller = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  const auto call = caller ? reinterpret_cast<int (*)()>(dlsym(caller, "caller_gemm_ex")) : nullptr;
  if (call == nullptr) {
    std::fprintf(stderr, "cannot call caller_gemm_ex in %s: %s\n", argv[1], dlerror());
    return 3;
  }
  std::printf("local status %d\n", call());
  return 0;
}
