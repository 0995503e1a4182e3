// reduce: the root ends with the reduction of all ranks' arrays; the other
// ranks' receive buffers are undefined and not checked. busbw factor 1.
#include <memory>
#include <stdexcept>

#include "collectives/ops/collective.hpp"

namespace redline {
namespace {

class Reduce final : public Collective {
 public:
  std::string_view name() const override { return "reduce"; }
  bool uses_op() const override { return true; }
  bool uses_root() const override { return true; }

  CollectiveCounts counts(std::size_t count, int nranks, std::size_t) const override {
    if (nranks < 1) throw std::invalid_argument("reduce needs at least one rank");
    return {count, count, 0, 0, count};
  }

  double busbw_factor(int nranks) const override {
    if (nranks < 1) throw std::invalid_argument("reduce needs at least one rank");
    return 1.0;
  }

  std::optional<double> expected(std::size_t i, int rank, const CollectiveCounts&,
                                 const CollectiveCase& c) const override {
    if (rank != c.root) return std::nullopt;
    return reduced_value(i, c);
  }

  void run(Backend& backend, int local, const void* send, void* recv, const CollectiveCounts& counts,
           const CollectiveCase& c) const override {
    backend.reduce(local, send, recv, counts.param_count, c.type, c.op, c.root);
  }
};

}  // namespace

std::unique_ptr<Collective> make_reduce() { return std::make_unique<Reduce>(); }

}  // namespace redline
