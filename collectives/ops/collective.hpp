// One collective operation, nccl-tests style: the few hooks that differ
// between collectives (buffer counts, bus bandwidth factor, expected result,
// the call). The data pattern and the timing loop are shared. A new
// collective costs one file.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "collectives/backends/backend.hpp"
#include "collectives/ops/data_type.hpp"

namespace redline {

// Element counts per rank for a given "size" (nccl-tests' semantics: the size
// column is count x element bytes of the whole array the collective moves).
struct CollectiveCounts {
  std::size_t send_count = 0;
  std::size_t recv_count = 0;
  // In-place (nccl-tests' layout): one buffer per rank, with
  // send = buffer + send_inplace_offset x rank and recv = buffer +
  // recv_inplace_offset x rank elements (all_gather's send and
  // reduce_scatter's recv sit at the rank's block; 0 elsewhere).
  std::size_t send_inplace_offset = 0;
  std::size_t recv_inplace_offset = 0;
  std::size_t param_count = 0;  // the count passed to the call
};

struct CollectiveCase {
  DataType type = DataType::float32;
  ReduceOp op = ReduceOp::sum;
  int root = 0;
  int nranks = 1;
  std::uint64_t seed = 1;
};

class Collective {
 public:
  virtual ~Collective() = default;
  virtual std::string_view name() const = 0;  // "all_reduce"
  virtual bool uses_op() const { return false; }
  virtual bool uses_root() const { return false; }
  // Whether NCCL defines the result of the in-place call. alltoall and
  // sendrecv are not defined in place: their in-place runs are timed but not
  // checked, as in nccl-tests.
  virtual bool in_place_result_defined() const { return true; }
  // `count`: elements of the reported size; rounded down to what divides
  // (per-rank blocks to whole 16-byte lines, see aligned_block).
  virtual CollectiveCounts counts(std::size_t count, int nranks, std::size_t element_bytes) const = 0;
  // busbw = algbw x factor (nccl-tests' PERFORMANCE.md).
  virtual double busbw_factor(int nranks) const = 0;
  // Expected value of recv element i on `rank`; nullopt where the result is
  // undefined (reduce on a non-root rank).
  virtual std::optional<double> expected(std::size_t i, int rank, const CollectiveCounts& counts,
                                         const CollectiveCase& c) const = 0;
  virtual void run(Backend& backend, int local, const void* send, void* recv, const CollectiveCounts& counts,
                   const CollectiveCase& c) const = 0;
};

// The per-rank block of all_gather, reduce_scatter and alltoall: count /
// nranks rounded down to whole 16-byte lines, as nccl-tests does, so blocks
// and in-place offsets stay 16-byte aligned (NCCL's fast paths) and the
// size and count columns match nccl-tests' table for any rank count.
inline std::size_t aligned_block(std::size_t count, int nranks, std::size_t element_bytes) {
  const std::size_t per_line = element_bytes == 0 || element_bytes >= 16 ? 1 : 16 / element_bytes;
  return count / static_cast<std::size_t>(nranks) / per_line * per_line;
}

// Element i of `rank`'s send buffer: small non-zero integers (exact sums in
// every type, even fp8 and bfloat16) for sum/avg/max/min, +-1 for prod,
// pseudo-random from (seed, rank, i) so no two ranks send the same data.
double input_value(std::size_t i, int rank, const CollectiveCase& c);

// sum/prod/max/min/avg over ranks of input_value(i, r), rounded to the type.
double reduced_value(std::size_t i, const CollectiveCase& c);

// all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv.
const std::vector<std::unique_ptr<Collective>>& all_collectives();
const Collective* find_collective(std::string_view name);

}  // namespace redline
