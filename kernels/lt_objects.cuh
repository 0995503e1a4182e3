// What every cuBLASLt user in kernels/ shares: owning wrappers for the
// handle, descriptors, layouts and preferences (so a plan that throws half
// built leaks nothing), and the description of a heuristic's algorithm
// (tile, split-K, waves). LtGemm (its own rotating buffers) and LtMatmul
// (strided batches on the caller's pointers) both build on it.
// Include only where REDLINE_HAVE_CUBLASLT is defined.
#pragma once

#include <cublasLt.h>

#include <cstdint>
#include <memory>
#include <type_traits>

#include "kernels/gemm_lt.cuh"

namespace redline {

// One owner per cuBLASLt object: Destroy runs on whatever path leaves the
// scope. The handle types are pointers to (opaque) structs.
template <typename Handle, cublasStatus_t (*Destroy)(Handle)>
struct LtDestroy {
  void operator()(Handle handle) const noexcept { (void)Destroy(handle); }
};
template <typename Handle, cublasStatus_t (*Destroy)(Handle)>
class LtObject {
 public:
  // For the Create call's out parameter; the object is owned once it returns.
  class Out {
   public:
    explicit Out(LtObject& owner) : owner_(owner) {}
    ~Out() { owner_.owned_.reset(raw_); }
    Out(const Out&) = delete;
    Out& operator=(const Out&) = delete;
    operator Handle*() { return &raw_; }

   private:
    LtObject& owner_;
    Handle raw_ = nullptr;
  };
  Out out() { return Out(*this); }
  Handle get() const { return owned_.get(); }

 private:
  std::unique_ptr<std::remove_pointer_t<Handle>, LtDestroy<Handle, Destroy>> owned_;
};
using LtHandle = LtObject<cublasLtHandle_t, cublasLtDestroy>;
using LtMatmulDesc = LtObject<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
using LtLayout = LtObject<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
using LtPreference = LtObject<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>;

// What a heuristic result is: its config attributes, cuBLASLt's wave count
// and workspace. `candidate` is its index among the heuristic's results.
GemmAlgorithm describe_lt_algorithm(int candidate, const cublasLtMatmulHeuristicResult_t& result);

// `batch` matrices of `layout`, `stride` elements apart (a strided batch).
void set_strided_batch(const LtLayout& layout, std::int64_t batch, std::int64_t stride);

// The alignment every batch's pointer keeps, given a 256-byte aligned base
// (cudaMalloc's): the largest power of two up to 256 dividing the stride.
std::uint32_t strided_batch_alignment(std::int64_t batch, std::int64_t stride_bytes);

// Tells the heuristic the pointers' alignment (bytes), so it never picks a
// kernel that needs more. D shares C's.
void set_min_alignments(const LtPreference& preference, std::uint32_t a, std::uint32_t b, std::uint32_t c);

}  // namespace redline
