// The one wall clock for timing on the host: steady (never jumps with NTP),
// in seconds as a double.
#pragma once

#include <chrono>

namespace redline {

inline double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace redline
