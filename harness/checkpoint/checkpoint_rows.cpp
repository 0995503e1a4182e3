#include "harness/checkpoint/checkpoint_rows.hpp"

#include <algorithm>
#include <numeric>

#include "harness/checkpoint/checkpoint_io.hpp"
#include "harness/core/units.hpp"

namespace redline {

Row checkpoint_params_row(const std::string& stage, std::uint64_t bytes, unsigned threads, std::size_t chunk,
                          bool fsync) {
  Row row;
  row.param("stage", stage)
      .param("bytes", std::to_string(bytes))
      .param("threads", std::to_string(io_threads(bytes, threads, chunk)))  // the threads that ran
      .param("chunk", format_size(chunk))
      .param("fsync", fsync ? "1" : "0");
  return row;
}

Row checkpoint_stage_row(const std::string& stage, std::uint64_t bytes, unsigned threads, std::size_t chunk,
                         bool fsync, double seconds) {
  Row row = checkpoint_params_row(stage, bytes, threads, chunk, fsync);
  row.metric("time_s", seconds).metric("GBps", gbps(bytes, seconds));
  return row;
}

double gbps(std::uint64_t bytes, double seconds) { return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0; }

std::size_t median_round(const std::vector<double>& seconds) {
  std::vector<std::size_t> order(seconds.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return seconds[a] < seconds[b]; });
  return order[(order.size() - 1) / 2];
}

std::string median_note(std::size_t rounds) {
  return "median of " + std::to_string(rounds) + " rounds" + (rounds % 2 == 0 ? " (the lower middle one)" : "");
}

}  // namespace redline
