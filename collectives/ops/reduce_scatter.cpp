// reduce_scatter: rank r ends with block r of the reduction of all ranks'
// arrays. In place (NCCL): rank r's receive block is block r of its send
// buffer, so recv_inplace_offset is one block (scaled by the rank).
// busbw factor (n-1)/n of the whole reduced array.
#include <memory>
#include <stdexcept>

#include "collectives/ops/collective.hpp"

namespace redline {
namespace {

class ReduceScatter final : public Collective {
 public:
  std::string_view name() const override { return "reduce_scatter"; }
  bool uses_op() const override { return true; }

  CollectiveCounts counts(std::size_t count, int nranks, std::size_t element_bytes) const override {
    if (nranks < 1) throw std::invalid_argument("reduce_scatter needs at least one rank");
    const std::size_t block = aligned_block(count, nranks, element_bytes);
    return {block * static_cast<std::size_t>(nranks), block, 0, block, block};
  }

  double busbw_factor(int nranks) const override {
    if (nranks < 1) throw std::invalid_argument("reduce_scatter needs at least one rank");
    return static_cast<double>(nranks - 1) / nranks;
  }

  std::optional<double> expected(std::size_t i, int rank, const CollectiveCounts& counts,
                                 const CollectiveCase& c) const override {
    return reduced_value(static_cast<std::size_t>(rank) * counts.recv_count + i, c);
  }

  void run(Backend& backend, int local, const void* send, void* recv, const CollectiveCounts& counts,
           const CollectiveCase& c) const override {
    backend.reduce_scatter(local, send, recv, counts.param_count, c.type, c.op);
  }
};

}  // namespace

std::unique_ptr<Collective> make_reduce_scatter() { return std::make_unique<ReduceScatter>(); }

}  // namespace redline
