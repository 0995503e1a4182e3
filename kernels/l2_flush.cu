// L2Flush: sized from the device's L2 attribute, written with a memset.
#include "kernels/l2_flush.cuh"

#include "kernels/cuda_check.cuh"

namespace redline {

namespace {

std::size_t current_device_l2_bytes() {
  int device = 0;
  REDLINE_CUDA_CHECK(cudaGetDevice(&device));
  int bytes = 0;
  REDLINE_CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, device));
  return bytes > 0 ? static_cast<std::size_t>(bytes) : 0;
}

}  // namespace

L2Flush::L2Flush() : l2_bytes_(current_device_l2_bytes()), buffer_(2 * l2_bytes_) {}

void L2Flush::flush(cudaStream_t stream) {
  // A memset writes every line: writes allocate in L2, so the flush buffer
  // displaces whatever was there (dirty lines are written back now, not
  // during the timed work).
  if (!buffer_.empty()) REDLINE_CUDA_CHECK(cudaMemsetAsync(buffer_.data(), 0, buffer_.bytes(), stream));
}

}  // namespace redline
