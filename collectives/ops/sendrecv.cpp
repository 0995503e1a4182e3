// sendrecv: a ring; every rank sends its array to rank+1 and receives rank-1's.
// busbw factor 1: each link carries the array once. NCCL does not define it in
// place, so in-place runs are timed, not checked (as in nccl-tests).
#include <memory>
#include <stdexcept>

#include "collectives/ops/collective.hpp"

namespace redline {
namespace {

int ring_previous(int rank, int nranks) { return (rank - 1 + nranks) % nranks; }

class SendRecv final : public Collective {
 public:
  std::string_view name() const override { return "sendrecv"; }
  bool in_place_result_defined() const override { return false; }

  CollectiveCounts counts(std::size_t count, int nranks, std::size_t) const override {
    if (nranks < 1) throw std::invalid_argument("sendrecv needs at least one rank");
    return {count, count, 0, 0, count};
  }

  double busbw_factor(int nranks) const override {
    if (nranks < 1) throw std::invalid_argument("sendrecv needs at least one rank");
    return 1.0;
  }

  std::optional<double> expected(std::size_t i, int rank, const CollectiveCounts&,
                                 const CollectiveCase& c) const override {
    return input_value(i, ring_previous(rank, c.nranks), c);
  }

  void run(Backend& backend, int local, const void* send, void* recv, const CollectiveCounts& counts,
           const CollectiveCase& c) const override {
    const int rank = backend.rank(local);
    const int nranks = backend.size();
    backend.send_recv(local, send, recv, counts.param_count, c.type, (rank + 1) % nranks,
                      ring_previous(rank, nranks));
  }
};

}  // namespace

std::unique_ptr<Collective> make_sendrecv() { return std::make_unique<SendRecv>(); }

}  // namespace redline
