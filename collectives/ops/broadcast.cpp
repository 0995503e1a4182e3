// broadcast: every rank ends with the root's array. busbw factor 1: the
// slowest link carries the whole array once.
#include <memory>
#include <stdexcept>

#include "collectives/ops/collective.hpp"

namespace redline {
namespace {

class Broadcast final : public Collective {
 public:
  std::string_view name() const override { return "broadcast"; }
  bool uses_root() const override { return true; }

  CollectiveCounts counts(std::size_t count, int nranks, std::size_t) const override {
    if (nranks < 1) throw std::invalid_argument("broadcast needs at least one rank");
    return {count, count, 0, 0, count};
  }

  double busbw_factor(int nranks) const override {
    if (nranks < 1) throw std::invalid_argument("broadcast needs at least one rank");
    return 1.0;
  }

  std::optional<double> expected(std::size_t i, int, const CollectiveCounts&,
                                 const CollectiveCase& c) const override {
    return input_value(i, c.root, c);
  }

  void run(Backend& backend, int local, const void* send, void* recv, const CollectiveCounts& counts,
           const CollectiveCase& c) const override {
    backend.broadcast(local, send, recv, counts.param_count, c.type, c.root);
  }
};

}  // namespace

std::unique_ptr<Collective> make_broadcast() { return std::make_unique<Broadcast>(); }

}  // namespace redline
