#include "kernels/train/recorded_calls.cuh"

#include <stdexcept>

#include "kernels/runner/event_timer.cuh"

namespace redline {

double time_each_alone(const RecordedCalls& calls, int repetitions, cudaStream_t stream) {
  if (repetitions < 1) throw std::invalid_argument("time_each_alone: repetitions below 1");
  EventTimer timer;
  double total_ms = 0;
  for (const auto& call : calls) {
    call();  // the first run of a call alone may pay for a cold L2 or a lazy load
    timer.start(stream);
    for (int i = 0; i < repetitions; ++i) call();
    timer.stop(stream);
    total_ms += timer.elapsed_seconds() * 1e3 / repetitions;
  }
  return total_ms;
}

}  // namespace redline
