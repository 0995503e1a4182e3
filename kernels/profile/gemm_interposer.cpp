// libredline_profile_gemms.so: preloaded into a profiled program
// (LD_PRELOAD, `redline profile --gemm-shapes`), it stands in for cuBLAS's
// and cuBLASLt's GEMM entry points. Each call's shape and precision is
// written to the file REDLINE_PROFILE_GEMMS names (a `gemmcall` line, in the
// trace format) before the call is forwarded to the real function, and the
// call runs inside a CUPTI external-correlation id, so the injection library's
// trace ties the kernels it launched to the line (harness/profile/gemm_calls).
//
// It links neither cuBLAS nor cuBLASLt: a preloaded library's own
// dependencies load first, and would put the toolkit's copy ahead of the one
// the program ships (a framework's wheel). Everything it calls of theirs,
// and of CUPTI's, is looked up at run time. Like the injection library it
// must never take the program down: a failure is a `problem` line, and the
// call is forwarded untouched.
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include <cupti_activity.h>

#include "harness/profile/trace_file.hpp"
#include "kernels/profile/activity_records.hpp"
#include "kernels/profile/gemm_shapes.hpp"

namespace redline::profile {
namespace {

// cuBLAS runs its GEMMs through cuBLASLt's exported entry points, which
// resolve to ours: a call made inside a recorded call is forwarded only, or
// every cuBLAS GEMM would be counted twice.
thread_local int t_depth = 0;
struct Depth {
  Depth() { ++t_depth; }
  ~Depth() { --t_depth; }
  Depth(const Depth&) = delete;
  Depth& operator=(const Depth&) = delete;
};

using PushFn = CUptiResult (*)(CUpti_ExternalCorrelationKind, std::uint64_t);
using PopFn = CUptiResult (*)(CUpti_ExternalCorrelationKind, std::uint64_t*);

// Never destroyed: calls may still arrive while the process exits.
struct Recorder {
  std::mutex mutex;  // the file
  int fd = -1;
  pid_t pid = 0;  // a forked child records nothing into its parent's file
  std::atomic<std::uint32_t> next{1};
  PushFn push = nullptr;
  PopFn pop = nullptr;
  std::atomic<std::int64_t> unread{0};  // cublasLtMatmul calls whose descriptors could not be read
};

Recorder& recorder() {
  static Recorder* const instance = new Recorder;
  return *instance;
}

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

void write_line(const std::string& text) {
  Recorder& r = recorder();
  const std::lock_guard lock(r.mutex);
  if (r.fd >= 0) write_all(r.fd, text);
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

// The real entry point. RTLD_NEXT finds it where the library is in the
// program's global scope; a library loaded with RTLD_LOCAL (a framework's
// extension module pulls cuBLAS in so) is outside it, and is asked itself.
struct Loaded {
  const char* file;  // "libcublas.so", "libcublasLt.so"
  std::string path;
};

int find_loaded(dl_phdr_info* info, std::size_t, void* data) {
  auto* wanted = static_cast<Loaded*>(data);
  const char* name = info->dlpi_name != nullptr ? std::strrchr(info->dlpi_name, '/') : nullptr;
  if (name == nullptr || std::strncmp(name + 1, wanted->file, std::strlen(wanted->file)) != 0) return 0;
  wanted->path = info->dlpi_name;
  return 1;
}

// A handle on a library already loaded whose file name starts with
// `library_file`; never loads one.
void* loaded_library(const char* library_file) {
  Loaded loaded{library_file, {}};
  dl_iterate_phdr(find_loaded, &loaded);
  return loaded.path.empty() ? nullptr : dlopen(loaded.path.c_str(), RTLD_NOW | RTLD_NOLOAD);
}

void* real_symbol(const char* name, const char* library_file) {
  if (void* next = dlsym(RTLD_NEXT, name)) return next;
  void* library = loaded_library(library_file);
  return library != nullptr ? dlsym(library, name) : nullptr;
}

// The libcupti the injection library loaded, never a second copy: only
// that one traces. NVTX_INJECTION64_PATH names it (redline profile sets it).
void find_cupti() {
  Recorder& r = recorder();
  const char* path = std::getenv("NVTX_INJECTION64_PATH");
  void* cupti = path != nullptr && *path != '\0' ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  if (cupti == nullptr) cupti = loaded_library("libcupti.so");  // the variable named another path to it
  if (cupti != nullptr) {
    r.push = reinterpret_cast<PushFn>(dlsym(cupti, "cuptiActivityPushExternalCorrelationId"));
    r.pop = reinterpret_cast<PopFn>(dlsym(cupti, "cuptiActivityPopExternalCorrelationId"));
  }
  if (r.push == nullptr || r.pop == nullptr) {
    r.push = nullptr, r.pop = nullptr;
    write_line(problem_line(std::string("no libcupti loaded from NVTX_INJECTION64_PATH (") +
                            (path && *path ? path : "unset") +
                            "): GEMM calls are recorded without their kernels, so their time is unknown"));
  }
}

// What could not be recorded, said once at the end.
void write_unread_at_exit() {
  Recorder& r = recorder();
  if (r.pid != getpid()) return;
  if (const std::int64_t unread = r.unread.load(); unread > 0)
    write_line(problem_line(std::to_string(unread) + " cublasLtMatmul calls whose descriptors could not be read "
                                                     "were not recorded: their FLOPs are missing"));
}

// The first process to lock the file records; the rest of a program's
// processes (ranks, workers) would interleave theirs, unless "%p" gives
// each its own file. Opened at the first call: cuInit (and with it CUPTI)
// has run by then, as cuBLAS needs a context.
void open_file() {
  Recorder& r = recorder();
  const char* pattern = std::getenv("REDLINE_PROFILE_GEMMS");
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
    const std::lock_guard lock(r.mutex);
    r.fd = fd;
    r.pid = getpid();
    write_all(fd, trace_header());
  }
  find_cupti();
  std::atexit(write_unread_at_exit);
}

bool recording() {
  static std::once_flag opened;
  std::call_once(opened, open_file);
  const Recorder& r = recorder();
  return r.fd >= 0 && r.pid == getpid();
}

// The process id in the high half: ids from two processes never meet in
// one join, even where their files were mixed up.
std::int64_t next_external_id() { return (static_cast<std::int64_t>(getpid()) << 32) | recorder().next.fetch_add(1); }

// The call's line, and its id (0: not recorded, counted as unread).
std::int64_t record(const std::optional<GemmShape>& shape) {
  if (!shape) {
    recorder().unread.fetch_add(1);
    return 0;
  }
  const std::int64_t id = next_external_id();
  write_line(gemm_call_line({id, shape->m, shape->n, shape->k, shape->batch, shape->dtype}));
  return id;
}

// Records the shape `shape_of` reads, then forwards inside the call's
// external-correlation id. All of it runs with the depth raised, so what
// it calls of ours (cuBLAS's own cuBLASLt calls) forwards only. Out of
// memory while recording, the call is forwarded unrecorded.
template <typename ShapeOf, typename Forward>
cublasStatus_t recorded(ShapeOf shape_of, Forward forward) {
  const Depth depth;
  Recorder& r = recorder();
  std::int64_t id = 0;
  try {
    id = record(shape_of());
  } catch (...) {
  }
  const bool pushed =
      id != 0 && r.push != nullptr && r.push(kGemmCorrelationKind, static_cast<std::uint64_t>(id)) == CUPTI_SUCCESS;
  const cublasStatus_t status = forward();
  if (pushed) r.pop(kGemmCorrelationKind, nullptr);
  return status;
}

bool outermost() {
  try {
    return t_depth == 0 && recording();
  } catch (...) {
    return false;  // the file could not be opened for want of memory: the program runs unrecorded
  }
}

constexpr const char* kCublas = "libcublas.so";
constexpr const char* kCublasLt = "libcublasLt.so";

// Looked up once per entry point (its caller keeps it in a static). Not
// found, every call to it fails, which the file must say.
template <typename Fn>
Fn real(const char* name, const char* library_file) {
  void* found = real_symbol(name, library_file);
  if (found == nullptr) {
    try {
      if (recording())
        write_line(problem_line(std::string(name) + " was not found in " + library_file +
                                "* among the loaded libraries: the program's calls to it fail"));
    } catch (...) {
    }
  }
  return reinterpret_cast<Fn>(found);
}

// The handle's math mode; the default where cuBLAS cannot say (a handle
// not made yet), which names fp32 operands fp32.
int math_mode(cublasHandle_t handle) {
  using Fn = cublasStatus_t (*)(cublasHandle_t, cublasMath_t*);
  static const Fn get = real<Fn>("cublasGetMathMode", kCublas);
  cublasMath_t mode = CUBLAS_DEFAULT_MATH;
  if (get == nullptr || get(handle, &mode) != CUBLAS_STATUS_SUCCESS) return CUBLAS_DEFAULT_MATH;
  return static_cast<int>(mode);
}

}  // namespace
}  // namespace redline::profile

