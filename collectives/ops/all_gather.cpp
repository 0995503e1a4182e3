// all_gather: every rank ends with all ranks' blocks, in rank order.
// In place (NCCL): rank r's send block is block r of its receive buffer, so
// send_inplace_offset is one block (scaled by the rank; see CollectiveCounts).
// busbw factor (n-1)/n of the whole gathered array.
#include <memory>
#include <stdexcept>

#include "collectives/ops/collective.hpp"

namespace redline {
namespace {

class AllGather final : public Collective {
 public:
  std::string_view name() const override { return "all_gather"; }

  CollectiveCounts counts(std::size_t count, int nranks, std::size_t element_bytes) const override {
    if (nranks < 1) throw std::invalid_argument("all_gather needs at least one rank");
    const std::size_t block = aligned_block(count, nranks, element_bytes);
    return {block, block * static_cast<std::size_t>(nranks), block, 0, block};
  }

  double busbw_factor(int nranks) const override {
    if (nranks < 1) throw std::invalid_argument("all_gather needs at least one rank");
    return static_cast<double>(nranks - 1) / nranks;
  }

  std::optional<double> expected(std::size_t i, int, const CollectiveCounts& counts,
                                 const CollectiveCase& c) const override {
    const std::size_t block = counts.send_count;
    if (block == 0) return std::nullopt;
    return input_value(i % block, static_cast<int>(i / block), c);
  }

  void run(Backend& backend, int local, const void* send, void* recv, const CollectiveCounts& counts,
           const CollectiveCase& c) const override {
    backend.all_gather(local, send, recv, counts.param_count, c.type);
  }
};

}  // namespace

std::unique_ptr<Collective> make_all_gather() { return std::make_unique<AllGather>(); }

}  // namespace redline
