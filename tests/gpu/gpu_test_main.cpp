// main() of kernels_gpu_test: skips the whole executable with ctest's skip
// code and the reason when this machine has no usable GPU, instead of
// reporting every test as failed.
#include <gtest/gtest.h>

#include <cstdio>

#include "kernels/gpu_availability.cuh"

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (const auto reason = redline::no_usable_gpu_reason()) {
    std::printf("SKIPPED: %s\n", reason->c_str());
    return redline::exit_code_no_gpu;
  }
  return RUN_ALL_TESTS();
}