using namespace redline::profile;

#define REDLINE_EXPORT extern "C" __attribute__((visibility("default")))

REDLINE_EXPORT cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                           int m, int n, int k, const void* alpha, const void* A, cudaDataType Atype,
                                           int lda, const void* B, cudaDataType Btype, int ldb, const void* beta,
                                           void* C, cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                                           cublasGemmAlgo_t algo) {
  using Fn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  static const Fn next = real<Fn>("cublasGemmEx", kCublas);
  if (next == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto forward = [&] {
    return next(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc, computeType,
                algo);
  };
  if (!outermost()) return forward();
  return recorded([&] { return gemm_ex_shape(m, n, k, 1, Atype, Btype, computeType, math_mode(handle)); }, forward);
}

REDLINE_EXPORT cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const void* alpha,
    const void* A, cudaDataType Atype, int lda, long long int strideA, const void* B, cudaDataType Btype, int ldb,
    long long int strideB, const void* beta, void* C, cudaDataType Ctype, int ldc, long long int strideC,
    int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  using Fn =
      cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*, const void*,
                         cudaDataType, int, long long int, const void*, cudaDataType, int, long long int, const void*,
                         void*, cudaDataType, int, long long int, int, cublasComputeType_t, cublasGemmAlgo_t);
  static const Fn next = real<Fn>("cublasGemmStridedBatchedEx", kCublas);
  if (next == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto forward = [&] {
    return next(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C, Ctype,
                ldc, strideC, batchCount, computeType, algo);
  };
  if (!outermost()) return forward();
  return recorded([&] { return gemm_ex_shape(m, n, k, batchCount, Atype, Btype, computeType, math_mode(handle)); },
                  forward);
}

