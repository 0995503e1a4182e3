// all_reduce: every rank ends with the reduction of all ranks' arrays.
// busbw factor 2(n-1)/n: a ring sends and receives each element 2(n-1) times
// over n ranks (nccl-tests' PERFORMANCE.md).
#include <memory>
#include <stdexcept>

#include "collectives/ops/collective.hpp"

namespace redline {
namespace {

class AllReduce final : public Collective {
 public:
  std::string_view name() const override { return "all_reduce"; }
  bool uses_op() const override { return true; }

  CollectiveCounts counts(std::size_t count, int nranks, std::size_t) const override {
    if (nranks < 1) throw std::invalid_argument("all_reduce needs at least one rank");
    return {count, count, 0, 0, count};
  }

  double busbw_factor(int nranks) const override {
    if (nranks < 1) throw std::invalid_argument("all_reduce needs at least one rank");
    return 2.0 * (nranks - 1) / nranks;
  }

  std::optional<double> expected(std::size_t i, int, const CollectiveCounts&,
                                 const CollectiveCase& c) const override {
    return reduced_value(i, c);
  }

  void run(Backend& backend, int local, const void* send, void* recv, const CollectiveCounts& counts,
           const CollectiveCase& c) const override {
    backend.all_reduce(local, send, recv, counts.param_count, c.type, c.op);
  }
};

}  // namespace

std::unique_ptr<Collective> make_all_reduce() { return std::make_unique<AllReduce>(); }

}  // namespace redline
