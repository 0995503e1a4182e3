// Checked CUDA, cuBLAS(Lt) and NCCL calls: a failure throws an exception that
// names the call, the error and the source line, so a failed benchmark point
// can be reported (status oom/error) instead of aborting the whole sweep.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>
#include <string_view>

#if defined(REDLINE_HAVE_CUBLASLT)
#include <cublasLt.h>
#endif
#if defined(REDLINE_HAVE_NCCL)
#include <nccl.h>
#endif

namespace redline {

// __FILE__ is absolute in CMake builds; reports read better, and compare
// across machines, with paths relative to the repository root. The root is
// found from this header's own path, so no build flag is needed.
inline std::string_view path_from_repo_root(std::string_view file) {
  constexpr std::string_view this_header = __FILE__;
  constexpr std::string_view this_header_in_repo = "kernels/cuda_check.cuh";
  if (!this_header.ends_with(this_header_in_repo)) return file;
  const std::string_view root = this_header.substr(0, this_header.size() - this_header_in_repo.size());
  return file.starts_with(root) ? file.substr(root.size()) : file;
}

// "<call> failed: <description> (<name>) at <file>:<line>"
inline std::string describe_failed_call(const char* call, const char* description, const char* name,
                                        const char* file, int line) {
  std::string message = call;
  message += " failed: ";
  message += description;
  message += " (";
  message += name;
  message += ") at ";
  message += path_from_repo_root(file);
  message += ':';
  message += std::to_string(line);
  return message;
}

class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const char* call, const char* file, int line)
      : std::runtime_error(describe_failed_call(call, cudaGetErrorString(code), cudaGetErrorName(code), file, line)),
        code_(code) {}

  cudaError_t code() const noexcept { return code_; }
  // Out of memory is an expected outcome of a size sweep (status "oom"), not a bug.
  bool is_out_of_memory() const noexcept { return code_ == cudaErrorMemoryAllocation; }

 private:
  cudaError_t code_;
};

inline void throw_if_cuda_failed(cudaError_t code, const char* call, const char* file, int line) {
  if (code != cudaSuccess) {
    // A failed call also leaves its error as the runtime's "last error". It is
    // reported here, so clear it: otherwise the next REDLINE_CUDA_CHECK_LAST
    // (e.g. after the sweep moves on from an out-of-memory point) would blame
    // an innocent launch. Sticky errors stay sticky regardless.
    (void)cudaGetLastError();
    throw CudaError(code, call, file, line);
  }
}

#if defined(REDLINE_HAVE_CUBLASLT)
class CublasError : public std::runtime_error {
 public:
  CublasError(cublasStatus_t status, const char* call, const char* file, int line)
      : std::runtime_error(
            describe_failed_call(call, cublasLtGetStatusString(status), cublasLtGetStatusName(status), file, line)),
        status_(status) {}

  cublasStatus_t status() const noexcept { return status_; }
  bool is_out_of_memory() const noexcept { return status_ == CUBLAS_STATUS_ALLOC_FAILED; }

 private:
  cublasStatus_t status_;
};

inline void throw_if_cublas_failed(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) throw CublasError(status, call, file, line);
}
#endif  // REDLINE_HAVE_CUBLASLT

// Whether a failure is the GPU running out of memory: CUDA's allocation
// error, or cuBLAS(Lt)'s own allocations failing. One rule for every tool
// that turns it into an `oom` row or the line a batch sweep reads.
inline bool is_out_of_memory(const std::exception& e) {
  if (const auto* cuda = dynamic_cast<const CudaError*>(&e); cuda && cuda->is_out_of_memory()) return true;
#if defined(REDLINE_HAVE_CUBLASLT)
  if (const auto* cublas = dynamic_cast<const CublasError*>(&e); cublas && cublas->is_out_of_memory()) return true;
#endif
  return false;
}

#if defined(REDLINE_HAVE_NCCL)
class NcclError : public std::runtime_error {
 public:
  NcclError(ncclResult_t result, const char* call, const char* file, int line)
      : std::runtime_error(describe_failed_call(call, ncclGetErrorString(result), result_name(result), file, line)),
        result_(result) {}

  ncclResult_t result() const noexcept { return result_; }

  // NCCL has no name function; the enum names are what users search for.
  static const char* result_name(ncclResult_t result) noexcept {
    switch (result) {
      case ncclSuccess: return "ncclSuccess";
      case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
      case ncclSystemError: return "ncclSystemError";
      case ncclInternalError: return "ncclInternalError";
      case ncclInvalidArgument: return "ncclInvalidArgument";
      case ncclInvalidUsage: return "ncclInvalidUsage";
      case ncclRemoteError: return "ncclRemoteError";
      case ncclInProgress: return "ncclInProgress";
      default: return "ncclResult_t";
    }
  }

 private:
  ncclResult_t result_;
};

inline void throw_if_nccl_failed(ncclResult_t result, const char* call, const char* file, int line) {
  // ncclInProgress is the normal answer of non-blocking communicators.
  if (result != ncclSuccess && result != ncclInProgress) throw NcclError(result, call, file, line);
}
#endif  // REDLINE_HAVE_NCCL

}  // namespace redline

#define REDLINE_CUDA_CHECK(call) ::redline::throw_if_cuda_failed((call), #call, __FILE__, __LINE__)

// After a <<<...>>> launch: launch errors (bad configuration, no kernel image)
// surface only through cudaGetLastError, not through the launch expression.
#define REDLINE_CUDA_CHECK_LAST() \
  ::redline::throw_if_cuda_failed(cudaGetLastError(), "kernel launch (cudaGetLastError)", __FILE__, __LINE__)

#if defined(REDLINE_HAVE_CUBLASLT)
#define REDLINE_CUBLAS_CHECK(call) ::redline::throw_if_cublas_failed((call), #call, __FILE__, __LINE__)
#endif

#if defined(REDLINE_HAVE_NCCL)
#define REDLINE_NCCL_CHECK(call) ::redline::throw_if_nccl_failed((call), #call, __FILE__, __LINE__)
#endif