REDLINE_EXPORT cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                             int m, int n, int k, const float* alpha, const float* A, int lda,
                                             const float* B, int ldb, const float* beta, float* C, int ldc) {
  using Fn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const float*,
                                const float*, int, const float*, int, const float*, float*, int);
  static const Fn next = real<Fn>("cublasSgemm_v2", kCublas);
  if (next == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto forward = [&] { return next(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc); };
  if (!outermost()) return forward();
  return recorded(
      [&] { return gemm_ex_shape(m, n, k, 1, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, math_mode(handle)); },
      forward);
}

REDLINE_EXPORT cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                                        cublasOperation_t transb, int m, int n, int k,
                                                        const float* alpha, const float* A, int lda,
                                                        long long int strideA, const float* B, int ldb,
                                                        long long int strideB, const float* beta, float* C, int ldc,
                                                        long long int strideC, int batchCount) {
  using Fn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const float*,
                                const float*, int, long long int, const float*, int, long long int, const float*,
                                float*, int, long long int, int);
  static const Fn next = real<Fn>("cublasSgemmStridedBatched", kCublas);
  if (next == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto forward = [&] {
    return next(handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC,
                batchCount);
  };
  if (!outermost()) return forward();
  return recorded(
      [&] { return gemm_ex_shape(m, n, k, batchCount, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, math_mode(handle)); },
      forward);
}

REDLINE_EXPORT cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
                                             const void* alpha, const void* A, cublasLtMatrixLayout_t Adesc,
                                             const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta,
                                             const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                                             cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo,
                                             void* workspace, size_t workspaceSizeInBytes, cudaStream_t stream) {
  using Fn =
      cublasStatus_t (*)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void*, const void*, cublasLtMatrixLayout_t,
                         const void*, cublasLtMatrixLayout_t, const void*, const void*, cublasLtMatrixLayout_t, void*,
                         cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t*, void*, size_t, cudaStream_t);
  static const Fn next = real<Fn>("cublasLtMatmul", kCublasLt);
  if (next == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto forward = [&] {
    return next(lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace,
                workspaceSizeInBytes, stream);
  };
  if (!outermost()) return forward();
  static const auto desc_get = real<MatmulDescAttributeGetter>("cublasLtMatmulDescGetAttribute", kCublasLt);
  static const auto layout_get = real<LayoutAttributeGetter>("cublasLtMatrixLayoutGetAttribute", kCublasLt);
  return recorded([&] { return lt_matmul_shape(desc_get, layout_get, computeDesc, Adesc, Bdesc, Ddesc); }, forward);
}

// For the tests: runs `inside` as a recorded call's forwarding runs it, so a
// GEMM entry point it calls is forwarded without a record of its own (real
// nesting, cuBLAS into cuBLASLt, needs a GPU).
REDLINE_EXPORT void redline_profile_gemms_nested_for_test(void (*inside)()) {
  const Depth depth;
  inside();
}
