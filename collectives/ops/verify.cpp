// Host-side check of a collective's result against the expected values: exact
// where the data pattern makes results exact, a bounded error for float avg.
#include "collectives/ops/verify.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace redline {
namespace {

// 3 ulps: the rounded 1/n, the product and the sum each add up to half an
// ulp, and the expected value's own rounding another half; the rest is slack
// for fp8, where second-order terms are not negligible.
constexpr double kAvgUlps = 3.0;

// Runs fn(begin, end) over [0, count) in chunks on several threads: buffers
// reach gigabytes, and every element costs a few hashes. Small buffers stay
// on the calling thread. The first exception a chunk throws is rethrown here.
template <typename Fn>
void for_chunks(std::size_t count, Fn fn) {
  constexpr std::size_t kMinChunk = std::size_t{1} << 20;
  const std::size_t hardware = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t workers = std::min(hardware, count / kMinChunk);
  if (workers <= 1) {
    fn(std::size_t{0}, count);
    return;
  }
  const std::size_t chunk = (count + workers - 1) / workers;
  std::vector<std::exception_ptr> errors(workers);
  auto guarded = [&](std::size_t w) {
    try {
      fn(std::min(count, w * chunk), std::min(count, (w + 1) * chunk));
    } catch (...) {
      errors[w] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t w = 1; w < workers; ++w) threads.emplace_back(guarded, w);
  guarded(0);
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

void require_matching_type(DataType type, const CollectiveCase& c) {
  if (type != c.type) {
    throw std::invalid_argument(std::string("buffer of ") + std::string(info(type).name) + " for a case of " +
                                std::string(info(c.type).name));
  }
}

}  // namespace

void fill_input(void* send_host, std::size_t send_count, DataType type, int rank, const CollectiveCase& c) {
  require_matching_type(type, c);
  for_chunks(send_count, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) store_element(send_host, type, i, input_value(i, rank, c));
  });
}

void fill_poison(void* host, std::size_t count, DataType type) {
  double poison = std::numeric_limits<double>::quiet_NaN();
  if (type == DataType::int8) poison = std::numeric_limits<std::int8_t>::min();
  if (type == DataType::int32) poison = std::numeric_limits<std::int32_t>::min();
  for_chunks(count, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) store_element(host, type, i, poison);
  });
}

double allowed_error(double expected, DataType type, ReduceOp op) {
  const DataTypeInfo& t = info(type);
  if (op != ReduceOp::avg || !t.is_floating) return 0.0;
  return kAvgUlps * t.tolerance * std::max(std::fabs(expected), smallest_normal(type));
}

std::size_t count_wrong(const void* recv_host, std::size_t recv_count, DataType type, const Collective& collective,
                        const CollectiveCounts& counts, const CollectiveCase& c, int rank) {
  require_matching_type(type, c);
  const ReduceOp op = collective.uses_op() ? c.op : ReduceOp::sum;
  const bool exact = allowed_error(1.0, type, op) == 0.0;
  std::atomic<std::size_t> wrong{0};
  for_chunks(recv_count, [&](std::size_t begin, std::size_t end) {
    std::size_t mine = 0;
    for (std::size_t i = begin; i < end; ++i) {
      const std::optional<double> want = collective.expected(i, rank, counts, c);
      if (!want) continue;
      const double got = load_element(recv_host, type, i);
      // NaN fails both comparisons below.
      const bool ok = exact ? got == *want : std::fabs(got - *want) <= allowed_error(*want, type, op);
      if (!ok) ++mine;
    }
    wrong += mine;
  });
  return wrong.load();
}

std::string tolerance_statement(DataType type) {
  const DataTypeInfo& t = info(type);
  const std::string name(t.name);
  if (!t.is_floating) {
    return name + ": exact for every op (avg is the sum divided by n, truncated toward zero, as NCCL computes it)";
  }
  const int exponent = static_cast<int>(std::lround(-std::log2(t.tolerance)));
  return name + ": exact for sum, prod, max, min and data movement; avg within " +
         std::to_string(static_cast<int>(kAvgUlps)) + " x 2^-" + std::to_string(exponent) +
         " relative; NaN never passes";
}

}  // namespace redline
