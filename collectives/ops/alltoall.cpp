// alltoall: rank r's block p goes to rank p's block r. Each block is count / n
// rounded down to whole 16-byte lines; the call takes the per-peer count. busbw factor
// (n-1)/n of the whole array. NCCL does not define it in place (grouped
// send/recv on one buffer), so in-place runs are timed, not checked.
#include <memory>
#include <stdexcept>

#include "collectives/ops/collective.hpp"

namespace redline {
namespace {

class AllToAll final : public Collective {
 public:
  std::string_view name() const override { return "alltoall"; }
  bool in_place_result_defined() const override { return false; }

  CollectiveCounts counts(std::size_t count, int nranks, std::size_t element_bytes) const override {
    if (nranks < 1) throw std::invalid_argument("alltoall needs at least one rank");
    const std::size_t per_peer = aligned_block(count, nranks, element_bytes);
    const std::size_t total = per_peer * static_cast<std::size_t>(nranks);
    return {total, total, 0, 0, per_peer};
  }

  double busbw_factor(int nranks) const override {
    if (nranks < 1) throw std::invalid_argument("alltoall needs at least one rank");
    return static_cast<double>(nranks - 1) / nranks;
  }

  // Receive block p on rank r is block r of rank p's send buffer.
  std::optional<double> expected(std::size_t i, int rank, const CollectiveCounts& counts,
                                 const CollectiveCase& c) const override {
    const std::size_t per_peer = counts.param_count;
    if (per_peer == 0) return std::nullopt;
    const auto peer = static_cast<int>(i / per_peer);
    return input_value(static_cast<std::size_t>(rank) * per_peer + i % per_peer, peer, c);
  }

  void run(Backend& backend, int local, const void* send, void* recv, const CollectiveCounts& counts,
           const CollectiveCase& c) const override {
    backend.all_to_all(local, send, recv, counts.param_count, c.type);
  }
};

}  // namespace

std::unique_ptr<Collective> make_alltoall() { return std::make_unique<AllToAll>(); }

}  // namespace redline
